package api

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ndbench/ndbench/internal/stats"
)

// histNode is one node's statistics and its /metrics, without an engine: the tests
// record known latencies and tick by hand.
type histNode struct {
	c   *stats.Collector
	m   *metrics
	url string
	// resp is every response time recorded, merged, for the HDR reference figures.
	resp *hdrhistogram.Histogram
	// trueSum is the exact sum of the recorded response times, in seconds.
	trueSum float64
	n       int64
}

func newHistNode(t testing.TB) *histNode {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := stats.NewCollector(stats.Config{Shards: 1})
	c.ResetAt(time.Now())
	ts := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(ts.Close)
	return &histNode{c: c, m: m, url: ts.URL, resp: stats.NewHistogram()}
}

// record records lat as successful ops of op (service time half the response time) and
// ticks, feeding the metrics as the server's subscriber does.
func (n *histNode) record(t testing.TB, op stats.Op, lat []time.Duration) {
	t.Helper()
	s := n.c.Recorder(op).Shard(0)
	for _, d := range lat {
		s.Success(d, d/2)
		n.trueSum += d.Seconds()
		n.n++
	}
	iv := n.c.Tick(time.Now())
	n.m.observe(iv, iv.Summary())
	if o := iv.Op(n.c.Name(op)); o != nil {
		n.resp.Merge(o.Response)
	}
}

// scrape GETs url in the text format and parses it.
func scrape(t testing.TB, url string, header map[string]string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return mfs
}

// histOf returns the histogram of family name with label op, or fails.
func histOf(t testing.TB, mfs map[string]*dto.MetricFamily, name, op string) *dto.Histogram {
	t.Helper()
	mf := mfs[name]
	if mf == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	if mf.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("%s is a %v, want a histogram", name, mf.GetType())
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "op" && l.GetValue() == op {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("no %s{op=%q}", name, op)
	return nil
}

// classicBuckets returns the finite (le, cumulative count) pairs of h, in order.
func classicBuckets(h *dto.Histogram) (les []float64, cum []float64) {
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		les = append(les, b.GetUpperBound())
		cum = append(cum, float64(b.GetCumulativeCount()))
	}
	return les, cum
}

// histogramQuantile is PromQL's histogram_quantile over classic buckets: find the bucket
// where the rank q*count falls and interpolate linearly inside it, the lowest bucket
// starting at 0; a rank in +Inf answers the highest finite bound.
func histogramQuantile(q float64, les, cum []float64, count float64) float64 {
	if count == 0 {
		return math.NaN()
	}
	rank := q * count
	i := sort.SearchFloat64s(cum, rank)
	if i == len(les) {
		return les[len(les)-1]
	}
	start, prev := 0.0, 0.0
	if i > 0 {
		start, prev = les[i-1], cum[i-1]
	}
	inBucket := cum[i] - prev
	if inBucket == 0 {
		return les[i]
	}
	return start + (les[i]-start)*(rank-prev)/inBucket
}

// bucketIndex is the classic bucket holding v seconds.
func bucketIndex(v float64) int { return sort.SearchFloat64s(stats.ClassicBounds[:], v) }

// spread returns n latencies spread log-uniformly over lo..hi, reproducibly.
func spread(n int, lo, hi time.Duration, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), r.Float64()))
	}
	return out
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

// checkHistogram asserts the properties a Prometheus consumer relies on: cumulative,
// monotone buckets, _count equal to the ops recorded, _sum within HDR rounding of the
// true sum, and a PromQL-style p99 within one bucket of the HDR p99.
func checkHistogram(t *testing.T, h *dto.Histogram, n *histNode) {
	t.Helper()
	les, cum := classicBuckets(h)
	if len(les) != len(stats.ClassicBounds) {
		t.Fatalf("%d finite buckets, want %d", len(les), len(stats.ClassicBounds))
	}
	for i := range les {
		if les[i] != stats.ClassicBounds[i] {
			t.Errorf("bucket %d: le %g, want %g", i, les[i], stats.ClassicBounds[i])
		}
		if i > 0 && cum[i] < cum[i-1] {
			t.Errorf("bucket le=%g count %g < previous %g: not cumulative", les[i], cum[i], cum[i-1])
		}
	}
	count := float64(h.GetSampleCount())
	if int64(count) != n.n {
		t.Errorf("_count %g, want %d ops", count, n.n)
	}
	if cum[len(cum)-1] > count {
		t.Errorf("last finite bucket %g > _count %g", cum[len(cum)-1], count)
	}
	// HDR keeps 3 significant digits (±0.05% around the median equivalent value) and
	// rounds every latency up to the next µs.
	if d := math.Abs(h.GetSampleSum() - n.trueSum); d > 0.001*n.trueSum+float64(n.n)*1e-6 {
		t.Errorf("_sum %g, true sum %g (off by %g)", h.GetSampleSum(), n.trueSum, d)
	}
	got := histogramQuantile(0.99, les, cum, count)
	want := float64(n.resp.ValueAtQuantile(99)) / 1e6
	if gi, wi := bucketIndex(got), bucketIndex(want); gi < wi-1 || gi > wi+1 {
		t.Errorf("histogram_quantile(0.99) = %g s (bucket %d), HDR p99 %g s (bucket %d)", got, gi, want, wi)
	}
}

