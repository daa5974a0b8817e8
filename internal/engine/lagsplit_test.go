package engine

import (
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
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
// plain, the pipelined and the backfill loop alike. On simulated time a worker that leaves
// the store starts its next operation at that instant, so the generator's own part is
// exactly zero and all of the lag is the store's.
func TestLagSplitRecorded(t *testing.T) {
	tests := []struct {
		name string
		w    func(w *config.Workload)
		// pipelined: the store gives pipelines. backfill: the backfill's series, at 1,000
		// keys/s by 4 workers writing key by key, instead of reads. (In bulk, the time a
		// key waits for its batch to fill is the generator's own, the batching.)
		pipelined, backfill bool
	}{
		{"plain, fixed pool", func(w *config.Workload) { w.ReadRate, w.Readers, w.MaxReaders = 1000, 4, 4 }, false, false},
		{"plain, elastic pool", func(w *config.Workload) { w.ReadRate, w.Readers, w.MaxReaders = 1000, 2, 64 }, false, false},
		{"pipelined", func(w *config.Workload) { w.Pipeline, w.ReadRate, w.Readers, w.MaxReaders = 16, 1000, 2, 2 }, true, false},
		{"backfill", func(w *config.Workload) { w.NumKeys = 100000 }, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewSim(simStart)
			store := simstore.New(clk, time.Millisecond)
			store.StallEvery, store.StallFor = 300*time.Millisecond, 100*time.Millisecond
			var d driver.Driver = store
			if tc.pipelined {
				d = &pipeStore{Driver: store}
			}
			e := newSimEngine(t, clk, d, testWorkload(t, func(w *config.Workload) {
				w.WriteEnabled = false
				tc.w(w)
			}))
			start, series := func() error { return e.Start("read") }, "read"
			if tc.backfill {
				// The backfill's 4 workers wait on the clock; the goroutine that runs
				// them waits for them.
				e.parked = 4 - 1
				start, series = func() error { return e.StartBackfill(BackfillOptions{Workers: 4, Rate: 1000, Batch: 1}) }, "backfill"
			}
			e.Collector().ResetAt(simStart)
			if err := start(); err != nil {
				t.Fatal(err)
			}
			e.to(900 * time.Millisecond)
			rd := e.tick().Ops[series]
			t.Logf("%d ops, start lag p99 %.1f ms; own %.3f ms, waiting for a worker %.3f ms per op", rd.Attempted, rd.StartLag.P99/1000, rd.StartLagOwn/1000, rd.StartLagWait/1000)
			if rd.StartLag.P99 < 50_000 {
				t.Fatalf("start lag p99 %.0f µs: the 100 ms stalls made no lag to split; the premise of the test fails", rd.StartLag.P99)
			}
			if rd.StartLagOwn != 0 || rd.StartLagWait <= 0 {
				t.Errorf("own part %.3f ms, waiting for a worker %.3f ms per op; want all of it waiting", rd.StartLagOwn/1000, rd.StartLagWait/1000)
			}
		})
	}
}

// A CPU-bound generator's lag is its own: its workers are between operations, not in
// the store. This needs the generator's real CPU, so it runs on real time and asserts only
// which part is the larger.
func TestLagSplitRecordedCPUBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of load")
	}
	e := newEngine(t, nopStore{}, testWorkload(t, func(w *config.Workload) {
		w.WriteEnabled = false
		w.ReadRate, w.Readers, w.MaxReaders = 1e8, 2, 64
	}))
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	rd := measure(e, 900*time.Millisecond).Ops["read"]
	t.Logf("start lag p99 %.1f ms; own %.3f ms, waiting for a worker %.3f ms per op", rd.StartLag.P99/1000, rd.StartLagOwn/1000, rd.StartLagWait/1000)
	if rd.StartLag.P99 < 1000 {
		t.Fatalf("start lag p99 %.0f µs: no lag to split; the premise of the test fails", rd.StartLag.P99)
	}
	if rd.StartLagWait > rd.StartLagOwn {
		t.Errorf("the store's part is the larger (own %.3f ms, waiting %.3f ms per op); a store that answers at once holds no worker",
			rd.StartLagOwn/1000, rd.StartLagWait/1000)
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
