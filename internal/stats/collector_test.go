package stats

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
)

// newTestCollector returns a collector whose cumulative span starts at t0, so tests can
// drive Tick with exact times.
func newTestCollector(t *testing.T, cfg Config) (*Collector, time.Time) {
	t.Helper()
	c := NewCollector(cfg)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c.ResetAt(t0)
	return c, t0
}

func TestTickInterval(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 4})
	reads := c.Recorder(OpRead)
	for w := range 8 {
		s := reads.Shard(w)
		s.Success(time.Duration(w+1)*time.Millisecond, time.Duration(w+1)*time.Microsecond)
	}
	reads.Shard(0).Miss(10*time.Millisecond, 10*time.Millisecond)
	c.Recorder(OpWrite).Shard(3).Failure(driver.ClassUnavailable)
	c.Recorder(OpWrite).Shard(2).Success(time.Millisecond, time.Millisecond)
	c.SetTarget(OpRead, 100, 8)
	c.SetBacklog(OpRead, func() (time.Duration, int64) { return 250 * time.Millisecond, 25 })

	iv := c.Tick(t0.Add(2 * time.Second))
	if !iv.Start.Equal(t0) || !iv.End.Equal(t0.Add(2*time.Second)) || iv.Seconds() != 2 {
		t.Errorf("interval span %v..%v (%vs), want %v..+2s", iv.Start, iv.End, iv.Seconds(), t0)
	}
	r := iv.Ops[OpRead]
	if r.Successes != 8 || r.Misses != 1 || r.Response.TotalCount() != 9 || r.Service.TotalCount() != 9 {
		t.Errorf("read interval: %d successes, %d misses, %d/%d latencies; want 8, 1, 9/9",
			r.Successes, r.Misses, r.Response.TotalCount(), r.Service.TotalCount())
	}

	s := iv.Summary()
	rd := s.Ops["read"]
	if rd.Count != 9 || rd.Rate != 4.5 || rd.Misses != 1 {
		t.Errorf("read summary count %d rate %v misses %d; want 9, 4.5, 1", rd.Count, rd.Rate, rd.Misses)
	}
	if !near(rd.ResponseTime.Max, 10000) || rd.ServiceTime.P50 != 5 {
		t.Errorf("read latency max %v p50 svc %v; want 10000, 5", rd.ResponseTime.Max, rd.ServiceTime.P50)
	}
	if rd.TargetRate != 100 || rd.Workers != 8 || rd.BacklogMs != 250 || rd.Pending != 25 {
		t.Errorf("read gauges %v/%v/%v/%v; want 100/8/250/25", rd.TargetRate, rd.Workers, rd.BacklogMs, rd.Pending)
	}
	wr := s.Ops["write"]
	if wr.Count != 1 || wr.Errors != 1 || wr.Failures["unavailable"] != 1 {
		t.Errorf("write summary %+v; want 1 op, 1 unavailable error", wr)
	}

	// Latest is the same interval, through the compact series form.
	l := c.Latest()
	if got := l.Ops["read"]; got.Count != 9 || !near(got.ResponseTime.Max, 10000) || got.BacklogMs != 250 {
		t.Errorf("Latest read = %+v", got)
	}
	if !l.Start.Equal(t0) || l.Seconds != 2 {
		t.Errorf("Latest span %v, %vs", l.Start, l.Seconds)
	}

	// The next interval starts where this one ended and sees only new records.
	reads.Shard(1).Success(time.Millisecond, time.Millisecond)
	iv = c.Tick(t0.Add(3 * time.Second))
	if !iv.Start.Equal(t0.Add(2*time.Second)) || iv.Ops[OpRead].Successes != 1 || iv.Ops[OpRead].Response.TotalCount() != 1 {
		t.Errorf("second interval from %v with %d successes", iv.Start, iv.Ops[OpRead].Successes)
	}
	cum := c.Cumulative().Ops["read"]
	if cum.Count != 10 || cum.Rate != 10.0/3 || !near(cum.ResponseTime.Max, 10000) {
		t.Errorf("cumulative read count %d rate %v max %v; want 10, 3.33, 10000", cum.Count, cum.Rate, cum.ResponseTime.Max)
	}
	resp, svc := c.CumulativeHistograms(OpRead)
	if resp.TotalCount() != 10 || svc.TotalCount() != 10 {
		t.Errorf("cumulative histograms hold %d, %d values; want 10", resp.TotalCount(), svc.TotalCount())
	}
	// They are copies: changing them does not change the collector's.
	resp.Reset()
	if r2, _ := c.CumulativeHistograms(OpRead); r2.TotalCount() != 10 {
		t.Error("CumulativeHistograms returned the collector's own histogram")
	}
}

