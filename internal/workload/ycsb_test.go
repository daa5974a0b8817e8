package workload

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	mrand "math/rand"
	"testing"

	ycsbgen "github.com/pingcap/go-ycsb/pkg/generator"
)

// The key distributions are checked against YCSB itself: go-ycsb's generators
// (github.com/pingcap/go-ycsb/pkg/generator, a line-by-line port of YCSB's Java
// generators) draw the same number of keys over the same keyspace, and a two-sample
// chi-square test over key-frequency buckets must not tell the two apart. Each case also
// has a control: the same test with one parameter changed by a little must tell them
// apart, so a pass means the test could have failed.

// ycsbDraws is the sample size per side: large enough that the controls (a 10% change of
// one parameter) are rejected by a wide margin, small enough to take well under a second.
const ycsbDraws = 200_000

// ycsbRecords is YCSB's default recordcount, the keyspace of its core workloads.
const ycsbRecords = 1000

// ycsbAlpha is the significance level. The samples are drawn from fixed seeds, so the
// outcome is deterministic; the level is chosen so that it would also hold for almost any
// other seeds (a false alarm 1 time in a million), and the controls show the test still
// has the power to see a real difference.
const ycsbAlpha = 1e-6

// ycsbSide is one sampler: ndbench's or YCSB's.
type ycsbSide func() int64

// ndbenchSide draws with ndbench's generator for p (reads), from a fixed seed.
func ndbenchSide(t *testing.T, p KeyParams) ycsbSide {
	k := mustKeys(t, p)
	r := newRand(42)
	return func() int64 { return k.Next(r, OpRead) }
}

// ycsbRand is the source of the YCSB side: math/rand (v1), as go-ycsb uses.
func ycsbRand() *mrand.Rand { return mrand.New(mrand.NewSource(7)) }

// ycsbHotspot is YCSB's hotspot key chooser over keys [0, n): CoreWorkload passes
// hotspotdatafraction and hotspotopnfraction to HotspotIntegerGenerator(0, recordcount-1).
func ycsbHotspot(n int64, hotKeys, hotOps float64) ycsbSide {
	g, r := ycsbgen.NewHotspot(0, n-1, hotKeys, hotOps), ycsbRand()
	return func() int64 { return g.Next(r) }
}

// ycsbExponential is YCSB's exponential key chooser: CoreWorkload builds
// ExponentialGenerator(exponential.percentile, recordcount*exponential.frac) and, in
// nextKeynum, draws again while the value is beyond the last key.
func ycsbExponential(n int64, percentile, frac float64) ycsbSide {
	g, r := ycsbgen.NewExponential(percentile, float64(n)*frac), ycsbRand()
	return func() int64 {
		for {
			if v := g.Next(r); v < n {
				return v
			}
		}
	}
}

// ycsbZipfian is YCSB's ZipfianGenerator over [0, n) (the unscrambled "zipfian").
func ycsbZipfian(n int64, theta float64) ycsbSide {
	g, r := ycsbgen.NewZipfianWithItems(n, theta), ycsbRand()
	return func() int64 { return g.Next(r) }
}

// ycsbLatest is YCSB's latest key chooser before any insert: SkewedLatestGenerator over
// the insert sequence, whose last value is recordcount-1.
func ycsbLatest(n int64) ycsbSide {
	g, r := ycsbgen.NewSkewedLatest(ycsbgen.NewCounter(n)), ycsbRand()
	return func() int64 { return g.Next(r) }
}

// ycsbLatestGrown is YCSB's latest key chooser after inserts grew the keyspace from n to
// size keys: SkewedLatestGenerator built over the insert sequence at recordcount n, which
// then handed out the keys n .. size-1.
func ycsbLatestGrown(n, size int64) ycsbSide {
	c := ycsbgen.NewCounter(n)
	g, r := ycsbgen.NewSkewedLatest(c), ycsbRand()
	for range size - n {
		c.Next(r)
	}
	return func() int64 { return g.Next(r) }
}

// grown is a keyspace of size keys (keydist.Keyspace.Size).
func grown(size int64) func() int64 { return func() int64 { return size } }

