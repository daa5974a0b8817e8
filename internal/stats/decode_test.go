package stats

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestDecoderGeometry checks the decoder's index-to-value mapping against the library's:
// recording each index's value once must fill exactly that index.
func TestDecoderGeometry(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *geometry
		h    *hdrhistogram.Histogram
	}{{"response", respGeometry, NewHistogram()}, {"lag", lagGeometry, NewLagHistogram()}} {
		t.Run(tc.name, func(t *testing.T) {
			counts := tc.h.Export().Counts
			if int(tc.g.countsLen) != len(counts) {
				t.Fatalf("countsLen %d, library %d", tc.g.countsLen, len(counts))
			}
			for i := int32(1); i < tc.g.countsLen; i++ {
				v := tc.g.value(i)
				if v > HighestValue {
					break
				}
				if tc.g.index(v) != i || tc.g.index(tc.g.highestEquivalent(i)) != i {
					t.Fatalf("index of %d (index %d's value) is %d", v, i, tc.g.index(v))
				}
				if err := tc.h.RecordValue(v); err != nil {
					t.Fatalf("index %d value %d: %v", i, v, err)
				}
				if hi := tc.g.highestEquivalent(i); hi != v && !tc.h.ValuesAreEquivalent(v, hi) || hi+1 <= HighestValue && tc.h.ValuesAreEquivalent(v, hi+1) {
					t.Fatalf("index %d: highest equivalent of %d is not %d", i, v, hi)
				}
			}
			for i, c := range tc.h.Export().Counts[1:] {
				if c != 1 && tc.g.value(int32(i+1)) <= HighestValue {
					t.Fatalf("index %d holds %d after recording each index's value once", i+1, c)
				}
			}
		})
	}
}

// TestDecoderMergesLikeTheLibrary: the decoder adds exactly what hdrhistogram.Decode and
// Merge would, and its percentiles of the last histogram equal the library's.
func TestDecoderMergesLikeTheLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d HistogramDecoder
	for _, tc := range []struct {
		name string
		new  func() *hdrhistogram.Histogram
		n    int
		fill func() int64
	}{
		{"exp", NewHistogram, 5000, func() int64 { return int64(rng.ExpFloat64()*800) + 1 }},
		{"wide", NewHistogram, 3000, func() int64 { return int64(rng.IntN(int(HighestValue))) + 1 }},
		{"one", NewHistogram, 1, func() int64 { return 42 }},
		{"lag", NewLagHistogram, 4000, func() int64 { return int64(rng.ExpFloat64() * 50) }},
		{"zeros", NewHistogram, 100, func() int64 { return 0 }},
		{"other geometry", func() *hdrhistogram.Histogram { return hdrhistogram.New(1, 1e6, 2) }, 500, func() int64 { return rng.Int64N(1e6) + 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.new()
			for range tc.n {
				if err := src.RecordValue(tc.fill()); err != nil {
					t.Fatal(err)
				}
			}
			enc, err := EncodeHistogram(src)
			if err != nil {
				t.Fatal(err)
			}
			dstGeom := NewHistogram
			if src.SignificantFigures() == LagSignificantDigits {
				dstGeom = NewLagHistogram
			}
			want, got := dstGeom(), dstGeom()
			// Both start with the same earlier content, as a slot accumulator would.
			for _, h := range []*hdrhistogram.Histogram{want, got} {
				_ = h.RecordValues(777, 3)
			}
			lib, err := DecodeHistogram(enc)
			if err != nil {
				t.Fatal(err)
			}
			MergeHistograms(want, lib)
			if err := d.Merge(got, string(enc)); err != nil {
				t.Fatal(err)
			}
			if !equalBuckets(want, got) || want.Max() != got.Max() || want.Min() != got.Min() {
				t.Fatalf("decoder merge differs from the library's: total %d/%d max %d/%d", got.TotalCount(), want.TotalCount(), got.Max(), want.Max())
			}
			if d.Count() != src.TotalCount() {
				t.Errorf("Count %d, want %d", d.Count(), src.TotalCount())
			}
			ref := lib // a foreign geometry is re-bucketed into NewHistogram's
			if lib.HighestTrackableValue() != HighestValue {
				ref = NewHistogram()
				MergeHistograms(ref, lib)
			}
			for _, p := range []float64{0, 1, 50, 90, 99, 99.9, 99.99, 100} {
				if g, w := d.Percentile(p), ref.ValueAtPercentile(p); g != w {
					t.Errorf("p%v = %d, library %d", p, g, w)
				}
			}
		})
	}
	// An empty encoding adds nothing and has no percentiles.
	h := NewHistogram()
	if err := d.Merge(h, ""); err != nil || h.TotalCount() != 0 || d.Percentile(99) != 0 || d.Count() != 0 {
		t.Errorf("empty: err %v, count %d", err, h.TotalCount())
	}
}