// near reports whether a histogram-reported value is within the 3-significant-digit
// precision of want: HDR reports the highest value equivalent to what was recorded.
func near(got, want float64) bool {
	return got >= want && got <= want*1.001
}

func TestSummaryJSONShape(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(time.Second))

	for name, v := range map[string]any{"latest": c.Latest(), "cumulative": c.Cumulative(), "point": c.Series()[0]} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		top := []string{"end", "ops", "seconds", "start"}
		if name == "point" {
			top = []string{"ops", "seconds", "t"}
		}
		if got := keys(m); !slices.Equal(got, top) {
			t.Errorf("%s keys %v, want %v", name, got, top)
		}
		ops := m["ops"].(map[string]any)
		if got := keys(ops); !slices.Equal(got, []string{"backfill", "read", "write"}) {
			t.Errorf("%s ops %v", name, got)
		}
		op := ops["backfill"].(map[string]any) // an op with no data still has every key
		want := []string{"attempted", "backlogMs", "clamped", "count", "dropLateness", "dropped", "errors", "failures", "misses", "pending", "rate",
			"responseTime", "serviceTime", "startLag", "startLagOwn", "startLagWait", "succeeded", "targetRate", "validation", "workers"}
		if got := keys(op); !slices.Equal(got, want) {
			t.Errorf("%s op keys %v, want %v", name, got, want)
		}
		if got := keys(op["failures"].(map[string]any)); !slices.Equal(got, []string{"other", "rejected", "throttled", "timeout", "unavailable"}) {
			t.Errorf("%s failures keys %v", name, got)
		}
		if got := keys(op["validation"].(map[string]any)); !slices.Equal(got, []string{"corrupt", "lost", "stale", "wrongKey"}) {
			t.Errorf("%s validation keys %v", name, got)
		}
		if got := keys(op["responseTime"].(map[string]any)); !slices.Equal(got, []string{"max", "mean", "p50", "p95", "p99", "p995", "p999"}) {
			t.Errorf("%s latency keys %v", name, got)
		}
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestLatestBeforeFirstTick(t *testing.T) {
	c, t0 := newTestCollector(t, Config{})
	c.SetTarget(OpWrite, 50, 3)
	l := c.Latest()
	if !l.Start.Equal(t0) || len(l.Ops) != len(BuiltinNames()) || l.Ops["write"].Workers != 3 || l.Ops["read"].Failures == nil {
		t.Errorf("Latest before any tick = %+v", l)
	}
	if got := c.Series(); got == nil || len(got) != 0 {
		t.Errorf("Series before any tick = %#v, want empty non-nil", got)
	}
}

func TestSeriesIsBoundedOldestFirst(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 2, SeriesLen: 3})
	w := c.Recorder(OpWrite).Shard(0)
	for i := 1; i <= 5; i++ {
		for range i {
			w.Success(time.Millisecond, time.Millisecond)
		}
		c.Tick(t0.Add(time.Duration(i) * time.Second))
	}
	pts := c.Series()
	var got []int64
	for _, p := range pts {
		got = append(got, p.Ops["write"].Count)
	}
	if !slices.Equal(got, []int64{3, 4, 5}) {
		t.Errorf("series write counts %v, want [3 4 5]", got)
	}
	if !pts[2].Time.Equal(t0.Add(5*time.Second)) || pts[2].Ops["write"].Rate != 5 {
		t.Errorf("last point at %v rate %v", pts[2].Time, pts[2].Ops["write"].Rate)
	}
	since := c.SeriesSince(t0.Add(4 * time.Second))
	if len(since) != 1 || since[0].Ops["write"].Count != 5 {
		t.Errorf("SeriesSince(4s) = %d points", len(since))
	}
	// Cumulative keeps everything the ring dropped.
	if n := c.Cumulative().Ops["write"].Count; n != 15 {
		t.Errorf("cumulative count %d, want 15", n)
	}
}

