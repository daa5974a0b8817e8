package autotune

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/engine/simstore"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// simProber runs a search's steps on a real engine whose store and clock are simulated:
// it sets the read class's rate, steps the clock a second at a time (every worker and
// the elastic check acting at its instant), ticks the collector as a node does, and
// measures the window as NodeProber does, from the same intervals.
type simProber struct {
	t       *testing.T
	e       *engine.Engine
	clk     *clock.Sim
	p       *NodeProber
	rate    float64
	started bool
}

func (s *simProber) second() *stats.Interval {
	next := s.clk.Now().Add(time.Second)
	if !s.clk.StepTo(next, s.e.Waiters, 10*time.Second) {
		s.t.Fatalf("the engine's goroutines did not all wait at %v", next)
	}
	return s.e.Collector().Tick(s.clk.Now())
}

// Restart drops what the schedule owes, as NodeProber's does before a recovery.
func (s *simProber) Restart() error {
	if err := s.e.Stop("read"); err != nil {
		return err
	}
	return s.e.Start("read")
}

func (s *simProber) Probe(ctx context.Context, rate float64, spec ProbeSpec) (Measurement, error) {
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	if rate != s.rate {
		if err := s.e.SetShape("read", pacer.Constant(rate)); err != nil {
			return Measurement{}, err
		}
		s.rate = rate
	}
	if !s.started {
		if err := s.e.Start("read"); err != nil {
			return Measurement{}, err
		}
		s.started = true
	}
	for range int(math.Ceil(spec.Settle.Seconds())) {
		s.second()
	}
	secs := max(spec.Window.Seconds(), float64(spec.SLA("read").Samples())/rate)
	n := max(1, int(math.Ceil(min(secs, spec.MaxWindow.Seconds())-1e-9)))
	var got []snapshot
	for range n {
		s.p.interval(s.second())
		got = append(got, <-s.p.snaps)
	}
	return s.p.measure(got, report.Usage{}, rate, spec), nil
}

// TestSaturatedStoreIsStoreBound is the search on a store that saturates by queueing: 500
// operations a second of capacity (first in, first out beyond it) and 1 ms of service,
// on simulated time, with 2 readers that may grow to 64. Above 500/s the store answers
// no faster whatever the pool sends it; what it does not serve waits in it. The search
// must find the store's 500/s, and never call the generator the limit: an elastic pool
// that held its workers back (its growth did not raise the rate at which operations
// completed, which is all a saturated store can give) kept the queue in the generator,
// as start lag with the store's service time within SLA, and the search ended
// "client-bound" at the capacity (web-tests/autotune.test.mjs on the memory store).
func TestSaturatedStoreIsStoreBound(t *testing.T) {
	const capacity = 500
	clk := clock.NewSim(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	store := simstore.New(clk, time.Millisecond)
	store.Capacity = capacity
	w := config.DefaultWorkload()
	w.NumKeys, w.WriteEnabled = 1000, false
	w.ReadRate, w.Readers, w.MaxReaders = 100, 2, 64
	w.OpTimeout = 5 * time.Second
	coll := stats.NewCollector(stats.Config{Shards: 4})
	e, err := engine.New(store, w, engine.Options{Collector: coll, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	// No grace: workers waiting on the simulated store would wait for a clock that no
	// longer moves.
	t.Cleanup(func() { _ = e.Close(0) })
	coll.ResetAt(clk.Now())
	p := &NodeProber{classes: []string{"read"}, share: map[string]float64{"read": 1}, snaps: make(chan snapshot, 1)}
	p.active.Store(true)
	s := Settings{
		SLA:   SLA{Percentile: 90, Latency: 100 * time.Millisecond, MaxErrors: 0.01, MinAchieved: 0.97},
		Start: 200, Tolerance: 0.05,
		Settle: time.Second, Window: 2 * time.Second, Confirm: 4 * time.Second, Recover: 10 * time.Second,
		Clock: clk,
	}
	s.OnStep = func(st Step) {
		var b stepBuf
		WriteStep(&b, st, s.WithDefaults(), 0)
		c := st.Classes["read"]
		t.Logf("%s  (%d workers, mean service %.1f ms)", b, c.Workers, c.ServiceMean/1000)
	}
	r := Search(context.Background(), &simProber{t: t, e: e, clk: clk, p: p}, s)
	t.Logf("%s: %s", r.Status, r.Message)
	for _, st := range r.Steps {
		if st.Verdict == ClientBound {
			t.Errorf("step %d at %.0f/s judged client-bound against a store saturated at %d/s: %q", st.N, st.Rate, capacity, st.Why)
		}
	}
	if r.Status != StatusFound {
		t.Fatalf("status %s (%s); want the store's capacity found", r.Status, r.Message)
	}
	// Below the capacity the store never queues (the schedule is even); above it the queue
	// grows through each step, faster the further above: a step a little above may pass
	// within its 3 s, so the search may find up to a tenth over.
	if r.Capacity < 0.95*capacity || r.Capacity > 1.1*capacity {
		t.Errorf("found %.0f/s in [%.0f, %.0f]; want the store's %d/s (-5%%..+10%%)", r.Capacity, r.Lo, r.Hi, capacity)
	}
}