// TestLatencyHistogramsMatchHDR records known latencies and checks the scraped
// histograms against the HDR figures.
func TestLatencyHistogramsMatchHDR(t *testing.T) {
	for _, tc := range []struct {
		name string
		lat  [][]time.Duration // one slice per interval
	}{
		{"one value", [][]time.Duration{repeat(3*time.Millisecond, 1000)}},
		{"spread 100µs..100ms", [][]time.Duration{spread(20000, 100*time.Microsecond, 100*time.Millisecond, 1)}},
		{"three intervals", [][]time.Duration{
			spread(5000, 200*time.Microsecond, 2*time.Millisecond, 2),
			spread(5000, 1*time.Millisecond, 50*time.Millisecond, 3),
			repeat(900*time.Millisecond, 100),
		}},
		{"bimodal with outliers", [][]time.Duration{append(append(
			spread(9800, 50*time.Microsecond, 500*time.Microsecond, 4),
			spread(190, 20*time.Millisecond, 40*time.Millisecond, 5)...),
			repeat(2*time.Minute, 10)...)}}, // beyond 60 s: +Inf
		{"bucket bounds", [][]time.Duration{{10 * time.Microsecond, 20 * time.Microsecond, time.Millisecond,
			time.Second, 60 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newHistNode(t)
			for _, lat := range tc.lat {
				n.record(t, stats.OpRead, lat)
			}
			mfs := scrape(t, n.url, nil)
			checkHistogram(t, histOf(t, mfs, "ndbench_response_seconds", "read"), n)
			svc := histOf(t, mfs, "ndbench_service_seconds", "read")
			if int64(svc.GetSampleCount()) != n.n {
				t.Errorf("service _count %d, want %d", svc.GetSampleCount(), n.n)
			}
			if w := histOf(t, mfs, "ndbench_response_seconds", "write"); w.GetSampleCount() != 0 {
				t.Errorf("write _count %d, want 0", w.GetSampleCount())
			}
		})
	}
}

// TestLatencyHistogramsBucketBounds: a latency equal to a bound is in that bucket (le
// is inclusive), one just above is in the next. Below 2.048 ms HDR keeps every µs;
// above, a value shares its HDR bucket with its neighbours (3 ms with 3.001 ms) and is
// placed by the highest of them, as HDR's percentiles report it: the fraction at or
// below a bound is then exactly what HDR says, and a latency is never understated.
func TestLatencyHistogramsBucketBounds(t *testing.T) {
	for _, tc := range []struct {
		lat  time.Duration
		want float64 // the bucket's le
	}{
		{time.Millisecond, 0.001},
		{time.Millisecond + time.Microsecond, 0.002},
		{10 * time.Microsecond, 0.00001},
		{2999 * time.Microsecond, 0.003},
		{3 * time.Millisecond, 0.005},
		{time.Nanosecond, 0.00001},
		{0, 0.00001},
		{61 * time.Second, math.Inf(1)},
	} {
		n := newHistNode(t)
		n.record(t, stats.OpRead, []time.Duration{tc.lat})
		les, cum := classicBuckets(histOf(t, scrape(t, n.url, nil), "ndbench_response_seconds", "read"))
		for i, le := range les {
			want := 0.0
			if le >= tc.want {
				want = 1
			}
			if cum[i] != want {
				t.Errorf("%v: le=%g holds %g, want %g", tc.lat, le, cum[i], want)
			}
		}
	}
}

// TestLatencyHistogramsAcrossNodes is the point of the histograms: two nodes' buckets,
// summed by le as `sum by (le) (rate(...))` does, give the quantile of the union of
// their operations, which no combination of per-node percentile gauges can.
func TestLatencyHistogramsAcrossNodes(t *testing.T) {
	fast, slow := newHistNode(t), newHistNode(t)
	// The slow node's ops are 0.5% of the fleet's: the fleet p99 is the fast node's tail.
	fast.record(t, stats.OpRead, spread(19900, 200*time.Microsecond, 2*time.Millisecond, 6))
	slow.record(t, stats.OpRead, spread(100, 20*time.Millisecond, 200*time.Millisecond, 7))

	union := stats.NewHistogram()
	stats.MergeHistograms(union, fast.resp, slow.resp)
	var les, cum []float64
	var count float64
	for _, n := range []*histNode{fast, slow} {
		h := histOf(t, scrape(t, n.url, nil), "ndbench_response_seconds", "read")
		l, c := classicBuckets(h)
		if cum == nil {
			les, cum = l, make([]float64, len(c))
		}
		for i := range c {
			cum[i] += c[i]
		}
		count += float64(h.GetSampleCount())
	}
	got := histogramQuantile(0.99, les, cum, count)
	want := float64(union.ValueAtQuantile(99)) / 1e6
	if gi, wi := bucketIndex(got), bucketIndex(want); gi < wi-1 || gi > wi+1 {
		t.Errorf("fleet p99 from summed buckets %g s (bucket %d), HDR p99 of the union %g s (bucket %d)", got, gi, want, wi)
	}
	// What the gauges offered, per-node p99s averaged (or their max), is tens of times
	// off here; if not, the scenario no longer shows the point.
	avg := (float64(fast.resp.ValueAtQuantile(99)) + float64(slow.resp.ValueAtQuantile(99))) / 2e6
	if avg < 10*want {
		t.Errorf("average of node p99s %g s, union p99 %g s: scenario too mild", avg, want)
	}
}

// TestLatencyHistogramsNative: a Prometheus that negotiates the protobuf format gets the
// native histogram (schema 3) in the same metric as the classic buckets, with the same
// count and sum.
func TestLatencyHistogramsNative(t *testing.T) {
	n := newHistNode(t)
	n.record(t, stats.OpWrite, spread(20000, 100*time.Microsecond, 100*time.Millisecond, 8))
	n.record(t, stats.OpWrite, []time.Duration{0})
	req, _ := http.NewRequest("GET", n.url, nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var h *dto.Histogram
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if mf.GetName() != "ndbench_response_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == "write" {
				h = m.GetHistogram()
			}
		}
	}
	if h == nil {
		t.Fatal("no ndbench_response_seconds{op=write}")
	}
	if h.GetSchema() != nativeSchema {
		t.Errorf("schema %d, want %d", h.GetSchema(), nativeSchema)
	}
	if len(h.GetBucket()) != len(stats.ClassicBounds) {
		t.Errorf("%d classic buckets beside the native ones, want %d", len(h.GetBucket()), len(stats.ClassicBounds))
	}
	// Decode the spans and deltas and check the native buckets hold every op but the
	// 0 µs one, which is in the zero bucket; then the native p99 against HDR's.
	var total, c int64
	keys := map[int]int64{}
	k := 0
	deltas := h.GetPositiveDelta()
	for _, s := range h.GetPositiveSpan() {
		k += int(s.GetOffset())
		for j := 0; j < int(s.GetLength()); j++ {
			c += deltas[0]
			deltas = deltas[1:]
			keys[k] = c
			total += c
			k++
		}
	}
	if h.GetZeroCount() != 1 || uint64(total)+h.GetZeroCount() != h.GetSampleCount() || int64(h.GetSampleCount()) != n.n {
		t.Errorf("native buckets %d + zero %d, _count %d, recorded %d", total, h.GetZeroCount(), h.GetSampleCount(), n.n)
	}
	sorted := make([]int, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Ints(sorted)
	rank, seen := 0.99*float64(total), float64(h.GetZeroCount())
	var upper float64
	for _, k := range sorted {
		seen += float64(keys[k])
		if seen >= rank {
			upper = math.Exp2(float64(k) / 8)
			break
		}
	}
	want := float64(n.resp.ValueAtQuantile(99)) / 1e6
	if upper < want || upper > want*1.1 {
		t.Errorf("native p99 bucket upper bound %g s, HDR p99 %g s", upper, want)
	}
}

