package stats

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/clock"
)

// Default collector settings.
const (
	DefaultInterval  = time.Second
	DefaultSeriesLen = 3600
)

// Config configures a Collector. Zero fields take their defaults.
type Config struct {
	// Shards per op class; default DefaultShards().
	Shards int
	// Interval between snapshots when Run drives the collector; default 1 s.
	Interval time.Duration
	// SeriesLen is how many intervals the time series keeps; default 3600 (an hour of
	// 1 s points, about 2.6 MB). Older points are dropped so memory stays flat forever.
	SeriesLen int
	// Clock is what the span starts, Reset and Run's ticks read; nil means clock.Real. A
	// node on a simulated clock ticks its intervals on it, so its 1 s intervals line up
	// with the engine's simulated operations.
	Clock clock.Clock
}

// Interval is what subscribers get at every tick: the span and, per series, what was
// recorded in it.
//
// An Interval and its histograms belong to the Collector and are reused at the next
// tick (so a tick allocates no histogram): a subscriber must treat them as read-only and
// must not keep them after its callback returns. Copy what you need (Clone a histogram,
// or call Summary).
type Interval struct {
	Start, End time.Time
	// Due is when the tick that ended the interval was due on the collector's schedule
	// (Run's ticks, an interval apart): the end of the second the interval belongs to.
	// A tick that came late (a stalled process) ends after its due instant, and one
	// closed off the schedule (Tick: a flush, a phase's end) is due at the next instant
	// of the schedule, whose second it is part of. A fleet coordinator places the
	// interval by it, so a late tick lands in its own second. Zero when the collector
	// has no schedule (it was never Run and never ticked with TickDue), and on an
	// interval from a node that predates it.
	Due time.Time
	// Ops has one entry per series, indexed by Op (registration order); each names itself.
	// An Interval built elsewhere (decoded, or merged from several nodes) may hold its
	// series in any order: consumers that take one from outside find series by Name.
	Ops []OpInterval
	// Fleet completeness, set on intervals a coordinator merged from several nodes
	// (zero for a node's own tick). Nodes is how many nodes contributed. Partial marks an
	// interval that lacks the data of some node expected in it, whose ids are in Missing
	// (sorted): its counts are a lower bound, never to be read as the fleet's.
	Nodes   int
	Partial bool
	Missing []string
}

// fleet returns iv's fleet completeness for the series ring, nil for a node's own
// interval (so a node's points carry no extra allocation).
func (iv *Interval) fleet() *fleetMark {
	if iv.Nodes == 0 && !iv.Partial && len(iv.Missing) == 0 {
		return nil
	}
	return &fleetMark{nodes: iv.Nodes, partial: iv.Partial, missing: slices.Clone(iv.Missing)}
}

// Op returns the entry of the series called name, or nil.
func (iv *Interval) Op(name string) *OpInterval {
	for i := range iv.Ops {
		if iv.Ops[i].Name == name {
			return &iv.Ops[i]
		}
	}
	return nil
}

// OpInterval is one series' share of an Interval.
type OpInterval struct {
	// Name is the series' name: an op class ("read") or one operation of a class
	// ("search.byTitle").
	Name string
	// Response and Service are the interval's latency histograms in microseconds.
	Response, Service *hdrhistogram.Histogram
	// StartLag is how late operations started against their intended start (response
	// minus service time), in microseconds at LagSignificantDigits.
	StartLag *hdrhistogram.Histogram
	// Late is how late the dropped operations (Counts.Dropped) were when a worker got
	// to them, at the start-lag precision.
	Late *hdrhistogram.Histogram
	Counts
	// TargetRate and Workers are the engine's settings when the interval ended.
	TargetRate float64
	Workers    int
	// Backlog and Pending were sampled from the op's backlog func at the tick.
	Backlog time.Duration
	Pending int64

	// lat holds the latencies of the histograms above as the collector computed them
	// when it published the interval, so that Summary does not walk them again for every
	// subscriber; lat.ok is false on an interval built elsewhere.
	lat struct {
		resp, svc, lag, late Latency
		ok                   bool
	}
	// sum holds, when the collector's tick drained the recorders into the interval,
	// the sums it drained: exactly Response's and Service's counts, with the marks of the
	// buckets used, so that Buckets.AddResponse and AddService visit those buckets rather
	// than copying the histograms whole. nil on an ingested interval or one built
	// elsewhere, and after a Reset (which drains the sums again).
	sum *sums
}

// active tells whether the series was active in the interval: it had workers at the
// tick (a class paced slower than one operation a second still runs between them), or
// it sent operations (a class stopped during the interval, an operation series, which
// has no workers of its own).
func (o *OpInterval) active() bool {
	return o.Workers > 0 || o.Count()+o.Errors()+o.Dropped > 0
}

func (o *OpInterval) gauges() gauges {
	return gauges{target: o.TargetRate, workers: o.Workers, backlog: o.Backlog, pending: o.Pending}
}

// Seconds is the length of the interval.
func (iv *Interval) Seconds() float64 { return spanSeconds(iv.Start, iv.End) }