func TestReset(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 2})
	r := c.Recorder(OpRead).Shard(0)
	r.Success(time.Second, time.Second)
	c.Tick(t0.Add(time.Second))
	r.Success(time.Second, time.Second) // recorded before the reset: discarded
	c.ResetAt(t0.Add(10 * time.Second))
	if l := c.Latest(); !l.End.Equal(t0.Add(time.Second)) || l.Ops["read"].Count != 1 {
		t.Errorf("Latest after reset ends %v with %d reads; want the pre-reset interval", l.End, l.Ops["read"].Count)
	}
	if n := c.Cumulative().Ops["read"].Count; n != 0 {
		t.Errorf("cumulative count after reset %d, want 0", n)
	}
	r.Success(time.Millisecond, time.Millisecond)
	iv := c.Tick(t0.Add(12 * time.Second))
	if !iv.Start.Equal(t0.Add(10 * time.Second)) {
		t.Errorf("interval after reset starts at %v", iv.Start)
	}
	cum := c.Cumulative()
	rd := cum.Ops["read"]
	if rd.Count != 1 || rd.ResponseTime.Max != 1000 || cum.Seconds != 2 || rd.Rate != 0.5 {
		t.Errorf("cumulative after reset: count %d max %v over %vs rate %v; want 1, 1000, 2, 0.5",
			rd.Count, rd.ResponseTime.Max, cum.Seconds, rd.Rate)
	}
	if len(c.Series()) != 2 {
		t.Errorf("reset dropped the series: %d points", len(c.Series()))
	}
}

func TestSubscribe(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	var a, b []int64
	cancelA := c.Subscribe(func(iv *Interval) { a = append(a, iv.Ops[OpRead].Successes) })
	c.Subscribe(func(iv *Interval) {
		b = append(b, iv.Ops[OpRead].Response.TotalCount())
		_ = c.Latest() // the read-only views are usable from a subscriber
	})
	s := c.Recorder(OpRead).Shard(0)
	s.Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(time.Second))
	cancelA()
	cancelA()
	s.Success(time.Millisecond, time.Millisecond)
	s.Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(2 * time.Second))
	if !slices.Equal(a, []int64{1}) || !slices.Equal(b, []int64{1, 2}) {
		t.Errorf("subscribers saw %v and %v; want [1] and [1 2]", a, b)
	}
}

func TestInvalidOp(t *testing.T) {
	c := NewCollector(Config{Shards: 1})
	bad := Op(MaxSeries)
	c.SetTarget(bad, 1, 1)
	c.SetBacklog(bad, nil)
	if c.Recorder(bad) != nil {
		t.Error("Recorder(invalid) is not nil")
	}
	if r, s := c.CumulativeHistograms(bad); r != nil || s != nil {
		t.Error("CumulativeHistograms(invalid) is not nil")
	}
	if c.CumulativeCounts(bad) != (Counts{}) {
		t.Error("CumulativeCounts(invalid) is not zero")
	}
}

func TestConfigDefaults(t *testing.T) {
	got := NewCollector(Config{}).Config()
	want := Config{Shards: DefaultShards(), Interval: time.Second, SeriesLen: 3600, Clock: clock.Real}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
}

