package stats

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
)

// MaxDefaultShards caps DefaultShards. Every shard of every op that records holds, active
// and retired, response-time and service-time counts of ~92 KB each and start-lag counts
// of ~12 KB (two significant digits; uint32 counts, see tally), with ~6 KB of bitmaps per
// buffer saying which are used, i.e. ~400 KB per shard per op: at 16 shards that is
// 6.5 MB per op and 20 MB with reads, writes and backfill all active, plus ~1.7 MB per
// active series in the collector (interval and cumulative histograms, the drained sums,
// Recorder.sum, and the cumulative histograms' counts, series.cumSum). A 1000-worker process measured 68 MB RSS in all (see
// docs/performance.md), far below the 150 MB budget, while 16 locks still leave each
// shard mostly uncontended: a record holds its lock for ~20 ns.
const MaxDefaultShards = 16

// DefaultShards returns the shard count used when Config.Shards is 0: 4 per
// GOMAXPROCS so that concurrently running workers rarely share a lock, capped at
// MaxDefaultShards to bound histogram memory.
func DefaultShards() int {
	return min(max(4*runtime.GOMAXPROCS(0), 4), MaxDefaultShards)
}

// Counts are the outcome counters of one op class over some span.
type Counts struct {
	// Successes are ops that got an answer with a value (or a write acknowledgment).
	Successes int64
	// Misses are reads answered with "not found"; their latency is recorded like a
	// success because the store did answer.
	Misses int64
	// Failures are failed ops by driver.Class. Their latency is not recorded: a
	// timeout's latency is the timeout, and mixing it in would hide the store's.
	Failures [driver.NumClasses]int64
	// Validation counts reads whose value failed validation, by kind.
	Validation [NumValidations]int64
	// Clamped counts latencies above HighestValue recorded as HighestValue.
	Clamped int64
	// Dropped counts intended operations that were never sent: with workload.catchUp=drop
	// a worker skips an operation that is more than workload.maxLateness late when its turn
	// comes. Not in Count, Errors or attempts: the store never saw them.
	Dropped int64
	// LagOwnUs and LagWaitUs split the start lag of the answered operations recorded with
	// a split (SuccessLag, MissLag; sums of microseconds): LagWaitUs is the part spent
	// waiting for a worker that was still in the store with its previous operation, the
	// store's doing; LagOwnUs the rest (bookkeeping, the pacer's wake-up, scheduling, a
	// busy CPU), the generator's own. Both zero where nothing recorded a split (an older
	// node's interval), which a reader must take as "not known", not as "no lag".
	LagOwnUs, LagWaitUs int64
}

// Count returns successes plus misses: every op that got a valid answer.
func (c *Counts) Count() int64 { return c.Successes + c.Misses }

// Errors returns the sum of failures over all classes.
func (c *Counts) Errors() int64 {
	var n int64
	for _, f := range c.Failures {
		n += f
	}
	return n
}

// Add adds o into c.
func (c *Counts) Add(o *Counts) {
	c.Successes += o.Successes
	c.Misses += o.Misses
	for i := range c.Failures {
		c.Failures[i] += o.Failures[i]
	}
	for i := range c.Validation {
		c.Validation[i] += o.Validation[i]
	}
	c.Clamped += o.Clamped
	c.Dropped += o.Dropped
	c.LagOwnUs += o.LagOwnUs
	c.LagWaitUs += o.LagWaitUs
}

// buffer is one half of a shard's double buffer: everything recorded in an interval.
type buffer struct {
	// The response-time, service-time and start-lag counts, by the buckets of the
	// histograms the collector drains them into: counting a value costs a few ns where a
	// histogram's RecordValue costs ~15, three times per operation, and the drain visits
	// only the buckets a shard recorded into (see sparse).
	resp, svc, lag tally
	// late is the lateness of the dropped operations (Counts.Dropped); nil until a shard
	// first drops one, so runs that never drop pay no memory for it.
	late *tally
	Counts
	// Buffers of different shards are separate allocations that the allocator may
	// place side by side; at a multiple of 128 bytes (a size class whose objects are
	// 128-byte aligned) two shards' counters never share a cache line.
	_ [(128 - (3*unsafe.Sizeof(tally{})+8+unsafe.Sizeof(Counts{}))%128) % 128]byte
}

