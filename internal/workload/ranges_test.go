package workload

import (
	"slices"
	"testing"
)

func TestRanges(t *testing.T) {
	tests := []struct {
		numKeys int64
		parts   int
		want    []Range
	}{
		{10, 3, []Range{{0, 4}, {4, 7}, {7, 10}}},
		{10, 1, []Range{{0, 10}}},
		{10, 0, []Range{{0, 10}}},
		{2, 5, []Range{{0, 1}, {1, 2}}},
		{0, 3, nil},
		{-1, 3, nil},
	}
	for _, tt := range tests {
		if got := Ranges(tt.numKeys, tt.parts); !slices.Equal(got, tt.want) {
			t.Errorf("Ranges(%d, %d) = %v, want %v", tt.numKeys, tt.parts, got, tt.want)
		}
	}
}

func TestRangesCoverEveryKeyOnce(t *testing.T) {
	for _, n := range []int64{1, 7, 1000, 1<<40 + 3} {
		for _, parts := range []int{1, 2, 3, 16, 1000} {
			rs := Ranges(n, parts)
			next, lo, hi := int64(0), rs[0].Len(), rs[0].Len()
			for _, r := range rs {
				if r.Start != next || r.Len() < 1 {
					t.Fatalf("Ranges(%d, %d): %v does not continue at %d", n, parts, r, next)
				}
				next = r.End
				lo, hi = min(lo, r.Len()), max(hi, r.Len())
			}
			if next != n || hi-lo > 1 {
				t.Errorf("Ranges(%d, %d): ends at %d, sizes %d..%d", n, parts, next, lo, hi)
			}
		}
	}
}
