package engine

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// BenchmarkClosedLoop measures the engine's own cost per operation: closed loop against
// the in-process memory store, 2 readers and 2 writers, key and value generation, timing
// and histogram recording included. ns/op is wall time per op across workers; the
// CPU-time figure of the overhead bar comes from `make bench`.
func BenchmarkClosedLoop(b *testing.B) {
	d, _, err := driver.Open(context.Background(), memory.Name, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	w := config.DefaultWorkload()
	w.NumKeys, w.ReadRate, w.WriteRate, w.Readers, w.Writers = 100000, 0, 0, 2, 2
	coll := stats.NewCollector(stats.Config{})
	e, err := New(d, w, Options{Collector: coll})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(time.Second)
	b.ResetTimer()
	start := time.Now()
	_ = e.Start()
	for {
		time.Sleep(20 * time.Millisecond)
		coll.Tick(time.Now())
		c := coll.Cumulative()
		if n := c.Ops["read"].Count + c.Ops["write"].Count; n >= int64(b.N) {
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/op-actual")
			break
		}
	}
	_ = e.Stop()
	b.StopTimer()
}
