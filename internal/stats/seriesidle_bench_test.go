package stats

import (
	"runtime"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// BenchmarkSeriesJSONIdle measures what dropping the encoded series after SeriesJSONIdle
// without a read gives back and what the next read pays for it: a node's full hour
// (3,600 points of the built-in classes, reads and writes in each) on a simulated clock.
// heap: the live heap after a whole read (the encoding held) and after the idle tick
// dropped it (heap-held-B, heap-dropped-B; each after two GCs), and the JSON bytes held;
// run it with -benchtime=3x. reencode: a whole read right after a drop (the time is the
// encoding of the hour, what the first read after an idle spell waits).
func BenchmarkSeriesJSONIdle(b *testing.B) {
	sim := clock.NewSim(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	c := NewCollector(Config{Shards: 1, Clock: sim})
	for i := range DefaultSeriesLen {
		for k := range 20 {
			d := time.Duration(100+37*((i+k)%50)) * time.Microsecond
			c.Recorder(OpRead).Shard(0).Success(d, d/2)
			c.Recorder(OpWrite).Shard(0).Success(2*d, d)
		}
		sim.Advance(time.Second)
		c.Tick(sim.Now())
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	read := func(b *testing.B) int {
		page, err := c.SeriesJSON(time.Time{}, 0)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, p := range page.Points {
			n += len(p)
		}
		return n
	}
	drop := func(b *testing.B) {
		sim.Advance(SeriesJSONIdle)
		c.Tick(sim.Now())
		if c.encHeld.Load() != 0 {
			b.Fatal("the idle tick did not drop the encoded series")
		}
	}
	b.Run("heap", func(b *testing.B) {
		var held, dropped uint64
		var bytes int
		for b.Loop() {
			bytes = read(b)
			held = heap()
			drop(b)
			dropped = heap()
		}
		b.ReportMetric(float64(held), "heap-held-B")
		b.ReportMetric(float64(dropped), "heap-dropped-B")
		b.ReportMetric(float64(bytes), "json-B")
	})
	b.Run("reencode", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			read(b)
			drop(b)
			b.StartTimer()
			read(b)
		}
	})
}
