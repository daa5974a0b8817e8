package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed+1)) }

// fakeClock is a settable clock for the time-based patterns.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func mustKeys(t testing.TB, p KeyParams) Keys {
	t.Helper()
	k, err := NewKeys(p)
	if err != nil {
		t.Fatalf("NewKeys(%+v): %v", p, err)
	}
	return k
}

// counts draws n keys and returns how often each index came up.
func counts(k Keys, numKeys int64, n int, op Op, seed uint64) []int {
	r := newRand(seed)
	c := make([]int, numKeys)
	for range n {
		c[k.Next(r, op)]++
	}
	return c
}

// chiSquare returns the statistic of observed counts against equal expected counts.
func chiSquare(obs []int) float64 {
	total := 0
	for _, o := range obs {
		total += o
	}
	e := float64(total) / float64(len(obs))
	var x float64
	for _, o := range obs {
		d := float64(o) - e
		x += d * d / e
	}
	return x
}

// chiCritical is a loose upper bound for a chi-square with df degrees of freedom: the
// mean plus 6 standard deviations (p < 1e-6 for the df used here), so a fixed-seed test
// fails only when the distribution really is wrong.
func chiCritical(df int) float64 { return float64(df) + 6*math.Sqrt(2*float64(df)) }

func TestNewKeysRejectsBadParams(t *testing.T) {
	tests := []struct {
		name   string
		p      KeyParams
		fields []string
	}{
		{"unknown pattern", KeyParams{Pattern: "gaussian", NumKeys: 10}, []string{"workload.pattern"}},
		{"empty pattern", KeyParams{NumKeys: 10}, []string{"workload.pattern"}},
		{"no keys", KeyParams{Pattern: "uniform"}, []string{"workload.numKeys"}},
		{"negative exponent", KeyParams{Pattern: "zipfian", NumKeys: 10, ZipfExponent: -1}, []string{"workload.zipfExponent"}},
		{"NaN exponent", KeyParams{Pattern: "latest", NumKeys: 10, ZipfExponent: math.NaN()}, []string{"workload.zipfExponent"}},
		{"window too big", KeyParams{Pattern: "sliding_window", NumKeys: 10, WindowSize: 11, WindowDuration: time.Second}, []string{"workload.windowSize"}},
		{"window missing", KeyParams{Pattern: "sliding_window_flip", NumKeys: 10}, []string{"workload.windowSize", "workload.windowDuration"}},
		{"hot keys zero", KeyParams{Pattern: "hotspot", NumKeys: 10, HotKeys: 0, HotFraction: 0.5}, []string{"workload.hotKeys"}},
		{"hot fraction >1", KeyParams{Pattern: "hotspot", NumKeys: 10, HotKeys: 0.1, HotFraction: 1.5}, []string{"workload.hotFraction"}},
		{"exp percentile 100", KeyParams{Pattern: "exponential", NumKeys: 10, ExpPercentile: 100}, []string{"workload.expPercentile"}},
		{"everything", KeyParams{Pattern: "hotspot", NumKeys: -1, HotKeys: 2, HotFraction: -1}, []string{"workload.numKeys", "workload.hotKeys", "workload.hotFraction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := NewKeys(tt.p)
			if err == nil {
				t.Fatalf("NewKeys accepted %+v (got %T)", tt.p, k)
			}
			var fe driver.FieldErrors
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is %T, want driver.FieldErrors", err, err)
			}
			var got []string
			for _, e := range fe {
				got = append(got, e.Field)
				if e.Allowed == "" {
					t.Errorf("%s: no allowed values in %q", e.Field, e.Error())
				}
			}
			// The order of the errors is not the user's concern; that each is there is.
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tt.fields))) {
				t.Errorf("fields = %v, want %v", got, tt.fields)
			}
		})
	}
}

