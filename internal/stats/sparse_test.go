package stats

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/clock"
)

// The layouts are hdrhistogram's arithmetic: every value from 0 to HighestValue maps to
// the counts index whose lowest value records into the same bucket, and every index's
// lowest value maps back to it. Walking bucket by bucket (each index's range) covers
// every value without visiting an hour of microseconds one by one.
func TestLayoutMatchesHistogram(t *testing.T) {
	for _, tc := range []struct {
		name string
		l    *layout
		h    func() *hdrhistogram.Histogram
	}{{"latency", latencyLayout, NewHistogram}, {"start lag", lagLayout, NewLagHistogram}} {
		h := tc.h()
		if got, want := tc.l.small, map[string]int64{"latency": latencySmall, "start lag": lagSmall}[tc.name]; got != want {
			t.Fatalf("%s: layout's single-value bound %d, the constant %d", tc.name, got, want)
		}
		if want := (h.ByteSize() - (6*8 + 5*4)) / 8; tc.l.n != want {
			t.Fatalf("%s: layout has %d entries, the histogram %d", tc.name, tc.l.n, want)
		}
		s := makeTally(tc.l)
		next := int64(0)
		for i := range tc.l.n {
			lo := tc.l.value(i)
			if lo != next {
				t.Fatalf("%s: index %d starts at %d, want %d (the value after the index below)", tc.name, i, lo, next)
			}
			// A bucket spans a power of two of values: find the widest that is one
			// bucket for the histogram, and check the value past it is not.
			// (The last bucket reaches past HighestValue.)
			size := int64(1)
			for h.ValuesAreEquivalent(lo, lo+2*size-1) {
				size *= 2
			}
			if h.ValuesAreEquivalent(lo, lo+size) {
				t.Fatalf("%s: values from %d are not one bucket of a power of two", tc.name, lo)
			}
			hi := min(lo+size-1, HighestValue)
			for _, v := range []int64{lo, (lo + hi) / 2, hi} {
				if got := tc.l.index(v); got != i {
					t.Fatalf("%s: index(%d) = %d, want %d (bucket %d..%d)", tc.name, v, got, i, lo, hi)
				}
				s.count(v, tc.l.small)
				if s.counts[i] != 1 || s.used[i/64] != 1<<(i%64) {
					t.Fatalf("%s: add(%d) did not count index %d", tc.name, v, i)
				}
				s.clear()
			}
			next = hi + 1
			if next > HighestValue {
				break
			}
		}
		if next != HighestValue+1 {
			t.Fatalf("%s: buckets end at %d, want %d", tc.name, next-1, HighestValue)
		}
	}
}

// oldBuffer is the shard buffer as it was before the drain followed what was recorded:
// histograms per shard, small values counted apart and flushed into them, merged into
// the interval with hdrhistogram's Merge and reset whole. TestDrainMatchesOldPath holds
// the new path to its results bit for bit.
type oldBuffer struct {
	resp, svc, lag, late *hdrhistogram.Histogram
	respSmall, svcSmall  [2048]uint32
	lagSmall             [256]uint32
	Counts
}

func newOldBuffer() *oldBuffer {
	return &oldBuffer{resp: NewHistogram(), svc: NewHistogram(), lag: NewLagHistogram()}
}

func oldCount(c []uint32, h *hdrhistogram.Histogram, v int64) {
	if uint64(v) < uint64(len(c)) {
		if c[v]++; c[v] == math.MaxUint32 {
			_ = h.RecordValues(v, int64(c[v]))
			c[v] = 0
		}
		return
	}
	_ = h.RecordValue(v)
}

func oldFlush(c []uint32, h *hdrhistogram.Histogram) {
	for v, n := range c {
		if n != 0 {
			_ = h.RecordValues(int64(v), int64(n))
			c[v] = 0
		}
	}
}

