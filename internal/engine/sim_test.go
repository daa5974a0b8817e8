package engine

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
	"github.com/ndbench/ndbench/internal/stats"
)

// simStart is where the simulated clocks of the engine's tests start.
var simStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simEngine is an engine on a simulated clock, which the test moves with to.
type simEngine struct {
	*Engine
	t   *testing.T
	clk *clock.Sim
	// parked is how many timers the test's own goroutines hold while they wait beyond
	// one per engine goroutine (a backfill runs its workers beside the one it counts).
	parked int
	// abandoned, when set, counts the store timers of operations that ended while still
	// waiting in the store (simstore.Store.Abandoned): each is pending until its worker
	// stops it.
	abandoned func() int
}

// newSimEngine builds an engine for d on clk, whose start is simStart.
func newSimEngine(t *testing.T, clk *clock.Sim, d driver.Driver, w config.Workload) *simEngine {
	t.Helper()
	e, err := New(d, w, Options{Collector: stats.NewCollector(stats.Config{Shards: 4}), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// No grace: workers waiting on the simulated store would wait for a clock that no
	// longer moves.
	t.Cleanup(func() { _ = e.Close(0) })
	return &simEngine{Engine: e, t: t, clk: clk}
}

// to moves the clock to at after simStart, stepping through every instant a worker or a
// loop waits for (Engine.Waiters: every worker holds one timer when it waits, the
// pacer's or the store's).
func (s *simEngine) to(at time.Duration) {
	s.t.Helper()
	parked := func() int {
		n := s.Waiters() + s.parked
		if s.abandoned != nil {
			n += s.abandoned()
		}
		return n
	}
	if !s.clk.StepTo(simStart.Add(at), parked, 10*time.Second) {
		s.t.Fatalf("the engine's goroutines did not all wait at %v (%d timers pending, %d expected)",
			clock.Since(s.clk, simStart), s.clk.Pending(), parked())
	}
}

// tick closes the collector's interval at the current simulated instant.
func (s *simEngine) tick() stats.Summary {
	return s.Collector().Tick(s.clk.Now()).Summary()
}

// TestSimulatedPoolRunsItsScheduleExactly: 4 readers at 500/s against a store that takes
// 1 ms run 10 simulated seconds: exactly the 5,001 operations due (0..10 s at 2 ms) are
// sent and answered, each on time (no start lag), none left overdue, and each takes the store's
// 1 ms of service and response time.
func TestSimulatedPoolRunsItsScheduleExactly(t *testing.T) {
	clk := clock.NewSim(simStart)
	e := newSimEngine(t, clk, simstore.New(clk, time.Millisecond), testWorkload(t, func(w *config.Workload) {
		w.WriteEnabled = false
		w.ReadRate, w.Readers, w.MaxReaders = 500, 4, 4
	}))
	e.Collector().ResetAt(simStart)
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	// An operation is counted when it ends: the one due at 10 s, 1 ms later.
	e.to(10*time.Second + time.Millisecond)
	o := e.tick().Ops["read"]
	if o.Attempted != 5001 || o.Dropped != 0 || o.Pending != 0 {
		t.Errorf("in 10 s at 500/s: %d sent, %d dropped, %d overdue; want 5001, 0, 0", o.Attempted, o.Dropped, o.Pending)
	}
	if o.StartLag.Max != 0 {
		t.Errorf("start lag max %.0f µs; on a store that keeps up every operation starts on time", o.StartLag.Max)
	}
	// 3 significant digits: 1 ms reads as 1000-1001 µs.
	for name, h := range map[string]stats.Latency{"response": o.ResponseTime, "service": o.ServiceTime} {
		if h.P50 < 999 || h.Max > 1001 {
			t.Errorf("%s time p50 %.0f µs max %.0f µs, want the store's 1 ms", name, h.P50, h.Max)
		}
	}
}

// TestStopSendsNothingUnpaced: a pool that stops sends no operation its schedule did not
// make due. 30 times over, 8 readers at 10/s against a store that answers at once start,
// run half a simulated second (6 reads due: at 0, 100, ..., 500 ms) and stop; the reads
// sent are exactly those due. Stopping once switched the pool's pacer to closed loop
// before it cancelled the workers, so the workers it woke sent reads unpaced until they
// saw the cancellation: hundreds, with a store this fast.
func TestStopSendsNothingUnpaced(t *testing.T) {
	clk := clock.NewSim(simStart)
	e := newSimEngine(t, clk, openMemory(t, nil), testWorkload(t, func(w *config.Workload) {
		w.WriteEnabled = false
		w.ReadRate, w.Readers, w.MaxReaders = 10, 8, 8
	}))
	e.Collector().ResetAt(simStart)
	for k := range 30 {
		at := time.Duration(k) * time.Second
		if err := e.Start("read"); err != nil {
			t.Fatal(err)
		}
		e.to(at + 500*time.Millisecond)
		if err := e.Stop("read"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := e.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("cycle %d: the stopped workers did not exit: %v", k, err)
		}
		e.to(at + time.Second)
		if got, want := e.tick().Ops["read"].Attempted, int64(6); got != want {
			t.Fatalf("cycle %d: %d reads sent over a start, half a second at 10/s and a stop; want the %d due", k, got, want)
		}
	}
}

// TestElasticPoolDoesNotGrowInAStall: an elastic read pool (4 readers at 800/s, 300 ms op
// timeout, so a cap of 64) on a store that answers in 1 ms keeps up with 4 workers, then
// the store stalls for 2 s and answers nothing: every read times out and the schedule
// falls ever further behind. The pool may grow while the store answered within the last
// second (a stall's start looks like keys that froze, which must grow a pool: issue 39's
// frozen backend): by Little's law doubling at most per judged step, one worker per
// stuck operation, 4 to 9. After that it does not grow: it never runs to its cap, whose
// workers would all hit the store at once when it recovers. The counts are exact on
// simulated time.
func TestElasticPoolDoesNotGrowInAStall(t *testing.T) {
	clk := clock.NewSim(simStart)
	st := simstore.New(clk, time.Millisecond)
	st.StallEvery, st.StallFor = 4*time.Second, 2*time.Second // stalled from 2 s to 4 s
	e := newSimEngine(t, clk, st, testWorkload(t, func(w *config.Workload) {
		w.WriteEnabled = false
		w.ReadRate, w.Readers, w.MaxReaders = 800, 4, 0
		w.OpTimeout = 300 * time.Millisecond
	}))
	e.abandoned = st.Abandoned
	e.Collector().ResetAt(simStart)
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	e.to(2 * time.Second)
	if o := e.tick().Ops["read"]; o.Workers != 4 || o.Errors != 0 {
		t.Fatalf("before the stall: %d workers, failures %v; want 4 and none", o.Workers, o.Failures)
	}
	e.to(3 * time.Second)
	if o := e.tick().Ops["read"]; o.Workers != 9 {
		t.Errorf("a second into the stall: %d workers; want 9 (4 doubled while the store had answered, one for a stuck read)", o.Workers)
	}
	e.to(3990 * time.Millisecond)
	o := e.tick().Ops["read"]
	if o.Failures["timeout"] == 0 || o.Count != 0 {
		t.Fatalf("in the stall: %d answered, failures %v; want timeouts only", o.Count, o.Failures)
	}
	if o.Workers != 9 {
		t.Errorf("the pool went to %d workers in the stall's second second (cap 64); want 9: no growth once the store has not answered for a second", o.Workers)
	}
}