func newBuffer() *buffer {
	return &buffer{resp: makeTally(latencyLayout), svc: makeTally(latencyLayout), lag: makeTally(lagLayout)}
}

// sums is what the collector drained from a recorder's shards in one tick, bucket by
// bucket: the buffers' counts summed into int64s.
type sums struct {
	resp, svc, lag sparse
	late           *sparse // nil until a shard has dropped an operation
	Counts
}

func newSums() *sums {
	return &sums{resp: makeSparse(latencyLayout), svc: makeSparse(latencyLayout), lag: makeSparse(lagLayout)}
}

// latency records one answered operation's times. own is the generator's own part of its
// start lag (see Counts.LagOwnUs), or negative when the caller cannot split it.
func (b *buffer) latency(resp, svc, own time.Duration) {
	r, rc := Micros(resp)
	s, sc := Micros(svc)
	// add inlined, its rare cases (a bucket's first count, a count wrapping) out of line.
	if i, c := b.resp.add(r, latencySmall); c <= 1 {
		b.resp.settle(i, c)
	}
	if i, c := b.svc.add(s, latencySmall); c <= 1 {
		b.svc.settle(i, c)
	}
	// Start lag (actual minus intended start) is exactly resp - svc.
	l, _ := Micros(resp - svc)
	if i, c := b.lag.add(l, lagSmall); c <= 1 {
		b.lag.settle(i, c)
	}
	if own >= 0 {
		o, _ := Micros(min(own, resp-svc))
		b.LagOwnUs += o
		b.LagWaitUs += l - o
	}
	if rc || sc {
		b.Clamped++
	}
}

// moveTo adds what b recorded into sum and leaves b empty for reuse.
func (b *buffer) moveTo(sum *sums) {
	b.resp.moveTo(&sum.resp)
	b.svc.moveTo(&sum.svc)
	b.lag.moveTo(&sum.lag)
	if b.late != nil && !b.late.empty() {
		if sum.late == nil {
			late := makeSparse(lagLayout)
			sum.late = &late
		}
		b.late.moveTo(sum.late)
	}
	sum.Add(&b.Counts)
	b.Counts = Counts{}
}

// addAnsweredTo adds what b holds of answered operations into dst: the latencies and the
// counts an answer brings (successes, misses, validation verdicts, clamped values, the
// start lag's split). Failures and drops are not added: a part's failures are also
// counted in the series it is part of, where the failure messages are kept (the engine
// records them in both, they are rare), and only a class drops operations.
func (b *sums) addAnsweredTo(dst *sums) {
	b.resp.addTo(&dst.resp)
	b.svc.addTo(&dst.svc)
	b.lag.addTo(&dst.lag)
	dst.Successes += b.Successes
	dst.Misses += b.Misses
	for i := range dst.Validation {
		dst.Validation[i] += b.Validation[i]
	}
	dst.Clamped += b.Clamped
	dst.LagOwnUs += b.LagOwnUs
	dst.LagWaitUs += b.LagWaitUs
}

// The parts of a sums, for latencyOf.
func (b *sums) respSum() *sparse { return &b.resp }
func (b *sums) svcSum() *sparse  { return &b.svc }
func (b *sums) lagSum() *sparse  { return &b.lag }
func (b *sums) lateSum() *sparse { return b.late }

// clear empties b.
func (b *sums) clear() {
	b.resp.clear()
	b.svc.clear()
	b.lag.clear()
	if b.late != nil {
		b.late.clear()
	}
	b.Counts = Counts{}
}

// Shard is the part of a Recorder one group of workers records into. Its methods are safe
// for concurrent use, cost one uncontended lock and three histogram increments (response
// time, service time, start lag), and do not
// allocate (except once, on a shard's first record, when its histograms are created: a
// shard or op that never records costs no histogram memory).
type Shard struct {
	mu     sync.Mutex
	active *buffer // recorded into; nil until the first record
	spare  *buffer // retired by the last swap; touched only by the collector
	// errs keeps the latest distinct failure messages per class (cumulative, cleared by
	// the collector's Reset); nil until FailureErr first writes it, and behind a pointer
	// so a shard stays one 128-byte block.
	errs *[driver.NumClasses]errTable
	// The padding keeps neighbouring shards' locks off one cache line (and its
	// prefetched pair), so workers on different shards do not contend through it.
	_ [128 - 32]byte
}