func (b *oldBuffer) record(resp, svc, own time.Duration, miss bool) {
	r, rc := Micros(resp)
	s, sc := Micros(svc)
	oldCount(b.respSmall[:], b.resp, r)
	oldCount(b.svcSmall[:], b.svc, s)
	l, _ := Micros(resp - svc)
	oldCount(b.lagSmall[:], b.lag, l)
	if own >= 0 {
		o, _ := Micros(min(own, resp-svc))
		b.LagOwnUs += o
		b.LagWaitUs += l - o
	}
	if rc || sc {
		b.Clamped++
	}
	if miss {
		b.Misses++
	} else {
		b.Successes++
	}
}

func (b *oldBuffer) drop(lateness time.Duration) {
	l, _ := Micros(lateness)
	b.Dropped++
	if b.late == nil {
		b.late = NewLagHistogram()
	}
	_ = b.late.RecordValue(l)
}

func (b *oldBuffer) drainInto(resp, svc, lag, late *hdrhistogram.Histogram, c *Counts) {
	oldFlush(b.respSmall[:], b.resp)
	oldFlush(b.svcSmall[:], b.svc)
	oldFlush(b.lagSmall[:], b.lag)
	MergeHistograms(resp, b.resp)
	MergeHistograms(svc, b.svc)
	MergeHistograms(lag, b.lag)
	if b.late != nil {
		MergeHistograms(late, b.late)
	}
	c.Add(&b.Counts)
	for _, h := range []*hdrhistogram.Histogram{b.resp, b.svc, b.lag, b.late} {
		if h != nil && h.TotalCount() != 0 {
			h.Reset()
		}
	}
	clear(b.respSmall[:])
	clear(b.svcSmall[:])
	clear(b.lagSmall[:])
	b.Counts = Counts{}
}

// randomLatency draws a duration from one of the ranges that take different paths: zero
// and negative, sub-µs, the single-value buckets, the wide buckets up to the hour, past
// the hour (clamped) and far past it.
func randomLatency(rng *rand.Rand) time.Duration {
	switch rng.IntN(8) {
	case 0:
		return time.Duration(rng.IntN(3)) - 1 // -1 ns, 0, 1 ns
	case 1:
		return time.Duration(rng.IntN(1000))
	case 2:
		return time.Duration(rng.IntN(2100)) * time.Microsecond
	case 3:
		return time.Duration(rng.IntN(300)) * time.Microsecond
	case 4:
		return time.Duration(rng.Int64N(int64(50*time.Millisecond))) + time.Duration(rng.IntN(1000))
	case 5:
		return time.Duration(rng.Int64N(int64(HighestLatency)))
	case 6:
		return HighestLatency - time.Duration(rng.IntN(3))*time.Microsecond + time.Duration(rng.IntN(3000))
	default:
		return time.Duration(rng.Int64N(math.MaxInt64/2)) + HighestLatency
	}
}

// feedRandom records a random interval's operations into the shards of r and the same
// into old, and returns how many: values of every range, some shards left empty, and
// some intervals with nothing at all (always when empty is set).
func feedRandom(rng *rand.Rand, r *Recorder, old []*oldBuffer, empty bool) int {
	shards := len(old)
	n := 0
	switch rng.IntN(4) {
	case 0: // nothing recorded
	case 1:
		n = rng.IntN(20)
	default:
		n = rng.IntN(maxRandomValues)
	}
	if empty {
		n = 0
	}
	// Some shards get nothing this interval: the values go to the others.
	quiet := rng.IntN(shards)
	for range n {
		w := rng.IntN(shards)
		if w < quiet && rng.IntN(2) == 0 {
			w = quiet + rng.IntN(shards-quiet)
		}
		s, o := r.Shard(w), old[w]
		resp, svc := randomLatency(rng), randomLatency(rng)
		if rng.IntN(3) > 0 && svc > resp {
			resp, svc = svc, resp
		}
		own := time.Duration(-1)
		if rng.IntN(2) == 0 {
			own = randomLatency(rng)
		}
		switch k := rng.IntN(10); {
		case k == 0:
			l := randomLatency(rng)
			s.Drop(l)
			o.drop(l)
		case k < 3:
			s.MissLag(resp, svc, own)
			o.record(resp, svc, own, true)
		default:
			s.SuccessLag(resp, svc, own)
			o.record(resp, svc, own, false)
		}
	}
	return n
}