// Summary computes the interval's report.
func (iv *Interval) Summary() Summary {
	secs := iv.Seconds()
	s := Summary{Start: iv.Start, End: iv.End, Seconds: secs, Ops: make(map[string]OpSummary, len(iv.Ops)),
		Nodes: iv.Nodes, Partial: iv.Partial, Missing: slices.Clone(iv.Missing)}
	for i := range iv.Ops {
		o := &iv.Ops[i]
		resp, svc, lag, late := o.lat.resp, o.lat.svc, o.lat.lag, o.lat.late
		if !o.lat.ok {
			resp, svc, lag, late = LatencyOf(o.Response), LatencyOf(o.Service), LatencyOf(o.StartLag), LatencyOf(o.Late)
		}
		sum := buildOpSummary(&o.Counts, resp, svc, secs, o.gauges())
		sum.StartLag = LagWithin(lag, sum.ResponseTime)
		if o.Late != nil {
			sum.DropLateness = late
		}
		s.Ops[o.Name] = sum
	}
	return s
}

// BacklogFunc reports how far an op's pacer is behind its schedule and how many intended
// ops are overdue. It is called at every tick and must be cheap, safe for concurrent use,
// and must not call back into the Collector.
type BacklogFunc func() (lag time.Duration, pending int64)

// series is one named line of measurements: its recorder, the engine's gauges, and the
// cumulative view.
type series struct {
	name    string
	rec     *Recorder
	target  atomic.Uint64 // math.Float64bits of the target rate
	workers atomic.Int64

	// Under Collector.backlogMu.
	backlog  BacklogFunc
	targetFn func() float64

	// Under Collector.mu (written with tickMu held).
	cumResp, cumSvc, cumLag, cumLate *hdrhistogram.Histogram
	cum                              Counts
	// cumSum holds the cumulative histograms' counts bucket by bucket, added from each
	// tick's drained sums, so that Cumulative reads the max and the mean from the buckets
	// used instead of by hdrhistogram's walks over every bucket up to the max (two walks
	// per histogram: ~2 M instructions each for a run's response times, more than ten
	// thousand operations' recording). nil until a drain brings counts; cumMerged says an
	// ingested interval was merged into the histograms whole, so cumSum no longer holds
	// every count and Cumulative walks the histograms.
	cumSum    *sums
	cumMerged bool
	// cumPend holds what ticks drained since the cumulative histograms were last read:
	// a tick adds its sums here, bucket by bucket, and the first reader after it records
	// them into the histograms (settleCum), so a run nobody reads until its end does not
	// record every bucket into a second histogram each second. nil until a tick drains.
	cumPend *sums
	// cumActive is the seconds of the cumulative span in which the series was active
	// (OpSummary.ActiveSeconds).
	cumActive float64
}

type subscriber struct{ f func(*Interval) }

type amendSubscriber struct{ f func(Point) }

// Collector owns the recorders of all series, snapshots them every interval and keeps
// the derived views (latest interval, cumulative, time series). All its methods are safe
// for concurrent use.
type Collector struct {
	cfg Config

	// regMu serializes Register. The registered series are published copy-on-write, so
	// the hot path (Recorder) and the tick read them without a lock; a series is never
	// removed or reordered, so an Op stays valid for the collector's life.
	regMu  sync.Mutex
	series atomic.Pointer[[]*series]

	// tickMu serializes Tick and Reset, and is held while subscribers run, because
	// the Interval they see is reused by the next tick.
	tickMu sync.Mutex
	iv     Interval

	// mu guards the published views below and each series' cumulative fields. It is
	// written only with tickMu held, so Tick can read them under tickMu alone.
	mu sync.RWMutex
	// cumMu serializes readers that hold mu for reading while they settle the series'
	// pending cumulative counts (settleCum); publish adds to them with mu held for
	// writing, so no reader settles then.
	cumMu   sync.Mutex
	start   time.Time // of the cumulative span
	last    time.Time // end of the last interval (start of the next)
	latest  pointRec
	latestT time.Time // start of the latest interval; zero before the first tick
	latestE time.Time // end of the latest interval
	ring    []pointRec
	head    int    // index of the oldest point once the ring is full
	pushed  uint64 // points ever put in the ring: the newest one's sequence number
	// cumPartial and cumMissing say the cumulative span includes ingested intervals that
	// lacked some node's data, and whose.
	cumPartial bool
	cumMissing map[string]struct{}

	// amendRev counts MarkMissing's amendments of the series (under mu); each amended
	// point's fleetMark holds the count at its last amendment, so SeriesJSON re-encodes
	// just the points amended since it last looked (encRev).
	amendRev uint64

	// encMu guards enc and encRev, the series' points encoded in JSON for SeriesJSON. It
	// is taken before mu, never while holding it, so a tick never waits for an encoding.
	encMu  sync.Mutex
	enc    []encodedPoint
	encRev uint64
	// encAmended counts the points of enc that were ever amended (rev != 0): while it is
	// 0, a since read need not look at the points at or before since.
	encAmended int
	// encRead is when SeriesJSON was last called (the collector's clock, Unix ns) and
	// encHeld how many points enc holds: a tick reads them without encMu to drop the
	// encoded points nobody read for SeriesJSONIdle (dropIdleJSON).
	encRead atomic.Int64
	encHeld atomic.Int64

	subMu     sync.Mutex
	subs      []*subscriber      // copy-on-write, so Tick reads it without holding subMu
	amendSubs []*amendSubscriber // copy-on-write, as subs

	backlogMu sync.Mutex // guards each series' backlog and targetFn

	// sched is an instant of the ticks' schedule (the last due instant, or Run's start),
	// zero before any: Tick puts a tick off the schedule on it. Under tickMu.
	sched time.Time
}

