package report

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/engine/simstore"
	"github.com/ndbench/ndbench/internal/stats"
)

// runRead runs the read class of a real engine against d for run, ticking its collector
// every second as a node does, and builds the run's report. With clk set the engine and
// d run on that simulated clock, which runRead steps; otherwise on real time. The
// client's CPU usage is left out, so the report judges the start lag from the engine's
// figures alone.
func runRead(t *testing.T, d driver.Driver, clk *clock.Sim, run time.Duration, changes func(*config.Workload)) *Report {
	t.Helper()
	w := config.DefaultWorkload()
	w.NumKeys = 1000
	w.WriteEnabled = false
	w.OpTimeout = 2 * time.Second
	changes(&w)
	coll := stats.NewCollector(stats.Config{Shards: 4})
	opts := engine.Options{Collector: coll}
	c := clock.Real
	if clk != nil {
		opts.Clock, c = clk, clk
	}
	e, err := engine.New(d, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close(0) }()
	started := c.Now()
	coll.ResetAt(started)
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	for now := started; ; {
		next := now.Add(time.Second)
		if end := started.Add(run); next.After(end) {
			next = end
		}
		if clk != nil {
			if !clk.StepTo(next, e.Waiters, 10*time.Second) {
				t.Fatalf("the engine's goroutines did not all wait at %v", clock.Since(clk, started))
			}
		} else {
			time.Sleep(time.Until(next))
		}
		now = c.Now()
		coll.Tick(now)
		if !now.Before(started.Add(run)) {
			break
		}
	}
	in := Input{Started: started, Ended: c.Now(), DriverName: "memory", Cumulative: coll.Cumulative(), Series: coll.Series()}
	return Build(in)
}

// lagWarningOf returns the report's start-lag warning for the read class, "" if none.
func lagWarningOf(r *Report) string {
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "read: operations started late") {
			return w
		}
	}
	return ""
}

// TestStoreStallsAreNeverBlamedOnTheGenerator is issue 6's bar: a store that stalls
// periodically (1 ms service time otherwise) makes operations start late, and the
// start-lag warning names the store, never the generator's own delay, whatever the
// stall's shape and whether the pool is elastic (it grows during a stall, so per-second
// averages of busy workers hide a sub-second stall) or fixed. The store and the engine run
// on simulated time (simstore), so a loaded machine cannot add a delay of the
// generator's own to the stall's.
func TestStoreStallsAreNeverBlamedOnTheGenerator(t *testing.T) {
	shapes := []struct {
		every, stall, run time.Duration
	}{
		{5 * time.Second, 500 * time.Millisecond, 5600 * time.Millisecond},
		{time.Second, 200 * time.Millisecond, 2200 * time.Millisecond},
		{300 * time.Millisecond, 50 * time.Millisecond, 1500 * time.Millisecond},
	}
	pools := []struct {
		name          string
		readers, most int
		rate          float64
	}{
		{"elastic", 2, 64, 1000},
		{"fixed", 8, 8, 1000},
		{"fixed, faster", 16, 16, 3000},
	}
	for _, sh := range shapes {
		for _, p := range pools {
			t.Run(fmt.Sprintf("%v every %v, %s pool of %d at %.0f/s", sh.stall, sh.every, p.name, p.readers, p.rate), func(t *testing.T) {
				clk := clock.NewSim(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
				d := simstore.New(clk, time.Millisecond)
				d.StallEvery, d.StallFor = sh.every, sh.stall
				r := runRead(t, d, clk, sh.run, func(w *config.Workload) {
					w.ReadRate, w.Readers, w.MaxReaders = p.rate, p.readers, p.most
				})
				s := r.Ops["read"]
				t.Logf("start lag p99 %.1f ms, own %.3f ms + waiting for a worker %.3f ms per op; service max %.0f ms",
					s.StartLag.P99/1000, s.StartLagOwn/1000, s.StartLagWait/1000, s.ServiceTime.Max/1000)
				// On simulated time a worker free of the store starts its next operation at
				// that instant: none of the lag is the generator's.
				if s.StartLagOwn != 0 {
					t.Errorf("the generator's own start lag is %.3f ms per op; on simulated time it is none", s.StartLagOwn/1000)
				}
				w := lagWarningOf(r)
				if w == "" {
					t.Fatalf("no start-lag warning after a %v stall; the premise of the test fails: %q", sh.stall, r.Warnings)
				}
				if strings.Contains(w, "generator's own") || strings.Contains(w, "generator's, not") {
					t.Errorf("a store stall blamed on the generator:\n%s", w)
				}
				if !strings.Contains(w, "the store stalled") && !strings.Contains(w, "every worker was busy in the store") {
					t.Errorf("the warning does not name the store:\n%s", w)
				}
			})
		}
	}
}

// TestGeneratorLagIsStillNamed: when the generator is the cause (a CPU-bound rate far
// beyond what two workers give, against a store that answers at once), the warning says
// the delay is the generator's own.
func TestGeneratorLagIsStillNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of load")
	}
	r := runRead(t, stubDriver{}, nil, 1500*time.Millisecond, func(w *config.Workload) {
		w.ReadRate, w.Readers, w.MaxReaders = 1e8, 2, 64
	})
	s := r.Ops["read"]
	t.Logf("start lag p99 %.1f ms, own %.3f ms + waiting for a worker %.3f ms per op; %d workers",
		s.StartLag.P99/1000, s.StartLagOwn/1000, s.StartLagWait/1000, s.Workers)
	w := lagWarningOf(r)
	if !strings.Contains(w, "generator's own") {
		t.Errorf("the generator's own lag is not named as such: %q", w)
	}
}
