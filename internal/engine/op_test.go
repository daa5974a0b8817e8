package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// TestOpPathDone: the one per-operation path classifies every result the way a user reads
// it in the summary, whichever loop ran the operation (plain, pipelined and backfill all
// hand their results to done): success, miss, failure by class (a deadline that fired is a
// timeout whatever the driver said), validation of what a read returned against what was
// written before, and nothing at all for an operation a hard stop cancelled.
func TestOpPathDone(t *testing.T) {
	boom := errors.New("boom")
	written := func(_ string, v []byte) []byte { return v }
	otherKey := func(string, []byte) []byte {
		return workload.EncodeValue(nil, []byte("another-key"), 1, make([]byte, 64))
	}
	garbage := func(string, []byte) []byte { return []byte("not what was written") }
	tests := []struct {
		name     string
		write    bool // the operation is a write (else a read)
		before   bool // the key was written and acknowledged before
		got      func(key string, written []byte) []byte
		err      error
		timedOut bool
		stop     bool // the run was stopped hard
		want     outcome
		count    int64 // answered: successes and misses
		misses   int64
		failure  string // the failure class counted once, if any
		invalid  string // the validation failure counted once, if any
	}{
		{name: "write ok", write: true, want: outOK, count: 1},
		{name: "read of what was written", before: true, got: written, want: outOK, count: 1},
		{name: "read miss of a key never written", err: driver.ErrNotFound, want: outMiss, count: 1, misses: 1},
		{name: "read miss of a written key is lost", before: true, err: driver.ErrNotFound, want: outMiss, count: 1, misses: 1, invalid: "lost"},
		{name: "read of another key's value", before: true, got: otherKey, want: outOK, count: 1, invalid: "wrongKey"},
		{name: "read of a value without header, key written", before: true, got: garbage, want: outOK, count: 1, invalid: "corrupt"},
		{name: "read of a value without header, key not written", got: garbage, want: outOK, count: 1},
		{name: "unavailable", err: driver.Wrap(driver.ClassUnavailable, boom), want: outFailed, failure: "unavailable"},
		{name: "write failed", write: true, err: boom, want: outFailed, failure: "other"},
		{name: "deadline fired first", err: boom, timedOut: true, want: outFailed, failure: "timeout"},
		{name: "hard stop", err: context.Canceled, stop: true, want: outStopped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, nopStore{}, testWorkload(t, func(w *config.Workload) { w.ValidateValues = true }))
			g := e.gen.Load()
			rng := rand.New(rand.NewPCG(1, 2))
			// The write before goes to another series, so the one under test holds only
			// the operation of the case.
			pre := e.newOpPath(rng, e.coll.Recorder(stats.OpWrite).Shard(0), nil)
			defer pre.close()
			pre.g = g
			p := e.newOpPath(rng, e.coll.Recorder(stats.OpRead).Shard(0), nil)
			defer p.close()
			p.g = g
			const idx = 7
			var value []byte
			if tc.before {
				w := pre.build(&plainWrite, nil, idx, 1, &pre.vbuf)
				value = append([]byte(nil), w.value...)
				if out := pre.done(&w, 1, 2, nil, nil, false); out != outOK {
					t.Fatalf("write before: %v", out)
				}
			}
			m := &plainRead
			if tc.write {
				m = &plainWrite
			}
			o := p.build(m, nil, idx, 10, &p.vbuf)
			var got []byte
			if tc.got != nil {
				got = tc.got(o.key, value)
			}
			if tc.stop {
				e.cancelRun()
			}
			e.coll.Tick(time.Now())
			if out := p.done(&o, 20, 50, got, tc.err, tc.timedOut); out != tc.want {
				t.Errorf("outcome %v, want %v", out, tc.want)
			}
			s := e.coll.Tick(time.Now()).Summary().Ops["read"]
			if s.Count != tc.count || s.Misses != tc.misses {
				t.Errorf("count %d misses %d, want %d and %d", s.Count, s.Misses, tc.count, tc.misses)
			}
			for class, n := range s.Failures {
				if want := once(class == tc.failure); n != want {
					t.Errorf("failures[%s] = %d, want %d", class, n, want)
				}
			}
			for v, n := range s.Validation {
				if want := once(v == tc.invalid); n != want {
					t.Errorf("validation[%s] = %d, want %d", v, n, want)
				}
			}
			if tc.count > 0 && s.ResponseTime.Max == 0 {
				t.Error("no response time recorded")
			}
		})
	}
}

// once is 1 for the counter a case expects to be counted, 0 for the others.
func once(counted bool) int64 {
	if counted {
		return 1
	}
	return 0
}
