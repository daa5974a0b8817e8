package api

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ndbench/ndbench/internal/stats"
)

// latencyBuckets are the upper bounds, in seconds, of the classic buckets of
// ndbench_response_seconds and ndbench_service_seconds: 1, 2, 3 and 5 per decade from
// 10 µs to 30 s, then 60 s (28 buckets and +Inf). The layout is fixed so that the buckets
// of every node, version and run line up: summing them across a fleet is only correct
// when the bounds are identical. 10 µs covers in-memory and same-host stores; beyond 60 s
// (up to the histograms' 1 h ceiling) latencies land in +Inf, where a quantile reports
// 60 s: the native histogram and ndbench_latency_clamped_total carry the rest.
var latencyBuckets = [...]float64{
	0.00001, 0.00002, 0.00003, 0.00005,
	0.0001, 0.0002, 0.0003, 0.0005,
	0.001, 0.002, 0.003, 0.005,
	0.01, 0.02, 0.03, 0.05,
	0.1, 0.2, 0.3, 0.5,
	1, 2, 3, 5,
	10, 20, 30, 60,
}

// Native histogram settings. Schema 3 has buckets 2^(1/8) ≈ 1.09 wide, the largest
// factor not above 1.1 (what NativeHistogramBucketFactor: 1.1 selects in client_golang),
// i.e. about ±4.5% per bucket. The 1 µs .. 1 h range of the HDR histograms spans at most
// 254 such buckets, so the state is bounded whatever is recorded; the exposition is
// capped at nativeMaxBuckets by halving the resolution (as client_golang does), since a
// stable fleet-wide query merges at the coarsest schema anyway. There is no reset (the
// MinResetDuration of client_golang): the bucket range cannot grow beyond the HDR one.
const (
	nativeSchema     = 3
	nativeMaxBuckets = 160
	// nativeZeroThreshold is client_golang's default: only a 0 µs latency (a zero or
	// negative duration) lands in the zero bucket.
	nativeZeroThreshold = prometheus.DefNativeHistogramZeroThreshold
)

// nativeBounds are the schema-3 bucket boundaries within one power of two, as fractions
// from math.Frexp; the same constants as client_golang's, so a value sits in the bucket
// a prometheus.Histogram would put it in.
var nativeBounds = [...]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// nativeKey is the schema-3 bucket index of v > 0 seconds: bucket k holds
// (2^((k-1)/8), 2^(k/8)].
func nativeKey(v float64) int {
	frac, exp := math.Frexp(v)
	return sort.SearchFloat64s(nativeBounds[:], frac) + (exp-1)*len(nativeBounds)
}

// hdrSlot is what one HDR histogram count index contributes to the Prometheus
// histograms. A value is placed by the highest value equivalent to its HDR bucket (what
// HDR percentiles report, so a quantile is never lower than the HDR one) and summed at the
// median equivalent value (what HDR's Mean uses, so _sum/_count matches the report's mean).
type hdrSlot struct {
	mid     float64 // median equivalent value, seconds
	classic uint8   // index into latencyBuckets; len(latencyBuckets) is +Inf
	native  int16   // schema-3 key; zeroKey for the zero bucket
}

const zeroKey = math.MinInt16

// nativeOffset and nativeSpan bound the native keys kept: -192 .. 127, i.e. 2^-24 s
// (60 ns) .. 2^15.9 s (16 h), beyond the HDR range on both sides. A key outside (only
// from a foreign histogram geometry) is clamped to the edge bucket.
const (
	nativeOffset = 192
	nativeSpan   = 320
)

// hdrGeometry identifies the layout of a histogram's counts array.
type hdrGeometry struct{ low, high, digits int64 }

var (
	slotsMu sync.Mutex
	slotsBy = map[hdrGeometry][]hdrSlot{}
)

// slotsFor returns the slot table of h's geometry, built once per geometry (in practice
// one: stats.NewHistogram's, about 23,500 slots, 0.38 MB). The table turns the per-tick
// conversion into one pass over the counts with no arithmetic per value.
func slotsFor(h *hdrhistogram.Histogram) []hdrSlot {
	g := hdrGeometry{h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures()}
	slotsMu.Lock()
	defer slotsMu.Unlock()
	if s, ok := slotsBy[g]; ok {
		return s
	}
	// hdrhistogram-go exports no index-to-value function, but its iterator walks the
	// counts array in index order: a histogram holding only its highest trackable value
	// yields one bar per index, from 0 to that value's index (the last one that can hold
	// a count).
	probe := hdrhistogram.New(g.low, g.high, int(g.digits))
	_ = probe.RecordValue(g.high) // within range by construction
	bars := probe.Distribution()
	s := make([]hdrSlot, len(bars))
	for i, b := range bars {
		mid := b.From + (b.To-b.From+1)/2
		if b.To == 0 {
			mid = 0
		}
		sec := float64(b.To) / 1e6
		sl := hdrSlot{mid: float64(mid) / 1e6,
			classic: uint8(sort.SearchFloat64s(latencyBuckets[:], sec)), native: zeroKey}
		if b.To > 0 {
			sl.native = int16(min(max(nativeKey(sec), -nativeOffset), nativeSpan-nativeOffset-1))
		}
		s[i] = sl
	}
	slotsBy[g] = s
	return s
}