// NewCollector creates a collector with empty recorders and the built-in series (read,
// write, backfill). The cumulative span starts now.
func NewCollector(cfg Config) *Collector {
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards()
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.SeriesLen <= 0 {
		cfg.SeriesLen = DefaultSeriesLen
	}
	cfg.Clock = clock.Or(cfg.Clock)
	c := &Collector{cfg: cfg, ring: make([]pointRec, 0, cfg.SeriesLen)}
	list := make([]*series, 0, numBuiltin)
	c.series.Store(&list)
	for _, name := range builtinNames {
		_, _ = c.Register(name) // valid names, below MaxSeries
	}
	now := cfg.Clock.Now()
	c.start, c.last = now, now
	return c
}

// Config returns the effective configuration, defaults filled in.
func (c *Collector) Config() Config { return c.cfg }

func (c *Collector) list() []*series { return *c.series.Load() }

func (c *Collector) get(op Op) *series {
	l := c.list()
	if int(op) >= len(l) {
		return nil
	}
	return l[op]
}

// Register returns the series called name, creating it if it does not exist. It fails
// for an invalid name (see CheckSeriesName) and beyond MaxSeries series. A series lives
// as long as the collector: an op class removed from the workload keeps its history and
// shows zero counts from then on.
func (c *Collector) Register(name string) (Op, error) {
	for i, s := range c.list() {
		if s.name == name {
			return Op(i), nil
		}
	}
	if err := CheckSeriesName(name); err != nil {
		return 0, err
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	old := c.list()
	for i, s := range old {
		if s.name == name {
			return Op(i), nil
		}
	}
	if len(old) >= MaxSeries {
		return 0, fmt.Errorf("register series %q: at most %d series (op classes and their operations) per node", name, MaxSeries)
	}
	s := &series{name: name, rec: newRecorder(Op(len(old)), c.cfg.Shards),
		cumResp: NewHistogram(), cumSvc: NewHistogram(), cumLag: NewLagHistogram(), cumLate: NewLagHistogram()}
	next := append(old[:len(old):len(old)], s)
	c.series.Store(&next)
	return Op(len(old)), nil
}

// RegisterPart returns the series called name, as Register, made a part of series class:
// an answered operation recorded in it (Success, Miss and their variants) counts in
// class as well, added at each tick, so that the engine records an operation of a class
// that mixes several once, in the operation's own series, and not again in the class's.
// Failures are not added: a failure recorded in a part must be recorded in class too (it
// is rare, and class keeps its failure messages), and Drop is for the class alone. It
// fails for an unknown class, a class that is itself a part, a name that is a series
// with parts of its own or a part of another series, and as Register does.
func (c *Collector) RegisterPart(class Op, name string) (Op, error) {
	op, err := c.Register(name)
	if err != nil {
		return 0, err
	}
	c.regMu.Lock()
	defer c.regMu.Unlock()
	list := c.list()
	if int(class) >= len(list) {
		return 0, fmt.Errorf("register series %q: part of unknown series %d", name, class)
	}
	parent, part := list[class].rec, list[op].rec
	switch {
	case part.partOf == parent:
		return op, nil
	case parent == part:
		return 0, fmt.Errorf("register series %q: a series cannot be a part of itself", name)
	case parent.partOf != nil:
		return 0, fmt.Errorf("register series %q: %q is a part of %q, and a part has no parts", name, list[class].name, list[parent.partOf.op].name)
	case part.partOf != nil:
		return 0, fmt.Errorf("register series %q as a part of %q: it is a part of %q", name, list[class].name, list[part.partOf.op].name)
	case len(part.partList()) > 0:
		return 0, fmt.Errorf("register series %q as a part of %q: it has parts of its own", name, list[class].name)
	}
	parent.addPart(part)
	return op, nil
}

// Lookup returns the series called name, if registered.
func (c *Collector) Lookup(name string) (Op, bool) {
	for i, s := range c.list() {
		if s.name == name {
			return Op(i), true
		}
	}
	return 0, false
}

// Name returns the name of series op ("" for an unknown Op).
func (c *Collector) Name(op Op) string {
	if s := c.get(op); s != nil {
		return s.name
	}
	return ""
}

// Names returns the names of every series in registration order: the built-in ones
// first, then the others as they were first used.
func (c *Collector) Names() []string {
	l := c.list()
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = s.name
	}
	return out
}

// Recorder returns the recorder of op, or nil if op is not registered.
func (c *Collector) Recorder(op Op) *Recorder {
	if s := c.get(op); s != nil {
		return s.rec
	}
	return nil
}

// SetTarget sets the gauges reported for op: its target rate (ops/s, 0 for closed loop)
// and its worker count. The engine calls it whenever either changes.
func (c *Collector) SetTarget(op Op, rate float64, workers int) {
	if s := c.get(op); s != nil {
		s.target.Store(math.Float64bits(rate))
		s.workers.Store(int64(workers))
	}
}