// TestLatencyHistogramsServed: the node's own /metrics carries the histograms for every
// built-in series from the start (zeros, so rate() has a first sample), and the values
// recorded into the node's collector.
func TestLatencyHistogramsServed(t *testing.T) {
	e := newEnv(t)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	mfs := scrape(t, e.ts.URL+"/metrics", auth)
	for _, name := range []string{"ndbench_response_seconds", "ndbench_service_seconds"} {
		for _, op := range stats.BuiltinNames() {
			if h := histOf(t, mfs, name, op); h.GetSampleCount() != 0 {
				t.Errorf("%s{op=%q} _count %d before any op", name, op, h.GetSampleCount())
			}
		}
	}
	c := e.inst.Collector()
	c.Recorder(stats.OpWrite).Shard(0).Success(4*time.Millisecond, 2900*time.Microsecond)
	c.Tick(time.Now())
	h := histOf(t, scrape(t, e.ts.URL+"/metrics", auth), "ndbench_service_seconds", "write")
	les, cum := classicBuckets(h)
	if h.GetSampleCount() != 1 || cum[bucketIndex(0.003)] != 1 || cum[bucketIndex(0.003)-1] != 0 {
		t.Errorf("service histogram after one 2.9 ms write: count %d, buckets %v %v", h.GetSampleCount(), les, cum)
	}
}

