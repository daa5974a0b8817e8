package stats

import (
	"fmt"
	"math/rand/v2"
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

// BenchmarkShardSuccessFast records what a fast store answers in: every value below 2 ms,
// where each value has a bucket of its own.
func BenchmarkShardSuccessFast(b *testing.B) {
	s := newRecorder(OpRead, 1).Shard(0)
	s.Success(time.Millisecond, time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		d := time.Duration(100+i&511) * time.Microsecond
		s.Success(d, d-time.Duration(i&3)*time.Microsecond)
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

// secondValues returns n response and service times as a store under load answers them:
// most below 2 ms, one in twenty in a tail to 50 ms, start lag mostly 0 with a few late
// starts. The sequence is fixed so that runs compare.
func secondValues(n int) (resp, svc []time.Duration) {
	rng := rand.New(rand.NewPCG(42, 42))
	resp, svc = make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		s := time.Duration(150+rng.IntN(1850)) * time.Microsecond
		if rng.IntN(20) == 0 {
			s = time.Duration(2000+rng.IntN(48000)) * time.Microsecond
		}
		r := s
		if rng.IntN(10) == 0 {
			r += time.Duration(rng.IntN(3000)) * time.Microsecond
		}
		resp[i], svc[i] = r, s
	}
	return resp, svc
}

// BenchmarkCollectorSecond measures what one second costs the collector beyond the
// recording itself: 20,000 reads spread over every shard, then the Tick that swaps,
// drains and publishes them. Its ns/op is that cost per second of a run at this rate.
func BenchmarkCollectorSecond(b *testing.B) {
	const perSecond = 20000
	resp, svc := secondValues(perSecond)
	for _, shards := range []int{1, 50, 500} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			c := NewCollector(Config{Shards: shards})
			r := c.Recorder(OpRead)
			fill := func() {
				for i := range resp {
					r.Shard(i).Success(resp[i], svc[i])
				}
			}
			now := time.Now()
			fill()
			c.Tick(now)
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				fill()
				b.StartTimer()
				now = now.Add(time.Second)
				c.Tick(now)
			}
		})
	}
}

// BenchmarkBucketsAdd measures what one second of one series costs an export (the
// Prometheus histograms of serve, the OTLP exporter): its response and service times
// added into Buckets from the interval a tick published, 20,000 reads in it, by Add over
// the whole histograms ("whole") and by AddResponse and AddService over the buckets the
// tick drained ("used"). Its ns/op is that cost per series and second.
func BenchmarkBucketsAdd(b *testing.B) {
	resp, svc := secondValues(20000)
	c := NewCollector(Config{Shards: 4})
	r := c.Recorder(OpRead)
	for i := range resp {
		r.Shard(i).Success(resp[i], svc[i])
	}
	o := c.Tick(time.Now()).Op("read")
	for _, tc := range []struct {
		name string
		add  func(resp, svc *Buckets)
	}{
		{"whole", func(resp, svc *Buckets) { resp.Add(o.Response); svc.Add(o.Service) }},
		{"used", func(resp, svc *Buckets) { resp.AddResponse(o); svc.AddService(o) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var resp, svc Buckets
			b.ReportAllocs()
			for b.Loop() {
				tc.add(&resp, &svc)
			}
		})
	}
}

// BenchmarkMixedClassSecond is one second of a class that mixes reads and writes 8:2, as
// benchpeers' postgres pair runs it (14,000 operations over 16 shards), recorded and
// ticked: "twice" records each operation in the class's series and in its operation's,
// as the engine did before operation series were parts of their class; "parts" records
// it once, in its operation's series, a part of the class (RegisterPart), whose figures
// the tick derives. Its ns/op is that cost per second of a run at this rate.
func BenchmarkMixedClassSecond(b *testing.B) {
	const perSecond = 14000
	resp, svc := secondValues(perSecond)
	for _, mode := range []string{"twice", "parts"} {
		b.Run(mode, func(b *testing.B) {
			c := NewCollector(Config{Shards: 16})
			class, _ := c.Register("read")
			register := c.Register
			if mode == "parts" {
				register = func(name string) (Op, error) { return c.RegisterPart(class, name) }
			}
			rd, _ := register("read.read")
			wr, _ := register("read.write")
			cls, ops := c.Recorder(class), [2]*Recorder{c.Recorder(rd), c.Recorder(wr)}
			second := func() {
				for i := range resp {
					w := i % 50 // the worker
					op := ops[0]
					if i%10 >= 8 {
						op = ops[1]
					}
					op.Shard(w).SuccessLag(resp[i], svc[i], 0)
					if mode == "twice" {
						cls.Shard(w).SuccessLag(resp[i], svc[i], 0)
					}
				}
			}
			now := time.Now()
			second()
			c.Tick(now)
			b.ReportAllocs()
			for b.Loop() {
				second()
				now = now.Add(time.Second)
				c.Tick(now)
			}
		})
	}
}
