package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
)

// BenchmarkClosedLoop measures the engine's own cost per operation: closed loop against
// the in-process memory store, 2 readers and 2 writers, key and value generation, timing
// and histogram recording included, at NDBench's default keyspace (1,000 keys: the
// engine's cost) and at 100,000 keys (where the store's map lookups miss the caches).
// ns/op is wall time per op across workers; ops/CPU-s is operations per second of the
// process's CPU time (user + system, the test binary's included), the unit of the overhead
// bar, which `make bench` measures on the whole program.
func BenchmarkClosedLoop(b *testing.B) {
	for _, keys := range []int64{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) { benchClosedLoop(b, keys) })
	}
}

func benchClosedLoop(b *testing.B, keys int64) {
	d, _, err := driver.Open(context.Background(), memory.Name, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	w := config.DefaultWorkload()
	w.NumKeys, w.ReadRate, w.WriteRate, w.Readers, w.Writers = keys, 0, 0, 2, 2
	coll := stats.NewCollector(stats.Config{})
	e, err := New(d, w, Options{Collector: coll})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(time.Second)
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	_ = e.Start()
	for {
		time.Sleep(20 * time.Millisecond)
		coll.Tick(time.Now())
		c := coll.Cumulative()
		if n := c.Ops["read"].Count + c.Ops["write"].Count; n >= int64(b.N) {
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/op-actual")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(n)/cpu.Seconds(), "ops/CPU-s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "CPU-ns/op")
			}
			break
		}
	}
	_ = e.Stop()
	b.StopTimer()
}

// BenchmarkOpContext is the per-operation cost of an operation's context when the driver
// never looks at it (the common case): begin, hand it over, end.
func BenchmarkOpContext(b *testing.B) {
	s := newOpSlot(context.Background(), pacer.NewClock(), nil)
	defer s.close()
	var dog watchdog
	dog.add(s)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := s.begin(int64(i), time.Second)
		if c.end() {
			b.Fatal("timed out")
		}
	}
}

// BenchmarkOpNext is the cost of making one operation (opPath.next: the mix's pick, the
// key's draw and name) on a worker's path, with and without a schedule: on one, each
// operation first reseeds its draws from its slot's intended time.
func BenchmarkOpNext(b *testing.B) {
	for _, paced := range []bool{false, true} {
		b.Run(fmt.Sprintf("paced=%v", paced), func(b *testing.B) {
			w := config.DefaultWorkload()
			w.NumKeys, w.ReadRate, w.WriteRate, w.Readers, w.Writers = 1000, 0, 0, 2, 2
			e, err := New(nopStore{}, w, Options{Collector: stats.NewCollector(stats.Config{})})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(time.Second)
			e.mu.Lock()
			c, err := e.class("read")
			e.mu.Unlock()
			if err != nil {
				b.Fatal(err)
			}
			c.paced.Store(paced)
			p := e.newWorkerPath(c, 0, 1, nil)
			defer p.close()
			g := e.gen.Load()
			p.g = g
			p.mix, p.shards, p.parts = e.classMix(g, "read", 0, nil, nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				o := p.next(int64(i)*1000, &p.vbuf)
				if o.key == "" {
					b.Fatal("no key")
				}
			}
		})
	}
}

// BenchmarkElasticPoolOwnLag runs, per iteration, an elastic pool of 2 readers (at most
// 64) at 100 M reads/s against a store that answers at once for 1.5 s, and reports the
// workers it ended with and how far behind it was: the figure behind
// TestElasticPoolDoesNotGrowForItsOwnLag, which checks the pool's decision on the inputs
// such a run gives it. A machine's CPU decides how the run goes, so it is measured here
// and not asserted in a test.
func BenchmarkElasticPoolOwnLag(b *testing.B) {
	var workers, backlog, rate float64
	for b.Loop() {
		d, _, err := driver.Open(context.Background(), memory.Name, nil)
		if err != nil {
			b.Fatal(err)
		}
		w := config.DefaultWorkload()
		w.NumKeys, w.WriteEnabled = 1000, false
		w.ReadRate, w.Readers, w.MaxReaders = 1e8, 2, 64
		coll := stats.NewCollector(stats.Config{Shards: 4})
		e, err := New(d, w, Options{Collector: coll})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start("read"); err != nil {
			b.Fatal(err)
		}
		coll.Tick(time.Now())
		time.Sleep(1500 * time.Millisecond)
		o := coll.Tick(time.Now()).Summary().Ops["read"]
		_ = e.Close(time.Second)
		_ = d.Close()
		workers += float64(o.Workers)
		backlog += o.BacklogMs
		rate += o.Rate
	}
	n := float64(b.N)
	b.ReportMetric(workers/n, "workers")
	b.ReportMetric(backlog/n, "backlog-ms")
	b.ReportMetric(rate/n, "reads/s")
}