// SetBacklog sets the function sampled at every tick for op's backlog; nil removes it.
func (c *Collector) SetBacklog(op Op, f BacklogFunc) {
	if s := c.get(op); s != nil {
		c.backlogMu.Lock()
		s.backlog = f
		c.backlogMu.Unlock()
	}
}

// SetTargetFunc sets a function sampled at every tick for op's target rate, for a load
// shape whose rate changes by itself (a ramp, steps, a sine); nil goes back to the rate of
// SetTarget.
func (c *Collector) SetTargetFunc(op Op, f func() float64) {
	if s := c.get(op); s != nil {
		c.backlogMu.Lock()
		s.targetFn = f
		c.backlogMu.Unlock()
	}
}

// Subscribe registers f to receive every interval, in tick order, on the ticking
// goroutine. f must return quickly (it delays the next snapshot), must not keep the
// Interval, and must not call Tick or Reset (it would deadlock); the read-only views
// (Latest, Cumulative, Series) are fine. cancel unregisters f; it is idempotent.
func (c *Collector) Subscribe(f func(*Interval)) (cancel func()) {
	return addSubscriber(&c.subMu, &c.subs, &subscriber{f: f})
}

// addSubscriber appends s to *list under mu, copy on write (the publishers range over the
// list they loaded, outside the lock), and returns its cancel, which removes s the same
// way and is idempotent.
func addSubscriber[T any](mu *sync.Mutex, list *[]*T, s *T) (cancel func()) {
	mu.Lock()
	*list = append((*list)[:len(*list):len(*list)], s)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		*list = slices.DeleteFunc(slices.Clone(*list), func(o *T) bool { return o == s })
	}
}

// Run ticks every Config.Interval from now until ctx ends, on a schedule: the ticks are
// due an interval apart from Run's start, and each interval carries the instant its tick
// was due (Interval.Due). It does not tick when ctx ends: to flush what was recorded
// after the last tick, stop the workers and call Tick once more (it is due at the
// schedule's next instant).
func (c *Collector) Run(ctx context.Context) {
	iv := c.cfg.Interval
	start := c.cfg.Clock.Now()
	c.tickMu.Lock()
	c.sched = start
	c.tickMu.Unlock()
	// A timer set again at each tick, not a ticker: a simulated clock has no tickers, and
	// each tick is due an interval after the last one was due, so the ticks do not drift.
	next := start.Add(iv)
	t := c.cfg.Clock.NewTimer(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			// The clock's reading, not the timer's: the interval ends when its buffers
			// are swapped, which is later than the timer was due when the process stalled.
			now := c.cfg.Clock.Now()
			// A tick more than an interval late (a stall) is not followed by a burst of
			// catch-up ticks, nor does it move the schedule: it is the tick of the last
			// instant due (its interval spans the seconds it missed) and the next one is
			// due at the schedule's next instant, so the node's seconds keep their phase
			// for whoever places them (a fleet coordinator).
			late := now.Sub(next)
			if late >= iv {
				next = next.Add(late / iv * iv)
				late %= iv
			}
			// Due as the clock's reading minus the lateness, not next itself: a wall
			// clock stepped since Run started moves the due instants with the interval's
			// end, and with the clock offset its readers measure.
			c.TickDue(now, now.Add(-late))
			next = next.Add(iv)
			t.Reset(next.Sub(now))
		}
	}
}

// nextDue returns the first instant of the schedule at or after now, or zero without
// a schedule. The caller holds tickMu.
func (c *Collector) nextDue(now time.Time) time.Time {
	if c.sched.IsZero() {
		return time.Time{}
	}
	iv := c.cfg.Interval
	r := now.Sub(c.sched) % iv
	if r < 0 {
		r += iv
	}
	if r == 0 {
		return now
	}
	return now.Add(iv - r)
}

// Tick closes the current interval at now: it swaps every shard's buffers, merges what
// they recorded into the interval histograms and the cumulative view, appends a point to
// the series and hands the interval to the subscribers. A tick off the schedule (Run's)
// is due at the schedule's next instant: the interval is part of the second that ends
// there (Interval.Due).
//
// The returned Interval belongs to the Collector and is valid until the next Tick or
// Reset (see Interval).
func (c *Collector) Tick(now time.Time) *Interval {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	return c.tick(now, c.nextDue(now))
}

// TickDue is Tick for a caller that keeps the schedule itself: due is when this tick was
// due (at or before now when it came late), and becomes the instant the schedule is
// kept on for later calls of Tick.
func (c *Collector) TickDue(now, due time.Time) *Interval {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	if !due.IsZero() {
		c.sched = due
	}
	return c.tick(now, due)
}