// promHist is the cumulative state of one Prometheus histogram (one op, one latency
// type): per-bucket (not cumulative) classic counts, schema-3 native counts by key.
type promHist struct {
	classic [len(latencyBuckets) + 1]uint64
	// native is indexed by schema-3 key + nativeOffset: a dense array is several times
	// cheaper per value than a map, and the keys of 1 µs .. 1 h (-159 .. 95) fit in it.
	native [nativeSpan]uint64
	zero   uint64
	count  uint64
	sum    float64
}

// add adds every value of h (microseconds). It copies the counts once (Export; the only
// way to read them without an allocation per bucket) and walks them from the start until
// it has seen every value (h.Min and h.Max would each walk them with the slower
// iterator).
func (p *promHist) add(h *hdrhistogram.Histogram) {
	if h == nil || h.TotalCount() == 0 {
		return
	}
	slots := slotsFor(h)
	counts := h.Export().Counts
	counts = counts[:min(len(counts), len(slots))]
	left := uint64(h.TotalCount())
	for i, c := range counts {
		if c == 0 {
			continue
		}
		sl := &slots[i]
		n := uint64(c)
		p.classic[sl.classic] += n
		if sl.native == zeroKey {
			p.zero += n
		} else {
			p.native[int(sl.native)+nativeOffset] += n
		}
		p.count += n
		p.sum += float64(c) * sl.mid
		if left -= n; left == 0 {
			break
		}
	}
}

// metric builds the exposition of p: a native histogram (schema 3, or coarser when it
// has more than nativeMaxBuckets buckets) that also carries the classic buckets, so a
// Prometheus that scrapes native histograms gets both and one that does not gets the
// classic ones (the text format has only those).
func (p *promHist) metric(desc *prometheus.Desc, created time.Time, op string) (prometheus.Metric, error) {
	schema := int32(nativeSchema)
	buckets := make(map[int]int64)
	for i, n := range p.native {
		if n > 0 {
			buckets[i-nativeOffset] = int64(n)
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
	nh, err := prometheus.NewConstNativeHistogram(desc, p.count, p.sum, buckets, nil, p.zero,
		schema, nativeZeroThreshold, created, op)
	if err != nil {
		return nil, err
	}
	cb := make([]*dto.Bucket, len(latencyBuckets))
	var cum uint64
	for i, le := range latencyBuckets {
		cum += p.classic[i]
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
	ops map[string]*opHists
	// order is the series in first-seen order, so a scrape lists them stably.
	order []string
}

func newLatencyHistograms() *latencyHistograms {
	return &latencyHistograms{
		response: prometheus.NewDesc("ndbench_response_seconds",
			"Response time (from the intended start, so queueing behind a slow store counts), by op class or operation. Sum by le across nodes for fleet-wide quantiles.",
			[]string{"op"}, nil),
		service: prometheus.NewDesc("ndbench_service_seconds",
			"Service time (from the actual start), by op class or operation. Sum by le across nodes for fleet-wide quantiles.",
			[]string{"op"}, nil),
		ops: map[string]*opHists{},
	}
}

// series returns the state of name, creating it; with mu held.
func (l *latencyHistograms) series(name string) *opHists {
	o := l.ops[name]
	if o == nil {
		o = &opHists{created: time.Now()}
		l.ops[name] = o
		l.order = append(l.order, name)
	}
	return o
}

// observe adds one interval's histograms. It runs on the collector's tick, which reuses
// the histograms afterwards, so it reads them here and keeps nothing of them.
func (l *latencyHistograms) observe(iv *stats.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range iv.Ops {
		o := &iv.Ops[i]
		s := l.series(o.Name)
		s.response.add(o.Response)
		s.service.add(o.Service)
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
	snaps := make([]snap, 0, len(l.order))
	for _, name := range l.order {
		o := l.ops[name]
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
