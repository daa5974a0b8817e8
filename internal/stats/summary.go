package stats

import (
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
)

// Summary is the report of a span of time: the last interval (Collector.Latest), the run
// so far (Collector.Cumulative) or one interval (Interval.Summary).
type Summary struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// Ops has one entry per series (op class, or operation of a class), keyed by name:
	// always the built-in read, write and backfill, and every series registered since.
	Ops map[string]OpSummary `json:"ops"`
	// Nodes, Partial and Missing are the fleet completeness of a coordinator's span
	// (see Point); absent on a node's own. A cumulative view is Partial if any of its
	// intervals was, and Missing then lists every node that was missing from one.
	Nodes   int      `json:"nodes,omitempty"`
	Partial bool     `json:"partial,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// OpSummary is the report of one op class over a span. Latencies are in microseconds.
type OpSummary struct {
	// Count is successes plus misses: every op that got a valid answer.
	Count int64 `json:"count"`
	// Attempted is every op sent to the store: Count plus Errors. A rate check against
	// the target counts attempts; Succeeded (the same as Count) says how many answered.
	Attempted int64 `json:"attempted"`
	// Succeeded is Count, named for reading beside Attempted.
	Succeeded int64 `json:"succeeded"`
	// Rate is Count per second over the span.
	Rate float64 `json:"rate"`
	// ActiveSeconds is how much of a cumulative span the class was active: the intervals
	// in which it had workers or sent operations. A session's classes start and stop at
	// will, so its totals divide by this, not by the span (whose idle time since the
	// connect would drag every rate down). Absent from single intervals.
	ActiveSeconds float64 `json:"activeSeconds,omitempty"`
	Misses        int64   `json:"misses"`
	// Failures has every driver.Class name as a key, zeros included, so a consumer never
	// has to tell "no failures" from "not reported".
	Failures map[string]int64 `json:"failures"`
	// Errors is the sum of Failures.
	Errors int64 `json:"errors"`
	// Validation has every Validation name as a key, zeros included.
	Validation map[string]int64 `json:"validation"`
	// Clamped counts latencies above the histograms' ceiling (HighestValue, 1 h), which
	// were recorded as the ceiling: the top percentiles and the max understate them.
	Clamped      int64   `json:"clamped"`
	ResponseTime Latency `json:"responseTime"`
	ServiceTime  Latency `json:"serviceTime"`
	// StartLag is how late operations started against their intended start times: the
	// load generator's own precision.
	StartLag Latency `json:"startLag"`
	// StartLagOwn and StartLagWait split the start lag's mean (µs per answered operation):
	// StartLagWait is the time operations waited for a worker that was still in the store
	// with its previous operation (a store that stalled or slowed holds the workers), and
	// StartLagOwn the rest, the generator's own (bookkeeping, the pacer's wake-up,
	// scheduling, a busy CPU). Both 0 where the split is not known (an older node's data).
	StartLagOwn  float64 `json:"startLagOwn"`
	StartLagWait float64 `json:"startLagWait"`
	// Dropped counts intended operations that were never sent because they were more
	// than workload.maxLateness late when a worker got to them (workload.catchUp=drop);
	// DropLateness is how late they were. Neither counts as attempted.
	Dropped      int64   `json:"dropped"`
	DropLateness Latency `json:"dropLateness"`
	// TargetRate and Workers are the engine's settings at the end of the span.
	TargetRate float64 `json:"targetRate"`
	Workers    int     `json:"workers"`
	// PeakWorkers is the most workers the class had in any interval of the span (an
	// elastic pool grows while it falls behind); set by reports, from the series.
	PeakWorkers int `json:"peakWorkers,omitempty"`
	// BacklogMs and Pending are how far the pacer's schedule was behind, and how many
	// intended ops were overdue, when the span ended.
	BacklogMs float64 `json:"backlogMs"`
	Pending   int64   `json:"pending"`
}

// Point is one interval of the time series.
type Point struct {
	// Time is the end of the interval.
	Time time.Time `json:"t"`
	// Seconds is how long the interval is: a second mostly, less at a phase boundary (the
	// first interval after a reset starts at the reset, the one before ends at it). Rates
	// are over it, so a chart that derives a rate from a count (attempted, errors) divides
	// by it, not by 1 s. Absent from points of servers that predate it.
	Seconds float64              `json:"seconds,omitempty"`
	Ops     map[string]OpSummary `json:"ops"`
	// Nodes is how many nodes contributed to a fleet interval (absent on a node's own
	// series). Partial marks a fleet interval that lacks the data of the nodes listed in
	// Missing (sorted ids): its counts are a lower bound, and a chart should say so.
	Nodes   int      `json:"nodes,omitempty"`
	Partial bool     `json:"partial,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// fleetMark is a series point's fleet completeness (see Point).
type fleetMark struct {
	nodes   int
	partial bool
	missing []string
	// rev is the collector's amendRev at the point's last amendment (MarkMissing), 0
	// if it was never amended, and amended the end of the newest interval then (Unix
	// ns): a poller that read up to an end at or before it has not seen the amendment.
	rev     uint64
	amended int64
}

