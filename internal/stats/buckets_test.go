package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// TestBucketsKnownValues: one value recorded in a NewHistogram lands where the docs say
// (docs/api.md): by the highest value HDR treats as equal to it, summed at the middle of
// that HDR bucket.
func TestBucketsKnownValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		micros  int64
		high    float64 // seconds: HDR's highest equivalent value
		mid     float64 // seconds: HDR's median equivalent value
		classic int     // index into ClassicBounds; len(ClassicBounds) is +Inf
		exp     int     // schema-3 key; zeroKey for the zero bucket
	}{
		{"0 µs: zero bucket", 0, 0, 0, 0, zeroKey},
		// 2^-20 s < 1 µs <= 2^(-159/8) s.
		{"1 µs", 1, 1e-6, 1e-6, 0, -159},
		// le is inclusive: exactly the first bound is in its bucket.
		{"10 µs: le=0.00001", 10, 1e-5, 1e-5, 0, -132},
		// Above 2.048 ms HDR buckets are 2 µs wide: 3 ms shares one with 3.001 ms, so
		// it counts above le=0.003.
		{"3 ms: le=0.005", 3000, 0.003001, 0.003001, 11, -67},
		{"50 s: le=60", 50e6, 50.003967, 49.987584, 27, 46},
		// 60 s shares a 32.768 ms HDR bucket reaching 60.031 s: +Inf.
		{"60 s: +Inf", 60e6, 60.030975, 60.014592, len(ClassicBounds), 48},
		{"1 h", HighestValue, 3600.809983, 3599.761408, len(ClassicBounds), 95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistogram()
			if err := h.RecordValues(tc.micros, 3); err != nil {
				t.Fatal(err)
			}
			var b Buckets
			b.Add(h)
			if b.Count != 3 || math.Abs(b.Sum-3*tc.mid) > 1e-9 {
				t.Errorf("count %d sum %g, want 3 and %g", b.Count, b.Sum, 3*tc.mid)
			}
			if b.Min != tc.high || b.Max != tc.high {
				t.Errorf("min %g max %g, want both %g", b.Min, b.Max, tc.high)
			}
			if b.Classic[tc.classic] != 3 {
				t.Errorf("classic counts %v, want 3 at index %d", b.Classic, tc.classic)
			}
			if tc.exp == zeroKey {
				if b.Zero != 3 {
					t.Errorf("zero count %d, want 3", b.Zero)
				}
			} else if n := b.Exp[tc.exp-ExpMinKey]; n != 3 || b.Zero != 0 {
				t.Errorf("exp count at key %d is %d and zero count %d, want 3 and 0", tc.exp, n, b.Zero)
			}
		})
	}
}

// TestBucketSlotsNeverBelowHDR checks every count index of NewHistogram's geometry: its
// classic bucket is the first whose bound is at or above the highest equivalent value, and
// its schema-3 bucket holds that value, so a quantile from either layout is never lower
// than HDR's.
func TestBucketSlotsNeverBelowHDR(t *testing.T) {
	tab := slotsFor(NewHistogram())
	slots := tab.slots
	if len(slots) < 20000 || len(tab.high) != len(slots) {
		t.Fatalf("%d slots and %d highest values, want one of each per count index (over 20,000)", len(slots), len(tab.high))
	}
	for i, sl := range slots[1:] {
		high := tab.high[i+1]
		c := int(sl.classic)
		if (c < len(ClassicBounds) && ClassicBounds[c] < high) || (c > 0 && ClassicBounds[c-1] >= high) {
			t.Fatalf("index %d: high %g in classic bucket %d", i+1, high, c)
		}
		k := float64(sl.exp)
		if sl.mid > high || !(math.Exp2((k-1)/8) < high && high <= math.Exp2(k/8)*(1+1e-12)) {
			t.Fatalf("index %d: mid %g high %g in schema-3 bucket %d", i+1, sl.mid, high, sl.exp)
		}
	}
	if slots[0].exp != zeroKey || tab.high[0] != 0 {
		t.Errorf("index 0: %+v high %g, want the zero bucket", slots[0], tab.high[0])
	}
}

