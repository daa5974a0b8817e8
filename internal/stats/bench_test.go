package stats

import (
	"sync/atomic"
	"testing"
	"time"
)

func BenchmarkShardSuccess(b *testing.B) {
	s := newRecorder(OpRead, 1).Shard(0)
	s.Success(time.Millisecond, time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	d := 1234 * time.Microsecond
	for i := 0; b.Loop(); i++ {
		s.Success(d+time.Duration(i&1023)*time.Microsecond, d)
	}
}

// Each parallel goroutine plays a worker with its own index, as the engine's are.
func BenchmarkShardSuccessParallel(b *testing.B) {
	r := newRecorder(OpRead, DefaultShards())
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := r.Shard(int(next.Add(1)))
		d := 1234 * time.Microsecond
		for i := 0; pb.Next(); i++ {
			s.Success(d+time.Duration(i&1023)*time.Microsecond, d)
		}
	})
}

// BenchmarkTick measures one interval swap and merge with every shard of reads and
// writes holding 1000 spread-out latencies, as a busy second would leave them.
func BenchmarkTick(b *testing.B) {
	c := NewCollector(Config{})
	fill := func() {
		for _, op := range []Op{OpRead, OpWrite} {
			r := c.Recorder(op)
			for w := range len(r.shards) {
				s := r.Shard(w)
				for i := range 1000 {
					d := time.Duration(100+i*i) * time.Microsecond
					s.Success(d, d/2)
				}
			}
		}
	}
	fill()
	c.Tick(time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	now := time.Now()
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		now = now.Add(time.Second)
		c.Tick(now)
	}
	b.ReportMetric(float64(c.Config().Shards), "shards")
}
