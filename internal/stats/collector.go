package stats

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
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
	// 1 s points, about 2 MB). Older points are dropped so memory stays flat forever.
	SeriesLen int
}

// Interval is what subscribers get at every tick: the span and, per op class, what was
// recorded in it.
//
// An Interval and its histograms belong to the Collector and are reused at the next
// tick (so a tick allocates no histogram): a subscriber must treat them as read-only and
// must not keep them after its callback returns. Copy what you need (Clone a histogram,
// or call Summary).
type Interval struct {
	Start, End time.Time
	Ops        [NumOps]OpInterval
}

// OpInterval is one op class's share of an Interval.
type OpInterval struct {
	// Response and Service are the interval's latency histograms in microseconds.
	Response, Service *hdrhistogram.Histogram
	// StartLag is how late operations started against their intended start (response
	// minus service time), in microseconds at LagSignificantDigits.
	StartLag *hdrhistogram.Histogram
	Counts
	// TargetRate and Workers are the engine's settings when the interval ended.
	TargetRate float64
	Workers    int
	// Backlog and Pending were sampled from the op's backlog func at the tick.
	Backlog time.Duration
	Pending int64
}

func (o *OpInterval) gauges() gauges {
	return gauges{target: o.TargetRate, workers: o.Workers, backlog: o.Backlog, pending: o.Pending}
}

// Seconds is the length of the interval.
func (iv *Interval) Seconds() float64 { return spanSeconds(iv.Start, iv.End) }

// Summary computes the interval's report.
func (iv *Interval) Summary() Summary {
	secs := iv.Seconds()
	s := Summary{Start: iv.Start, End: iv.End, Seconds: secs, Ops: make(map[string]OpSummary, NumOps)}
	for _, op := range Ops {
		o := &iv.Ops[op]
		sum := buildOpSummary(&o.Counts, LatencyOf(o.Response), LatencyOf(o.Service), secs, o.gauges())
		sum.StartLag = LatencyOf(o.StartLag)
		s.Ops[op.String()] = sum
	}
	return s
}

// BacklogFunc reports how far an op's pacer is behind its schedule and how many intended
// ops are overdue. It is called at every tick and must be cheap, safe for concurrent use,
// and must not call back into the Collector.
type BacklogFunc func() (lag time.Duration, pending int64)

type opState struct {
	rec     *Recorder
	target  atomic.Uint64 // math.Float64bits of the target rate
	workers atomic.Int64
}

type subscriber struct{ f func(*Interval) }

// Collector owns the recorders of all op classes, snapshots them every interval and
// keeps the derived views (latest interval, cumulative, time series). All its methods are
// safe for concurrent use.
type Collector struct {
	cfg Config
	ops [NumOps]opState

	// tickMu serializes Tick and Reset, and is held while subscribers run, because
	// the Interval they see is reused by the next tick.
	tickMu sync.Mutex
	iv     Interval

	// mu guards the published views below. It is written only with tickMu held, so
	// Tick can read them under tickMu alone.
	mu      sync.RWMutex
	start   time.Time // of the cumulative span
	last    time.Time // end of the last interval (start of the next)
	cumResp [NumOps]*hdrhistogram.Histogram
	cumSvc  [NumOps]*hdrhistogram.Histogram
	cumLag  [NumOps]*hdrhistogram.Histogram
	cum     [NumOps]Counts
	latest  pointRec
	// latestLag is the latest interval's start lag, which the compact series record
	// does not keep.
	latestLag [NumOps]Latency
	latestT   time.Time // start of the latest interval; zero before the first tick
	latestE   time.Time // end of the latest interval
	ring      []pointRec
	head      int // index of the oldest point once the ring is full

	subMu sync.Mutex
	subs  []*subscriber // copy-on-write, so Tick reads it without holding subMu

	backlogMu sync.Mutex // guards backlog and targetFn
	backlog   [NumOps]BacklogFunc
	targetFn  [NumOps]func() float64
}

// NewCollector creates a collector with empty recorders. The cumulative span starts now.
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
	c := &Collector{cfg: cfg, ring: make([]pointRec, 0, cfg.SeriesLen)}
	for _, op := range Ops {
		c.ops[op].rec = newRecorder(op, cfg.Shards)
		c.iv.Ops[op].Response = NewHistogram()
		c.iv.Ops[op].Service = NewHistogram()
		c.iv.Ops[op].StartLag = NewLagHistogram()
		c.cumResp[op] = NewHistogram()
		c.cumSvc[op] = NewHistogram()
		c.cumLag[op] = NewLagHistogram()
	}
	now := time.Now()
	c.start, c.last = now, now
	return c
}