// tickInterval is one interval of 20,000 reads spread over 100 µs .. 100 ms (service
// time half of it), as a busy node records in a second.
func tickInterval(b *testing.B) (*stats.Interval, []time.Duration) {
	c := stats.NewCollector(stats.Config{Shards: 1})
	lat := spread(20000, 100*time.Microsecond, 100*time.Millisecond, 9)
	s := c.Recorder(stats.OpRead).Shard(0)
	for _, d := range lat {
		s.Success(d, d/2)
	}
	return c.Tick(time.Now()), lat
}

// BenchmarkLatencyHistogramsTick is the per-tick cost of feeding both histograms from
// one series' interval (the work observe adds to the collector's tick per active series).
func BenchmarkLatencyHistogramsTick(b *testing.B) {
	iv, _ := tickInterval(b)
	l := newLatencyHistograms()
	b.ReportAllocs()
	for b.Loop() {
		l.observe(iv)
	}
}

// BenchmarkLatencyHistogramsObserveEach is the alternative the custom collector avoids:
// a client_golang histogram (classic and native buckets) fed one Observe per op.
func BenchmarkLatencyHistogramsObserveEach(b *testing.B) {
	_, lat := tickInterval(b)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Buckets: stats.ClassicBounds[:],
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: nativeMaxBuckets,
		NativeHistogramMinResetDuration: time.Hour})
	h2 := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "y", Buckets: stats.ClassicBounds[:],
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: nativeMaxBuckets,
		NativeHistogramMinResetDuration: time.Hour})
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range lat {
			h.Observe(d.Seconds())
			h2.Observe(d.Seconds() / 2)
		}
	}
}

// BenchmarkLatencyHistogramsScrape is the cost of one /metrics collection of the
// histograms of the three built-in series.
func BenchmarkLatencyHistogramsScrape(b *testing.B) {
	iv, _ := tickInterval(b)
	reg := prometheus.NewRegistry()
	l := newLatencyHistograms()
	reg.MustRegister(l)
	l.observe(iv)
	l.mu.Lock()
	for _, name := range stats.BuiltinNames() {
		l.series(name)
	}
	l.mu.Unlock()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNativeResolutionHalves: past nativeMaxBuckets buckets the native histogram is
// emitted at a coarser schema, with the same count, and classic buckets unchanged.
func TestNativeResolutionHalves(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lo, hi     time.Duration
		wantSchema int32
	}{
		{"100µs..100ms: 80 buckets", 100 * time.Microsecond, 100 * time.Millisecond, 3},
		{"1µs..1h: 254 buckets", time.Microsecond, time.Hour, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := stats.NewHistogram()
			// Every value of every native bucket's neighbourhood: a geometric sweep.
			for v := float64(tc.lo / time.Microsecond); v <= float64(tc.hi/time.Microsecond); v *= 1.01 {
				_ = h.RecordValue(int64(v))
			}
			var p promHist
			p.Add(h)
			m, err := p.metric(prometheus.NewDesc("x", "x", []string{"op"}, nil), time.Now(), "read")
			if err != nil {
				t.Fatal(err)
			}
			var out dto.Metric
			if err := m.Write(&out); err != nil {
				t.Fatal(err)
			}
			nh := out.GetHistogram()
			var buckets uint32
			for _, s := range nh.GetPositiveSpan() {
				buckets += s.GetLength()
			}
			if nh.GetSchema() != tc.wantSchema || buckets > nativeMaxBuckets {
				t.Errorf("schema %d with %d buckets, want schema %d and at most %d", nh.GetSchema(), buckets, tc.wantSchema, nativeMaxBuckets)
			}
			if int64(nh.GetSampleCount()) != h.TotalCount() || len(nh.GetBucket()) != len(stats.ClassicBounds) {
				t.Errorf("count %d (recorded %d), %d classic buckets", nh.GetSampleCount(), h.TotalCount(), len(nh.GetBucket()))
			}
		})
	}
}
