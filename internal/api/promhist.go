package api

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ndbench/ndbench/internal/stats"
)

// Native histogram settings. The buckets are stats.Buckets' schema-3 ones (see
// stats.ExpSchema for why that resolution); the exposition is capped at nativeMaxBuckets
// by halving the resolution (as client_golang does), since a stable fleet-wide query
// merges at the coarsest schema anyway. There is no reset (the
// MinResetDuration of client_golang): the bucket range cannot grow beyond the HDR one.
const (
	nativeSchema     = stats.ExpSchema
	nativeMaxBuckets = 160
	// nativeZeroThreshold is client_golang's default: only a 0 µs latency (a zero or
	// negative duration) lands in the zero bucket.
	nativeZeroThreshold = prometheus.DefNativeHistogramZeroThreshold
)

// promHist is the cumulative state of one Prometheus histogram (one op, one latency
// type): stats.Buckets' classic counts and schema-3 keys are Prometheus' own layout.
type promHist struct{ stats.Buckets }

// metric builds the exposition of p: a native histogram (schema 3, or coarser when it
// has more than nativeMaxBuckets buckets) that also carries the classic buckets, so a
// Prometheus that scrapes native histograms gets both and one that does not gets the
// classic ones (the text format has only those).
func (p *promHist) metric(desc *prometheus.Desc, created time.Time, op string) (prometheus.Metric, error) {
	schema := int32(nativeSchema)
	buckets := make(map[int]int64)
	for i, n := range p.Exp {
		if n > 0 {
			buckets[i+stats.ExpMinKey] = int64(n)
		}
	}
	for len(buckets) > nativeMaxBuckets && schema > -4 {
		// Halving the resolution merges buckets 2j-1 and 2j into j (j = ceil(k/2)).
		coarser := make(map[int]int64, len(buckets)/2+1)
		for k, n := range buckets {
			coarser[(k+1)>>1] += n
		}
		buckets, schema = coarser, schema-1
	}
	nh, err := prometheus.NewConstNativeHistogram(desc, p.Count, p.Sum, buckets, nil, p.Zero,
		schema, nativeZeroThreshold, created, op)
	if err != nil {
		return nil, err
	}
	cb := make([]*dto.Bucket, len(stats.ClassicBounds))
	var cum uint64
	for i, le := range stats.ClassicBounds {
		cum += p.Classic[i]
		cb[i] = &dto.Bucket{CumulativeCount: new(cum), UpperBound: new(le)}
	}
	return withClassic{nh, cb}, nil
}

// withClassic adds classic buckets to a const native histogram: client_golang has a
// const constructor for either kind, not for one metric with both.
type withClassic struct {
	prometheus.Metric
	buckets []*dto.Bucket
}

// Write implements prometheus.Metric.
func (w withClassic) Write(out *dto.Metric) error {
	if err := w.Metric.Write(out); err != nil {
		return err
	}
	out.Histogram.Bucket = w.buckets
	return nil
}

// opHists are the two histograms of one series.
type opHists struct {
	created           time.Time
	response, service promHist
}

// latencyHistograms is the prometheus.Collector of ndbench_response_seconds and
// ndbench_service_seconds. prometheus.Histogram has no way to observe a value n times,
// and an interval holds up to hundreds of thousands of values, so it keeps the
// cumulative buckets itself, fed from each interval's HDR histograms, and emits them as
// const metrics at each scrape.
type latencyHistograms struct {
	response, service *prometheus.Desc

	mu  sync.Mutex
	ops stats.Series[opHists]
}

func newLatencyHistograms() *latencyHistograms {
	return &latencyHistograms{
		response: prometheus.NewDesc("ndbench_response_seconds",
			"Response time (from the intended start, so queueing behind a slow store counts), by op class or operation. Sum by le across nodes for fleet-wide quantiles.",
			[]string{"op"}, nil),
		service: prometheus.NewDesc("ndbench_service_seconds",
			"Service time (from the actual start), by op class or operation. Sum by le across nodes for fleet-wide quantiles.",
			[]string{"op"}, nil),
	}
}

// series returns the state of name, creating it; with mu held.
func (l *latencyHistograms) series(name string) *opHists {
	return l.ops.Get(name, func() *opHists { return &opHists{created: time.Now()} })
}

// observe adds one interval's histograms. It runs on the collector's tick, which reuses
// the histograms afterwards, so it reads them here and keeps nothing of them.
func (l *latencyHistograms) observe(iv *stats.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range iv.Ops {
		s := l.series(iv.Ops[i].Name)
		s.response.AddResponse(&iv.Ops[i])
		s.service.AddService(&iv.Ops[i])
	}
}

// Describe implements prometheus.Collector.
func (l *latencyHistograms) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.response
	ch <- l.service
}

// Collect implements prometheus.Collector. The state is copied under the lock and the
// metrics built outside it, so a scrape holds up the tick only for the copy.
func (l *latencyHistograms) Collect(ch chan<- prometheus.Metric) {
	type snap struct {
		name              string
		created           time.Time
		response, service promHist
	}
	l.mu.Lock()
	snaps := make([]snap, 0, l.ops.Len())
	for name, o := range l.ops.All() {
		snaps = append(snaps, snap{name, o.created, o.response, o.service})
	}
	l.mu.Unlock()
	for i := range snaps {
		s := &snaps[i]
		for _, h := range []struct {
			desc *prometheus.Desc
			p    *promHist
		}{{l.response, &s.response}, {l.service, &s.service}} {
			m, err := h.p.metric(h.desc, s.created, s.name)
			if err != nil {
				m = prometheus.NewInvalidMetric(h.desc, err)
			}
			ch <- m
		}
	}
}