// tick closes the interval at now, due at due. The caller holds tickMu.
func (c *Collector) tick(now, due time.Time) *Interval {
	list := c.list()
	iv := c.interval(list)
	iv.Start, iv.End, iv.Due = c.last, now, due
	iv.Nodes, iv.Partial, iv.Missing = 0, false, nil
	c.backlogMu.Lock()
	for i, s := range list {
		o := &iv.Ops[i]
		o.TargetRate = math.Float64frombits(s.target.Load())
		if s.targetFn != nil {
			o.TargetRate = s.targetFn()
		}
		o.Workers = int(s.workers.Load())
		o.Backlog, o.Pending = 0, 0
		if s.backlog != nil {
			o.Backlog, o.Pending = s.backlog()
		}
	}
	c.backlogMu.Unlock()
	// Every recorder is collected before any is recorded: a series with parts adds what
	// its parts collected in this interval (Recorder.record).
	for _, s := range list {
		s.rec.collect()
	}
	for i, s := range list {
		o := &iv.Ops[i]
		resetHistogram(o.Response)
		resetHistogram(o.Service)
		resetHistogram(o.StartLag)
		resetHistogram(o.Late)
		o.Counts = Counts{}
		o.lat.ok = false
		s.rec.record(o.Response, o.Service, o.StartLag, o.Late, &o.Counts)
	}
	c.publish(list, iv, true)
	return iv
}

// interval returns the collector's reusable Interval with one entry per series of list.
// The caller holds tickMu.
func (c *Collector) interval(list []*series) *Interval {
	iv := &c.iv
	for len(iv.Ops) < len(list) {
		iv.Ops = append(iv.Ops, OpInterval{Name: list[len(iv.Ops)].name,
			Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram(), Late: NewLagHistogram()})
	}
	return iv
}

// publish is the part of a tick after the interval is filled, shared by Tick and Ingest:
// it merges iv (c.iv, in registration order) into the cumulative view, makes it the
// latest interval and a point of the series, and hands it to the subscribers. drained
// says iv's histograms hold exactly what the recorders' last drain summed (a tick), so
// the merge and the max and mean read those sums, visiting only the buckets used, where
// an ingested interval's histograms are walked whole. The caller holds tickMu.
func (c *Collector) publish(list []*series, iv *Interval, drained bool) {
	// Percentiles are computed before taking mu so readers wait only for the merge.
	p := pointRec{end: iv.End.UnixNano(), seconds: float32(iv.Seconds()), ops: make([]opRec, len(list)), fleet: iv.fleet()}
	for i, s := range list {
		o := &iv.Ops[i]
		var sum *sums
		if drained {
			sum = s.rec.sum
		}
		o.lat.resp, o.lat.svc = latencyOf(o.Response, sum, (*sums).respSum), latencyOf(o.Service, sum, (*sums).svcSum)
		o.lat.lag, o.lat.late = latencyOf(o.StartLag, sum, (*sums).lagSum), latencyOf(o.Late, sum, (*sums).lateSum)
		o.lat.ok = true
		o.sum = sum
		p.ops[i] = newOpRec(&o.Counts, o.lat.resp, o.lat.svc, LagWithin(o.lat.lag, o.lat.resp), o.lat.late, o.gauges())
	}

	c.mu.Lock()
	for i, s := range list {
		o := &iv.Ops[i]
		if sum := s.rec.sum; drained && sum != nil {
			if s.cumPend == nil {
				s.cumPend = newSums()
			}
			sum.addTo(s.cumPend)
			s.addCumSum(sum)
		} else {
			s.mergeWhole(o.Response, o.Service, o.StartLag, o.Late)
		}
		s.cum.Add(&o.Counts)
		if o.active() {
			s.cumActive += iv.Seconds()
		}
	}
	c.markPartial(iv)
	c.last = iv.End
	c.latest, c.latestT, c.latestE = p, iv.Start, iv.End
	// A sliver of an interval (the flush at the end of a run, a tick right after a reset)
	// is no time-series point: a rate over a few milliseconds is noise, and charts would
	// end on a false dip. Its operations still count in the cumulative view.
	if iv.Seconds() >= c.cfg.Interval.Seconds()/10 {
		if len(c.ring) < cap(c.ring) {
			c.ring = append(c.ring, p)
		} else {
			c.ring[c.head] = p
			c.head = (c.head + 1) % len(c.ring)
		}
		c.pushed++
	}
	c.mu.Unlock()

	c.subMu.Lock()
	subs := c.subs
	c.subMu.Unlock()
	for _, s := range subs {
		s.f(iv)
	}
	c.dropIdleJSON()
}

// markPartial records in the cumulative view that iv lacked some node's data, so the
// cumulative report of a fleet says it undercounts. The caller holds mu.
func (c *Collector) markPartial(iv *Interval) {
	if !iv.Partial && len(iv.Missing) == 0 {
		return
	}
	c.cumPartial = true
	for _, n := range iv.Missing {
		if c.cumMissing == nil {
			c.cumMissing = map[string]struct{}{}
		}
		c.cumMissing[n] = struct{}{}
	}
}

// ErrOutOfOrder is Ingest's error for an interval that does not end after the previous
// one, or that ends before the last reset (its data belongs to the span the reset
// discarded); a caller may skip such an interval.
var ErrOutOfOrder = errors.New("interval out of time order")

// Ingest publishes an interval built outside the collector, typically a fleet interval a
// coordinator merged from its nodes' encoded intervals, exactly as Tick publishes one
// drained from the recorders: it is merged into the cumulative view, becomes the latest
// interval and a point of the series (with its completeness: Nodes, Partial, Missing),
// and is handed to the subscribers, so every view of a node (Latest, Cumulative, Series,
// SSE, Prometheus, reports, an IntervalLog) serves it identically.
//
// iv's series are matched by Name and registered as needed; a registered series that
// iv lacks shows zero counts for the interval. Its gauges (TargetRate, Workers, Backlog,
// Pending) are taken from iv, not from the collector's settings. Intervals must come in
// time order: iv.End must be after the end of the previous interval (or the last Reset),
// else nothing is applied and an error says so. iv is only read; the subscribers see
// the collector's own copy.
//
// A collector fed by Ingest should not also be ticked from its recorders (Run, Tick):
// the two would interleave in one series.
func (c *Collector) Ingest(iv *Interval) error { return c.ingest(iv, true) }

