package engine

import (
	"testing"
	"time"
)

// The watchdog's scan visits every worker: with many workers it scans less often, but
// never so rarely that a timeout fires later than 5% of it (or 1 ms).
func TestWatchPeriod(t *testing.T) {
	cases := []struct {
		timeout time.Duration
		slots   int
		want    time.Duration
	}{
		{5 * time.Second, 4, 50 * time.Millisecond},
		{5 * time.Second, 500, 50 * time.Millisecond},
		{5 * time.Second, 2000, 200 * time.Millisecond},
		{5 * time.Second, 4000, 250 * time.Millisecond},
		{5 * time.Second, 10000, 250 * time.Millisecond}, // 10,000 connections: a fifth of the CPU at 50 ms
		{24 * time.Second, 10000, time.Second},           // the http-conns pair: 6% of the CPU at 250 ms
		{time.Minute, 10000, time.Second},
		{time.Second, 10000, 50 * time.Millisecond}, // 5% of the timeout bounds it
		{100 * time.Millisecond, 10000, 5 * time.Millisecond},
		{10 * time.Millisecond, 1, time.Millisecond},
		{time.Millisecond, 10000, time.Millisecond},
	}
	for _, c := range cases {
		if got := watchPeriod(c.timeout, c.slots); got != c.want {
			t.Errorf("watchPeriod(%v, %d) = %v, want %v", c.timeout, c.slots, got, c.want)
		}
		if got := watchPeriod(c.timeout, c.slots); got > max(c.timeout/20, time.Millisecond) {
			t.Errorf("watchPeriod(%v, %d) = %v: a timeout could fire more than 5%% late", c.timeout, c.slots, got)
		}
	}
}
