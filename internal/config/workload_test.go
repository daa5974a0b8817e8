package config

import (
	"testing"
	"time"
)

// TestAutoMaxWorkers: an automatic elastic maximum is what holds the rate at the op
// timeout, capped at max(4 × workers, 64), never below the configured workers; a set
// maximum is taken as given.
func TestAutoMaxWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers, most int
		rate          float64
		timeout       time.Duration
		want          int
	}{
		{4, 0, 7200, 5 * time.Second, 64},    // NDBench's 8b case: capped at 64
		{4, 0, 10, time.Second, 10},          // rate × timeout below the cap
		{4, 0, 1, 100 * time.Millisecond, 4}, // never below workers
		{32, 0, 100000, time.Second, 128},    // 4 × workers above the floor
		{5000, 0, 1e6, time.Second, 10000},   // bounded by the engine's worker limit
		{4, 0, 0, time.Second, 4},            // closed loop never grows
		{4, 10, 7200, 5 * time.Second, 10},   // a set maximum wins
		{4, 2, 7200, 5 * time.Second, 4},     // at most workers: fixed
		{0, 0, 7200, 5 * time.Second, 0},     // no workers, nothing to grow
	} {
		c := ClassSpec{Workers: tc.workers, MaxWorkers: tc.most}
		if got := c.MostWorkers(tc.rate, tc.timeout); got != tc.want {
			t.Errorf("workers %d, maxWorkers %d, rate %v, timeout %v: %d, want %d", tc.workers, tc.most, tc.rate, tc.timeout, got, tc.want)
		}
	}
}