// IngestCumulative merges iv into the cumulative view only: not the latest interval, the
// series or the subscribers. It is for data that arrives after its second was published
// (a node's interval that came in after the coordinator's bounded wait), which must
// still count in the totals but cannot rewrite history. It accepts any time order.
func (c *Collector) IngestCumulative(iv *Interval) error { return c.ingest(iv, false) }

func (c *Collector) ingest(src *Interval, publish bool) error {
	ops := make([]Op, len(src.Ops))
	for i := range src.Ops {
		op, err := c.Register(src.Ops[i].Name)
		if err != nil {
			return fmt.Errorf("ingest interval %v..%v: %w", src.Start, src.End, err)
		}
		ops[i] = op
	}
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	list := c.list()
	var dropped int64
	if !publish {
		c.mu.Lock()
		for i := range src.Ops {
			o, s := &src.Ops[i], list[ops[i]]
			s.markMerged(o.Response, o.Service, o.StartLag, o.Late)
			dropped += MergeHistograms(s.cumResp, o.Response)
			dropped += MergeHistograms(s.cumSvc, o.Service)
			dropped += MergeHistograms(s.cumLag, o.StartLag)
			if o.Late != nil {
				dropped += MergeHistograms(s.cumLate, o.Late)
			}
			s.cum.Add(&o.Counts)
		}
		c.markPartial(src)
		c.mu.Unlock()
		return droppedErr(src, dropped)
	}
	if !src.End.After(c.last) {
		return fmt.Errorf("ingest interval %v..%v: %w: it does not end after the previous interval or the last reset (%v)",
			src.Start, src.End, ErrOutOfOrder, c.last)
	}
	iv := c.interval(list)
	iv.Start, iv.End, iv.Due = src.Start, src.End, src.Due
	iv.Nodes, iv.Partial, iv.Missing = src.Nodes, src.Partial, append(iv.Missing[:0], src.Missing...)
	for i := range list {
		o := &iv.Ops[i]
		resetHistogram(o.Response)
		resetHistogram(o.Service)
		resetHistogram(o.StartLag)
		resetHistogram(o.Late)
		o.Counts = Counts{}
		o.TargetRate, o.Workers, o.Backlog, o.Pending = 0, 0, 0, 0
		o.lat.ok = false
	}
	for i := range src.Ops {
		s, o := &src.Ops[i], &iv.Ops[ops[i]]
		dropped += MergeHistograms(o.Response, s.Response)
		dropped += MergeHistograms(o.Service, s.Service)
		dropped += MergeHistograms(o.StartLag, s.StartLag)
		if s.Late != nil {
			dropped += MergeHistograms(o.Late, s.Late)
		}
		o.Counts.Add(&s.Counts)
		o.TargetRate += s.TargetRate
		o.Workers += s.Workers
		o.Backlog = max(o.Backlog, s.Backlog)
		o.Pending += s.Pending
	}
	c.publish(list, iv, false)
	return droppedErr(src, dropped)
}

// droppedErr reports values an ingested interval held outside the package geometry: a
// sender with other histograms, whose totals the views now understate.
func droppedErr(iv *Interval, dropped int64) error {
	if dropped == 0 {
		return nil
	}
	return fmt.Errorf("ingest interval %v..%v: %d latencies outside the histogram range were dropped", iv.Start, iv.End, dropped)
}

// latencyOf is LatencyOf(h), read with the bucket sums of sum (part picks which) when
// sum is not nil: h then holds exactly those sums.
func latencyOf(h *hdrhistogram.Histogram, sum *sums, part func(*sums) *sparse) Latency {
	if sum == nil || h.TotalCount() == 0 {
		return LatencyOf(h)
	}
	return part(sum).latency(h)
}

func resetHistogram(h *hdrhistogram.Histogram) {
	if h.TotalCount() != 0 {
		h.Reset()
	}
}

// Reset starts a new cumulative span now, discarding what was recorded since the last
// tick. The series and the latest interval are kept: they are history, not totals.
func (c *Collector) Reset() { c.ResetAt(c.cfg.Clock.Now()) }

