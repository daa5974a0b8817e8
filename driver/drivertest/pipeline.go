package drivertest

import (
	"context"
	"errors"

	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// pipeline checks driver.Pipeliner: batches mixing writes, reads of what the same batch
// wrote, and misses complete once per operation with what Read and Write give;
// replies may come in any order (CQL answers by stream id); a stale Interrupt (its batch
// already done) does not fail the next batch; and an
// Interrupt during a batch on a paused server ends it promptly with failures.
func (s *suite) pipeline(t *testing.T, d driver.Driver) {
	pr, ok := d.(driver.Pipeliner)
	if !ok || !pr.Pipelines() {
		t.Skip("the driver gives no pipelines as configured")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pl, err := pr.NewPipeline(ctx)
	if err != nil {
		t.Fatalf("NewPipeline: %v", err)
	}
	defer func() {
		if err := pl.Close(); err != nil {
			t.Errorf("Pipeline.Close: %v", err)
		}
	}()
	type result struct {
		i     int
		value []byte
		err   error
	}
	run := func(ops []driver.PipelineOp) []result {
		var got []result
		pl.Run(ctx, ops, func(i int, v []byte, err error) {
			// The value is only valid during the call: copy it, as the engine reads it there.
			got = append(got, result{i, append([]byte(nil), v...), err})
		})
		return got
	}
	const n = 16
	var ops []driver.PipelineOp
	want := map[string][]byte{}
	for i := 0; i < n; i++ {
		k := s.key("pipe")
		v := pattern(100+i*37, uint64(i))
		want[k] = v
		// A write, then a read of it in the same batch, then a miss.
		ops = append(ops,
			driver.PipelineOp{Op: driver.PipelineWrite, Key: k, Value: v},
			driver.PipelineOp{Op: driver.PipelineRead, Key: k},
			driver.PipelineOp{Op: driver.PipelineRead, Key: s.key("pipe-miss")})
	}
	for round := 0; round < 2; round++ {
		calls := run(ops)
		got := make([]result, len(ops))
		seen := make([]bool, len(ops))
		for _, r := range calls {
			if r.i < 0 || r.i >= len(ops) || seen[r.i] {
				t.Fatalf("round %d: done called for operation %d, out of range or twice; want once per operation", round, r.i)
			}
			seen[r.i], got[r.i] = true, r
		}
		if len(calls) != len(ops) {
			t.Fatalf("round %d: done called %d times for %d operations; want once each", round, len(calls), len(ops))
		}
		for j, r := range got {
			op := ops[j]
			switch {
			case op.Op == driver.PipelineWrite && r.err != nil:
				t.Errorf("round %d: pipelined write of %q: %v", round, op.Key, r.err)
			case op.Op == driver.PipelineRead && want[op.Key] != nil:
				if r.err != nil || !equal(r.value, want[op.Key]) {
					t.Errorf("round %d: pipelined read of %q after a write in the same batch: %v, %s", round, op.Key, r.err, diff(r.value, want[op.Key]))
				}
			case op.Op == driver.PipelineRead && !errors.Is(r.err, driver.ErrNotFound):
				t.Errorf("round %d: pipelined read of the missing key %q: err = %v; want driver.ErrNotFound", round, op.Key, r.err)
			}
		}
		// The values must be what Read sees too.
		for k, v := range want {
			if got, err := read(d, k); err != nil || !equal(got, v) {
				t.Errorf("Read(%q) after a pipelined write: %v, %s", k, err, diff(got, v))
			}
		}
		// A stale interrupt, as the engine's watchdog may deliver just after a batch ended.
		pl.Interrupt()
	}
	if s.h.Pause == nil {
		return
	}
	resume, err := s.h.Pause()
	if err != nil {
		t.Fatalf("pause the server: %v", err)
	}
	defer resume()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	stop := context.AfterFunc(short, pl.Interrupt) // what the engine's watchdog does
	defer stop()
	start := time.Now()
	failed := 0
	pl.Run(short, ops[:3], func(i int, _ []byte, err error) {
		if err != nil {
			failed++
		}
	})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("an interrupted batch on a paused server took %v to return; want about its 300ms deadline", took)
	}
	if failed != 3 {
		t.Errorf("an interrupted batch on a paused server: %d of 3 operations failed; want all", failed)
	}
}