// ycsbScrambledZipfian is YCSB's requestdistribution=zipfian as CoreWorkload runs it over
// n records of which size are inserted: ScrambledZipfianGenerator(0, n+expectedNewKeys),
// a ZipfianGenerator over [0, 10^10] with the hard-coded zeta, each value hashed by
// Utils.fnvhash64 modulo its n+1+expectedNewKeys items, and a key beyond the last one
// inserted drawn again (nextKeynum). The rank generator is go-ycsb's; the hash is YCSB's
// Java one (FNV-1a over the value's bytes, least significant first, then Math.abs),
// written here with the standard library's FNV-1a: go-ycsb's own Hash64 feeds the bytes
// most significant first, which puts the hot keys at other indices than YCSB does (the
// same profile, another layout), and go-ycsb does not draw again.
func ycsbScrambledZipfian(n, expectedNewKeys, size int64) ycsbSide {
	g, r := ycsbgen.NewZipfian(0, 10_000_000_000, 0.99, 26.46902820178302), ycsbRand()
	items := n + 1 + expectedNewKeys
	return func() int64 {
		for {
			if k := javaFNVHash64(g.Next(r)) % items; k < size {
				return k
			}
		}
	}
}

// javaFNVHash64 is YCSB's Utils.fnvhash64.
func javaFNVHash64(v int64) int64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h := fnv.New64a()
	h.Write(b[:])
	x := int64(h.Sum64())
	if x < 0 {
		x = -x
	}
	return x
}

func TestFNVHash64IsYCSBs(t *testing.T) {
	r := newRand(3)
	for i := range 100_000 {
		v := int64(i)
		if i >= 1000 {
			v = r.Int64N(10_000_000_001)
		}
		if got, want := fnvhash64(v), javaFNVHash64(v); got != want {
			t.Fatalf("fnvhash64(%d) = %d, YCSB's %d", v, got, want)
		}
	}
}

// ycsbUniform is YCSB's uniform key chooser, UniformLongGenerator(0, recordcount-1).
func ycsbUniform(n int64) ycsbSide {
	g, r := ycsbgen.NewUniform(0, n-1), ycsbRand()
	return func() int64 { return g.Next(r) }
}

// sampleCounts draws draws keys in [0, n) from side and counts each key.
func sampleCounts(side ycsbSide, n int64, draws int) []int {
	c := make([]int, n)
	for range draws {
		c[side()]++
	}
	return c
}

// chiSquareTwoSample compares two samples of keys of the same size, given as counts per
// key: keys are put in buckets of consecutive indices, each holding at least minBucket
// draws of the two samples together (single keys where the distribution is dense, wide
// ranges in its tail), and the statistic sum (a-b)^2/(a+b) has a chi-square distribution
// with buckets-1 degrees of freedom when the two come from the same distribution.
func chiSquareTwoSample(ca, cb []int) (stat float64, df int) {
	const minBucket = 40
	var sa, sb int
	buckets := 0
	for i := range ca {
		sa, sb = sa+ca[i], sb+cb[i]
		if sa+sb >= minBucket || i == len(ca)-1 {
			if sa+sb > 0 {
				d := float64(sa - sb)
				stat += d * d / float64(sa+sb)
				buckets++
			}
			sa, sb = 0, 0
		}
	}
	return stat, buckets - 1
}

