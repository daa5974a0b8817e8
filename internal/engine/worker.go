package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// maxClosedLoopBackoff caps the pause after consecutive failures in closed loop. Without a
// schedule a worker facing a dead store would otherwise spin through millions of instant
// "connection refused" errors a second, burning the client's CPU and flooding the counters;
// open-loop workers need no backoff because the pacer already bounds them.
const maxClosedLoopBackoff = 100 * time.Millisecond

// keyArena is the size of the blocks keys are carved from, and maxKeyDigits the most
// digits a key index has (int64).
const (
	keyArena     = 4096
	maxKeyDigits = 20
)

// work is one worker's loop: take an intended start time, pick one operation of the
// class's mix, run it, record it. It returns when ctx ends or the pool shrank below its
// index. seed is the pool's seed for this start; with the class's series and the worker's
// index it makes the worker's random stream.
func (e *Engine) work(ctx context.Context, c *opClass, w *worker, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(c.series)<<32|uint64(id)))
	classShard := c.rec.Shard(id)
	slot := newOpSlot(e.runCtx, e.clock, nil)
	w.slot.Store(slot)
	e.dog.add(slot)
	defer e.dog.remove(slot)
	defer slot.close()
	var arena, keyBuf, valBuf []byte
	failures := 0
	var split lagSplit
	// The mix and the operations' shards are looked up again only when the generation
	// changes, so the loop does no lookup per operation.
	var (
		seen   *generation
		mix    []mixEntry
		shards []*stats.Shard
	)
	// A worker whose context was cancelled (its pool shrank or stopped) exits even while
	// the schedule is behind and slots are overdue, so it never runs beside its successor.
	for int64(id) < c.target.Load() && ctx.Err() == nil {
		intended, start, err := c.pacer.Acquire(ctx)
		if err != nil {
			return
		}
		g := e.gen.Load()
		if g != seen {
			// A worker's first operation comes here, so a pool's first one is noted
			// without a check per operation.
			c.firstOp.CompareAndSwap(0, start)
			seen = g
			mix, shards = e.classMix(g, c.name, id, shards[:0])
		}
		if len(mix) == 0 {
			continue // the class left the workload; the pool is being stopped
		}
		if late := start - intended; g.dropLate > 0 && late > g.dropLate {
			// catchUp=drop: too late to be worth sending; counted, never silent.
			classShard.Drop(time.Duration(late))
			continue
		}
		pick := 0
		if len(mix) > 1 {
			u := rng.Float64()
			for pick < len(mix)-1 && u >= mix[pick].upTo {
				pick++
			}
		}
		m := &mix[pick]
		opShard := shards[pick]
		rec := recording{class: classShard, op: opShard}

		idx := g.keys.Next(rng, m.wop)
		var key string
		if uint64(idx) < uint64(len(g.keyNames)) {
			// A small keyspace's keys were made once for the generation (keyBuf only
			// reads them).
			key = g.keyNames[idx]
			keyBuf = unsafe.Slice(unsafe.StringData(key), len(key))
		} else {
			// The key is carved from an append-only arena rather than allocated: its
			// bytes are never written again, so it is an ordinary immutable string that
			// a driver may keep (a kept key keeps its arena alive), and a worker
			// allocates once per keyArena bytes of keys instead of once per operation.
			if cap(arena)-len(arena) < len(g.w.KeyPrefix)+maxKeyDigits {
				arena = make([]byte, 0, max(keyArena, 4*(len(g.w.KeyPrefix)+maxKeyDigits)))
			}
			k0 := len(arena)
			arena = workload.AppendKey(arena, g.w.KeyPrefix, idx)
			keyBuf = arena[k0:len(arena):len(arena)]
			key = unsafe.String(unsafe.SliceData(keyBuf), len(keyBuf))
		}

		var value []byte
		var seq, expect uint64
		switch {
		case m.kind == driver.KindWrite:
			value = g.values.Pick(rng)
			if g.tracker != nil {
				seq = g.tracker.Seq()
				valBuf = workload.EncodeValue(valBuf[:0], keyBuf, seq, value)
				value = valBuf
			}
		case m.idx == opRead && g.tracker != nil:
			expect = g.tracker.Expect(idx)
		}

		oc := slot.begin(start, g.w.OpTimeout)
		got, err := e.call(oc, m, key, value)
		end := c.pacer.Now()
		timedOut := oc.end()
		resp, svc := time.Duration(end-intended), time.Duration(end-start)
		own := split.own(intended, start)
		split.done(start, end)

		switch {
		case err == nil:
			failures = 0
			switch {
			case g.tracker == nil:
				// The common case, written out: a call through recording costs a few
				// nanoseconds per operation (it does not inline).
				classShard.SuccessLag(resp, svc, own)
				if opShard != nil {
					opShard.SuccessLag(resp, svc, own)
				}
			case m.kind == driver.KindWrite:
				rec.success(resp, svc, own)
				g.tracker.Ack(idx, seq)
			case m.idx != opRead:
				// Only Driver.Read returns the value as written; what another read-like
				// operation returns (a range, a count) is not checked.
				rec.success(resp, svc, own)
			default:
				if bad, ok := verdict(g.tracker, keyBuf, got, expect); ok {
					rec.successInvalid(resp, svc, own, bad)
				} else {
					rec.success(resp, svc, own)
				}
			}
		case errors.Is(err, driver.ErrNotFound):
			failures = 0
			if m.idx == opRead && g.tracker != nil && g.tracker.Classify(expect, false, 0) == workload.ResultLost {
				rec.missInvalid(resp, svc, own, stats.Lost)
			} else {
				classShard.MissLag(resp, svc, own)
				if opShard != nil {
					opShard.MissLag(resp, svc, own)
				}
			}
		case e.runCtx.Err() != nil:
			// A hard stop cancelled the operation: not the store's failure.
			return
		default:
			class := driver.Classify(err)
			if timedOut {
				class = driver.ClassTimeout
			}
			rec.failure(class, err)
			if c.pacer.Rate() == 0 {
				failures++
				e.backoff(ctx, failures)
			}
		}
	}
}