func TestUnknownPatternListsChoices(t *testing.T) {
	_, err := NewKeys(KeyParams{Pattern: "gauss", NumKeys: 1})
	for _, p := range Patterns() {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestCanonicalPattern(t *testing.T) {
	tests := []struct{ in, want string }{
		{"random", PatternUniform},
		{"RANDOM", PatternUniform},
		{" uniform ", PatternUniform},
		{"scrambled", PatternScrambledZipfian},
		{"Sliding_Window_Flip", PatternSlidingWindowFlip},
		{"zipfian", PatternZipfian},
	}
	for _, tt := range tests {
		got, ok := CanonicalPattern(tt.in)
		if !ok || got != tt.want {
			t.Errorf("CanonicalPattern(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
	for _, p := range Patterns() {
		if _, ok := CanonicalPattern(p); !ok {
			t.Errorf("Patterns() lists %q but CanonicalPattern rejects it", p)
		}
	}
}

// allParams returns valid parameters for every pattern over n keys.
func allParams(n int64, now func() time.Time) []KeyParams {
	var ps []KeyParams
	for _, pat := range Patterns() {
		ps = append(ps, KeyParams{Pattern: pat, NumKeys: n, WindowSize: max(1, n/3), WindowDuration: time.Minute,
			HotKeys: 0.2, HotFraction: 0.8, Now: now})
	}
	ps = append(ps,
		KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 0.5},
		KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 1},
		KeyParams{Pattern: "scrambled", NumKeys: n, ZipfExponent: 3},
		KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 1.5},
	)
	return ps
}

func TestEveryPatternStaysInKeyspace(t *testing.T) {
	clock := &fakeClock{t: epoch}
	for _, n := range []int64{1, 2, 7, 1000, 1 << 40} {
		for _, p := range allParams(n, clock.now) {
			k := mustKeys(t, p)
			r := newRand(uint64(n))
			for i := range 20000 {
				clock.t = epoch.Add(time.Duration(i) * 7 * time.Millisecond) // sweep the windows
				op := Op(i % 2)
				if x := k.Next(r, op); x < 0 || x >= n {
					t.Fatalf("%s (theta %v) n=%d: Next = %d, out of range", p.Pattern, p.ZipfExponent, n, x)
				}
			}
		}
	}
}

func TestUniformChiSquare(t *testing.T) {
	const n = 1000
	c := counts(mustKeys(t, KeyParams{Pattern: "random", NumKeys: n}), n, 200_000, OpRead, 1)
	if x, crit := chiSquare(c), chiCritical(n-1); x > crit {
		t.Errorf("chi-square %.0f > %.0f: not uniform", x, crit)
	}
}

// logLogSlope fits log(count) against log(rank+1) for ranks [lo, hi) by least squares.
func logLogSlope(c []int, lo, hi int) float64 {
	var sx, sy, sxx, sxy, m float64
	for i := lo; i < hi; i++ {
		if c[i] == 0 {
			continue
		}
		x, y := math.Log(float64(i+1)), math.Log(float64(c[i]))
		sx, sy, sxx, sxy, m = sx+x, sy+y, sxx+x*x, sxy+x*y, m+1
	}
	return (m*sxy - sx*sy) / (m*sxx - sx*sx)
}

func TestZipfianFrequencyFollowsExponent(t *testing.T) {
	const n, draws = 10000, 400_000
	for _, theta := range []float64{0.5, 0.8, 0.99, 1, 1.2, 2} {
		c := counts(mustKeys(t, KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: theta}), n, draws, OpRead, 2)
		// Ranks 1..50: frequent enough at every theta for a stable fit.
		if s := logLogSlope(c, 0, 50); math.Abs(s+theta) > 0.08 {
			t.Errorf("theta %v: log-log slope %.3f, want %.3f", theta, s, -theta)
		}
		// The hottest key gets 1/zeta(n, theta) of the draws.
		want := draws / zeta(n, theta)
		if got := float64(c[0]); math.Abs(got-want) > 5*math.Sqrt(want) {
			t.Errorf("theta %v: key 0 drawn %v times, want %.0f", theta, got, want)
		}
	}
}

func TestZetaTailApproximation(t *testing.T) {
	for _, theta := range []float64{0.2, 0.5, 0.99, 1, 1.01, 1.5, 3} {
		for _, n := range []int64{1, 2, 999, 1000, 1001, 5000, 2_000_000} {
			got, want := zeta(n, theta), zetaDirect(n, theta)
			if math.Abs(got-want) > 1e-12*want {
				t.Errorf("zeta(%d, %v) = %.17g, direct sum %.17g", n, theta, got, want)
			}
		}
	}
	// Huge keyspaces are accepted (and fast: the tail is closed-form).
	if z := zeta(1e12, 0.99); !(z > 0) || math.IsInf(z, 0) {
		t.Errorf("zeta(1e12, 0.99) = %v", z)
	}
}

func TestPermutationIsBijection(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 5, 100, 1 << 10, 1<<10 + 1, 12345} {
		p := newPermutation(n, 42)
		seen := make([]bool, n)
		for x := range uint64(n) {
			y := p.apply(x)
			if y >= uint64(n) || seen[y] {
				t.Fatalf("n=%d: apply(%d) = %d: out of range or repeated", n, x, y)
			}
			seen[y] = true
		}
	}
}

