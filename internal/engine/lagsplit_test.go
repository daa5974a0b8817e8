package engine

import (
	"testing"
	"time"
)

// The start lag of an operation is the store's while the worker that took it was in the
// store with its previous operation, the generator's after that; a backlog older than the
// worker's previous operation is shared out as that cycle was spent.
func TestLagSplit(t *testing.T) {
	ms := int64(time.Millisecond)
	tests := []struct {
		name               string
		prevStart, prevEnd int64 // the worker's previous operation; 0, 0 before its first
		intended, start    int64
		want               time.Duration
	}{
		{"on time", 10 * ms, 11 * ms, 20 * ms, 20 * ms, 0},
		{"first operation", 0, 0, 1 * ms, 5 * ms, 0},
		{"due while the worker was in the store", 10 * ms, 500 * ms, 100 * ms, 500 * ms, 0},
		{"due while in the store, then the pacer woke late", 10 * ms, 500 * ms, 100 * ms, 502 * ms, 2 * time.Millisecond},
		{"due after the worker was free", 10 * ms, 11 * ms, 15 * ms, 18 * ms, 3 * time.Millisecond},
		// A backlog behind a stall drains through 1 ms operations with 10 µs between them:
		// the 400 ms it had waited before them is 99% the store's.
		{"old backlog, cycles in the store", 500 * ms, 501 * ms, 100 * ms, 501*ms + 10_000, 3_960_396 + 10_000},
		// A CPU-bound generator: 1 µs in the store, 9 µs of its own per cycle.
		{"old backlog, cycles of the generator's own", 500 * ms, 500*ms + 1000, 100 * ms, 500*ms + 10_000, 360_000_000 + 9000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := lagSplit{prevStart: tc.prevStart, prevEnd: tc.prevEnd}
			got := l.own(tc.intended, tc.start)
			if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("own part %v, want %v", got, tc.want)
			}
			if got < 0 || got > time.Duration(max(tc.start-tc.intended, 0)) {
				t.Errorf("own part %v outside the lag %v", got, time.Duration(tc.start-tc.intended))
			}
		})
	}
}
