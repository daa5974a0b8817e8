package main

import (
	"slices"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := slices.Clone(c.in)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("median reordered its input: %v, was %v", c.in, in)
		}
	}
}

// TestWarmupFor: the figures start once the largest count's last worker has had its first
// operation (its connect): at 2,000 ops/s 10,000 workers take 5 s, plus 2 s.
func TestWarmupFor(t *testing.T) {
	for _, c := range []struct {
		conns []int
		rate  int
		want  time.Duration
	}{
		{[]int{50, 1000, 10000}, 2000, 7 * time.Second},
		{[]int{50}, 2000, 2 * time.Second},
		{[]int{10000, 50}, 20000, 3 * time.Second}, // 0.5 s rounds to 1 s
		{[]int{50, 1000}, 100, 12 * time.Second},
	} {
		if got := warmupFor(c.conns, c.rate); got != c.want {
			t.Errorf("warmupFor(%v, %d) = %v, want %v", c.conns, c.rate, got, c.want)
		}
	}
}