func newOldBuffers(n int) []*oldBuffer {
	old := make([]*oldBuffer, n)
	for i := range old {
		old[i] = newOldBuffer()
	}
	return old
}

// The drain that visits only what shards recorded gives, interval after interval, the
// histograms and counters the old one gave (whole shard histograms merged and reset):
// every bucket, total, min, max, mean, percentile and encoded interval, over random
// values of every range, shards left empty, shards used again after a swap, and intervals
// in which nothing is recorded at all.
func TestDrainMatchesOldPath(t *testing.T) {
	for seed := range uint64(drainSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			shards := 1 + rng.IntN(9)
			r := newRecorder(OpRead, shards)
			old := newOldBuffers(shards)
			start := time.Unix(1700000000, 0)
			for iv := range 4 {
				n := feedRandom(rng, r, old, iv == 1)
				got := newTestInterval(start, iv)
				want := newTestInterval(start, iv)
				g, w := &got.Ops[0], &want.Ops[0]
				r.drain(g.Response, g.Service, g.StartLag, g.Late, &g.Counts)
				for _, o := range old {
					o.drainInto(w.Response, w.Service, w.StartLag, w.Late, &w.Counts)
				}
				compareIntervals(t, fmt.Sprintf("interval %d (%d values)", iv, n), got, want)
			}
		})
	}
}

// What a collector's tick publishes from the drained sums (the interval, its summary,
// the cumulative histograms and report) is what merging and walking whole histograms
// gave, across ticks, a reset, and intervals with and without values.
func TestCollectorMatchesOldPath(t *testing.T) {
	for seed := range uint64(collectorSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			shards := 1 + rng.IntN(5)
			start := time.Unix(1700000000, 0)
			c := NewCollector(Config{Shards: shards, Clock: clock.NewSim(start)})
			old := newOldBuffers(shards)
			cumResp, cumSvc, cumLag, cumLate := NewHistogram(), NewHistogram(), NewLagHistogram(), NewLagHistogram()
			for iv := range 6 {
				if iv == 3 {
					// A reset discards what was recorded since the tick and the totals.
					feedRandom(rng, c.Recorder(OpRead), old, false)
					c.ResetAt(start.Add(time.Duration(iv) * time.Second))
					for _, o := range old {
						o.drainInto(NewHistogram(), NewHistogram(), NewLagHistogram(), NewLagHistogram(), &Counts{})
					}
					for _, h := range []*hdrhistogram.Histogram{cumResp, cumSvc, cumLag, cumLate} {
						h.Reset()
					}
				}
				n := feedRandom(rng, c.Recorder(OpRead), old, iv == 1)
				want := newTestInterval(start, iv)
				w := &want.Ops[0]
				for _, o := range old {
					o.drainInto(w.Response, w.Service, w.StartLag, w.Late, &w.Counts)
				}
				got := c.Tick(want.End)
				what := fmt.Sprintf("tick %d (%d values)", iv, n)
				one := &Interval{Start: got.Start, End: got.End, Ops: []OpInterval{*got.Op("read")}}
				want.Start = got.Start
				compareIntervals(t, what, one, want)
				var gl, wl bytes.Buffer
				glw, err := NewHDRLogWriter(&gl, start)
				if err != nil {
					t.Fatal(err)
				}
				wlw, err := NewHDRLogWriter(&wl, start)
				if err != nil {
					t.Fatal(err)
				}
				if err := errors.Join(glw.WriteInterval(one), wlw.WriteInterval(want)); err != nil {
					t.Fatal(err)
				}
				if gl.String() != wl.String() {
					t.Errorf("%s: HDR log\n%s\nwant\n%s", what, gl.String(), wl.String())
				}
				gs, ws := got.Summary().Ops["read"], want.Summary().Ops["read"]
				if gs.ResponseTime != ws.ResponseTime || gs.ServiceTime != ws.ServiceTime || gs.StartLag != ws.StartLag || gs.DropLateness != ws.DropLateness {
					t.Errorf("%s: summary %+v, want %+v", what, gs, ws)
				}
				MergeHistograms(cumResp, w.Response)
				MergeHistograms(cumSvc, w.Service)
				MergeHistograms(cumLag, w.StartLag)
				MergeHistograms(cumLate, w.Late)
				resp, svc := c.CumulativeHistograms(OpRead)
				if !resp.Equals(cumResp) || !svc.Equals(cumSvc) {
					t.Errorf("%s: cumulative histograms differ: totals %d, %d, want %d, %d", what, resp.TotalCount(), svc.TotalCount(), cumResp.TotalCount(), cumSvc.TotalCount())
				}
				cum := c.Cumulative().Ops["read"]
				wantResp := LatencyOf(cumResp)
				if cum.ResponseTime != wantResp || cum.StartLag != LagWithin(LatencyOf(cumLag), wantResp) || cum.DropLateness != LatencyOf(cumLate) {
					t.Errorf("%s: cumulative %+v, want response %+v", what, cum, wantResp)
				}
			}
		})
	}
}