// ResetAt is Reset with an explicit time, for callers that drive Tick with their own
// clock.
func (c *Collector) ResetAt(now time.Time) {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	list := c.list()
	// The drain below reuses the sums the last tick's interval points to: that interval
	// (still the caller's until the next tick) must fall back to its histograms.
	for i := range c.iv.Ops {
		c.iv.Ops[i].sum = nil
	}
	for _, s := range list {
		s.rec.collect()
		for i := range s.rec.shards {
			s.rec.shards[i].resetErrors()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range list {
		resetHistogram(s.cumResp)
		resetHistogram(s.cumSvc)
		resetHistogram(s.cumLag)
		resetHistogram(s.cumLate)
		if s.cumSum != nil {
			s.cumSum.clear()
		}
		if s.cumPend != nil {
			s.cumPend.clear()
		}
		s.cum, s.cumActive, s.cumMerged = Counts{}, 0, false
	}
	c.cumPartial, c.cumMissing = false, nil
	c.start, c.last = now, now
}

// SpanStart returns the start of the current cumulative span (the last Reset).
func (c *Collector) SpanStart() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.start
}

// Latest returns the report of the last interval. Before the first tick it has zero
// counts and Start = End = the start of the cumulative span. A series registered after
// the last tick is absent until the next one.
func (c *Collector) Latest() Summary {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.latestT.IsZero() {
		return c.emptySummary()
	}
	p := c.latest.point(c.list())
	return Summary{Start: c.latestT, End: c.latestE, Seconds: spanSeconds(c.latestT, c.latestE), Ops: p.Ops,
		Nodes: p.Nodes, Partial: p.Partial, Missing: p.Missing}
}

func (c *Collector) emptySummary() Summary {
	list := c.list()
	s := Summary{Start: c.start, End: c.start, Ops: make(map[string]OpSummary, len(list))}
	for _, se := range list {
		s.Ops[se.name] = buildOpSummary(&Counts{}, Latency{}, Latency{}, 0, se.currentGauges())
	}
	return s
}

func (s *series) currentGauges() gauges {
	return gauges{
		target:  math.Float64frombits(s.target.Load()),
		workers: int(s.workers.Load()),
	}
}

// Cumulative returns the report of everything ticked since the collector was created or
// last Reset, one entry per registered series. The gauges are the current settings and
// the last sampled backlog.
func (c *Collector) Cumulative() Summary {
	c.mu.RLock()
	defer c.mu.RUnlock()
	list := c.list()
	c.settleAll(list)
	secs := spanSeconds(c.start, c.last)
	s := Summary{Start: c.start, End: c.last, Seconds: secs, Ops: make(map[string]OpSummary, len(list))}
	for i, se := range list {
		g := se.currentGauges()
		if !c.latestT.IsZero() && i < len(c.latest.ops) {
			r := &c.latest.ops[i]
			g.backlog = time.Duration(float64(r.backlogMs) * float64(time.Millisecond))
			g.pending = r.pending
		}
		resp, svc, lag, late := se.cumLatencies()
		sum := buildOpSummary(&se.cum, resp, svc, secs, g)
		sum.StartLag = LagWithin(lag, sum.ResponseTime)
		sum.DropLateness = late
		sum.ActiveSeconds = se.cumActive
		s.Ops[se.name] = sum
	}
	s.Partial = c.cumPartial
	if len(c.cumMissing) > 0 {
		s.Missing = slices.Sorted(maps.Keys(c.cumMissing))
	}
	return s
}

// addCumSum adds a tick's drained sums to the cumulative buckets. The caller holds mu.
func (s *series) addCumSum(sum *sums) {
	if s.cumSum == nil {
		s.cumSum = newSums()
	}
	sum.addTo(s.cumSum)
}

// addTo adds b's bucket counts (not its Counts) into dst.
func (b *sums) addTo(dst *sums) {
	b.resp.addTo(&dst.resp)
	b.svc.addTo(&dst.svc)
	b.lag.addTo(&dst.lag)
	if b.late != nil {
		if dst.late == nil {
			late := makeSparse(lagLayout)
			dst.late = &late
		}
		b.late.addTo(dst.late)
	}
}

// settleCum records the pending cumulative counts (cumPend) into the cumulative
// histograms. The caller holds mu for writing, or for reading and cumMu.
func (s *series) settleCum() {
	p := s.cumPend
	if p == nil {
		return
	}
	p.resp.record(s.cumResp)
	p.svc.record(s.cumSvc)
	p.lag.record(s.cumLag)
	if p.late != nil {
		p.late.record(s.cumLate)
	}
	p.clear()
}

// settleAll settles every series of list; the caller holds mu for reading.
func (c *Collector) settleAll(list []*series) {
	c.cumMu.Lock()
	for _, s := range list {
		s.settleCum()
	}
	c.cumMu.Unlock()
}

// mergeWhole merges histograms that are not a drain's sums (an ingested interval, or a
// tick's interval without sums) into the cumulative ones. The caller holds mu.
func (s *series) mergeWhole(resp, svc, lag, late *hdrhistogram.Histogram) {
	s.markMerged(resp, svc, lag, late)
	MergeHistograms(s.cumResp, resp)
	MergeHistograms(s.cumSvc, svc)
	MergeHistograms(s.cumLag, lag)
	MergeHistograms(s.cumLate, late)
}

// markMerged notes that counts outside cumSum are about to be merged into the
// cumulative histograms, unless every histogram given is empty.
func (s *series) markMerged(hs ...*hdrhistogram.Histogram) {
	for _, h := range hs {
		if h != nil && h.TotalCount() != 0 {
			s.cumMerged = true
			return
		}
	}
}

// cumLatencies summarizes the cumulative histograms, from cumSum's buckets while it
// holds every count (the same figures to the bit as LatencyOf: sparse.latency). The
// caller holds mu.
func (s *series) cumLatencies() (resp, svc, lag, late Latency) {
	cs := s.cumSum
	if cs == nil || s.cumMerged {
		return LatencyOf(s.cumResp), LatencyOf(s.cumSvc), LatencyOf(s.cumLag), LatencyOf(s.cumLate)
	}
	resp, svc, lag = cs.resp.latency(s.cumResp), cs.svc.latency(s.cumSvc), cs.lag.latency(s.cumLag)
	if cs.late != nil {
		late = cs.late.latency(s.cumLate)
	} else {
		late = LatencyOf(s.cumLate) // never dropped: empty
	}
	return resp, svc, lag, late
}

// CumulativeCounts returns op's counters since the collector was created or last Reset,
// including Clamped, which the JSON reports do not carry.
func (c *Collector) CumulativeCounts(op Op) Counts {
	s := c.get(op)
	if s == nil {
		return Counts{}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return s.cum
}

// CumulativeHistograms returns copies of op's cumulative response and service time
// histograms (microseconds), for reports and cluster aggregation. It returns nils for
// an unknown op.
func (c *Collector) CumulativeHistograms(op Op) (resp, svc *hdrhistogram.Histogram) {
	s := c.get(op)
	if s == nil {
		return nil, nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.cumMu.Lock()
	s.settleCum()
	c.cumMu.Unlock()
	return s.cumResp.Clone(), s.cumSvc.Clone()
}

// MarkMissing flags the series point of the interval that ended at end partial, with
// node among its missing: data of that node for it came after it was published (a fleet
// coordinator's late delivery), so its counts were a lower bound. The cumulative view
// is not: it takes the late data (IngestCumulative). A point no longer in the series is
// not marked.
//
// The amendment reaches every reader that already has the point: the subscribers of
// SubscribeAmended get the point as it is now (the live stream re-sends it, an
// IntervalLog flags its entry), and a poller that asks for what came after the point
// gets it again (SeriesUpdatedSince, SeriesJSON). A mark that changes nothing (the point
// already named the node) is no amendment.
func (c *Collector) MarkMissing(end time.Time, node string) {
	var amended []Point
	c.mu.Lock()
	at := end.UnixNano()
	list := c.list()
	for i := range c.ring {
		p := &c.ring[i]
		if p.end != at {
			continue
		}
		if p.fleet != nil && p.fleet.partial && slices.Contains(p.fleet.missing, node) {
			continue
		}
		// A new mark, not the old one changed: a reader's Point may share its slice.
		f := fleetMark{partial: true}
		if p.fleet != nil {
			f.nodes = p.fleet.nodes
			f.missing = slices.Clone(p.fleet.missing)
		}
		if !slices.Contains(f.missing, node) {
			f.missing = append(f.missing, node)
			slices.Sort(f.missing)
		}
		c.amendRev++
		// A poller that has everything up to the newest interval's end has not seen this:
		// SeriesUpdatedSince(t) returns the point again for any t up to that end.
		f.amended, f.rev = c.last.UnixNano(), c.amendRev
		p.fleet = &f
		amended = append(amended, p.point(list))
	}
	c.mu.Unlock()
	if len(amended) == 0 {
		return
	}
	c.subMu.Lock()
	subs := c.amendSubs
	c.subMu.Unlock()
	for _, p := range amended {
		for _, s := range subs {
			s.f(p)
		}
	}
}

// SubscribeAmended registers f to receive every point of the series amended after it
// was published (MarkMissing), as it is after the amendment, so that a reader that holds
// the point can replace it. f runs on the amending goroutine (a fleet coordinator's
// ingest), must return quickly and must not call MarkMissing; the read-only views are
// fine. cancel unregisters f; it is idempotent.
func (c *Collector) SubscribeAmended(f func(Point)) (cancel func()) {
	return addSubscriber(&c.subMu, &c.amendSubs, &amendSubscriber{f: f})
}

// Series returns the time series, oldest point first: at most Config.SeriesLen points.
func (c *Collector) Series() []Point {
	return c.SeriesSince(time.Time{})
}

// SeriesSince returns the points whose interval ended after t, oldest first: a span's
// points (a report's), or everything (zero t).
func (c *Collector) SeriesSince(t time.Time) []Point {
	return c.seriesSince(t, false)
}

// SeriesUpdatedSince returns what a poller that read the series up to the point ending
// at t has not seen as it is now, oldest first: the points that ended after t, and those
// that ended at or before it but were amended (MarkMissing) since the series had t, the
// amended ones maybe once more than needed, never less. It is SeriesSince until a point
// is amended.
func (c *Collector) SeriesUpdatedSince(t time.Time) []Point {
	return c.seriesSince(t, true)
}

// updatedAfter tells whether the point is one SeriesUpdatedSince(after) returns (or
// SeriesSince, without updated).
func (p *pointRec) updatedAfter(after int64, updated bool) bool {
	return p.end > after || updated && p.fleet != nil && p.fleet.rev != 0 && p.fleet.amended >= after
}

func (c *Collector) seriesSince(t time.Time, updated bool) []Point {
	after := int64(math.MinInt64)
	if !t.IsZero() {
		after = t.UnixNano()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.ring)
	pts := make([]Point, 0, n)
	list := c.list()
	for i := range n {
		p := &c.ring[(c.head+i)%n]
		if p.updatedAfter(after, updated) {
			pts = append(pts, p.point(list))
		}
	}
	return pts
}
