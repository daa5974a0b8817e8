package stats

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
)

// TestMergedIntervalsAreTheCumulative is issue 9's bar for histograms as the unit of
// exchange: merging the encoded 1 s intervals of a 60 s run gives exactly the cumulative
// histograms (identical counts in every bucket) and counters, also across a reset, where
// the intervals of the new span merge to the new cumulative.
func TestMergedIntervalsAreTheCumulative(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 4})
	log := NewIntervalLog(c, 100, 0)
	defer log.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	// A class the workload added, registered mid-run, merges like the built-in ones.
	var ops = []Op{OpRead, OpWrite}
	record := func() {
		if len(ops) == 2 && tickCount(c) == 30 {
			scan, err := c.Register("scan.range")
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, scan)
		}
		for range 500 {
			op := ops[rng.IntN(len(ops))]
			s := c.Recorder(op).Shard(rng.IntN(8))
			svc := time.Duration(rng.ExpFloat64() * float64(300*time.Microsecond))
			switch r := rng.IntN(100); {
			case r < 2:
				s.Failure(driver.ClassTimeout)
			case r < 10:
				s.Miss(svc+time.Duration(rng.IntN(1e6)), svc)
			case r < 11:
				s.Success(2*time.Hour, svc) // clamped
			case r < 50:
				s.Success(svc+time.Duration(rng.IntN(5e6)), svc)
			default:
				// A split start lag (Counts.LagOwnUs) crosses the encoding like the rest.
				lag := time.Duration(rng.IntN(5e6))
				s.SuccessLag(svc+lag, svc, time.Duration(rng.Int64N(int64(lag)+1)))
			}
		}
	}
	tick := 0
	run := func(seconds int) {
		for range seconds {
			record()
			tick++
			c.Tick(t0.Add(time.Duration(tick) * time.Second))
		}
	}
	check := func(span time.Time) {
		t.Helper()
		page := log.Since(0)
		if page.Missed != 0 || page.Error != "" {
			t.Fatalf("page missed %d, error %q", page.Missed, page.Error)
		}
		merged := map[string]*OpInterval{}
		n := 0
		for _, e := range page.Intervals {
			if !e.SpanStart.Equal(span) {
				continue
			}
			n++
			iv, err := e.Decode()
			if err != nil {
				t.Fatal(err)
			}
			for i := range iv.Ops {
				o := &iv.Ops[i]
				m := merged[o.Name]
				if m == nil {
					m = &OpInterval{Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram()}
					merged[o.Name] = m
				}
				MergeHistograms(m.Response, o.Response)
				MergeHistograms(m.Service, o.Service)
				MergeHistograms(m.StartLag, o.StartLag)
				m.Counts.Add(&o.Counts)
			}
		}
		if n == 0 {
			t.Fatal("no interval of the span")
		}
		if len(merged) != len(c.Names()) {
			t.Errorf("intervals name %d series, the collector has %v", len(merged), c.Names())
		}
		for _, op := range ops {
			name := c.Name(op)
			m := merged[name]
			if m == nil {
				t.Fatalf("%s: in no interval", name)
			}
			resp, svc := c.CumulativeHistograms(op)
			if !equalBuckets(m.Response, resp) || !equalBuckets(m.Service, svc) {
				t.Errorf("%s: merged intervals' histograms differ from the cumulative ones", name)
			}
			if cum := c.CumulativeCounts(op); m.Counts != cum || cum.Count() == 0 {
				t.Errorf("%s: merged counts %+v, cumulative %+v", name, m.Counts, cum)
			}
		}
	}
	run(60)
	check(t0)
	c.ResetAt(t0.Add(time.Duration(tick) * time.Second))
	span := c.SpanStart()
	run(5)
	check(span)
	if got := log.Since(0).Next; got != 65 {
		t.Errorf("next seq %d after 65 ticks", got)
	}
}

// tickCount is how many intervals c has ticked, from its time series.
func tickCount(c *Collector) int { return len(c.Series()) }

// equalBuckets reports whether a and b hold the same count in every bucket.
func equalBuckets(a, b *hdrhistogram.Histogram) bool {
	ea, eb := a.Export(), b.Export()
	return a.TotalCount() == b.TotalCount() && slices.Equal(ea.Counts, eb.Counts)
}

