package otlpexport

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
)

// benchInterval is one interval of one series: 20,000 reads spread over 100 µs .. 100 ms
// (the same as the Prometheus histograms' benchmark, internal/api).
func benchInterval(b *testing.B) *stats.Interval {
	c := stats.NewCollector(stats.Config{Shards: 1})
	s := c.Recorder(stats.OpRead).Shard(0)
	for _, d := range spread(20000, 100*time.Microsecond, 100*time.Millisecond, 9) {
		s.Success(d, d/2)
	}
	return c.Tick(time.Now())
}

// BenchmarkObserve is the per-interval cost of adding one active series (both latency
// histograms and the counters) to the export state: the work the collector's tick does.
func BenchmarkObserve(b *testing.B) {
	iv := benchInterval(b)
	s := newState(false, nil, time.Now())
	b.ReportAllocs()
	for b.Loop() {
		s.observe(iv)
	}
}

// BenchmarkBuildExport is the cost of building one export's data for the 3 built-in
// series (what each export builds before encoding and sending).
func BenchmarkBuildExport(b *testing.B) {
	for _, tc := range []struct {
		name        string
		exponential bool
	}{{"exponential", true}, {"explicit", false}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newState(false, nil, time.Now())
			s.observe(benchInterval(b))
			b.ReportAllocs()
			for b.Loop() {
				s.metrics(time.Now(), tc.exponential)
			}
		})
	}
}

// BenchmarkPush is one whole push of the 3 built-in series, one of them active: build
// the data, encode it, and POST it over OTLP/HTTP to a loopback server that reads and
// discards it.
func BenchmarkPush(b *testing.B) {
	for _, hist := range []string{"explicit", "exponential"} {
		b.Run(hist, func(b *testing.B) { benchPush(b, hist) })
	}
}

func benchPush(b *testing.B, hist string) {
	var sent atomic.Int64 // request body bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		sent.Add(n)
	}))
	defer srv.Close()
	cfg, _, err := Parse(Settings{Endpoint: srv.URL, Interval: time.Hour, Histogram: hist}, func(string) string { return "" })
	if err != nil {
		b.Fatal(err)
	}
	exp, err := New(context.Background(), cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	exp.Observe(benchInterval(b))
	b.ReportAllocs()
	for b.Loop() {
		if err := exp.export(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	r := exp.Result()
	if r.Failed > 0 {
		b.Fatalf("%d of %d pushes failed: %s", r.Failed, r.Exports, r.LastError)
	}
	b.ReportMetric(float64(sent.Load())/float64(r.Exports), "body-bytes/push")
}