// TestHistogramSumIsTheMerge: summing encodings into a HistogramSum and writing it out
// gives exactly the library's merge of the decoded histograms, for both geometries and
// for an encoding of another geometry; Reset empties it for reuse.
func TestHistogramSumIsTheMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var d HistogramDecoder
	for _, tc := range []struct {
		name   string
		newSum func() *HistogramSum
		newH   func() *hdrhistogram.Histogram
	}{{"response", NewHistogramSum, NewHistogram}, {"lag", NewLagHistogramSum, NewLagHistogram}} {
		t.Run(tc.name, func(t *testing.T) {
			sum := tc.newSum()
			for round := range 2 {
				want := tc.newH()
				for i := range 5 {
					src := tc.newH()
					if i == 4 {
						src = hdrhistogram.New(1, 1e7, 1) // another geometry
					}
					for range 2000 {
						_ = src.RecordValue(int64(rng.ExpFloat64()*float64(100*(i+1))) + 1)
					}
					enc, err := EncodeHistogram(src)
					if err != nil {
						t.Fatal(err)
					}
					lib, _ := DecodeHistogram(enc)
					MergeHistograms(want, lib)
					if err := d.Add(sum, string(enc)); err != nil {
						t.Fatal(err)
					}
				}
				got := tc.newH()
				if err := sum.MergeInto(got); err != nil {
					t.Fatal(err)
				}
				if !equalBuckets(want, got) || sum.Count() != want.TotalCount() {
					t.Fatalf("round %d: sum of %d values differs from the library's merge of %d", round, sum.Count(), want.TotalCount())
				}
				sum.Reset()
				if sum.Count() != 0 || slices.ContainsFunc(sum.counts, func(c int64) bool { return c != 0 }) {
					t.Fatal("Reset left counts")
				}
			}
			if err := tc.newSum().MergeInto(hdrhistogram.New(1, 1000, 1)); err == nil {
				t.Error("MergeInto another geometry: no error")
			}
		})
	}
}

// TestDecoderRejectsCorruptInput: damaged encodings are errors, never a panic or a
// partly merged histogram.
func TestDecoderRejectsCorruptInput(t *testing.T) {
	src := NewHistogram()
	for i := range 1000 {
		_ = src.RecordValue(int64(i*37 + 1))
	}
	enc, err := EncodeHistogram(src)
	if err != nil {
		t.Fatal(err)
	}
	var d HistogramDecoder
	for _, bad := range []string{"!!!", "AAAA", string(enc[:len(enc)/2]), string(enc[:12]) + "A" + string(enc[13:])} {
		dst := NewHistogram()
		if err := d.Merge(dst, bad); err == nil {
			t.Errorf("%.20q...: no error", bad)
		}
		if dst.TotalCount() != 0 {
			t.Errorf("%.20q...: merged %d values from a corrupt encoding", bad, dst.TotalCount())
		}
	}
	// The decoder is still usable after errors.
	dst := NewHistogram()
	if err := d.Merge(dst, string(enc)); err != nil || !slices.Equal(dst.Export().Counts, src.Export().Counts) {
		t.Errorf("after errors: %v", err)
	}
}

// BenchmarkDecodeHistogram compares the library's decode+merge with the decoder's, for a
// histogram of a busy second.
func BenchmarkDecodeHistogram(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := NewHistogram()
	for range 10000 {
		_ = src.RecordValue(int64(rng.ExpFloat64()*800) + int64(rng.IntN(100000)))
	}
	enc, _ := EncodeHistogram(src)
	dst := NewHistogram()
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h, err := DecodeHistogram(enc)
			if err != nil {
				b.Fatal(err)
			}
			MergeHistograms(dst, h)
		}
	})
	b.Run("decoder", func(b *testing.B) {
		var d HistogramDecoder
		s := string(enc)
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Merge(dst, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sum", func(b *testing.B) {
		var d HistogramDecoder
		s, sum := string(enc), NewHistogramSum()
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Add(sum, s); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(len(enc)), "bytes")
}