func TestScrambledZipfianKeepsProfileSpreadsHotKeys(t *testing.T) {
	const n, draws = 10000, 300_000
	z := counts(mustKeys(t, KeyParams{Pattern: "zipfian", NumKeys: n}), n, draws, OpRead, 3)
	s := counts(mustKeys(t, KeyParams{Pattern: "scrambled_zipfian", NumKeys: n, Seed: 9}), n, draws, OpRead, 3)
	// Same RNG stream, so the same ranks were drawn: the sorted profiles must be equal.
	zs, ss := slices.Clone(z), slices.Clone(s)
	slices.Sort(zs)
	slices.Sort(ss)
	if !slices.Equal(zs, ss) {
		t.Fatalf("sorted frequency profiles differ")
	}
	// The 10 hottest keys are spread out: not adjacent, and spanning most of the keyspace.
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return s[b] - s[a] })
	hot := slices.Clone(idx[:10])
	slices.Sort(hot)
	for i := 1; i < len(hot); i++ {
		if hot[i]-hot[i-1] <= 1 {
			t.Errorf("hot keys %d and %d are adjacent (hot set %v)", hot[i-1], hot[i], hot)
		}
	}
	if span := hot[len(hot)-1] - hot[0]; span < n/2 {
		t.Errorf("hot keys %v span only %d of %d keys", hot, span, n)
	}
	// A different seed puts the hot keys elsewhere; the same seed in the same place.
	a := mustKeys(t, KeyParams{Pattern: "scrambled", NumKeys: n, Seed: 9}).(*scrambledKeys)
	b := mustKeys(t, KeyParams{Pattern: "scrambled", NumKeys: n, Seed: 10}).(*scrambledKeys)
	if a.perm.apply(0) != uint64(idx[0]) {
		t.Errorf("same seed maps rank 0 to %d, hottest key was %d", a.perm.apply(0), idx[0])
	}
	if a.perm.apply(0) == b.perm.apply(0) && a.perm.apply(1) == b.perm.apply(1) {
		t.Errorf("seeds 9 and 10 put the two hottest keys at the same indices")
	}
}