// Config returns the effective configuration, defaults filled in.
func (c *Collector) Config() Config { return c.cfg }

// Recorder returns the recorder of op, or nil if op is not a valid Op.
func (c *Collector) Recorder(op Op) *Recorder {
	if int(op) >= NumOps {
		return nil
	}
	return c.ops[op].rec
}

// SetTarget sets the gauges reported for op: its target rate (ops/s, 0 for closed loop)
// and its worker count. The engine calls it whenever either changes.
func (c *Collector) SetTarget(op Op, rate float64, workers int) {
	if int(op) >= NumOps {
		return
	}
	c.ops[op].target.Store(math.Float64bits(rate))
	c.ops[op].workers.Store(int64(workers))
}

// SetBacklog sets the function sampled at every tick for op's backlog; nil removes it.
func (c *Collector) SetBacklog(op Op, f BacklogFunc) {
	if int(op) >= NumOps {
		return
	}
	c.backlogMu.Lock()
	c.backlog[op] = f
	c.backlogMu.Unlock()
}

// SetTargetFunc sets a function sampled at every tick for op's target rate, for a load
// shape whose rate changes by itself (a ramp, steps, a sine); nil goes back to the rate of
// SetTarget.
func (c *Collector) SetTargetFunc(op Op, f func() float64) {
	if int(op) >= NumOps {
		return
	}
	c.backlogMu.Lock()
	c.targetFn[op] = f
	c.backlogMu.Unlock()
}

// Subscribe registers f to receive every interval, in tick order, on the ticking
// goroutine. f must return quickly (it delays the next snapshot), must not keep the
// Interval, and must not call Tick or Reset (it would deadlock); the read-only views
// (Latest, Cumulative, Series) are fine. cancel unregisters f; it is idempotent.
func (c *Collector) Subscribe(f func(*Interval)) (cancel func()) {
	s := &subscriber{f: f}
	c.subMu.Lock()
	c.subs = append(c.subs[:len(c.subs):len(c.subs)], s)
	c.subMu.Unlock()
	return func() {
		c.subMu.Lock()
		defer c.subMu.Unlock()
		subs := make([]*subscriber, 0, len(c.subs))
		for _, o := range c.subs {
			if o != s {
				subs = append(subs, o)
			}
		}
		c.subs = subs
	}
}

// Run ticks every Config.Interval until ctx ends. It does not tick when ctx ends: to
// flush what was recorded after the last tick, stop the workers and call Tick once more.
func (c *Collector) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			c.Tick(now)
		}
	}
}

// Tick closes the current interval at now: it swaps every shard's buffers, merges what
// they recorded into the interval histograms and the cumulative view, appends a point to
// the series and hands the interval to the subscribers.
//
// The returned Interval belongs to the Collector and is valid until the next Tick or
// Reset (see Interval).
func (c *Collector) Tick(now time.Time) *Interval {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()

	c.backlogMu.Lock()
	backlog, targetFn := c.backlog, c.targetFn
	c.backlogMu.Unlock()

	iv := &c.iv
	iv.Start, iv.End = c.last, now
	for _, op := range Ops {
		o := &iv.Ops[op]
		resetHistogram(o.Response)
		resetHistogram(o.Service)
		resetHistogram(o.StartLag)
		o.Counts = Counts{}
		c.ops[op].rec.drain(o.Response, o.Service, o.StartLag, &o.Counts)
		o.TargetRate = math.Float64frombits(c.ops[op].target.Load())
		if f := targetFn[op]; f != nil {
			o.TargetRate = f()
		}
		o.Workers = int(c.ops[op].workers.Load())
		o.Backlog, o.Pending = 0, 0
		if f := backlog[op]; f != nil {
			o.Backlog, o.Pending = f()
		}
	}

	// Percentiles are computed before taking mu so readers wait only for the merge.
	p := pointRec{end: now.UnixNano(), seconds: float32(iv.Seconds())}
	var lag [NumOps]Latency
	for _, op := range Ops {
		o := &iv.Ops[op]
		p.ops[op] = newOpRec(&o.Counts, LatencyOf(o.Response), LatencyOf(o.Service), o.gauges())
		lag[op] = LatencyOf(o.StartLag)
	}

	c.mu.Lock()
	for _, op := range Ops {
		o := &iv.Ops[op]
		MergeHistograms(c.cumResp[op], o.Response)
		MergeHistograms(c.cumSvc[op], o.Service)
		MergeHistograms(c.cumLag[op], o.StartLag)
		c.cum[op].Add(&o.Counts)
	}
	c.last = now
	c.latest, c.latestT, c.latestE, c.latestLag = p, iv.Start, now, lag
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
	}
	c.mu.Unlock()

	c.subMu.Lock()
	subs := c.subs
	c.subMu.Unlock()
	for _, s := range subs {
		s.f(iv)
	}
	return iv
}

