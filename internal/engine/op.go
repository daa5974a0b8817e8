package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// keyArena is the size of the blocks keys are carved from, and maxKeyDigits the most
// digits a key index has (int64).
const (
	keyArena     = 4096
	maxKeyDigits = 20
)

// outcome is what became of one operation, as opPath.done judged and recorded it.
type outcome uint8

const (
	// outOK: the store answered (a read whose value failed validation included).
	outOK outcome = iota
	// outMiss: ErrNotFound.
	outMiss
	// outFailed: a failure, counted by error class.
	outFailed
	// outStopped: a hard stop cancelled the operation; not the store's failure, not
	// recorded.
	outStopped
)

// operation is one operation on its way through an opPath, from next or build to done.
type operation struct {
	m        *mixEntry
	class    *stats.Shard     // the series of its class (or backfill, or an rmw's part)
	opShard  *stats.Shard     // the operation's own series; nil for a class of one operation
	parts    *[2]*stats.Shard // an rmw's: the series of its read and of its write
	intended int64            // its intended start time
	idx      int64            // its key's index in the keyspace
	key      string
	value    []byte // a write's value (encoded when validating); nil otherwise
	seq      uint64 // validation: the sequence a write's value carries
	expect   uint64 // validation: what a read of the key expects
	n        int    // a scan's length
}

// opPath is a worker's one path for operations. Every loop of the engine drives its
// operations through it: plain workers (work), pipelining workers (workPipelined), and
// backfill's writers and verifiers. A loop takes intended start times (claim, or backfill's
// own schedule), makes operations (next picks one of the class's mix, build a given one),
// runs them under an operation context from slot (do for one call; a batch through the
// driver's pipeline or bulk write shares one context), and hands each result to done,
// which classifies and records it. What an operation measures, and how an outcome is
// counted and validated, is therefore decided here once.
type opPath struct {
	e     *Engine
	clock pacer.Clock
	slot  *opSlot
	rng   *rand.Rand
	// src is rng's source on a worker's path, and stream the pool's part of its seed:
	// while paced (the class's opClass.paced) is set, next reseeds src from the
	// operation's intended start time, so an operation's key and value follow its slot
	// in the schedule, not which worker happened to claim it (see slotSeed). nil on
	// backfill's paths, which keep the worker's stream.
	src    *rand.PCG
	stream uint64
	paced  *atomic.Bool
	class  *stats.Shard // this worker's shard of the class's (or backfill's) series
	// split is the worker's previous cycle, for the start lag's split; the loop notes each
	// cycle (an operation, a batch, a bulk write) after recording its operations.
	split lagSplit
	// g is the generation operations are made from; mix is its class's mix and shards the
	// mix entries' own shards (claim keeps the three current).
	g      *generation
	mix    []mixEntry
	shards []*stats.Shard
	parts  [][2]*stats.Shard // per mix entry, an rmw's parts' shards
	// arena is the block keys are carved from (see key); vbuf holds the encoded value of
	// the plain loop's operation in flight.
	arena, vbuf []byte
	failures    int // consecutive failed cycles (see cycled)
	// acc is what the worker's operations took (spentOps packing), published to the
	// slot's spent counter every few operations: unpub operations since pubAt.
	acc   uint64
	unpub int
	pubAt int64
	// top and topPrev are the longest operation of the worker's current and previous
	// spans of spentSpan, the current one begun at topAt: what it publishes as the slot's
	// longest.
	top, topPrev, topAt int64
}

// What a worker's operations took is one counter: the sum of their service times in
// nanoseconds shifted by spentShift, plus their count. It only grows (modulo 2^64), so
// the elastic check takes the difference of two readings and splits it: the count of a
// check period stays far below 2^spentShift (16M operations per worker in 50 ms), and
// the time below 2^40 ns (18 minutes, more than the longest op timeout).
const (
	spentShift = 24
	spentMask  = 1<<spentShift - 1
	// A worker publishes its counter after spentBatch operations, or at once when a
	// millisecond has passed since it last did: a fast worker pays an atomic store per
	// batch, not per operation, and a slow store's every operation is seen.
	spentBatch = 64
	spentEvery = int64(time.Millisecond)
	// spentSpan is how long the longest operation a worker publishes is remembered: one
	// to two spans.
	spentSpan = int64(time.Second)
)