// TestIntervalLogResumesWithoutGapsOrDuplicates: a reader that asks from its next Seq gets
// each interval once; one that fell behind the ring is told how many it missed.
func TestIntervalLogResumesWithoutGapsOrDuplicates(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	log := NewIntervalLog(c, 5, 0)
	defer log.Close()
	next, seen := uint64(0), []uint64{}
	for i := 1; i <= 12; i++ {
		c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
		c.Tick(t0.Add(time.Duration(i) * time.Second))
		if i%3 == 0 {
			p := log.Since(next)
			for _, e := range p.Intervals {
				seen = append(seen, e.Seq)
			}
			next = p.Next
		}
	}
	if want := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}; !slices.Equal(seen, want) {
		t.Errorf("seqs read %v, want %v", seen, want)
	}
	p := log.Since(0)
	if p.Missed != 7 || len(p.Intervals) != 5 || p.Intervals[0].Seq != 7 {
		t.Errorf("reading from 0 after 12 ticks with 5 held: missed %d, got %d from %d", p.Missed, len(p.Intervals), p.Intervals[0].Seq)
	}
	if p := log.Since(12); len(p.Intervals) != 0 || p.Next != 12 {
		t.Errorf("reading from the next seq: %+v", p)
	}
}

// TestEncodedIntervalDue: the instant a tick was due crosses the wire (what the interval
// log serves, as JSON, decoded again), and stays off the wire when unknown, so an older
// reader sees the format it knows and an older node's intervals decode with no due
// instant (a coordinator then places them by their end).
func TestEncodedIntervalDue(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	log := NewIntervalLog(c, 10, 0)
	defer log.Close()
	c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
	c.Tick(t0.Add(time.Second)) // no schedule yet
	c.TickDue(t0.Add(2300*time.Millisecond), t0.Add(2*time.Second))
	page := log.Since(0)
	if len(page.Intervals) != 2 {
		t.Fatalf("%d intervals", len(page.Intervals))
	}
	b, err := json.Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	var back IntervalsPage
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Time{{}, t0.Add(2 * time.Second)} {
		e := back.Intervals[i]
		iv, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		if !e.Due.Equal(want) || !iv.Due.Equal(want) {
			t.Errorf("interval %d: due %v on the wire, %v decoded; want %v", i, e.Due, iv.Due, want)
		}
	}
	var raw struct {
		Intervals []map[string]json.RawMessage `json:"intervals"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Intervals[0]["due"]; ok {
		t.Errorf("an interval due at no instant has a due field: %s", b)
	}
	if _, ok := raw.Intervals[1]["due"]; !ok {
		t.Errorf("an interval with a due instant has no due field: %s", b)
	}
}

// BenchmarkEncodeInterval is the tick goroutine's cost of keeping the interval log: one
// second of reads and writes at a realistic latency spread.
func BenchmarkEncodeInterval(b *testing.B) {
	c := NewCollector(Config{Shards: 4})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		d := time.Duration(rng.ExpFloat64() * float64(500*time.Microsecond))
		c.Recorder(Op(i%2)).Shard(i%4).Success(d+time.Duration(rng.IntN(100000)), d)
	}
	iv := c.Tick(time.Now())
	b.ReportAllocs()
	var size int
	for b.Loop() {
		e, err := EncodeInterval(iv, 0, time.Time{})
		if err != nil {
			b.Fatal(err)
		}
		size = encodedSize(&e)
	}
	b.ReportMetric(float64(size), "bytes/interval")
}

// TestIntervalLogIdlesWithoutReaders: with an idle time, nothing is encoded until a reader
// asks, the sequence runs on meanwhile (the reader learns what it missed), and encoding
// stops again once no reader has asked for the idle time.
func TestIntervalLogIdlesWithoutReaders(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	log := NewIntervalLog(c, 10, time.Minute)
	defer log.Close()
	now := t0
	log.now = func() time.Time { return now }
	tick := func() {
		c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
		now = now.Add(time.Second)
		c.Tick(now)
	}
	tick()
	tick()
	if log.HeldBytes() != 0 {
		t.Fatal("encoded intervals with no reader")
	}
	p := log.Since(0)
	if p.Missed != 2 || len(p.Intervals) != 0 || p.Next != 2 {
		t.Fatalf("first read: %+v, want 2 missed and nothing held", p)
	}
	tick()
	if p = log.Since(p.Next); len(p.Intervals) != 1 || p.Intervals[0].Seq != 2 {
		t.Fatalf("second read: %+v, want interval 2", p)
	}
	now = now.Add(2 * time.Minute)
	tick()
	if log.HeldBytes() != 0 {
		t.Fatal("still encoding two minutes after the last read")
	}
}
