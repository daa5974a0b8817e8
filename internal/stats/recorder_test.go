package stats

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
)

func TestShardRecordsOutcomes(t *testing.T) {
	r := newRecorder(OpRead, 4)
	s := r.Shard(7)
	s.Success(2*time.Millisecond, time.Millisecond)
	s.Success(4*time.Millisecond, 3*time.Millisecond)
	s.Miss(6*time.Millisecond, 5*time.Millisecond)
	s.Failure(driver.ClassTimeout)
	s.Failure(driver.ClassTimeout)
	s.Failure(driver.Class(200)) // unknown class counts as other rather than vanishing
	s.SuccessInvalid(time.Millisecond, time.Millisecond, -1, Stale)
	s.MissInvalid(time.Millisecond, time.Millisecond, -1, Lost)
	s.SuccessInvalid(time.Millisecond, time.Millisecond, -1, Validation(200)) // unknown kind: counted as a success only
	s.Success(2*time.Hour, time.Nanosecond)

	resp, svc := NewHistogram(), NewHistogram()
	var c Counts
	r.drain(resp, svc, NewLagHistogram(), NewLagHistogram(), &c)

	want := Counts{Successes: 5, Misses: 2, Clamped: 1}
	want.Failures[driver.ClassTimeout] = 2
	want.Failures[driver.ClassOther] = 1
	want.Validation[Stale] = 1
	want.Validation[Lost] = 1
	if c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
	if c.Count() != 7 || c.Errors() != 3 {
		t.Errorf("Count() = %d, Errors() = %d; want 7, 3", c.Count(), c.Errors())
	}
	// Failures add no latency; successes and misses do.
	if resp.TotalCount() != 7 || svc.TotalCount() != 7 {
		t.Errorf("histogram counts = %d, %d; want 7, 7", resp.TotalCount(), svc.TotalCount())
	}
	if got := resp.Max(); !resp.ValuesAreEquivalent(got, HighestValue) {
		t.Errorf("clamped response max = %d, want ~%d", got, HighestValue)
	}
	if got := svc.Min(); got != 1 {
		t.Errorf("service min = %d, want 1 (sub-µs rounds up)", got)
	}

	// A drained shard starts empty.
	var again Counts
	resp.Reset()
	r.drain(resp, svc, NewLagHistogram(), NewLagHistogram(), &again)
	if again != (Counts{}) || resp.TotalCount() != 0 {
		t.Errorf("second drain = %+v, %d values; want empty", again, resp.TotalCount())
	}
}

func TestRecorderShardMapping(t *testing.T) {
	r := newRecorder(OpWrite, 4)
	tests := []struct{ a, b int }{{0, 4}, {1, 5}, {3, 1003}}
	for _, tt := range tests {
		if r.Shard(tt.a) != r.Shard(tt.b) {
			t.Errorf("workers %d and %d map to different shards", tt.a, tt.b)
		}
	}
	if r.Shard(0) == r.Shard(1) {
		t.Error("workers 0 and 1 share a shard")
	}
	if r.Shard(-1) == nil {
		t.Error("negative worker index has no shard")
	}
	if r.Op() != OpWrite {
		t.Errorf("Op() = %v", r.Op())
	}
}

func TestShardPadding(t *testing.T) {
	if sz := unsafe.Sizeof(Shard{}); sz != 128 {
		t.Errorf("Shard is %d bytes, want 128 so neighbouring shards' locks share no cache line", sz)
	}
}

func TestShardRecordingDoesNotAllocate(t *testing.T) {
	s := newRecorder(OpRead, 1).Shard(0)
	s.Success(time.Millisecond, time.Millisecond) // first record creates the histograms
	allocs := testing.AllocsPerRun(1000, func() {
		s.Success(time.Millisecond, 900*time.Microsecond)
		s.Miss(time.Millisecond, 900*time.Microsecond)
		s.Failure(driver.ClassThrottled)
		s.SuccessInvalid(time.Millisecond, 900*time.Microsecond, -1, Corrupt)
		s.Success(3*time.Hour, 3*time.Hour)
	})
	if allocs != 0 {
		t.Errorf("recording allocates %v times per run", allocs)
	}
}

func TestDefaultShardsBoundsMemory(t *testing.T) {
	n := DefaultShards()
	if n < 4 || n > MaxDefaultShards {
		t.Fatalf("DefaultShards() = %d, want in [4, %d]", n, MaxDefaultShards)
	}
	// Worst case at the cap: every shard of every op recording, two kinds x two buffers.
	perHist := NewHistogram().ByteSize()
	total := (perHist*2 + NewLagHistogram().ByteSize()) * 2 * MaxDefaultShards * len(BuiltinNames())
	if total > 64<<20 {
		t.Errorf("shard histograms at the cap take %d MB, want well under the 150 MB process budget", total>>20)
	}
	t.Logf("histogram %d B; shard histograms at %d shards x %d ops: %.1f MB", perHist, MaxDefaultShards, len(BuiltinNames()), float64(total)/(1<<20))
}

