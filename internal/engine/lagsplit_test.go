package engine

import (
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
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

// A stalling store's lag is recorded as waiting for a worker held in the store, by the
// plain, the pipelined and the backfill loop alike, and a CPU-bound generator's as its own. The stalls
// are real time, so only which part is the larger is asserted.
func TestLagSplitRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of stalls")
	}
	stalling := map[string]string{"serviceTime": "1ms", "stallEvery": "300ms", "stallFor": "100ms"}
	tests := []struct {
		name  string
		store func(t *testing.T) driver.Driver
		w     func(w *config.Workload)
		// backfill: the backfill's series, at 1,000 keys/s by 4 workers writing key by key,
		// instead of reads. (In bulk, the time a key waits for its batch to fill is the
		// generator's own, the batching.)
		backfill  bool
		storeMost bool // the store's part is the larger
	}{
		{"plain, fixed pool", func(t *testing.T) driver.Driver { return openMemory(t, stalling) },
			func(w *config.Workload) { w.ReadRate, w.Readers, w.MaxReaders = 1000, 4, 4 }, false, true},
		{"plain, elastic pool", func(t *testing.T) driver.Driver { return openMemory(t, stalling) },
			func(w *config.Workload) { w.ReadRate, w.Readers, w.MaxReaders = 1000, 2, 64 }, false, true},
		{"pipelined", func(t *testing.T) driver.Driver { return &pipeStore{Driver: openMemory(t, stalling)} },
			func(w *config.Workload) { w.Pipeline, w.ReadRate, w.Readers, w.MaxReaders = 16, 1000, 2, 2 }, false, true},
		{"backfill", func(t *testing.T) driver.Driver { return openMemory(t, stalling) },
			func(w *config.Workload) { w.NumKeys = 100000 }, true, true},
		{"CPU-bound generator", func(t *testing.T) driver.Driver { return nopStore{} },
			func(w *config.Workload) { w.ReadRate, w.Readers, w.MaxReaders = 1e8, 2, 64 }, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.store(t), testWorkload(t, func(w *config.Workload) {
				w.WriteEnabled = false
				tc.w(w)
			}))
			start, series := func() error { return e.Start("read") }, "read"
			if tc.backfill {
				start, series = func() error { return e.StartBackfill(BackfillOptions{Workers: 4, Rate: 1000, Batch: 1}) }, "backfill"
			}
			if err := start(); err != nil {
				t.Fatal(err)
			}
			rd := measure(e, 900*time.Millisecond).Ops[series]
			t.Logf("start lag p99 %.1f ms; own %.3f ms, waiting for a worker %.3f ms per op", rd.StartLag.P99/1000, rd.StartLagOwn/1000, rd.StartLagWait/1000)
			if rd.StartLag.P99 < 1000 {
				t.Fatalf("start lag p99 %.0f µs: no lag to split; the premise of the test fails", rd.StartLag.P99)
			}
			if storeMost := rd.StartLagWait > rd.StartLagOwn; storeMost != tc.storeMost {
				t.Errorf("the store's part is the larger = %v (own %.3f ms, waiting %.3f ms per op), want %v",
					storeMost, rd.StartLagOwn/1000, rd.StartLagWait/1000, tc.storeMost)
			}
		})
	}
}

// BenchmarkLagSplit is the split's cost per operation on the open-loop path, where every
// operation is a little late and a backlog older than the previous operation is shared out.
func BenchmarkLagSplit(b *testing.B) {
	var l lagSplit
	var sum time.Duration
	t := int64(1_000_000)
	for i := 0; b.Loop(); i++ {
		start := t + int64(i%7)*1000
		sum += l.own(t-int64(i%5)*100_000, start)
		l.done(start, start+20_000)
		t += 25_000
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
