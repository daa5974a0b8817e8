package otlpexport

import (
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// series is what is kept of one series (op class or operation) between exports.
type series struct {
	name              string
	start             time.Time // of the cumulative data; the last export's time for delta
	response, service hist
	counts            stats.Counts
	// Gauges: the values of the latest interval.
	target, backlog  float64
	workers, pending int64
}

// state is the data fed by the intervals and read by each export. Only the counts are
// kept, never an operation: an interval adds its histograms and counters once.
type state struct {
	delta bool
	// driverStats reads the connected driver's own counters at export time; may be nil.
	driverStats func() (name string, stats map[string]int64)

	mu  sync.Mutex
	ops stats.Series[series]
}

// newState returns the state of an export started at now.
func newState(delta bool, driverStats func() (string, map[string]int64), now time.Time) *state {
	s := &state{delta: delta, driverStats: driverStats}
	// Every built-in series exists from the start, so a backend sees zeros, not gaps.
	for _, name := range stats.BuiltinNames() {
		s.series(name, now)
	}
	return s
}

// series returns the state of name, creating it; with mu held.
func (s *state) series(name string, now time.Time) *series {
	return s.ops.Get(name, func() *series { return &series{name: name, start: now} })
}

// observe adds one interval. It runs on the collector's tick, which reuses the interval
// afterwards, so it reads it here and keeps nothing of it.
func (s *state) observe(iv *stats.Interval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range iv.Ops {
		o := &iv.Ops[i]
		se := s.series(o.Name, iv.Start)
		se.response.AddResponse(o)
		se.service.AddService(o)
		addCounts(&se.counts, &o.Counts)
		se.target, se.workers = o.TargetRate, int64(o.Workers)
		se.backlog, se.pending = o.Backlog.Seconds(), o.Pending
	}
}

// addCounts adds the counts that are exported.
func addCounts(c, o *stats.Counts) {
	c.Successes += o.Successes
	c.Misses += o.Misses
	for k, n := range o.Failures {
		c.Failures[k] += n
	}
	for k, n := range o.Validation {
		c.Validation[k] += n
	}
	c.Clamped += o.Clamped
}

// restore gives the state back the data of a delta export that failed (snaps, from
// snapshot), so the next export carries it, over a span from the failed export's start.
// The gauges stay the latest. Cumulative state was never taken out: nothing to do.
func (s *state) restore(snaps []series) {
	if !s.delta {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range snaps {
		o := &snaps[i]
		se := s.series(o.name, o.start)
		se.start = o.start
		se.response.merge(&o.response)
		se.service.merge(&o.service)
		addCounts(&se.counts, &o.counts)
	}
}

// snapshot copies the series under the lock (resetting them in delta mode) so the data
// points are built outside it: an export holds up the tick only for the copy.
func (s *state) snapshot(now time.Time) []series {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]series, 0, s.ops.Len())
	for name, o := range s.ops.All() {
		out = append(out, *o)
		if s.delta {
			*o = series{name: name, start: now, target: o.target, backlog: o.backlog, workers: o.workers, pending: o.pending}
		}
	}
	return out
}

// scope names the instrumentation of every metric exported.
var scope = instrumentation.Scope{Name: "github.com/ndbench/ndbench/internal/otlpexport"}

// sumBuilder collects the points of a monotonic counter, one per attribute set.
type sumBuilder struct {
	temporality metricdata.Temporality
	now         time.Time
	points      []metricdata.DataPoint[int64]
}

func (b *sumBuilder) add(start time.Time, v int64, kv ...attribute.KeyValue) {
	b.points = append(b.points, metricdata.DataPoint[int64]{Attributes: attribute.NewSet(kv...),
		StartTime: start, Time: b.now, Value: v})
}

func (b *sumBuilder) metric(name, desc, unit string) metricdata.Metrics {
	return metricdata.Metrics{Name: name, Description: desc, Unit: unit,
		Data: metricdata.Sum[int64]{DataPoints: b.points, Temporality: b.temporality, IsMonotonic: true}}
}

