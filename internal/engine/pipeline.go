package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// pipeOp is what the engine keeps about one operation of a batch until its reply.
type pipeOp struct {
	intended int64
	m        *mixEntry
	opShard  *stats.Shard
	idx      int64 // the key's index
	done     bool  // completed
	k0, k1   int   // the key's bytes in batch.keys
	seq      uint64
	expect   uint64
}

// batch is one pipelining worker's state: the operations of the batch in flight and their
// buffers, reused from batch to batch so the loop allocates nothing per operation.
type batch struct {
	e          *Engine
	g          *generation
	classShard *stats.Shard
	now        func() int64
	start      int64
	// split is the worker's previous batch, for the start lag's split: the batch's
	// operations start together at start.
	split lagSplit
	oc    *opCtx
	ops   []driver.PipelineOp
	meta  []pipeOp
	// keys holds the batch's keys back to back (key i is keys[meta[i].k0:meta[i].k1]);
	// they become one string per batch, so a driver may keep a key as it may with Read.
	keys    []byte
	vals    [][]byte // validation: the encoded value per position of the batch
	done    int      // operations completed
	failed  int      // of them, failures
	stopped bool     // a hard stop cancelled an operation
}

// workPipelined is the worker loop for drivers that give each worker a connection of its
// own (driver.Pipeliner): it takes the next intended start time, adds every other operation
// already due (up to workload.pipeline), sends them as one batch, and records each as its
// reply arrives. With workload.pipeline=1 it is the plain loop on a dedicated connection.
//
// Open-loop timing stays exact: each operation keeps its own intended start time, and its
// response time runs from there to the moment its reply was read.
func (e *Engine) workPipelined(ctx context.Context, c *opClass, w *worker, id int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(c.series)<<32|uint64(id)))
	var pl driver.Pipeline
	for pl == nil {
		p, err := e.pipeliner.NewPipeline(ctx)
		if err == nil {
			pl = p
			break
		}
		if ctx.Err() != nil {
			return
		}
		// Counted like any failed operation, then retried: a store that is down at the
		// start must not end the worker.
		c.rec.Shard(id).FailureErr(driver.Classify(err), fmt.Errorf("open pipeline: %w", err))
		e.backoff(ctx, 8)
	}
	defer func() { _ = pl.Close() }()
	slot := newOpSlot(e.runCtx, e.clock, pl.Interrupt)
	w.slot.Store(slot)
	e.dog.add(slot)
	defer e.dog.remove(slot)
	defer slot.close()

	b := &batch{e: e, classShard: c.rec.Shard(id), now: c.pacer.Now}
	done := b.complete
	failures := 0
	var (
		seen   *generation
		mix    []mixEntry
		shards []*stats.Shard
	)
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
			b.classShard.Drop(time.Duration(late)) // catchUp=drop, as in work
			continue
		}
		depth := max(g.w.Pipeline, 1)
		b.reset(g, start)
		for more := true; more; {
			b.add(rng, mix, shards, intended)
			if len(b.ops) == depth {
				break
			}
			intended, more = b.next(c.pacer, start)
		}
		b.seal()
		b.oc = slot.begin(start, g.w.OpTimeout)
		e.runBatch(pl, b, done)
		b.oc.end()
		// The worker was in the store until its batch's last reply: the operations due
		// meanwhile waited for it.
		b.split.done(start, c.pacer.Now())
		switch {
		case b.stopped || e.runCtx.Err() != nil:
			return
		case b.failed == len(b.ops) && c.pacer.Rate() == 0:
			failures++
			e.backoff(ctx, failures)
		case b.failed < len(b.ops):
			failures = 0
		}
	}
}

// next claims the next operation already due at start for the batch, skipping (and
// counting) those catchUp=drop says are too late; false when none is due.
func (b *batch) next(p *pacer.Pacer, start int64) (int64, bool) {
	for {
		in, ok := p.TryAcquire(start)
		if !ok {
			return 0, false
		}
		if late := start - in; b.g.dropLate > 0 && late > b.g.dropLate {
			b.classShard.Drop(time.Duration(late))
			continue
		}
		return in, true
	}
}

// classMix returns the mix of class name in g and each entry's own shard (nil for a class
// of one operation), appended to shards.
func (e *Engine) classMix(g *generation, name string, id int, shards []*stats.Shard) ([]mixEntry, []*stats.Shard) {
	cg := g.class(name)
	if cg == nil {
		return nil, shards
	}
	for i := range cg.mix {
		var sh *stats.Shard
		if cg.mix[i].own {
			sh = e.coll.Recorder(cg.mix[i].series).Shard(id)
		}
		shards = append(shards, sh)
	}
	return cg.mix, shards
}