// windowRange draws keys at the clock's current time and returns the min and max seen.
func windowRange(k Keys, r *rand.Rand) (lo, hi int64) {
	lo, hi = math.MaxInt64, -1
	for range 5000 {
		x := k.Next(r, OpRead)
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

func TestSlidingWindowFollowsClock(t *testing.T) {
	clock := &fakeClock{t: epoch}
	const n, w = 1000, 100
	k := mustKeys(t, KeyParams{Pattern: "sliding_window", NumKeys: n, WindowSize: w, WindowDuration: 100 * time.Second, Now: clock.now})
	r := newRand(4)
	tests := []struct {
		at    time.Duration
		first int64
	}{
		{0, 0},
		{25 * time.Second, 225}, // round(0.25 * (1000-100))
		{50 * time.Second, 450},
		{99 * time.Second, 891},
		{100 * time.Second, 0}, // next pass
		{150 * time.Second, 450},
		{-time.Hour, 0}, // clock set back: stay at the start
	}
	for _, tt := range tests {
		clock.t = epoch.Add(tt.at)
		if lo, hi := windowRange(k, r); lo != tt.first || hi != tt.first+w-1 {
			t.Errorf("at %v: keys in [%d, %d], want [%d, %d]", tt.at, lo, hi, tt.first, tt.first+w-1)
		}
	}
	// Within the window keys are uniform.
	clock.t = epoch.Add(50 * time.Second)
	c := make([]int, w)
	for range 100_000 {
		c[k.Next(r, OpRead)-450]++
	}
	if x, crit := chiSquare(c), chiCritical(w-1); x > crit {
		t.Errorf("within-window chi-square %.0f > %.0f", x, crit)
	}
}

func TestSlidingWindowStartCarriesOver(t *testing.T) {
	clock := &fakeClock{t: epoch}
	k := mustKeys(t, KeyParams{Pattern: "sliding_window", NumKeys: 1000, WindowSize: 100, WindowDuration: 100 * time.Second,
		Now: clock.now, Start: epoch.Add(-50 * time.Second)})
	if lo, hi := windowRange(k, newRand(5)); lo != 450 || hi != 549 {
		t.Errorf("keys in [%d, %d], want [450, 549]", lo, hi)
	}
}

func TestSlidingWindowFlipJumpsBetweenBlocks(t *testing.T) {
	clock := &fakeClock{t: epoch}
	// 1050 keys in blocks of 100: 10 blocks (keys >= 1000 unused), 10s each.
	k := mustKeys(t, KeyParams{Pattern: "sliding_window_flip", NumKeys: 1050, WindowSize: 100, WindowDuration: 100 * time.Second, Now: clock.now})
	r := newRand(6)
	tests := []struct {
		at    time.Duration
		first int64
	}{
		{0, 0},
		{9999 * time.Millisecond, 0},
		{10 * time.Second, 100},
		{15 * time.Second, 100},
		{95 * time.Second, 900},
		{105 * time.Second, 0},
	}
	for _, tt := range tests {
		clock.t = epoch.Add(tt.at)
		if lo, hi := windowRange(k, r); lo != tt.first || hi != tt.first+99 {
			t.Errorf("at %v: keys in [%d, %d], want [%d, %d]", tt.at, lo, hi, tt.first, tt.first+99)
		}
	}
}

func TestLatestReadsChaseWrites(t *testing.T) {
	const n = 1000
	k := mustKeys(t, KeyParams{Pattern: "latest", NumKeys: n})
	r := newRand(7)
	for i := range int64(100) {
		if got := k.Next(r, OpWrite); got != i {
			t.Fatalf("write %d went to key %d", i, got)
		}
	}
	c := counts(k, n, 100_000, OpRead, 8)
	// Key 99 was written last: the most read, then 98, 97, ...
	if c[99] <= c[98] || c[98] <= c[97] || c[97] <= c[90] {
		t.Errorf("read counts for keys 99, 98, 97, 90 = %d, %d, %d, %d: not decreasing with age", c[99], c[98], c[97], c[90])
	}
	if want := 100_000 / zeta(n, DefaultZipfExponent); math.Abs(float64(c[99])-want) > 5*math.Sqrt(want) {
		t.Errorf("key 99 read %d times, want %.0f", c[99], want)
	}
	// Writes wrap around the keyspace.
	for range n - 100 {
		k.Next(r, OpWrite)
	}
	if got := k.Next(r, OpWrite); got != 0 {
		t.Errorf("write after a full pass went to %d, want 0", got)
	}
}

// TestLatestFollowsInserts: once inserts grow the keyspace beyond numKeys, latest reads
// and writes go to the newest keys (the last claimed the most), never beyond the size,
// and writes no longer take keys from the wrapping head.
//
// Keys older than the newest numKeys are drawn too, as YCSB's (TestKeyDistributionsMatchYCSB
// compares the frequencies with go-ycsb's), once there are more than numKeys keys
// besides the newest.
func TestLatestFollowsInserts(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name string
		size int64
	}{
		{"grown by one", n + 1},
		{"grown by half", n + n/2},
		{"grown tenfold", 10 * n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var size atomic.Int64
			size.Store(n)
			k := mustKeys(t, KeyParams{Pattern: "latest", NumKeys: n, Size: size.Load})
			r := newRand(3)
			if got := k.Next(r, OpWrite); got != 0 {
				t.Fatalf("before any insert a write took key %d, want the head's 0", got)
			}
			size.Store(tc.size)
			hits := map[int64]int{}
			var old int
			for _, op := range []Op{OpRead, OpWrite} {
				for range 50_000 {
					got := k.Next(r, op)
					if got >= tc.size || got < 1 {
						t.Fatalf("%v drew key %d, want a key in [1, %d), as YCSB's SkewedLatestGenerator", op, got, tc.size)
					}
					if got < tc.size-n {
						old++
					}
					hits[got]++
				}
			}
			// YCSB's ranks reach every key inserted, not only the newest numKeys.
			if (old > 0) != (tc.size > n+1) {
				t.Errorf("%d of 100000 draws older than the newest %d keys of %d", old, n, tc.size)
			}
			newest := tc.size - 1
			if hits[newest] <= hits[newest-1] || hits[newest-1] <= hits[newest-10] {
				t.Errorf("draws of the newest keys %d, %d, %d: not decreasing with age", hits[newest], hits[newest-1], hits[newest-10])
			}
		})
	}
}