// TestRunTicksOnItsClock: Run closes an interval every Interval of the collector's clock
// on a schedule from its start, and each interval says when its tick was due. A tick
// that comes late (the process stalled) is due where it was; one more than an interval
// late is the tick of the last instant due (no burst of catch-up ticks), and the next
// one is due on the schedule, not an interval after the late one. A Tick off the
// schedule (a flush, a phase's end) is due at the schedule's next instant.
func TestRunTicksOnItsClock(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewSim(t0)
	c := NewCollector(Config{Shards: 1, Clock: clk})
	ticks := make(chan [3]time.Time, 16)
	c.Subscribe(func(iv *Interval) { ticks <- [3]time.Time{iv.Start, iv.End, iv.Due} })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	parked := func() {
		t.Helper()
		if !clk.WaitTimers(1, 10*time.Second) {
			t.Fatal("Run set no timer on its clock")
		}
	}
	step := func(d time.Duration) {
		t.Helper()
		parked()
		clk.Advance(d)
	}
	// stall pauses the process for d: its tick's timer fires late, when it resumes.
	stall := func(d time.Duration) {
		t.Helper()
		parked()
		clk.Jump(d)
		clk.Advance(0)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	want := func(from, to, due time.Duration) {
		t.Helper()
		select {
		case got := <-ticks:
			if !got[0].Equal(t0.Add(from)) || !got[1].Equal(t0.Add(to)) || !got[2].Equal(t0.Add(due)) {
				t.Errorf("interval %v..%v due %v, want %v..%v due %v", got[0].Sub(t0), got[1].Sub(t0), got[2].Sub(t0), from, to, due)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no tick for %v..%v", from, to)
		}
	}
	step(ms(999))
	step(ms(1))
	want(0, ms(1000), ms(1000))
	step(ms(1000))
	want(ms(1000), ms(2000), ms(2000))
	stall(ms(1300)) // due at 3 s, ticks at 3.3 s
	want(ms(2000), ms(3300), ms(3000))
	step(ms(700))
	want(ms(3300), ms(4000), ms(4000))
	stall(ms(3500)) // due at 5 s, ticks at 7.5 s: the tick due at 7 s; the next is due at 8 s
	want(ms(4000), ms(7500), ms(7000))
	step(ms(500))
	want(ms(7500), ms(8000), ms(8000))
	step(ms(400))
	c.Tick(clk.Now()) // off the schedule: part of the second due at 9 s
	want(ms(8000), ms(8400), ms(9000))
	step(ms(600))
	want(ms(8400), ms(9000), ms(9000))
	select {
	case got := <-ticks:
		t.Errorf("an extra tick %v..%v", got[0].Sub(t0), got[1].Sub(t0))
	default:
	}
}

// TestTickDue: a collector without a schedule closes intervals due at no instant (a
// reader places them by their end); TickDue gives it one, which a later Tick keeps.
func TestTickDue(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	if iv := c.Tick(t0.Add(time.Second)); !iv.Due.IsZero() {
		t.Errorf("a tick without a schedule is due at %v", iv.Due)
	}
	if iv := c.TickDue(t0.Add(2300*time.Millisecond), t0.Add(2*time.Second)); !iv.Due.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("TickDue: due %v, want 2 s", iv.Due.Sub(t0))
	}
	for _, tc := range []struct{ at, due time.Duration }{
		{2500 * time.Millisecond, 3 * time.Second},
		{3 * time.Second, 3 * time.Second},
		{7001 * time.Millisecond, 8 * time.Second},
	} {
		if iv := c.Tick(t0.Add(tc.at)); !iv.Due.Equal(t0.Add(tc.due)) {
			t.Errorf("Tick at %v: due %v, want %v", tc.at, iv.Due.Sub(t0), tc.due)
		}
	}
}

// Eight goroutines record while ticks run concurrently; nothing may be lost or
// counted twice across the swaps.
func TestConcurrentRecordAndTick(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 4, SeriesLen: 100000, Interval: time.Millisecond})
	const workers, perWorker = 8, 20000
	var seen Counts
	var seenResp int64
	var tickCount atomic.Int64
	c.Subscribe(func(iv *Interval) {
		seen.Add(&iv.Ops[OpRead].Counts)
		seenResp += iv.Ops[OpRead].Response.TotalCount()
		tickCount.Add(1)
	})

	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			s := c.Recorder(OpRead).Shard(w)
			for i := range perWorker {
				if i%2000 == 1999 {
					// Make sure ticks interleave with recording however the
					// scheduler runs us: wait for the next swap.
					for last := tickCount.Load(); tickCount.Load() == last; {
						runtime.Gosched()
					}
				}
				d := time.Duration(1+i%5000) * time.Microsecond
				switch i % 10 {
				case 0:
					s.Miss(d, d)
				case 1:
					s.Failure(driver.Classes[(i/10)%driver.NumClasses])
				case 2:
					s.SuccessInvalid(d, d, -1, Lost)
				default:
					s.Success(d, d)
				}
			}
		})
	}
	ticks := 0
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		ticks++
		c.Tick(t0.Add(time.Duration(ticks) * time.Millisecond))
	}
	c.Tick(t0.Add(time.Duration(ticks+1) * time.Millisecond)) // flush

	const n = workers * perWorker
	cum := c.CumulativeCounts(OpRead)
	want := Counts{Successes: n * 8 / 10, Misses: n / 10}
	for _, cl := range driver.Classes {
		want.Failures[cl] = int64(n / 10 / driver.NumClasses)
	}
	want.Validation[Lost] = n / 10
	if cum != want {
		t.Errorf("cumulative counts %+v, want %+v", cum, want)
	}
	if seen != want {
		t.Errorf("sum of intervals %+v, want %+v", seen, want)
	}
	resp, _ := c.CumulativeHistograms(OpRead)
	if resp.TotalCount() != n*9/10 || seenResp != n*9/10 {
		t.Errorf("latencies: cumulative %d, intervals %d; want %d", resp.TotalCount(), seenResp, n*9/10)
	}
	var seriesCount int64
	for _, p := range c.Series() {
		seriesCount += p.Ops["read"].Count
	}
	if seriesCount != n*9/10 {
		t.Errorf("series total %d, want %d", seriesCount, n*9/10)
	}
	t.Logf("%d ticks during recording", ticks)
}