func (s *Shard) buf() *buffer {
	if s.active == nil {
		s.active, s.spare = newBuffer(), newBuffer()
	}
	return s.active
}

// Success records an op that got a value or an acknowledgment. resp is measured from
// the op's intended start time, svc from its actual start. Its start lag is not split
// (see SuccessLag).
func (s *Shard) Success(resp, svc time.Duration) { s.record(resp, svc, -1, false, noVerdict) }

// Miss records a read answered with "not found" (driver.ErrNotFound). A miss is a
// valid answer, so its latency goes into the histograms.
func (s *Shard) Miss(resp, svc time.Duration) { s.record(resp, svc, -1, true, noVerdict) }

// SuccessLag is Success with the start lag split: own is the part of it that was the
// generator's own, the rest was spent waiting for a worker busy in the store (see
// Counts.LagOwnUs). A negative own is "not known", as with Success.
func (s *Shard) SuccessLag(resp, svc, own time.Duration) { s.record(resp, svc, own, false, noVerdict) }

// MissLag is Miss with the start lag split, as SuccessLag.
func (s *Shard) MissLag(resp, svc, own time.Duration) { s.record(resp, svc, own, true, noVerdict) }

// SuccessInvalid records a read that got a value which failed validation of kind k. The
// read and its verdict are one call so that an interval swap cannot separate them. own
// splits the start lag as in SuccessLag (negative: not known).
func (s *Shard) SuccessInvalid(resp, svc, own time.Duration, k Validation) {
	s.record(resp, svc, own, false, k)
}

// MissInvalid records a miss that validation judged of kind k (a lost write); own as in
// SuccessInvalid.
func (s *Shard) MissInvalid(resp, svc, own time.Duration, k Validation) {
	s.record(resp, svc, own, true, k)
}

// noVerdict is a Validation outside the range: the op passed validation, or had none.
const noVerdict = Validation(numValidations)

func (s *Shard) record(resp, svc, own time.Duration, miss bool, k Validation) {
	s.mu.Lock()
	b := s.buf()
	b.latency(resp, svc, own)
	if miss {
		b.Misses++
	} else {
		b.Successes++
	}
	if k < noVerdict {
		b.Validation[k]++
	}
	s.mu.Unlock()
}

// Failure counts a failed op of class c. Its latency is not recorded.
func (s *Shard) Failure(c driver.Class) {
	if int(c) >= driver.NumClasses {
		c = driver.ClassOther
	}
	s.mu.Lock()
	s.buf().Failures[c]++
	s.mu.Unlock()
}

// Drop counts an intended operation that was not sent because it was already lateness
// late when a worker got to it (workload.catchUp=drop), and records that lateness.
func (s *Shard) Drop(lateness time.Duration) {
	l, _ := Micros(lateness)
	s.mu.Lock()
	b := s.buf()
	b.Dropped++
	if b.late == nil {
		late := makeTally(lagLayout)
		b.late = &late
	}
	b.late.count(l, lagSmall)
	s.mu.Unlock()
}

// swap retires the active buffer and returns it, or nil if nothing was ever recorded.
// The caller owns the returned buffer until the next swap and must reset it.
func (s *Shard) swap() *buffer {
	s.mu.Lock()
	b := s.active
	if b != nil {
		s.active, s.spare = s.spare, b
	}
	s.mu.Unlock()
	return b
}

// Recorder records one op class. It is sharded so that workers do not contend: a worker
// records into Shard(its index).
type Recorder struct {
	op     Op
	shards []Shard
	// parts are the recorders of the series that are parts of this one (Collector.
	// RegisterPart): what their operations were answered with counts here as well, added
	// at each drain, so an operation is recorded once, in its part. Copy-on-write, as the
	// collector's series list: a part registered while the engine runs is read by the
	// tick and by Answered without a lock.
	parts atomic.Pointer[[]*Recorder]
	// partOf is the series this one is a part of, nil if none; under Collector.regMu.
	partOf *Recorder
	// sum is what the last drain took from the shards, bucket by bucket, until the next
	// drain: the collector also merges it into the cumulative view and reads the
	// interval's max and mean from it (see publish). Only the collector's tick touches
	// it; nil until a shard has recorded.
	sum *sums
}

