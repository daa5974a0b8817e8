package pacer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
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
// relative to their intended time (p50/p99/p99.9/max µs), the achieved rate and the cores
// the pacer cost. It measures the pacer alone; the whole-engine figure comes from `make
// bench`. Its "floor" case is what the machine allows: one goroutine spinning on the clock
// through a 10 µs schedule, so its lag is only the time the thread was not running (a
// busy neighbour, a hypervisor). No pacer can beat the floor measured beside it, so read a
// pacer's figures against it.
func BenchmarkStartLag(b *testing.B) {
	b.Run("floor", func(b *testing.B) {
		const interval = 10 * time.Microsecond
		lags := make([]int64, b.N)
		c := NewClock()
		for k := range lags {
			due := int64(k+1) * int64(interval)
			now := c.Now()
			for now < due {
				now = c.Now()
			}
			lags[k] = now - due
		}
		reportLags(b, lags)
	})
	for _, tc := range []struct {
		name    string
		rate    float64
		workers int
	}{
		{"rate=100/workers=4", 100, 4},
		{"rate=1k/workers=4", 1000, 4},
		{"rate=2k/workers=4", 2000, 4},
		{"rate=10k/workers=4", 10000, 4},
		{"rate=20k/workers=4", 20000, 4},
		{"rate=30k/workers=4", 30000, 4},
		{"rate=50k/workers=16", 50000, 16},
		{"rate=100k/workers=16", 100000, 16},
		{"rate=100k/workers=64", 100000, 64},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := New(tc.rate)
			n := b.N
			lags := make([]int64, n)
			var next sync.WaitGroup
			var claimed atomic.Int64
			cpu0, cpuOK := processCPU()
			start := time.Now()
			for w := 0; w < tc.workers; w++ {
				next.Add(1)
				go func() {
					defer next.Done()
					for {
						i := claimed.Add(1) - 1
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
			cpu1, _ := processCPU()
			b.StopTimer()
			reportLags(b, lags)
			b.ReportMetric(float64(n)/elapsed.Seconds(), "ops/s")
			if cpuOK {
				b.ReportMetric(float64(cpu1-cpu0)/float64(elapsed), "cores")
			}
		})
	}
}

func reportLags(b *testing.B, lags []int64) {
	slices.Sort(lags)
	n := len(lags)
	b.ReportMetric(float64(lags[n/2])/1e3, "p50-lag-µs")
	b.ReportMetric(float64(lags[n*99/100])/1e3, "p99-lag-µs")
	b.ReportMetric(float64(lags[n*999/1000])/1e3, "p99.9-lag-µs")
	b.ReportMetric(float64(lags[n-1])/1e3, "max-lag-µs")
}

// BenchmarkFarSlotsIdle reports what 2,000 waiters of slots an hour ahead cost while they
// wait: the process's CPU per second of wall time ("cpu-ms/s"), each iteration 100 ms of
// waiting. One timer per waiter costs next to nothing; waking every recheck (20 ms) cost
// 246 ms a second (e454bc8). TestFarSlotsDoNotWakeTheirWaiters checks where they wait.
func BenchmarkFarSlotsIdle(b *testing.B) {
	if _, ok := processCPU(); !ok {
		b.Skip("no process CPU time on this platform")
	}
	p := New(0)
	p.ResetAt(Constant(1000), p.Now()+int64(time.Hour))
	stop := farWaiters(b, p, 2000)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	cpu0, _ := processCPU()
	start := time.Now()
	for b.Loop() {
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu1, _ := processCPU()
	b.ReportMetric(float64(cpu1-cpu0)/1e6/elapsed.Seconds(), "cpu-ms/s")
}