func TestRunTicksUntilCancelled(t *testing.T) {
	c := NewCollector(Config{Shards: 1, Interval: time.Millisecond})
	got := make(chan int64, 100)
	c.Subscribe(func(iv *Interval) {
		select {
		case got <- iv.Ops[OpWrite].Successes:
		default:
		}
	})
	c.Recorder(OpWrite).Shard(0).Success(time.Millisecond, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { c.Run(ctx); close(stopped) }()

	var total int64
	for range 3 {
		total += <-got
	}
	cancel()
	<-stopped
	if total != 1 {
		t.Errorf("intervals carried %d writes, want 1", total)
	}
}

// TestSliverIntervalIsNoSeriesPoint: the flush at the end of a run covers a few ms; it
// counts in the cumulative view but is not a time-series point (its rate would be noise).
func TestSliverIntervalIsNoSeriesPoint(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 2})
	sh := c.Recorder(OpRead).Shard(0)
	sh.Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(time.Second))
	sh.Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(time.Second + 5*time.Millisecond))
	if n := len(c.Series()); n != 1 {
		t.Fatalf("series has %d points, want 1 (the 5 ms flush is not a point)", n)
	}
	if n := c.Cumulative().Ops["read"].Count; n != 2 {
		t.Fatalf("cumulative count %d, want 2", n)
	}
}

// TestClampedLatenciesAreReported is issue 8's sixth defect: latencies above the 1 h
// ceiling were counted (Counts.Clamped) but reported nowhere, so a run's max could silently
// understate them. They show in interval and cumulative summaries and the time series.
func TestClampedLatenciesAreReported(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	s := c.Recorder(OpRead).Shard(0)
	s.Success(2*time.Hour, 2*time.Hour)
	s.Success(time.Millisecond, time.Millisecond)
	iv := c.Tick(t0.Add(time.Second))
	if got := iv.Summary().Ops["read"].Clamped; got != 1 {
		t.Errorf("interval summary clamped = %d, want 1", got)
	}
	if got := c.Cumulative().Ops["read"].Clamped; got != 1 {
		t.Errorf("cumulative clamped = %d, want 1", got)
	}
	if pts := c.Series(); len(pts) != 1 || pts[0].Ops["read"].Clamped != 1 {
		t.Errorf("series clamped = %+v, want 1 in the one point", pts)
	}
	data, err := json.Marshal(c.Cumulative().Ops["read"])
	if err != nil || !strings.Contains(string(data), `"clamped":1`) {
		t.Errorf("JSON %s lacks \"clamped\":1 (%v)", data, err)
	}
}

