package testserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/report"
)

// BenchParallel runs op from 16 × GOMAXPROCS goroutines (i numbers the calls) and reports
// ops/s and ops per client CPU-second: the test binary's user and system time, so a server
// running as another process is not counted. Drivers' benchmarks against real servers use
// it so their figures mean the same thing.
func BenchParallel(b *testing.B, op func(ctx context.Context, i uint64) error) {
	var seq atomic.Uint64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	u0, t0 := report.ReadUsage(), time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := op(ctx, seq.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	u1, el := report.ReadUsage(), time.Since(t0).Seconds()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el, "ops/s")
	if cpu := (u1.User + u1.System - u0.User - u0.System).Seconds(); cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu, "ops/cpu-s")
	}
}