func TestBufferPadding(t *testing.T) {
	if sz := unsafe.Sizeof(buffer{}); sz%128 != 0 {
		t.Errorf("buffer is %d bytes, want a multiple of 128 so two shards' counters share no cache line", sz)
	}
}

// The whole stats footprint of a 1000-worker run at the shard cap, with all three op
// classes recording and a full series, must leave most of the 150 MB process budget to
// the rest of the engine.
func TestMemoryWith1000Workers(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~40 MB")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	c := NewCollector(Config{Shards: MaxDefaultShards, SeriesLen: DefaultSeriesLen})
	var wg sync.WaitGroup
	for w := range 1000 {
		wg.Go(func() {
			for _, op := range []Op{OpRead, OpWrite, OpBackfill} {
				s := c.Recorder(op).Shard(w)
				for i := range 100 {
					s.Success(time.Duration(i*w+1)*time.Microsecond, time.Microsecond)
				}
			}
		})
	}
	wg.Wait()
	start := time.Now()
	for i := range DefaultSeriesLen {
		c.Tick(start.Add(time.Duration(i+1) * time.Second))
	}

	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapInuse-before.HeapInuse) / (1 << 20)
	t.Logf("stats heap with %d shards x %d ops recording and %d series points: %.1f MB",
		MaxDefaultShards, len(BuiltinNames()), DefaultSeriesLen, heap)
	if heap > 64 {
		t.Errorf("stats heap %.1f MB, want at most 64 MB", heap)
	}
	runtime.KeepAlive(c)
}

// TestStartLagIsResponseMinusService checks the lag histogram: an op that started 3 ms
// late and took 1 ms has a response time of 4 ms and a start lag of 3 ms.
func TestStartLagIsResponseMinusService(t *testing.T) {
	c := NewCollector(Config{Shards: 2})
	sh := c.Recorder(OpRead).Shard(0)
	for i := 0; i < 100; i++ {
		sh.Success(4*time.Millisecond, time.Millisecond)
	}
	s := c.Tick(time.Now()).Summary().Ops["read"]
	if s.StartLag.P50 < 2970 || s.StartLag.P50 > 3030 {
		t.Fatalf("start lag p50 = %v µs, want ~3000", s.StartLag.P50)
	}
	if l := c.Latest().Ops["read"]; l.StartLag.P50 < 2970 || l.StartLag.P50 > 3030 {
		t.Fatalf("latest start lag p50 = %v µs, want ~3000", l.StartLag.P50)
	}
	if cum := c.Cumulative().Ops["read"]; cum.StartLag.P99 < 2970 || cum.StartLag.P99 > 3030 {
		t.Fatalf("cumulative start lag p99 = %v µs, want ~3000", cum.StartLag.P99)
	}
}

// A shard counts values by bucket and the collector adds the counts to its histograms
// when it drains the shard: what it drains must equal, bucket for bucket, min, max and
// total, the histograms that recording every value straight into them gives. The values
// span the single-value buckets (below 2048 µs for latency, 256 µs for start lag) and
// beyond, and two drains check that a drained buffer starts the next interval empty.
func TestSmallCountsAreExact(t *testing.T) {
	var values []time.Duration // resp, svc pairs
	for _, us := range []int64{0, 1, 2, 255, 256, 257, 1000, 2047, 2048, 2049, 5000, 123456, HighestValue + 1} {
		values = append(values, time.Duration(us)*time.Microsecond, time.Duration(us/3)*time.Microsecond)
	}
	for i := range 5000 {
		// sub-µs parts round up; the odd ones reach past the bounds
		values = append(values, time.Duration(i*i%4100)*time.Microsecond+time.Duration(i%7)*100,
			time.Duration(i%2100)*time.Microsecond)
	}
	r := newRecorder(OpRead, 1)
	s := r.Shard(0)
	for round := range 2 {
		want := [3]*hdrhistogram.Histogram{NewHistogram(), NewHistogram(), NewLagHistogram()}
		for i := 0; i < len(values); i += 2 {
			resp, svc := values[i]+time.Duration(round)*time.Microsecond, values[i+1]
			s.Success(resp, svc)
			for j, d := range []time.Duration{resp, svc, resp - svc} {
				v, _ := Micros(d)
				_ = want[j].RecordValue(v)
			}
		}
		got := [3]*hdrhistogram.Histogram{NewHistogram(), NewHistogram(), NewLagHistogram()}
		var c Counts
		r.drain(got[0], got[1], got[2], NewLagHistogram(), &c)
		for j, name := range []string{"response", "service", "start lag"} {
			if !got[j].Equals(want[j]) {
				t.Errorf("round %d: %s histogram: got total %d min %d max %d p50 %d, want total %d min %d max %d p50 %d",
					round, name, got[j].TotalCount(), got[j].Min(), got[j].Max(), got[j].ValueAtQuantile(50),
					want[j].TotalCount(), want[j].Min(), want[j].Max(), want[j].ValueAtQuantile(50))
			}
		}
		if c.Successes != int64(len(values)/2) {
			t.Errorf("round %d: %d successes, want %d", round, c.Successes, len(values)/2)
		}
	}
}