func newTestInterval(start time.Time, i int) *Interval {
	return &Interval{Start: start.Add(time.Duration(i) * time.Second), End: start.Add(time.Duration(i+1) * time.Second),
		Ops: []OpInterval{{Name: "read", Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram(), Late: NewLagHistogram()}}}
}

func compareIntervals(t *testing.T, what string, got, want *Interval) {
	t.Helper()
	for i := range want.Ops {
		g, w := &got.Ops[i], &want.Ops[i]
		if g.Counts != w.Counts {
			t.Errorf("%s %s: counts %+v, want %+v", what, w.Name, g.Counts, w.Counts)
		}
		for _, h := range []struct {
			name string
			g, w *hdrhistogram.Histogram
		}{{"response", g.Response, w.Response}, {"service", g.Service, w.Service}, {"start lag", g.StartLag, w.StartLag}, {"drop lateness", g.Late, w.Late}} {
			if !h.g.Equals(h.w) {
				t.Errorf("%s %s %s histogram: total %d, want %d; buckets differ", what, w.Name, h.name, h.g.TotalCount(), h.w.TotalCount())
			}
			if gl, wl := LatencyOf(h.g), LatencyOf(h.w); gl != wl {
				t.Errorf("%s %s %s: %+v, want %+v", what, w.Name, h.name, gl, wl)
			}
			if gm, wm := h.g.Min(), h.w.Min(); gm != wm {
				t.Errorf("%s %s %s: min %d, want %d", what, w.Name, h.name, gm, wm)
			}
		}
	}
	ge, err := EncodeInterval(got, 1, got.Start)
	if err != nil {
		t.Fatal(err)
	}
	we, err := EncodeInterval(want, 1, want.Start)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ge, we) {
		t.Errorf("%s: encoded interval differs:\n got %+v\nwant %+v", what, ge, we)
	}
}