// TestExpKeyOTLPIndex: Prometheus' schema-3 key and OTLP's scale-3 index number the same
// buckets, the OTLP one lower by one. OTLP's index of v is the i with
// 2^(i/8) < v <= 2^((i+1)/8) (the specification's ceil(log2(v)·2^scale) - 1).
func TestExpKeyOTLPIndex(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		key  int
		otlp int // the OTLP index worked out by hand
	}{
		{1, 0, -1},
		{1.0001, 1, 0},
		{2, 8, 7},
		{0.5, -8, -9},
		{math.Exp2(3.0 / 8), 3, 2},
		{1e-6, -159, -160},
	} {
		got := ExpKey(tc.v)
		otlp := int(math.Ceil(math.Log2(tc.v)*8)) - 1
		if got != tc.key || got-1 != tc.otlp || otlp != tc.otlp {
			t.Errorf("ExpKey(%g) = %d (OTLP index %d by the formula), want key %d and OTLP index %d", tc.v, got, otlp, tc.key, tc.otlp)
		}
	}
}

// TestSeriesFirstSeenOrder: a series is created once, keeps its state, and is listed in
// the order first seen whatever the order of later intervals.
func TestSeriesFirstSeenOrder(t *testing.T) {
	var s Series[int]
	created := 0
	for _, name := range []string{"write", "read", "write", "search.byTitle", "read"} {
		*s.Get(name, func() *int { created++; return new(int) })++
	}
	var names []string
	var counts []int
	for name, n := range s.All() {
		names = append(names, name)
		counts = append(counts, *n)
	}
	if created != 3 || s.Len() != 3 || fmt.Sprint(names) != "[write read search.byTitle]" || fmt.Sprint(counts) != "[2 2 1]" {
		t.Errorf("created %d, listed %v with counts %v; want 3 created, [write read search.byTitle] with [2 2 1]", created, names, counts)
	}
}

// AddResponse and AddService, which visit only the buckets a tick drained, leave a
// Buckets exactly as Add over the interval's whole histograms does (every classic and
// schema-3 count, zero count, count, sum, min and max), interval after interval, over
// random values of every range (clamped ones included) and intervals with none; and on
// the intervals they cannot read that way (one ingested, or a tick's interval after a
// Reset drained the sums again), they fall back to Add.
func TestAddIntervalMatchesAdd(t *testing.T) {
	for seed := range uint64(collectorSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			shards := 1 + rng.IntN(5)
			start := time.Unix(1700000000, 0)
			c := NewCollector(Config{Shards: shards, Clock: clock.NewSim(start)})
			old := newOldBuffers(shards) // feedRandom's other half, unused here
			var oldResp, oldSvc, newResp, newSvc Buckets
			what := ""
			check := func(when string) {
				t.Helper()
				if newResp != oldResp {
					t.Errorf("%s %s: response buckets differ:\n got %s\nwant %s", what, when, bucketsString(&newResp), bucketsString(&oldResp))
				}
				if newSvc != oldSvc {
					t.Errorf("%s %s: service buckets differ:\n got %s\nwant %s", what, when, bucketsString(&newSvc), bucketsString(&oldSvc))
				}
			}
			add := func(o *OpInterval) {
				oldResp.Add(o.Response)
				oldSvc.Add(o.Service)
				newResp.AddResponse(o)
				newSvc.AddService(o)
			}
			sawSums := false
			cancel := c.Subscribe(func(iv *Interval) {
				o := iv.Op("read")
				sawSums = sawSums || o.sum != nil
				add(o)
				check("in the subscriber")
			})
			defer cancel()
			var last *Interval
			for iv := range 6 {
				n := feedRandom(rng, c.Recorder(OpRead), old, iv == 1)
				what = fmt.Sprintf("tick %d (%d values)", iv, n)
				last = c.Tick(start.Add(time.Duration(iv+1) * time.Second))
			}
			if !sawSums {
				t.Fatal("no tick's interval carried its drained sums: AddResponse never took the sparse path")
			}
			// A reset drains the shards into the sums the last interval pointed to.
			feedRandom(rng, c.Recorder(OpRead), old, false)
			c.ResetAt(start.Add(7 * time.Second))
			what = "the last tick's interval after a reset"
			add(last.Op("read"))
			check("")
			// An ingested interval has no sums.
			what = "an ingested interval"
			if err := c.Ingest(&Interval{Start: start.Add(7 * time.Second), End: start.Add(8 * time.Second), Ops: []OpInterval{*last.Op("read")}}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func bucketsString(b *Buckets) string {
	exp := map[int]uint64{}
	for i, n := range b.Exp {
		if n != 0 {
			exp[i+ExpMinKey] = n
		}
	}
	return fmt.Sprintf("count %d sum %v min %v max %v zero %d classic %v exp %v", b.Count, b.Sum, b.Min, b.Max, b.Zero, b.Classic, exp)
}