// recording records one operation into its class's series and, when the class mixes
// several operations, into the operation's own series too. The worker loop writes the
// common outcomes (success, miss without validation) out instead.
type recording struct {
	class, op *stats.Shard // op is nil for a class of one operation
}

func (r recording) success(resp, svc, own time.Duration) {
	r.class.SuccessLag(resp, svc, own)
	if r.op != nil {
		r.op.SuccessLag(resp, svc, own)
	}
}

func (r recording) successInvalid(resp, svc, own time.Duration, v stats.Validation) {
	r.class.SuccessInvalid(resp, svc, own, v)
	if r.op != nil {
		r.op.SuccessInvalid(resp, svc, own, v)
	}
}

func (r recording) missInvalid(resp, svc, own time.Duration, v stats.Validation) {
	r.class.MissInvalid(resp, svc, own, v)
	if r.op != nil {
		r.op.MissInvalid(resp, svc, own, v)
	}
}

func (r recording) failure(class driver.Class, err error) {
	r.class.FailureErr(class, err)
	if r.op != nil {
		r.op.FailureErr(class, err)
	}
}

// lagSplit divides an operation's start lag into the wait for a worker busy in the store
// and the generator's own part, from what the worker that took it did before. Workers
// claim slots in order, whichever reaches the pacer first, so a slot still unclaimed after
// its time waited for a worker, and the time it waited is taken from the claiming worker's
// last cycle: in the store from prevStart to prevEnd (the store's), then free until start
// (bookkeeping, the pacer's wake-up, scheduling, a busy CPU: the generator's own). A slot
// already overdue when that cycle began waited in a backlog built before it, which is
// shared out as that cycle was: a backlog behind a stall drains through cycles spent in
// the store, one behind a CPU-bound generator through cycles spent outside it. Exact per
// operation, so a stall far shorter than a second is told apart from the generator's own
// delay, which the per-second averages of workers in the store cannot do once a pool has
// grown; and it costs a few arithmetic operations on values the worker already has.
type lagSplit struct {
	prevStart, prevEnd int64 // the worker's previous operation; 0 before its first
}

// own returns the generator's own part of the start lag of an operation intended at
// intended that started at start. A worker's first operation has no cycle before it, and
// its lag counts as waiting for a busy worker: a new worker joins a pool whose workers
// were all busy.
func (l *lagSplit) own(intended, start int64) time.Duration {
	if start <= intended || l.prevEnd == 0 {
		return 0
	}
	gap := start - max(intended, l.prevEnd, l.prevStart) // free, after the previous operation
	if gap < 0 {
		gap = 0
	}
	own := gap
	if old := min(l.prevStart, start) - intended; old > 0 {
		if cycle := start - l.prevStart; cycle > 0 {
			own += int64(float64(old) * float64(max(start-l.prevEnd, 0)) / float64(cycle))
		}
	}
	return time.Duration(own)
}

// done notes the worker's operation from start to end as the cycle before its next.
func (l *lagSplit) done(start, end int64) { l.prevStart, l.prevEnd = start, end }

// verdict checks a value read back and returns what is wrong with it, if anything.
// Corruption and values of another key always count; a value without a header counts as
// corrupt only for a key this run wrote (it may come from a run without validation, or
// from NDBench).
func verdict(t *workload.Tracker, key, value []byte, expect uint64) (stats.Validation, bool) {
	check, seq := workload.CheckValue(key, value)
	switch check {
	case workload.CheckOK:
		if t.Classify(expect, true, seq) == workload.ResultStale {
			return stats.Stale, true
		}
	case workload.CheckCorrupt:
		return stats.Corrupt, true
	case workload.CheckWrongKey:
		return stats.WrongKey, true
	case workload.CheckNoHeader:
		if expect != 0 {
			return stats.Corrupt, true
		}
	}
	return 0, false
}

// call runs one driver operation. A driver that panics fails that operation (class
// other) instead of killing the worker and the run with it.
func (e *Engine) call(ctx context.Context, m *mixEntry, key string, value []byte) (got []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e.panics.Add(1) == 1 {
				e.log.Error("driver panicked; the operation counts as failed (further panics are counted, not logged)",
					"op", m.name, "panic", fmt.Sprint(r))
			}
			err = fmt.Errorf("driver panicked: %v", r)
		}
	}()
	switch m.idx {
	case opRead:
		return e.drv.Read(ctx, key)
	case opWrite:
		return nil, e.drv.Write(ctx, key, value)
	}
	return e.operator.Do(ctx, m.idx, key, value)
}

// backoff pauses a closed-loop worker after consecutive failures: 1 ms, doubling, capped.
func (e *Engine) backoff(ctx context.Context, failures int) {
	d := min(time.Millisecond<<min(failures-1, 10), maxClosedLoopBackoff)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// DriverPanics returns how many driver calls panicked.
func (e *Engine) DriverPanics() int64 { return e.panics.Load() }
