package engine

import (
	"context"
	"fmt"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
)

// batch is one pipelining worker's state: the operations of the batch in flight and their
// buffers, reused from batch to batch so the loop allocates nothing per operation.
type batch struct {
	p     *opPath
	start int64 // the batch's operations start together
	oc    *opCtx
	ops   []driver.PipelineOp
	meta  []operation // the operations of ops, as the path made them
	// answered marks the operations completed; vals holds, per position, the encoded value
	// of a validated write.
	answered []bool
	vals     [][]byte
	done     int // operations completed
	failed   int // of them, failures
	// last is when the last operation completed: the batch's end, so that the loop reads
	// the clock once per operation fewer.
	last    int64
	stopped bool // a hard stop cancelled an operation
}

// workPipelined is the worker loop for drivers that give each worker a connection of its
// own (driver.Pipeliner): it takes the next intended start time, adds every other operation
// already due (up to workload.pipeline), sends them as one batch, and records each as its
// reply arrives. With workload.pipeline=1 it is the plain loop on a dedicated connection.
//
// Open-loop timing stays exact: each operation keeps its own intended start time, and its
// response time runs from there to the moment its reply was read.
func (e *Engine) workPipelined(ctx context.Context, c *opClass, w *worker, id int, seed uint64) {
	var pl driver.Pipeline
	for pl == nil {
		np, err := e.pipeliner.NewPipeline(ctx)
		if err == nil {
			pl = np
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
	p := e.newWorkerPath(c, id, seed, pl.Interrupt)
	defer p.close()
	w.slot.Store(p.slot)

	b := &batch{p: p}
	done := b.complete
	for {
		intended, start, ok := p.take(ctx, c, id)
		if !ok {
			return
		}
		depth := max(p.g.w.Pipeline, 1)
		b.reset(start)
		var solo operation
		hasSolo := false
		for more := true; more; {
			if solo, hasSolo = b.add(intended); hasSolo {
				// An operation a pipeline cannot carry ends the batch and runs after it.
				break
			}
			if len(b.ops) == depth {
				break
			}
			intended, more = b.next(c.pacer, start)
		}
		failed := false
		if len(b.ops) > 0 {
			b.oc = p.slot.begin(start, p.g.w.OpTimeout)
			e.runBatch(pl, b, done)
			b.oc.end()
			// The worker was in the store until its batch's last reply: the operations due
			// meanwhile waited for it. (Every operation was completed by now, the last
			// one reading the clock at its reply; recording it is the worker's own time.)
			end := b.last
			p.split.done(start, end)
			p.spent(start, end, len(b.ops))
			if b.stopped || e.runCtx.Err() != nil {
				return
			}
			failed = b.failed == len(b.ops)
		}
		if hasSolo {
			// It starts once the batch before it is answered.
			if len(b.ops) > 0 {
				start = p.clock.Now()
			}
			out := p.do(&solo, start)
			if out == outStopped {
				return
			}
			failed = out == outFailed && (len(b.ops) == 0 || failed)
		}
		p.cycled(ctx, c, failed)
	}
}

// pipelined says whether a pipeline carries operation m: Read, Write (an insert is a
// Write of a new key, unless the driver inserts otherwise: driver.Inserter) and the
// driver's declared operations. The other built-in operations (delete, rmw, scan) call
// the driver's own methods on the plain path.
func (e *Engine) pipelined(m *mixEntry) bool {
	return m.idx > opDelete || m.idx == opInsert && e.inserter == nil
}

// next claims the next operation already due at start for the batch, skipping (and
// counting) those catchUp=drop says are too late; false when none is due.
func (b *batch) next(p *pacer.Pacer, start int64) (int64, bool) {
	for {
		in, ok := p.TryAcquire(start)
		if !ok {
			return 0, false
		}
		if !b.p.dropped(in, start) {
			return in, true
		}
	}
}

// classMix returns the mix of class name in g, each entry's own shard (nil for a class of
// one operation) appended to shards, and each entry's rmw parts' shards appended to parts.
func (e *Engine) classMix(g *generation, name string, id int, shards []*stats.Shard, parts [][2]*stats.Shard) ([]mixEntry, []*stats.Shard, [][2]*stats.Shard) {
	cg := g.class(name)
	if cg == nil {
		return nil, shards, parts
	}
	for i := range cg.mix {
		m := &cg.mix[i]
		var sh *stats.Shard
		if m.own {
			sh = e.coll.Recorder(m.series).Shard(id)
		}
		shards = append(shards, sh)
		var ps [2]*stats.Shard
		if m.idx == opRMW {
			ps = [2]*stats.Shard{e.coll.Recorder(m.parts[0]).Shard(id), e.coll.Recorder(m.parts[1]).Shard(id)}
		}
		parts = append(parts, ps)
	}
	return cg.mix, shards, parts
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
	for i := range b.ops {
		if !b.answered[i] {
			b.complete(i, nil, err)
		}
	}
}

func (b *batch) reset(start int64) {
	b.start = start
	b.ops, b.meta, b.answered = b.ops[:0], b.meta[:0], b.answered[:0]
	b.done, b.failed, b.stopped = 0, 0, false
}

// add appends an operation of the class's mix intended at intended, made by the path with
// its value in the buffer of its position. Its key is the path's (an immutable string), so
// a driver may keep it as it may with Read. An operation no pipeline carries (pipelined)
// is not appended but returned, for the plain path; its value stays in the buffer of the
// position it would have taken, which no operation of the batch uses.
func (b *batch) add(intended int64) (solo operation, isSolo bool) {
	i := len(b.ops)
	if i == len(b.vals) {
		b.vals = append(b.vals, nil)
	}
	b.meta = append(b.meta, b.p.next(intended, &b.vals[i]))
	o := &b.meta[i]
	if !b.p.e.pipelined(o.m) {
		b.meta = b.meta[:i]
		return *o, true
	}
	op := o.m.idx
	if op == opInsert {
		op = driver.PipelineWrite
	}
	b.ops = append(b.ops, driver.PipelineOp{Op: op, Key: o.key, Value: o.value})
	b.answered = append(b.answered, false)
	return operation{}, false
}

// complete records operation i of the batch; the driver calls it as the reply arrives.
func (b *batch) complete(i int, got []byte, err error) {
	if i < 0 || i >= len(b.ops) || b.answered[i] {
		// A driver that repeats an operation breaks the contract; count it once.
		return
	}
	b.answered[i] = true
	b.done++
	b.last = b.p.clock.Now()
	switch b.p.done(&b.meta[i], b.start, b.last, got, err, b.oc.status() == opTimedOut) {
	case outStopped:
		b.stopped = true
	case outFailed:
		b.failed++
	}
}
