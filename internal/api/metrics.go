package api

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/stats"
)

// quantiles are the percentiles exported as gauges, with their summary field.
var quantiles = []struct {
	label string
	get   func(stats.Latency) float64
}{
	{"0.5", func(l stats.Latency) float64 { return l.P50 }},
	{"0.95", func(l stats.Latency) float64 { return l.P95 }},
	{"0.99", func(l stats.Latency) float64 { return l.P99 }},
	{"0.999", func(l stats.Latency) float64 { return l.P999 }},
	{"1", func(l stats.Latency) float64 { return l.Max }},
}

// metrics are the Prometheus view of the statistics. Counters are fed by the interval
// deltas, not read from the cumulative view, so a stats reset never makes them go down.
type metrics struct {
	ops        *prometheus.CounterVec
	errors     *prometheus.CounterVec
	validation *prometheus.CounterVec
	clamped    *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	latency    *prometheus.GaugeVec
	// hist holds ndbench_response_seconds and ndbench_service_seconds: cumulative
	// histograms that, unlike the latency gauges, sum across nodes and over time.
	hist    *latencyHistograms
	target  *prometheus.GaugeVec
	workers *prometheus.GaugeVec
	backlog *prometheus.GaugeVec
	pending *prometheus.GaugeVec
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndbench_ops_total",
			Help: "Operations answered by the store, by op class and result (success, miss)."}, []string{"op", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndbench_errors_total",
			Help: "Failed operations by op class and error class (timeout, unavailable, throttled, rejected, other)."}, []string{"op", "class"}),
		validation: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndbench_validation_failures_total",
			Help: "Values read that failed validation, by op class and kind (corrupt, wrongKey, stale, lost)."}, []string{"op", "kind"}),
		clamped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndbench_latency_clamped_total",
			Help: "Latencies above the histograms' 1 h ceiling, recorded as 1 h (the top percentiles understate them), by op class."}, []string{"op"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ndbench_dropped_total",
			Help: "Scheduled operations not sent because they were more than workload.maxLateness late (workload.catchUp=drop), by op class."}, []string{"op"}),
		latency: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ndbench_latency_seconds",
			Help: "Latency percentiles over the last 1 s interval; type response (from intended start) or service (from actual start). They do not combine across nodes or over time: use ndbench_response_seconds and ndbench_service_seconds for that."},
			[]string{"op", "type", "quantile"}),
		target: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ndbench_target_rate",
			Help: "Target operations per second (0 = closed loop)."}, []string{"op"}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ndbench_workers",
			Help: "Running workers."}, []string{"op"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ndbench_backlog_seconds",
			Help: "How far the pacer is behind its schedule."}, []string{"op"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ndbench_pending_ops",
			Help: "Intended operations that are overdue."}, []string{"op"}),
		hist: newLatencyHistograms(),
	}
	for _, c := range []prometheus.Collector{m.ops, m.errors, m.validation, m.clamped, m.dropped, m.latency, m.hist, m.target, m.workers, m.backlog, m.pending,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	// Every built-in series exists from the start, so rate() and alerts see zeros, not
	// gaps; a class the workload adds appears at its first interval.
	for _, name := range stats.BuiltinNames() {
		m.ops.WithLabelValues(name, "success")
		m.ops.WithLabelValues(name, "miss")
		for _, c := range driver.Classes {
			m.errors.WithLabelValues(name, c.String())
		}
		for _, v := range stats.Validations {
			m.validation.WithLabelValues(name, v.String())
		}
		m.clamped.WithLabelValues(name)
		m.dropped.WithLabelValues(name)
	}
	m.hist.mu.Lock()
	for _, name := range stats.BuiltinNames() {
		m.hist.series(name)
	}
	m.hist.mu.Unlock()
	return m, nil
}

// observe adds one interval; it runs on the collector's tick goroutine.
func (m *metrics) observe(iv *stats.Interval, sum stats.Summary) {
	m.hist.observe(iv)
	for i := range iv.Ops {
		o := &iv.Ops[i]
		name := o.Name
		m.ops.WithLabelValues(name, "success").Add(float64(o.Successes))
		m.ops.WithLabelValues(name, "miss").Add(float64(o.Misses))
		for _, c := range driver.Classes {
			if n := o.Failures[c]; n > 0 {
				m.errors.WithLabelValues(name, c.String()).Add(float64(n))
			}
		}
		for _, v := range stats.Validations {
			if n := o.Validation[v]; n > 0 {
				m.validation.WithLabelValues(name, v.String()).Add(float64(n))
			}
		}
		if o.Clamped > 0 {
			m.clamped.WithLabelValues(name).Add(float64(o.Clamped))
		}
		if o.Dropped > 0 {
			m.dropped.WithLabelValues(name).Add(float64(o.Dropped))
		}
		os := sum.Ops[name]
		for _, q := range quantiles {
			m.latency.WithLabelValues(name, "response", q.label).Set(q.get(os.ResponseTime) / 1e6)
			m.latency.WithLabelValues(name, "service", q.label).Set(q.get(os.ServiceTime) / 1e6)
		}
		m.target.WithLabelValues(name).Set(o.TargetRate)
		m.workers.WithLabelValues(name).Set(float64(o.Workers))
		m.backlog.WithLabelValues(name).Set(o.Backlog.Seconds())
		m.pending.WithLabelValues(name).Set(float64(o.Pending))
	}
}

// driverStatsDesc describes ndbench_driver_stat: the counters a driver keeps of its own
// (driver.StatsReporter), read at scrape time from the node's status.
var driverStatsDesc = prometheus.NewDesc("ndbench_driver_stat",
	"Counters the connected driver keeps of its own, by name (cache hits of a composition, fallbacks per memcached zone, consumed capacity units...): see the driver's documentation.",
	[]string{"driver", "name"}, nil)

// driverStats exports the connected driver's own counters. They are read when scraped,
// not fed by intervals, because only the driver knows them.
type driverStats struct{ status func() node.Status }

func (d driverStats) Describe(ch chan<- *prometheus.Desc) { ch <- driverStatsDesc }

func (d driverStats) Collect(ch chan<- prometheus.Metric) {
	st := d.status()
	for name, v := range st.DriverStats {
		ch <- prometheus.MustNewConstMetric(driverStatsDesc, prometheus.UntypedValue, float64(v), st.Driver, name)
	}
}