// spent notes n operations that held the worker from start to end (one, or a batch).
func (p *opPath) spent(start, end int64, n int) {
	d := max(end-start, 0)
	p.acc += uint64(d)<<spentShift + uint64(n)
	if end-p.topAt >= spentSpan {
		p.topPrev, p.top, p.topAt = p.top, 0, end
	}
	p.top = max(p.top, d)
	if p.unpub++; p.unpub >= spentBatch || end-p.pubAt >= spentEvery {
		p.slot.spent.Store(p.acc)
		p.slot.longest.Store(max(p.top, p.topPrev))
		p.unpub, p.pubAt = 0, end
	}
}

// newOpPath returns a path whose operations are recorded in class and whose contexts the
// watchdog watches; interrupt, when set, unblocks the worker's I/O (see opSlot). The
// worker calls close when it exits.
func (e *Engine) newOpPath(rng *rand.Rand, class *stats.Shard, interrupt func()) *opPath {
	p := &opPath{e: e, clock: e.clock, rng: rng, class: class, slot: newOpSlot(e.runCtx, e.clock, interrupt)}
	e.dog.add(p.slot)
	return p
}

// newWorkerPath returns the path of worker id of class c's pool, started with seed: its
// own stream, from the seed, the class and the worker, draws what a closed loop's
// operations need; an open loop's draw from their slots' streams (see next).
func (e *Engine) newWorkerPath(c *opClass, id int, seed uint64, interrupt func()) *opPath {
	src := rand.NewPCG(seed, uint64(c.series)<<32|uint64(id))
	p := e.newOpPath(rand.New(src), c.rec.Shard(id), interrupt)
	p.src, p.paced = src, &c.paced
	p.stream = seed ^ uint64(c.series)<<56
	return p
}

