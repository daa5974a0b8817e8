package stats

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestMicros(t *testing.T) {
	tests := []struct {
		d       time.Duration
		want    int64
		clamped bool
	}{
		{-time.Second, 0, false},
		{0, 0, false},
		{1, 1, false}, // sub-microsecond rounds up, never reports 0 for a real op
		{999, 1, false},
		{time.Microsecond, 1, false},
		{time.Microsecond + 1, 2, false},
		{1500 * time.Microsecond, 1500, false},
		{time.Hour, HighestValue, false},
		{time.Hour + time.Microsecond, HighestValue, true},
		{100 * time.Hour, HighestValue, true},
	}
	for _, tt := range tests {
		got, clamped := Micros(tt.d)
		if got != tt.want || clamped != tt.clamped {
			t.Errorf("Micros(%v) = %d, %v; want %d, %v", tt.d, got, clamped, tt.want, tt.clamped)
		}
	}
}

func TestEncodeDecodeMergeMatchesUnion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	union := NewHistogram()
	var encoded [][]byte
	for node := range 4 {
		h := NewHistogram()
		for range 10000 {
			// Log-uniform-ish latencies from 1 µs to ~1 s, different per node.
			v := int64(1) << rng.IntN(20+node)
			v += rng.Int64N(v)
			if v > HighestValue {
				v = HighestValue
			}
			if err := h.RecordValue(v); err != nil {
				t.Fatal(err)
			}
			if err := union.RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		b, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		encoded = append(encoded, b)
	}

	merged := NewHistogram()
	for _, b := range encoded {
		h, err := DecodeHistogram(b)
		if err != nil {
			t.Fatal(err)
		}
		if dropped := MergeHistograms(merged, h); dropped != 0 {
			t.Fatalf("merge dropped %d values", dropped)
		}
	}
	if merged.TotalCount() != union.TotalCount() {
		t.Fatalf("merged count %d, union %d", merged.TotalCount(), union.TotalCount())
	}
	for _, q := range []float64{0, 50, 90, 99, 99.9, 99.99, 100} {
		if m, u := merged.ValueAtPercentile(q), union.ValueAtPercentile(q); m != u {
			t.Errorf("p%v: merged %d, union %d", q, m, u)
		}
	}
	if got, want := LatencyOf(merged), LatencyOf(union); got != want {
		t.Errorf("LatencyOf(merged) = %+v, want %+v", got, want)
	}
}

func TestDecodeHistogramRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "not base64!", "SElTVA=="} {
		if _, err := DecodeHistogram([]byte(in)); err == nil {
			t.Errorf("DecodeHistogram(%q) succeeded", in)
		}
	}
	if _, err := EncodeHistogram(nil); err == nil {
		t.Error("EncodeHistogram(nil) succeeded")
	}
}

func TestLatencyOf(t *testing.T) {
	if got := LatencyOf(NewHistogram()); got != (Latency{}) {
		t.Errorf("empty histogram: %+v, want zeros", got)
	}
	h := NewHistogram()
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v)
	}
	l := LatencyOf(h)
	want := Latency{P50: 500, P95: 950, P99: 990, P995: 995, P999: 999, Max: 1000, Mean: 500.5}
	if l != want {
		t.Errorf("LatencyOf(1..1000) = %+v, want %+v", l, want)
	}
}

func TestSummarizeOp(t *testing.T) {
	resp, svc := NewHistogram(), NewHistogram()
	for v := int64(1); v <= 100; v++ {
		_ = resp.RecordValue(v)
		_ = svc.RecordValue(v / 2)
	}
	c := Counts{Successes: 90, Misses: 10}
	c.Failures[3] = 4
	c.Validation[Corrupt] = 2
	s := SummarizeOp(c, resp, svc, 4)
	if s.Count != 100 || s.Rate != 25 || s.Misses != 10 || s.Errors != 4 || s.Failures["throttled"] != 4 ||
		s.Validation["corrupt"] != 2 || s.ResponseTime.P99 != 99 || s.ServiceTime.Max != 50 {
		t.Errorf("SummarizeOp = %+v", s)
	}
	if z := SummarizeOp(Counts{}, nil, nil, 0); z.Rate != 0 || len(z.Failures) != 5 || len(z.Validation) != NumValidations {
		t.Errorf("empty SummarizeOp = %+v", z)
	}
}