// TestSeriesPointsCarryTheirSpan: a point at a phase boundary covers less than a second
// (the interval after a reset starts at the reset), and says how much, so a chart turns
// its counts into rates over the time they cover rather than over 1 s (issue 32: the
// report's chart dipped at the end of the warm-up).
func TestSeriesPointsCarryTheirSpan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reset, tick  time.Duration // after t0's first full second
		ops          int
		wantSecs     float64
		wantRateOver float64
	}{
		{"full second", 0, time.Second, 1000, 1, 1},
		{"after a reset at 0.4 s", 400 * time.Millisecond, time.Second, 600, 0.6, 0.6},
		{"after a reset at 0.959 s", 959 * time.Millisecond, 2 * time.Second, 1041, 1.041, 1.041},
		{"a short tick before a phase ends", 0, 250 * time.Millisecond, 250, 0.25, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, t0 := newTestCollector(t, Config{Shards: 1})
			sh := c.Recorder(OpRead).Shard(0)
			c.Tick(t0.Add(time.Second))
			if tc.reset > 0 {
				c.ResetAt(t0.Add(time.Second + tc.reset))
			}
			for range tc.ops {
				sh.Success(time.Millisecond, time.Millisecond)
			}
			sh.Failure(driver.ClassTimeout)
			c.Tick(t0.Add(time.Second + tc.tick))
			pts := c.Series()
			p := pts[len(pts)-1]
			if p.Seconds != tc.wantSecs {
				t.Errorf("point covers %v s, want %v", p.Seconds, tc.wantSecs)
			}
			want := float64(tc.ops) / tc.wantRateOver
			if r := p.Ops["read"].Rate; r < want*0.999 || r > want*1.001 {
				t.Errorf("point rate %.1f ops/s, want %.1f (%d ops over %v s)", r, want, tc.ops, tc.wantSecs)
			}
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"seconds":`+strconv.FormatFloat(tc.wantSecs, 'f', -1, 64)+`,`) {
				t.Errorf("point JSON lacks its span %v: %.200s", tc.wantSecs, b)
			}
		})
	}
}

// TestCumulativeActiveSeconds: a session's totals are over the time each class ran, not
// over the span since the connect (issue 36: "Session totals" averaged over idle time).
func TestCumulativeActiveSeconds(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	rd := c.Recorder(OpRead).Shard(0)
	wr := c.Recorder(OpWrite).Shard(0)
	// 10 idle seconds after the connect.
	for i := 1; i <= 10; i++ {
		c.Tick(sec(i))
	}
	// Reads run for 5 s at 100/s; writes run 2 s at 0.5/s (one op in one of its seconds,
	// none in the other: still running, it has workers).
	c.SetTarget(OpRead, 100, 2)
	for i := 11; i <= 15; i++ {
		for range 100 {
			rd.Success(time.Millisecond, time.Millisecond)
		}
		if i == 14 {
			c.SetTarget(OpWrite, 0.5, 1)
			wr.Success(time.Millisecond, time.Millisecond)
		}
		c.Tick(sec(i))
	}
	c.Tick(sec(16)) // writes still running, no op this second
	c.SetTarget(OpRead, 0, 0)
	c.SetTarget(OpWrite, 0, 0)
	for i := 17; i <= 30; i++ {
		c.Tick(sec(i))
	}
	cum := c.Cumulative()
	for _, tc := range []struct {
		op     string
		active float64
		count  int64
	}{{"read", 6, 500}, {"write", 3, 1}, {"backfill", 0, 0}} {
		s := cum.Ops[tc.op]
		if s.ActiveSeconds != tc.active || s.Count != tc.count {
			t.Errorf("%s: active %v s with %d ops, want %v s with %d", tc.op, s.ActiveSeconds, s.Count, tc.active, tc.count)
		}
	}
	if cum.Seconds != 30 {
		t.Errorf("span %v s, want 30", cum.Seconds)
	}
	c.ResetAt(sec(31))
	if a := c.Cumulative().Ops["read"].ActiveSeconds; a != 0 {
		t.Errorf("active seconds after a reset %v, want 0", a)
	}
}