// A shard's counts are uint32: a bucket counted up to and past math.MaxUint32 in one
// interval still drains its exact count, once or several times over the limit, and the
// next interval starts from zero. The counts are set near the limit directly, as 2^32
// records would take minutes.
func TestTallySpillIsExact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      time.Duration // the value recorded (resp and svc)
		starts []uint32      // counts set before each batch of adds
		adds   int
	}{
		{"reaches the limit", 500 * time.Microsecond, []uint32{math.MaxUint32 - 1}, 1},
		{"stops below the limit", 500 * time.Microsecond, []uint32{math.MaxUint32 - 2}, 1},
		{"passes the limit", 500 * time.Microsecond, []uint32{math.MaxUint32 - 3}, 7},
		{"passes it twice", 3 * time.Second, []uint32{math.MaxUint32 - 1, math.MaxUint32 - 5}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(OpRead, 1)
			s := r.Shard(0)
			v, _ := Micros(tc.d)
			i := latencyLayout.index(v)
			for round := range 2 {
				want := int64(0)
				for _, start := range tc.starts {
					s.Success(tc.d, tc.d)
					b := s.active
					want += int64(start) - int64(b.resp.counts[i])
					b.resp.counts[i] = start
					for range tc.adds {
						s.Success(tc.d, tc.d)
					}
					want += int64(tc.adds) + 1
				}
				resp, svc := NewHistogram(), NewHistogram()
				var c Counts
				r.drain(resp, svc, NewLagHistogram(), NewLagHistogram(), &c)
				for _, h := range []struct {
					name string
					h    *hdrhistogram.Histogram
					want int64
				}{{"response", resp, want}, {"service", svc, int64(len(tc.starts) * (tc.adds + 1))}} {
					if got := h.h.TotalCount(); got != h.want {
						t.Errorf("round %d: %s count %d, want %d", round, h.name, got, h.want)
					}
					if !h.h.ValuesAreEquivalent(h.h.Min(), v) || !h.h.ValuesAreEquivalent(h.h.Max(), v) {
						t.Errorf("round %d: %s values %d..%d, want all in %d's bucket", round, h.name, h.h.Min(), h.h.Max(), v)
					}
				}
			}
		})
	}
}

// TestCumulativeAfterIngest checks the cumulative summary against LatencyOf of the
// cumulative histograms when they hold drained ticks only (read from the collector's
// cumulative buckets), once an ingested interval was merged into them whole (walked as
// before), and again after a reset.
func TestCumulativeAfterIngest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 42))
	start := time.Unix(1700000000, 0)
	c := NewCollector(Config{Shards: 2, Clock: clock.NewSim(start)})
	record := func(n int) {
		sh := c.Recorder(OpRead).Shard(rng.IntN(2))
		for range n {
			svc := time.Duration(1+rng.Int64N(int64(50*time.Millisecond))) * time.Nanosecond
			sh.Success(svc+time.Duration(rng.Int64N(int64(time.Millisecond))), svc)
		}
	}
	check := func(what string) {
		t.Helper()
		got := c.Cumulative().Ops["read"]
		resp, svc := c.CumulativeHistograms(OpRead)
		if want := LatencyOf(resp); got.ResponseTime != want {
			t.Errorf("%s: cumulative response %+v, want %+v", what, got.ResponseTime, want)
		}
		if want := LatencyOf(svc); got.ServiceTime != want {
			t.Errorf("%s: cumulative service %+v, want %+v", what, got.ServiceTime, want)
		}
	}
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	for s := 1; s <= 3; s++ {
		record(500)
		c.Tick(at(s))
	}
	check("drained ticks")

	// A node's interval merged into the totals whole: values the drains never saw.
	other := NewCollector(Config{Shards: 1, Clock: clock.NewSim(start)})
	for range 300 {
		d := time.Duration(1+rng.Int64N(int64(2*time.Second))) * time.Nanosecond
		other.Recorder(OpRead).Shard(0).Success(d, d)
	}
	iv := other.Tick(at(4))
	if err := c.IngestCumulative(&Interval{Start: at(3), End: at(4), Ops: []OpInterval{*iv.Op("read")}}); err != nil {
		t.Fatal(err)
	}
	check("after an ingested interval")
	record(500)
	c.Tick(at(5))
	check("a tick after the ingested interval")

	c.ResetAt(at(5))
	record(500)
	c.Tick(at(6))
	check("after a reset")
	if c.get(OpRead).cumMerged {
		t.Error("a reset left the cumulative buckets marked as incomplete")
	}
}
