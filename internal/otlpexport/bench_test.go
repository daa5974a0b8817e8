package otlpexport

import (
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
	s := newState(false, nil)
	b.ReportAllocs()
	for b.Loop() {
		s.observe(iv)
	}
}

// BenchmarkBuildExport is the cost of building one export's data for the 3 built-in
// series (what the periodic reader asks the producer for, before encoding and sending).
func BenchmarkBuildExport(b *testing.B) {
	for _, tc := range []struct {
		name        string
		exponential bool
	}{{"exponential", true}, {"explicit", false}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newState(false, nil)
			s.observe(benchInterval(b))
			b.ReportAllocs()
			for b.Loop() {
				s.metrics(time.Now(), tc.exponential)
			}
		})
	}
}