// chiSquareQuantile is the 1-alpha quantile of the chi-square distribution with df
// degrees of freedom, by the Wilson-Hilferty approximation (within a percent for df >= 10
// at the tail probabilities used here), with the normal quantile z of 1-alpha.
func chiSquareQuantile(df int, alpha float64) float64 {
	z := math.Sqrt2 * math.Erfinv(1-2*alpha)
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

func TestKeyDistributionsMatchYCSB(t *testing.T) {
	const n = ycsbRecords
	tests := []struct {
		name    string
		ndbench KeyParams
		ycsb    func() ycsbSide
		// control is ndbench's generator with one parameter off by about 10%: the test
		// must reject it, or it has no power to see a difference of that size.
		control KeyParams
	}{
		{"hotspot defaults", KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.2, HotFraction: 0.8},
			func() ycsbSide { return ycsbHotspot(n, 0.2, 0.8) },
			KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.2, HotFraction: 0.75}},
		{"hotspot small hot set", KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.01, HotFraction: 0.99},
			func() ycsbSide { return ycsbHotspot(n, 0.01, 0.99) },
			KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.011, HotFraction: 0.99}},
		{"exponential defaults", KeyParams{Pattern: "exponential", NumKeys: n},
			func() ycsbSide { return ycsbExponential(n, DefaultExpPercentile, DefaultExpFraction) },
			KeyParams{Pattern: "exponential", NumKeys: n, ExpPercentile: 90}},
		{"exponential steep", KeyParams{Pattern: "exponential", NumKeys: n, ExpPercentile: 99, ExpFraction: 0.05},
			func() ycsbSide { return ycsbExponential(n, 99, 0.05) },
			KeyParams{Pattern: "exponential", NumKeys: n, ExpPercentile: 99, ExpFraction: 0.055}},
		{"zipfian 0.99", KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 0.99},
			func() ycsbSide { return ycsbZipfian(n, 0.99) },
			KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 0.9}},
		{"zipfian 0.5", KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 0.5},
			func() ycsbSide { return ycsbZipfian(n, 0.5) },
			KeyParams{Pattern: "zipfian", NumKeys: n, ZipfExponent: 0.45}},
		{"zipfian over 100000 keys", KeyParams{Pattern: "zipfian", NumKeys: 100_000, ZipfExponent: 0.99},
			func() ycsbSide { return ycsbZipfian(100_000, 0.99) },
			KeyParams{Pattern: "zipfian", NumKeys: 100_000, ZipfExponent: 0.9}},
		// The control is scrambled_zipfian: the zipfian over the keyspace is not what YCSB
		// runs for requestdistribution=zipfian, and the test says so.
		{"ycsb_zipfian", KeyParams{Pattern: "ycsb_zipfian", NumKeys: n},
			func() ycsbSide { return ycsbScrambledZipfian(n, 0, n) },
			KeyParams{Pattern: "scrambled_zipfian", NumKeys: n}},
		// The hot keys are where YCSB's are only when the hash's modulus is YCSB's too:
		// one more item moves them.
		{"ycsb_zipfian, YCSB's modulus", KeyParams{Pattern: "ycsb_zipfian", NumKeys: n},
			func() ycsbSide { return ycsbScrambledZipfian(n, 0, n) },
			KeyParams{Pattern: "ycsb_zipfian", NumKeys: n, Options: "expectedNewKeys=1"}},
		{"ycsb_zipfian over 100000 keys", KeyParams{Pattern: "ycsb_zipfian", NumKeys: 100_000},
			func() ycsbSide { return ycsbScrambledZipfian(100_000, 0, 100_000) },
			KeyParams{Pattern: "ycsb_zipfian", NumKeys: 100_000, ZipfExponent: 0.9}},
		// E's inserts: workloade's operationcount 1000 × insertproportion 0.05 × 2 = 100
		// expected new keys, of which 50 inserted.
		{"ycsb_zipfian with expected new keys", KeyParams{Pattern: "ycsb_zipfian", NumKeys: n, Options: "expectedNewKeys=100", Size: grown(n + 50)},
			func() ycsbSide { return ycsbScrambledZipfian(n, 100, n+50) },
			KeyParams{Pattern: "ycsb_zipfian", NumKeys: n, Size: grown(n + 50)}},
		{"latest", KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.99},
			func() ycsbSide { return ycsbLatest(n) },
			KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.9}},
		// D's inserts grow the keyspace: YCSB's ranks then reach every key inserted, not
		// only the newest recordcount (17% of the reads beyond the newest 1000 of 3500).
		{"latest, keyspace grown to 3500", KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.99, Size: grown(3500)},
			func() ycsbSide { return ycsbLatestGrown(n, 3500) },
			KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.95, Size: grown(3500)}},
		{"latest, keyspace grown by 1 key", KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.99, Size: grown(n + 1)},
			func() ycsbSide { return ycsbLatestGrown(n, n+1) },
			KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.9, Size: grown(n + 1)}},
		{"latest, keyspace grown to 100000", KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.99, Size: grown(100_000)},
			func() ycsbSide { return ycsbLatestGrown(n, 100_000) },
			KeyParams{Pattern: "latest", NumKeys: n, ZipfExponent: 0.95, Size: grown(100_000)}},
		{"uniform", KeyParams{Pattern: "uniform", NumKeys: n},
			func() ycsbSide { return ycsbUniform(n) },
			KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.5, HotFraction: 0.55}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := tt.ndbench.NumKeys
			if tt.ndbench.Size != nil {
				keys = tt.ndbench.Size()
			}
			ycsb := sampleCounts(tt.ycsb(), keys, ycsbDraws)
			stat, df := chiSquareTwoSample(sampleCounts(ndbenchSide(t, tt.ndbench), keys, ycsbDraws), ycsb)
			crit := chiSquareQuantile(df, ycsbAlpha)
			t.Logf("chi-square %.1f, %d degrees of freedom, critical value %.1f at alpha %g", stat, df, crit, ycsbAlpha)
			if stat > crit {
				t.Errorf("ndbench's %s differs from YCSB's: chi-square %.1f > %.1f (%d degrees of freedom, alpha %g)",
					tt.ndbench.Pattern, stat, crit, df, ycsbAlpha)
			}
			cstat, cdf := chiSquareTwoSample(sampleCounts(ndbenchSide(t, tt.control), keys, ycsbDraws), ycsb)
			if ccrit := chiSquareQuantile(cdf, ycsbAlpha); cstat <= ccrit {
				t.Errorf("control %+v passed as YCSB's (chi-square %.1f <= %.1f): the test cannot see a difference of that size",
					fmt.Sprintf("%s %v/%v/%v/%v", tt.control.Pattern, tt.control.HotKeys, tt.control.HotFraction, tt.control.ExpPercentile, tt.control.ZipfExponent), cstat, ccrit)
			}
		})
	}
}

