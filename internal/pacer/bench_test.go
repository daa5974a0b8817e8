package pacer

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

func BenchmarkAcquireClosedLoop(b *testing.B) {
	p := New(0)
	ctx := context.Background()
	for b.Loop() {
		_, _, _ = p.Acquire(ctx)
	}
}

// BenchmarkStartLag runs workers at a fixed rate and reports how late operations start
// relative to their intended time (p50/p99/max µs) and the achieved rate. It measures the
// pacer alone; the whole-engine figure comes from `make bench`.
func BenchmarkStartLag(b *testing.B) {
	for _, tc := range []struct {
		name    string
		rate    float64
		workers int
	}{
		{"rate=1k/workers=4", 1000, 4},
		{"rate=100k/workers=8", 100000, 8},
		{"rate=100k/workers=64", 100000, 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := New(tc.rate)
			n := b.N
			lags := make([]int64, n)
			var next sync.WaitGroup
			var claimed int64
			var mu sync.Mutex
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < tc.workers; w++ {
				next.Add(1)
				go func() {
					defer next.Done()
					for {
						mu.Lock()
						i := claimed
						claimed++
						mu.Unlock()
						if i >= int64(n) {
							return
						}
						intended, start, _ := p.Acquire(context.Background())
						lags[i] = start - intended
					}
				}()
			}
			next.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lags)
			b.ReportMetric(float64(lags[n/2])/1e3, "p50-lag-µs")
			b.ReportMetric(float64(lags[n*99/100])/1e3, "p99-lag-µs")
			b.ReportMetric(float64(lags[n-1])/1e3, "max-lag-µs")
			b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
		})
	}
}