func TestHotspotFractions(t *testing.T) {
	const n, draws = 1000, 200_000
	tests := []struct{ hotKeys, hotFrac float64 }{
		{0.2, 0.8}, {0.01, 0.99}, {0.5, 0}, {0.1, 1}, {1, 0.3},
	}
	for _, tt := range tests {
		c := counts(mustKeys(t, KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: tt.hotKeys, HotFraction: tt.hotFrac}), n, draws, OpRead, 9)
		hot := int(tt.hotKeys * n)
		inHot := 0
		for _, x := range c[:hot] {
			inHot += x
		}
		want := tt.hotFrac
		if hot == n {
			want = 1
		}
		if got := float64(inHot) / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("hotKeys %v hotFraction %v: %.3f of ops on hot keys, want %.3f", tt.hotKeys, tt.hotFrac, got, want)
		}
		if x, crit := chiSquare(c[:hot]), chiCritical(hot-1); hot > 1 && want > 0 && x > crit {
			t.Errorf("hotKeys %v: hot set not uniform (chi-square %.0f > %.0f)", tt.hotKeys, x, crit)
		}
	}
}

func TestSequentialVisitsEveryKeyOnceAcrossWorkers(t *testing.T) {
	const n, workers = 4000, 4
	k := mustKeys(t, KeyParams{Pattern: "sequential", NumKeys: n})
	c := make([][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		c[w] = make([]int, n)
		wg.Go(func() {
			r := newRand(uint64(w))
			for range n / workers {
				c[w][k.Next(r, Op(w%2))]++
			}
		})
	}
	wg.Wait()
	for i := range n {
		if s := c[0][i] + c[1][i] + c[2][i] + c[3][i]; s != 1 {
			t.Fatalf("key %d visited %d times in one pass", i, s)
		}
	}
	if got := k.Next(newRand(1), OpRead); got != 0 {
		t.Errorf("after a full pass Next = %d, want 0", got)
	}
}

func TestExponentialPercentile(t *testing.T) {
	const n, draws = 10000, 200_000
	tests := []struct{ pct, frac float64 }{{0, 0}, {50, 0.1}, {99, 0.5}, {1, 0.01}, {0.0001, 0.001}}
	for _, tt := range tests {
		c := counts(mustKeys(t, KeyParams{Pattern: "exponential", NumKeys: n, ExpPercentile: tt.pct, ExpFraction: tt.frac}), n, draws, OpRead, 10)
		pct, frac := cmpOr(tt.pct, DefaultExpPercentile), cmpOr(tt.frac, DefaultExpFraction)
		// The exponential is truncated to the keyspace: condition on X < n.
		p := pct / 100
		want := p / (1 - math.Pow(1-p, 1/frac))
		below := 0
		for _, x := range c[:int(frac*n)] {
			below += x
		}
		if got := float64(below) / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("percentile %v fraction %v: %.3f below the fraction, want %.3f", pct, frac, got, want)
		}
		first, last := 0, 0
		for i := range n / 10 {
			first, last = first+c[i], last+c[n-1-i]
		}
		// A tiny percentile is nearly uniform (and must still be fast: no redraw loop).
		if pct >= 1 && first <= last {
			t.Errorf("percentile %v: first tenth of keys (%d draws) not hotter than last tenth (%d)", pct, first, last)
		}
	}
}

func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

func TestNextDoesNotAllocate(t *testing.T) {
	clock := &fakeClock{t: epoch}
	for _, p := range allParams(1_000_000, clock.now) {
		k := mustKeys(t, p)
		r := newRand(1)
		if a := testing.AllocsPerRun(1000, func() { k.Next(r, OpRead); k.Next(r, OpWrite) }); a != 0 {
			t.Errorf("%s: %v allocs per Next", p.Pattern, a)
		}
	}
}

func BenchmarkKeys(b *testing.B) {
	for _, pat := range []string{"uniform", "zipfian", "scrambled_zipfian", "ycsb_zipfian", "sliding_window", "sliding_window_flip",
		"latest", "hotspot", "sequential", "exponential"} {
		b.Run(pat, func(b *testing.B) {
			k := mustKeys(b, KeyParams{Pattern: pat, NumKeys: 20_000_000, WindowSize: 10000, WindowDuration: time.Hour,
				HotKeys: 0.2, HotFraction: 0.8})
			r := newRand(1)
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				sink += k.Next(r, OpRead)
			}
			_ = sink
		})
	}
	b.Run("zipfian_theta1.2", func(b *testing.B) {
		k := mustKeys(b, KeyParams{Pattern: "zipfian", NumKeys: 20_000_000, ZipfExponent: 1.2})
		r := newRand(1)
		b.ReportAllocs()
		for b.Loop() {
			k.Next(r, OpRead)
		}
	})
}

func BenchmarkNewKeysZipfian20M(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		mustKeys(b, KeyParams{Pattern: "zipfian", NumKeys: 20_000_000})
	}
}