func resetHistogram(h *hdrhistogram.Histogram) {
	if h.TotalCount() != 0 {
		h.Reset()
	}
}

// Reset starts a new cumulative span now, discarding what was recorded since the last
// tick. The series and the latest interval are kept: they are history, not totals.
func (c *Collector) Reset() { c.ResetAt(time.Now()) }

// ResetAt is Reset with an explicit time, for callers that drive Tick with their own
// clock.
func (c *Collector) ResetAt(now time.Time) {
	c.tickMu.Lock()
	defer c.tickMu.Unlock()
	for _, op := range Ops {
		c.ops[op].rec.drain(nil, nil, nil, nil)
		for i := range c.ops[op].rec.shards {
			c.ops[op].rec.shards[i].resetErrors()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range Ops {
		resetHistogram(c.cumResp[op])
		resetHistogram(c.cumSvc[op])
		resetHistogram(c.cumLag[op])
		c.cum[op] = Counts{}
	}
	c.start, c.last = now, now
}

// SpanStart returns the start of the current cumulative span (the last Reset).
func (c *Collector) SpanStart() time.Time {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.start
}

// Latest returns the report of the last interval. Before the first tick it has zero
// counts and Start = End = the start of the cumulative span.
func (c *Collector) Latest() Summary {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.latestT.IsZero() {
		return c.emptySummary()
	}
	p := c.latest.point()
	for _, op := range Ops {
		s := p.Ops[op.String()]
		s.StartLag = c.latestLag[op]
		p.Ops[op.String()] = s
	}
	return Summary{Start: c.latestT, End: c.latestE, Seconds: spanSeconds(c.latestT, c.latestE), Ops: p.Ops}
}

func (c *Collector) emptySummary() Summary {
	s := Summary{Start: c.start, End: c.start, Ops: make(map[string]OpSummary, NumOps)}
	for _, op := range Ops {
		s.Ops[op.String()] = buildOpSummary(&Counts{}, Latency{}, Latency{}, 0, c.currentGauges(op))
	}
	return s
}

func (c *Collector) currentGauges(op Op) gauges {
	return gauges{
		target:  math.Float64frombits(c.ops[op].target.Load()),
		workers: int(c.ops[op].workers.Load()),
	}
}

// Cumulative returns the report of everything ticked since the collector was created or
// last Reset. The gauges are the current settings and the last sampled backlog.
func (c *Collector) Cumulative() Summary {
	c.mu.RLock()
	defer c.mu.RUnlock()
	secs := spanSeconds(c.start, c.last)
	s := Summary{Start: c.start, End: c.last, Seconds: secs, Ops: make(map[string]OpSummary, NumOps)}
	for _, op := range Ops {
		g := c.currentGauges(op)
		if !c.latestT.IsZero() {
			r := &c.latest.ops[op]
			g.backlog = time.Duration(float64(r.backlogMs) * float64(time.Millisecond))
			g.pending = r.pending
		}
		sum := buildOpSummary(&c.cum[op], LatencyOf(c.cumResp[op]), LatencyOf(c.cumSvc[op]), secs, g)
		sum.StartLag = LatencyOf(c.cumLag[op])
		s.Ops[op.String()] = sum
	}
	return s
}

// CumulativeCounts returns op's counters since the collector was created or last Reset,
// including Clamped, which the JSON reports do not carry.
func (c *Collector) CumulativeCounts(op Op) Counts {
	if int(op) >= NumOps {
		return Counts{}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cum[op]
}

// CumulativeHistograms returns copies of op's cumulative response and service time
// histograms (microseconds), for reports and cluster aggregation. It returns nils for
// an invalid op.
func (c *Collector) CumulativeHistograms(op Op) (resp, svc *hdrhistogram.Histogram) {
	if int(op) >= NumOps {
		return nil, nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.cumResp[op].Clone(), c.cumSvc[op].Clone()
}

// Series returns the time series, oldest point first: at most Config.SeriesLen points.
func (c *Collector) Series() []Point {
	return c.SeriesSince(time.Time{})
}

// SeriesSince returns the points whose interval ended after t, oldest first, so a
// poller can fetch only what it has not seen.
func (c *Collector) SeriesSince(t time.Time) []Point {
	after := int64(math.MinInt64)
	if !t.IsZero() {
		after = t.UnixNano()
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.ring)
	pts := make([]Point, 0, n)
	for i := range n {
		p := &c.ring[(c.head+i)%n]
		if p.end > after {
			pts = append(pts, p.point())
		}
	}
	return pts
}