// TestChiSquareQuantile pins the approximation against tabulated values.
func TestChiSquareQuantile(t *testing.T) {
	tests := []struct {
		df    int
		alpha float64
		want  float64 // from tables (R: qchisq(1-alpha, df))
	}{
		{10, 0.05, 18.307},
		{100, 0.01, 135.807},
		{100, 1e-6, 180.96},
		{500, 1e-6, 664.8},
	}
	for _, tt := range tests {
		if got := chiSquareQuantile(tt.df, tt.alpha); math.Abs(got-tt.want)/tt.want > 0.01 {
			t.Errorf("quantile(df %d, alpha %g) = %.2f, want %.2f", tt.df, tt.alpha, got, tt.want)
		}
	}
}

// BenchmarkYCSBGenerators times a key pick of ndbench's generators beside go-ycsb's
// over YCSB's default 1000 records (docs/performance.md records the figures).
func BenchmarkYCSBGenerators(b *testing.B) {
	const n = ycsbRecords
	for _, c := range []struct {
		name string
		p    KeyParams
		ycsb func() ycsbSide
	}{
		{"uniform", KeyParams{Pattern: "uniform", NumKeys: n}, func() ycsbSide { return ycsbUniform(n) }},
		{"zipfian", KeyParams{Pattern: "zipfian", NumKeys: n}, func() ycsbSide { return ycsbZipfian(n, 0.99) }},
		{"ycsb_zipfian", KeyParams{Pattern: "ycsb_zipfian", NumKeys: n}, func() ycsbSide {
			g, r := ycsbgen.NewScrambledZipfian(0, n-1, 0.99), ycsbRand()
			return func() int64 { return g.Next(r) }
		}},
		{"latest", KeyParams{Pattern: "latest", NumKeys: n}, func() ycsbSide { return ycsbLatest(n) }},
		{"hotspot", KeyParams{Pattern: "hotspot", NumKeys: n, HotKeys: 0.2, HotFraction: 0.8}, func() ycsbSide { return ycsbHotspot(n, 0.2, 0.8) }},
		{"exponential", KeyParams{Pattern: "exponential", NumKeys: n}, func() ycsbSide { return ycsbExponential(n, DefaultExpPercentile, DefaultExpFraction) }},
	} {
		b.Run("ndbench/"+c.name, func(b *testing.B) {
			k := mustKeys(b, c.p)
			r := newRand(1)
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				sink += k.Next(r, OpRead)
			}
			_ = sink
		})
		b.Run("go-ycsb/"+c.name, func(b *testing.B) {
			next := c.ycsb()
			b.ReportAllocs()
			var sink int64
			for b.Loop() {
				sink += next()
			}
			_ = sink
		})
	}
}