// slotSeed spreads an intended start time over 64 bits (SplitMix64's finalizer), so that
// the streams of neighbouring slots, nanoseconds apart, start far apart: the PCG seeded
// with it then draws as an unbroken stream would.
func slotSeed(intended int64) uint64 {
	z := uint64(intended) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (p *opPath) close() {
	p.slot.close()
	p.e.dog.remove(p.slot)
}

// take waits for the next intended start time of class c's schedule in which worker id
// runs an operation: a time is skipped when the class left the workload (its pool is
// being stopped) or catchUp=drop finds it too late. It returns false when the worker is
// to exit: its context was cancelled (its pool shrank or stopped), which it obeys even
// while the schedule is behind and slots are overdue, so it never runs beside its
// successor.
func (p *opPath) take(ctx context.Context, c *opClass, id int) (intended, start int64, ok bool) {
	for int64(id) < c.target.Load() && ctx.Err() == nil {
		intended, start, err := c.pacer.Acquire(ctx)
		if err != nil {
			return 0, 0, false
		}
		// The fence is checked inline (one atomic load per operation); only a slot past
		// it pays for the call that holds the worker.
		if f := p.e.fence.Load(); f != 0 && start >= f {
			p.holdAtFence(ctx)
			continue
		}
		if g := p.e.gen.Load(); g != p.g {
			// A worker's first operation comes here, so a pool's first one is noted
			// without a check per operation; the mix and shards are looked up once per
			// generation.
			c.firstOp.CompareAndSwap(0, start)
			p.g = g
			p.mix, p.shards, p.parts = p.e.classMix(g, c.name, id, p.shards[:0], p.parts[:0])
		}
		// Under catchUp=burst (dropLate 0) no operation is dropped: no call per operation.
		if len(p.mix) > 0 && (p.g.dropLate == 0 || !p.dropped(intended, start)) {
			return intended, start, true
		}
	}
	return 0, 0, false
}

// fencePoll is how often a worker held by the fence (Engine.SendUntil) looks whether it
// moved.
const fencePoll = 20 * time.Millisecond

// holdAtFence is for a slot past the engine's fence, which is dropped unsent: the worker
// waits until the fence is lifted or moved past the clock, or ctx ends, so that it does
// not run through the slots the schedule has overdue. It polls on the engine's clock, so
// a held worker waits on one timer like any other (Engine.Waiters) and a test on a
// simulated clock steps it: on a real-time ticker it waited outside the simulated clock,
// which then could not be stepped past a paused node's resume.
func (p *opPath) holdAtFence(ctx context.Context) {
	for {
		if f := p.e.fence.Load(); f == 0 || p.clock.Now() < f {
			return
		}
		if clock.Sleep(ctx, p.e.timer, fencePoll) != nil {
			return
		}
	}
}

// cycled notes whether a worker's cycle (an operation or a batch) failed entirely. In
// closed loop consecutive failed cycles pause the worker (backoff): without a schedule a
// worker facing a dead store would otherwise spin through instant failures.
func (p *opPath) cycled(ctx context.Context, c *opClass, failed bool) {
	if !failed {
		p.failures = 0
		return
	}
	p.failed(ctx, c)
}

func (p *opPath) failed(ctx context.Context, c *opClass) {
	if c.pacer.Rate() == 0 {
		p.failures++
		p.e.backoff(ctx, p.failures)
	}
}

// dropped reports whether catchUp=drop skips an operation intended at intended that
// would start at start, and counts it if so: too late to be worth sending, never silent.
func (p *opPath) dropped(intended, start int64) bool {
	if late := start - intended; p.g.dropLate > 0 && late > p.g.dropLate {
		p.class.Drop(time.Duration(late))
		return true
	}
	return false
}

// next returns an operation of the class's mix, picked by weight, intended at intended;
// vbuf holds its value when a validated write encodes one.
func (p *opPath) next(intended int64, vbuf *[]byte) operation {
	// On a schedule each slot's intended time is its own, so the slot alone decides what
	// the operation draws: a run on simulated time then does the same whichever worker
	// the scheduler let claim each slot. A closed loop's intended times are its workers'
	// clock readings, which coincide on a simulated clock, so there each worker keeps
	// its own stream.
	if p.src != nil && p.paced.Load() {
		p.src.Seed(p.stream, slotSeed(intended))
	}
	pick := 0
	if len(p.mix) > 1 {
		u := p.rng.Float64()
		for pick < len(p.mix)-1 && u >= p.mix[pick].upTo {
			pick++
		}
	}
	m := &p.mix[pick]
	var idx int64
	if m.idx == opInsert {
		// A key beyond the keyspace, claimed once by one worker: the keyspace grows.
		idx = p.e.inserts.claim()
	} else {
		idx = p.g.keys.Next(p.rng, m.wop)
	}
	o := p.build(m, p.shards[pick], idx, intended, vbuf)
	if m.idx == opRMW {
		o.parts = &p.parts[pick]
	}
	return o
}

// build returns operation m (recorded also in opShard unless nil) on the key of index
// idx, intended at intended: a write (and an rmw's write) gets a value from the pool,
// encoded into vbuf when validating; a validated read (and an rmw's read) notes what it
// expects; a validated delete is noted as issued, since the store may apply it from now
// on. The operation is returned by value: filled in the caller's frame, it costs no
// write barrier per field while the garbage collector marks.
func (p *opPath) build(m *mixEntry, opShard *stats.Shard, idx, intended int64, vbuf *[]byte) operation {
	g := p.g
	var o operation
	o.m, o.class, o.opShard = m, p.class, opShard
	o.intended, o.idx, o.key = intended, idx, p.key(idx)
	if m.kind == driver.KindWrite || m.kind == driver.KindRMW || m.kind == driver.KindInsert {
		o.value = g.values.Pick(p.rng)
		if g.tracker != nil {
			o.seq = g.tracker.Seq()
			*vbuf = workload.EncodeValue((*vbuf)[:0], keyBytes(o.key), o.seq, o.value)
			o.value = *vbuf
		}
	}
	if m.idx == opScan {
		o.n = 1 + p.rng.IntN(scanLengthMax)
	}
	if g.tracker != nil {
		switch {
		case m.idx == opRead || m.idx == opRMW:
			o.expect = g.tracker.Expect(idx)
		case m.kind == driver.KindDelete:
			g.tracker.Deleting(idx)
		}
	}
	return o
}

// key returns the key of index idx. A small keyspace's keys were made once for the
// generation. Others are carved from an append-only arena rather than allocated: their
// bytes are never written again, so each is an ordinary immutable string that a driver
// may keep (a kept key keeps its arena alive), and a worker allocates once per keyArena
// bytes of keys instead of once per operation.
func (p *opPath) key(idx int64) string {
	if uint64(idx) < uint64(len(p.g.keyNames)) {
		return p.g.keyNames[idx]
	}
	return p.carve(idx)
}

func (p *opPath) carve(idx int64) string {
	prefix := p.g.w.KeyPrefix
	if cap(p.arena)-len(p.arena) < len(prefix)+maxKeyDigits {
		p.arena = make([]byte, 0, max(keyArena, 4*(len(prefix)+maxKeyDigits)))
	}
	k0 := len(p.arena)
	p.arena = workload.AppendKey(p.arena, prefix, idx)
	return unsafe.String(unsafe.SliceData(p.arena[k0:]), len(p.arena)-k0)
}

// keyBytes returns a key's bytes without a copy, for the codec, which only reads them.
func keyBytes(key string) []byte { return unsafe.Slice(unsafe.StringData(key), len(key)) }

// do runs o, which starts at start, as one call under an operation context of its own,
// records it and notes the cycle.
func (p *opPath) do(o *operation, start int64) outcome {
	if o.m.idx == opRMW {
		return p.rmw(o, start)
	}
	oc := p.slot.begin(start, p.g.w.OpTimeout)
	got, err := p.e.call(oc, o.m, o.key, o.value, o.n)
	end := p.clock.Now()
	timedOut := oc.end()
	out := p.done(o, start, end, got, err, timedOut)
	p.split.done(start, end)
	p.spent(start, end, 1)
	return out
}

// rmw runs o, a read-modify-write that starts at start: Read, then (unless the read
// failed) Write of the same key, under one operation context, so the op timeout bounds
// both. Each part is recorded in its own series as the operation it is (the read
// validated, the write acknowledged), and the whole as one operation of its class: from
// its intended start to the write's end, failed if either part failed.
func (p *opPath) rmw(o *operation, start int64) outcome {
	oc := p.slot.begin(start, p.g.w.OpTimeout)
	got, err := p.e.call(oc, &plainRead, o.key, nil, 0)
	end := p.clock.Now()
	read := *o
	read.m, read.class, read.opShard = &plainRead, o.parts[0], nil
	var failed error // the failed part's error
	switch p.done(&read, start, end, got, err, oc.status() == opTimedOut) {
	case outStopped:
		oc.end()
		return outStopped
	case outFailed:
		failed = err
	default:
		mid := end
		_, err = p.e.call(oc, &plainWrite, o.key, o.value, 0)
		end = p.clock.Now()
		write := *o
		write.m, write.class, write.opShard = &plainWrite, o.parts[1], nil
		// The write's service time runs from the end of the read.
		switch p.done(&write, mid, end, nil, err, oc.status() == opTimedOut) {
		case outStopped:
			oc.end()
			return outStopped
		case outFailed:
			failed = err
		}
	}
	timedOut := oc.end()
	// The parts recorded what they found (validation included); the whole, of kind rmw,
	// counts only as answered or failed.
	out := p.done(o, start, end, nil, failed, timedOut)
	p.split.done(start, end)
	p.spent(start, end, 1)
	return out
}

// done classifies the result of o, which started at start and ended at end returning got
// and err (timedOut: its context's deadline fired first, whatever the driver returned),
// and records it under the class or the operation's own series (see recording):
// response time from the intended start, service time from the actual one, the start
// lag's own part from the worker's previous cycle. With validation, a read's value is checked against what the
// key should hold and a write's success is noted for later reads.
func (p *opPath) done(o *operation, start, end int64, got []byte, err error, timedOut bool) outcome {
	resp, svc := time.Duration(end-o.intended), time.Duration(end-start)
	own := p.split.own(o.intended, start)
	t := p.g.tracker
	if t != nil && o.m.kind == driver.KindDelete {
		// Whatever the answer, the delete may have been applied: the key is expected
		// absent until a write started after this moment is acknowledged.
		t.Delete(o.idx, t.Seq())
	}
	switch {
	case err == nil:
		switch {
		case t == nil:
			// The common case, written out: a call through recording costs a few
			// nanoseconds per operation (it does not inline).
			o.answered().SuccessLag(resp, svc, own)
		case o.m.kind == driver.KindWrite || o.m.kind == driver.KindInsert:
			p.rec(o).success(resp, svc, own)
			t.Ack(o.idx, o.seq)
		case o.m.idx != opRead:
			// Only Driver.Read returns the value as written; what another read-like
			// operation returns (a range, a count) is not checked.
			p.rec(o).success(resp, svc, own)
		default:
			if bad, ok := verdict(t, keyBytes(o.key), got, o.expect); ok {
				p.rec(o).successInvalid(resp, svc, own, bad)
			} else {
				p.rec(o).success(resp, svc, own)
			}
		}
		return outOK
	case errors.Is(err, driver.ErrNotFound):
		if o.m.idx == opRead && t != nil && t.Classify(o.expect, false, 0) == workload.ResultLost &&
			(!p.g.deletes || t.Expect(o.idx) == o.expect) {
			p.rec(o).missInvalid(resp, svc, own, stats.Lost)
		} else {
			o.answered().MissLag(resp, svc, own)
		}
		return outMiss
	case p.e.runCtx.Err() != nil:
		return outStopped
	default:
		class := driver.Classify(err)
		if timedOut {
			class = driver.ClassTimeout
		}
		p.rec(o).failure(class, err)
		return outFailed
	}
}

func (p *opPath) rec(o *operation) recording { return recording{class: o.class, op: o.opShard} }

// answered returns the shard an answered operation is recorded in: the operation's own
// series when its class mixes several, which is a part of the class's series
// (stats.Collector.RegisterPart), so the class counts it at the tick without a second
// record; else the class's.
func (o *operation) answered() *stats.Shard {
	return recording{class: o.class, op: o.opShard}.answered()
}

// recording records one operation: an answered one once (see operation.answered), a
// failure into its class's series and, when the class mixes several operations, into
// the operation's own series too (a part's failures are not added to its class). done
// writes the common outcomes (success, miss without validation) out instead.
type recording struct {
	class, op *stats.Shard // op is nil for a class of one operation
}

func (r recording) answered() *stats.Shard {
	if r.op != nil {
		return r.op
	}
	return r.class
}

func (r recording) success(resp, svc, own time.Duration) {
	r.answered().SuccessLag(resp, svc, own)
}

func (r recording) successInvalid(resp, svc, own time.Duration, v stats.Validation) {
	r.answered().SuccessInvalid(resp, svc, own, v)
}

func (r recording) missInvalid(resp, svc, own time.Duration, v stats.Validation) {
	r.answered().MissInvalid(resp, svc, own, v)
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

// call runs one driver operation: m on key, with value for a write and n for a scan. A
// driver that panics fails that operation (class other) instead of killing the worker and
// the run with it.
func (e *Engine) call(ctx context.Context, m *mixEntry, key string, value []byte, n int) (got []byte, err error) {
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
	case opInsert:
		if e.inserter != nil {
			return nil, e.inserter.Insert(ctx, key, value)
		}
		return nil, e.drv.Write(ctx, key, value)
	case opDelete:
		return nil, e.deleter.Delete(ctx, key)
	case opScan:
		_, err := e.scanner.Scan(ctx, key, n)
		return nil, err
	}
	return e.operator.Do(ctx, m.idx, key, value)
}