// metrics builds the data of one export, and returns the series it was built from (for
// restore). The names are the Prometheus export's, so a
// dashboard of ndbench's /metrics works on the series an OTLP pipeline writes to
// Prometheus (the Collector's and Prometheus' OTLP translation keep a name that already
// ends in _total or in its unit).
func (s *state) metrics(now time.Time, exponential bool) ([]metricdata.Metrics, []series) {
	snaps := s.snapshot(now)
	temp := metricdata.CumulativeTemporality
	if s.delta {
		temp = metricdata.DeltaTemporality
	}
	ops := sumBuilder{temporality: temp, now: now}
	errs := sumBuilder{temporality: temp, now: now}
	valid := sumBuilder{temporality: temp, now: now}
	clamped := sumBuilder{temporality: temp, now: now}
	var target, backlog []metricdata.DataPoint[float64]
	var workers, pending []metricdata.DataPoint[int64]
	var expo [2][]metricdata.ExponentialHistogramDataPoint[float64]
	var expl [2][]metricdata.HistogramDataPoint[float64]
	for i := range snaps {
		o := &snaps[i]
		op := attribute.String("op", o.name)
		ops.add(o.start, o.counts.Successes, op, attribute.String("result", "success"))
		ops.add(o.start, o.counts.Misses, op, attribute.String("result", "miss"))
		for _, c := range driver.Classes {
			errs.add(o.start, o.counts.Failures[c], op, attribute.String("class", c.String()))
		}
		for _, v := range stats.Validations {
			valid.add(o.start, o.counts.Validation[v], op, attribute.String("kind", v.String()))
		}
		clamped.add(o.start, o.counts.Clamped, op)
		set := attribute.NewSet(op)
		target = append(target, metricdata.DataPoint[float64]{Attributes: set, Time: now, Value: o.target})
		backlog = append(backlog, metricdata.DataPoint[float64]{Attributes: set, Time: now, Value: o.backlog})
		workers = append(workers, metricdata.DataPoint[int64]{Attributes: set, Time: now, Value: o.workers})
		pending = append(pending, metricdata.DataPoint[int64]{Attributes: set, Time: now, Value: o.pending})
		for k, h := range []*hist{&o.response, &o.service} {
			if exponential {
				dp := metricdata.ExponentialHistogramDataPoint[float64]{Attributes: set, StartTime: o.start, Time: now}
				h.expoPoint(&dp)
				expo[k] = append(expo[k], dp)
			} else {
				dp := metricdata.HistogramDataPoint[float64]{Attributes: set, StartTime: o.start, Time: now}
				h.explicitPoint(&dp)
				expl[k] = append(expl[k], dp)
			}
		}
	}
	histDesc := [2]struct{ name, desc string }{
		{"ndbench_response_seconds", "Response time (from the intended start, so queueing behind a slow store counts), by op class or operation."},
		{"ndbench_service_seconds", "Service time (from the actual start), by op class or operation."},
	}
	var out []metricdata.Metrics
	for k, d := range histDesc {
		m := metricdata.Metrics{Name: d.name, Description: d.desc, Unit: "s"}
		if exponential {
			m.Data = metricdata.ExponentialHistogram[float64]{DataPoints: expo[k], Temporality: temp}
		} else {
			m.Data = metricdata.Histogram[float64]{DataPoints: expl[k], Temporality: temp}
		}
		out = append(out, m)
	}
	out = append(out,
		ops.metric("ndbench_ops_total", "Operations answered by the store, by op class and result (success, miss).", "{operation}"),
		errs.metric("ndbench_errors_total", "Failed operations by op class and error class (timeout, unavailable, throttled, rejected, other).", "{operation}"),
		valid.metric("ndbench_validation_failures_total", "Values read that failed validation, by op class and kind (corrupt, wrongKey, stale, lost).", "{operation}"),
		clamped.metric("ndbench_latency_clamped_total", "Latencies above the histograms' 1 h ceiling, recorded as 1 h, by op class.", "{operation}"),
		// No unit: "{operation}/s" would make the Prometheus translation append
		// _per_second, and the name would no longer be /metrics' one.
		metricdata.Metrics{Name: "ndbench_target_rate", Description: "Target operations per second (0 = closed loop).",
			Data: metricdata.Gauge[float64]{DataPoints: target}},
		metricdata.Metrics{Name: "ndbench_workers", Description: "Running workers.", Unit: "{worker}",
			Data: metricdata.Gauge[int64]{DataPoints: workers}},
		metricdata.Metrics{Name: "ndbench_backlog_seconds", Description: "How far the pacer is behind its schedule.", Unit: "s",
			Data: metricdata.Gauge[float64]{DataPoints: backlog}},
		metricdata.Metrics{Name: "ndbench_pending_ops", Description: "Intended operations that are overdue.", Unit: "{operation}",
			Data: metricdata.Gauge[int64]{DataPoints: pending}},
	)
	if s.driverStats != nil {
		if name, st := s.driverStats(); len(st) > 0 {
			var pts []metricdata.DataPoint[int64]
			for k, v := range st {
				pts = append(pts, metricdata.DataPoint[int64]{Time: now, Value: v,
					Attributes: attribute.NewSet(attribute.String("driver", name), attribute.String("name", k))})
			}
			out = append(out, metricdata.Metrics{Name: "ndbench_driver_stat",
				Description: "Counters the connected driver keeps of its own, by name: see the driver's documentation.",
				Data:        metricdata.Gauge[int64]{DataPoints: pts}})
		}
	}
	return out, snaps
}