// gauges are the engine's settings and pacing state sampled at a tick.
type gauges struct {
	target  float64
	workers int
	backlog time.Duration
	pending int64
}

// latency32 is a Latency stored in float32: HDR values carry 3 significant digits, so
// float32's 7 loses nothing that matters, and it halves the size of a series point.
type latency32 struct {
	p50, p95, p99, p995, p999, max, mean float32
}

func compactLatency(l Latency) latency32 {
	return latency32{float32(l.P50), float32(l.P95), float32(l.P99), float32(l.P995),
		float32(l.P999), float32(l.Max), float32(l.Mean)}
}

func (l latency32) expand() Latency {
	return Latency{float64(l.p50), float64(l.p95), float64(l.p99), float64(l.p995),
		float64(l.p999), float64(l.max), float64(l.mean)}
}

// opRec is the compact form of an OpSummary kept in the series ring (about 225 bytes;
// maps are built only when a Point is read).
type opRec struct {
	counts         Counts
	resp, svc, lag latency32
	// late is the dropped operations' lateness, nil for an interval without drops (most
	// of them), so it costs a pointer rather than a latency32 in every point.
	late      *latency32
	target    float64
	workers   int32
	backlogMs float32
	pending   int64
}

// pointRec is the compact form of a Point: about 225 bytes per series, so the default
// 3600-point series of the three built-in series takes about 2.6 MB.
type pointRec struct {
	end     int64 // unix nanoseconds
	seconds float32
	ops     []opRec    // by Op: the series registered at the tick
	fleet   *fleetMark // nil for a node's own tick, so its points stay compact
}

// newOpRec compacts an interval's report; late is read only when the interval dropped
// operations (c.Dropped > 0).
func newOpRec(c *Counts, resp, svc, lag, late Latency, g gauges) opRec {
	r := opRec{
		counts:    *c,
		resp:      compactLatency(resp),
		svc:       compactLatency(svc),
		lag:       compactLatency(lag),
		target:    g.target,
		workers:   int32(min(g.workers, 1<<31-1)),
		backlogMs: float32(g.backlog.Seconds() * 1000),
		pending:   g.pending,
	}
	if c.Dropped > 0 {
		l := compactLatency(late)
		r.late = &l
	}
	return r
}

func (p *pointRec) point(list []*series) Point {
	ops := make(map[string]OpSummary, len(p.ops))
	for i := range p.ops {
		r := &p.ops[i]
		g := gauges{target: r.target, workers: int(r.workers), pending: r.pending}
		s := buildOpSummary(&r.counts, r.resp.expand(), r.svc.expand(), float64(p.seconds), g)
		s.BacklogMs = float64(r.backlogMs)
		s.StartLag = r.lag.expand()
		if r.late != nil {
			s.DropLateness = r.late.expand()
		}
		ops[list[i].name] = s
	}
	// Microseconds are enough, and keep float32's noise out of the JSON (0.959, not
	// 0.958999991416931).
	pt := Point{Time: time.Unix(0, p.end), Seconds: math.Round(float64(p.seconds)*1e6) / 1e6, Ops: ops}
	if f := p.fleet; f != nil {
		pt.Nodes, pt.Partial, pt.Missing = f.nodes, f.partial, slices.Clone(f.missing)
	}
	return pt
}

// SummarizeOp builds the report of one op class from its counters and latency
// histograms (microseconds) over seconds, e.g. after merging several nodes' data. The
// engine gauges (TargetRate, Workers, BacklogMs, Pending) are left for the caller.
func SummarizeOp(c Counts, resp, svc *hdrhistogram.Histogram, seconds float64) OpSummary {
	return buildOpSummary(&c, LatencyOf(resp), LatencyOf(svc), seconds, gauges{})
}

func buildOpSummary(c *Counts, resp, svc Latency, seconds float64, g gauges) OpSummary {
	s := OpSummary{
		Count:        c.Count(),
		Attempted:    c.Count() + c.Errors(),
		Succeeded:    c.Count(),
		Misses:       c.Misses,
		Failures:     make(map[string]int64, driver.NumClasses),
		Errors:       c.Errors(),
		Validation:   make(map[string]int64, NumValidations),
		Clamped:      c.Clamped,
		Dropped:      c.Dropped,
		ResponseTime: resp,
		ServiceTime:  svc,
		TargetRate:   g.target,
		Workers:      g.workers,
		BacklogMs:    g.backlog.Seconds() * 1000,
		Pending:      g.pending,
	}
	if seconds > 0 {
		s.Rate = float64(s.Count) / seconds
	}
	if n := c.Count(); n > 0 {
		s.StartLagOwn = float64(c.LagOwnUs) / float64(n)
		s.StartLagWait = float64(c.LagWaitUs) / float64(n)
	}
	for _, cl := range driver.Classes {
		s.Failures[cl.String()] = c.Failures[cl]
	}
	for _, v := range Validations {
		s.Validation[v.String()] = c.Validation[v]
	}
	return s
}

func spanSeconds(start, end time.Time) float64 {
	if !end.After(start) {
		return 0
	}
	return end.Sub(start).Seconds()
}