func newRecorder(op Op, shards int) *Recorder {
	return &Recorder{op: op, shards: make([]Shard, shards)}
}

// Op returns the series this recorder records.
func (r *Recorder) Op() Op { return r.op }

// Shard returns the shard for a worker index. Workers should look their shard up once
// and keep it; any index (even negative) maps to a valid shard.
func (r *Recorder) Shard(worker int) *Shard {
	return &r.shards[uint(worker)%uint(len(r.shards))]
}

// Answered returns the operations the store answered (successes and misses) that are
// recorded in the current interval and not yet drained: it grows while the store answers
// and falls back at each tick. An elastic pool reads it to tell a slow store, worth more
// workers, from one that answers nothing.
func (r *Recorder) Answered() int64 {
	var n int64
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		if s.active != nil {
			n += s.active.Successes + s.active.Misses
		}
		s.mu.Unlock()
	}
	for _, p := range r.partList() {
		n += p.Answered()
	}
	return n
}

// partList returns the recorders of r's parts.
func (r *Recorder) partList() []*Recorder {
	if l := r.parts.Load(); l != nil {
		return *l
	}
	return nil
}

// addPart makes p a part of r. The caller holds Collector.regMu.
func (r *Recorder) addPart(p *Recorder) {
	old := r.partList()
	next := append(old[:len(old):len(old)], p)
	r.parts.Store(&next)
	p.partOf = r
}

// drain swaps every shard and adds what the retired buffers hold into resp, svc, lag,
// late and c (nil: discards it), outside the shard locks, leaving them empty for reuse.
// Its cost follows what the shards recorded (the buckets they used), not the histograms'
// width: the shards' counts are summed bucket by bucket into r.sum, which then records
// each bucket used once. A recorder with parts needs them collected first (the
// collector's tick collects every recorder, then records each).
func (r *Recorder) drain(resp, svc, lag, late *hdrhistogram.Histogram, c *Counts) {
	r.collect()
	r.record(resp, svc, lag, late, c)
}

// collect swaps every shard and moves what the retired buffers hold into r.sum, outside
// the shard locks, leaving them empty for reuse.
func (r *Recorder) collect() {
	if r.sum != nil {
		r.sum.clear()
	}
	for i := range r.shards {
		b := r.shards[i].swap()
		if b == nil {
			continue
		}
		if r.sum == nil {
			r.sum = newSums()
		}
		b.moveTo(r.sum)
	}
}

// record adds the answered operations its parts collected into r.sum, then what r.sum
// holds into resp, svc, lag, late and c (nil: only the first). The parts must have been
// collected since r was, and must have no parts of their own (RegisterPart refuses it).
func (r *Recorder) record(resp, svc, lag, late *hdrhistogram.Histogram, c *Counts) {
	for _, p := range r.partList() {
		if p.sum == nil {
			continue
		}
		if r.sum == nil {
			r.sum = newSums()
		}
		p.sum.addAnsweredTo(r.sum)
	}
	if r.sum == nil || resp == nil {
		return
	}
	r.sum.resp.record(resp)
	r.sum.svc.record(svc)
	r.sum.lag.record(lag)
	if r.sum.late != nil {
		r.sum.late.record(late)
	}
	c.Add(&r.sum.Counts)
}

// Sink records measurements a driver makes of its own into a series (driver.Sink): the
// composite driver's visibility lag, the latency of its children. A measurement goes into
// both the response and the service histograms, since it has no intended start of its
// own; successive measurements spread over the shards.
type Sink struct {
	rec  *Recorder
	next atomic.Uint32
}

// Sink returns a driver.Sink recording into r.
func (r *Recorder) Sink() *Sink { return &Sink{rec: r} }

func (s *Sink) shard() *Shard { return s.rec.Shard(int(s.next.Add(1))) }

// Observe records one measurement.
func (s *Sink) Observe(d time.Duration) { s.shard().Success(d, d) }

// Fail counts a measurement that did not complete, by class.
func (s *Sink) Fail(c driver.Class) { s.shard().Failure(c) }