// runBatch runs one batch; a driver that panics fails the operations it did not complete.
func (e *Engine) runBatch(pl driver.Pipeline, b *batch, done func(int, []byte, error)) {
	defer func() {
		if r := recover(); r != nil {
			if e.panics.Add(1) == 1 {
				e.log.Error("driver panicked; the operations count as failed (further panics are counted, not logged)",
					"panic", fmt.Sprint(r))
			}
			b.failRest(fmt.Errorf("driver panicked: %v", r))
		}
	}()
	pl.Run(b.oc, b.ops, done)
	if b.done < len(b.ops) {
		b.failRest(fmt.Errorf("driver completed %d of %d pipelined operations", b.done, len(b.ops)))
	}
}

// failRest fails the operations of the batch not completed yet.
func (b *batch) failRest(err error) {
	for i := range b.meta {
		if !b.meta[i].done {
			b.complete(i, nil, err)
		}
	}
}

func (b *batch) reset(g *generation, start int64) {
	b.g, b.start = g, start
	b.ops, b.meta, b.keys = b.ops[:0], b.meta[:0], b.keys[:0]
	b.done, b.failed, b.stopped = 0, 0, false
}

// add appends an operation intended at intended: it picks the operation from the mix and
// generates its key and value into the buffers of its position.
func (b *batch) add(rng *rand.Rand, mix []mixEntry, shards []*stats.Shard, intended int64) {
	g := b.g
	pick := 0
	if len(mix) > 1 {
		u := rng.Float64()
		for pick < len(mix)-1 && u >= mix[pick].upTo {
			pick++
		}
	}
	m := &mix[pick]
	i := len(b.ops)
	if i == len(b.vals) {
		b.vals = append(b.vals, nil)
	}
	idx := g.keys.Next(rng, m.wop)
	k0 := len(b.keys)
	b.keys = workload.AppendKey(b.keys, g.w.KeyPrefix, idx)
	op := pipeOp{intended: intended, m: m, opShard: shards[pick], idx: idx, k0: k0, k1: len(b.keys)}
	var value []byte
	switch {
	case m.kind == driver.KindWrite:
		value = g.values.Pick(rng)
		if g.tracker != nil {
			op.seq = g.tracker.Seq()
			b.vals[i] = workload.EncodeValue(b.vals[i][:0], b.keys[k0:], op.seq, value)
			value = b.vals[i]
		}
	case m.idx == opRead && g.tracker != nil:
		op.expect = g.tracker.Expect(idx)
	}
	b.ops = append(b.ops, driver.PipelineOp{Op: m.idx, Value: value})
	b.meta = append(b.meta, op)
}

// seal gives the batch's operations their keys: one allocation for the whole batch.
func (b *batch) seal() {
	all := string(b.keys)
	for i := range b.ops {
		b.ops[i].Key = all[b.meta[i].k0:b.meta[i].k1]
	}
}

// complete records operation i of the batch; the driver calls it as the reply arrives.
func (b *batch) complete(i int, got []byte, err error) {
	if i < 0 || i >= len(b.ops) || b.meta[i].done {
		// A driver that repeats an operation breaks the contract; count it once.
		return
	}
	b.meta[i].done = true
	b.done++
	end := b.now()
	op := &b.meta[i]
	resp, svc := time.Duration(end-op.intended), time.Duration(end-b.start)
	own := b.split.own(op.intended, b.start)
	rec := recording{class: b.classShard, op: op.opShard}
	g, m := b.g, op.m
	switch {
	case err == nil:
		switch {
		case m.kind == driver.KindWrite && g.tracker != nil:
			rec.success(resp, svc, own)
			g.tracker.Ack(op.idx, op.seq)
		case m.idx == opRead && g.tracker != nil:
			if bad, ok := verdict(g.tracker, b.keys[op.k0:op.k1], got, op.expect); ok {
				rec.successInvalid(resp, svc, own, bad)
			} else {
				rec.success(resp, svc, own)
			}
		default:
			rec.success(resp, svc, own)
		}
	case errors.Is(err, driver.ErrNotFound):
		if m.idx == opRead && g.tracker != nil && g.tracker.Classify(op.expect, false, 0) == workload.ResultLost {
			rec.missInvalid(resp, svc, own, stats.Lost)
		} else {
			b.classShard.MissLag(resp, svc, own)
			if op.opShard != nil {
				op.opShard.MissLag(resp, svc, own)
			}
		}
	case b.e.runCtx.Err() != nil:
		b.stopped = true
	default:
		b.failed++
		class := driver.Classify(err)
		if b.oc.status() == opTimedOut {
			class = driver.ClassTimeout
		}
		rec.failure(class, err)
	}
}
