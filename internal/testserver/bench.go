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

// Measure times run (a benchmark's parallel loop, perIter units of work per iteration:
// operations, or keys of a bulk call) and reports units per second, units per client
// CPU-second (this process) and the server's CPU per unit (Server.CPU; 0 where there is
// no /proc), with unit in the metric names ("op": ops/s, ops/cpu-s, server-µs/op).
func (s *Server) Measure(b *testing.B, unit string, perIter int, run func()) {
	srv0, u0 := s.CPU(), report.ReadUsage()
	b.ResetTimer()
	start := time.Now()
	run()
	el := time.Since(start)
	b.StopTimer()
	u1, srv1 := report.ReadUsage(), s.CPU()
	n := float64(perIter * b.N)
	b.ReportMetric(n/el.Seconds(), unit+"s/s")
	if cpu := (u1.User + u1.System - u0.User - u0.System).Seconds(); cpu > 0 {
		b.ReportMetric(n/cpu, unit+"s/cpu-s")
	}
	b.ReportMetric(float64((srv1-srv0).Microseconds())/n, "server-µs/"+unit)
}
