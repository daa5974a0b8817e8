package node

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
)

// stepNode is a control.Node other than a Node (a fleet, say) that runs on a simulated
// clock and notes the run's steps; any call the warm-up does not make panics on the nil
// Node.
type stepNode struct {
	control.Node
	clk  *clock.Sim
	snap *config.Snapshot

	mu    sync.Mutex
	steps []string
}

func (n *stepNode) Clock() clock.Clock       { return n.clk }
func (n *stepNode) Config() *config.Snapshot { return n.snap }
func (n *stepNode) Start(...string) error    { n.note("start"); return nil }
func (n *stepNode) Drain() error             { n.note("drain"); return nil }
func (n *stepNode) StartMeasuring(w time.Duration) {
	n.note("measure " + w.String())
}

func (n *stepNode) note(s string) {
	n.mu.Lock()
	n.steps = append(n.steps, s)
	n.mu.Unlock()
}

func (n *stepNode) noted() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.steps...)
}

// A run's warm-up on a node that is not a Node (a fleet) lasts workload.warmup on the
// clock that node runs on (its Clock), or on the one the caller gives (Run.Clock): on a
// simulated clock it ends exactly then, and the measured span starts at that instant.
// Before, a fleet's warm-up was timed on real time whatever its coordinator's clock.
func TestRunWarmUpOnTheNodesClock(t *testing.T) {
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.warmup=1h"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name  string
		given bool // the caller gives the clock; the node's own is another
	}{{"the node's clock", false}, {"the caller's clock", true}} {
		t.Run(c.name, func(t *testing.T) {
			sim := clock.NewSim(start)
			n := &stepNode{clk: sim, snap: snap}
			r := &Run{Node: n}
			if c.given {
				n.clk = clock.NewSim(start.Add(-time.Hour)) // never moved
				r.Clock = sim
			}
			var at time.Time
			r.Measuring = func(a time.Time, _ time.Duration) { at = a }
			done := make(chan error, 1)
			go func() {
				measured, err := r.WarmUp(context.Background())
				if err == nil && !measured {
					t.Error("the warm-up ended unmeasured")
				}
				done <- err
			}()
			if !sim.WaitTimers(1, time.Minute) {
				t.Fatal("the warm-up set no timer on the run's clock within a minute")
			}
			sim.Advance(time.Hour - time.Nanosecond)
			if sim.Pending() != 1 {
				t.Fatalf("%d timers pending 1 ns before the warm-up's end; want the warm-up's", sim.Pending())
			}
			sim.Advance(time.Nanosecond)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the warm-up did not end a minute after its instant")
			}
			if want := start.Add(time.Hour); !at.Equal(want) {
				t.Errorf("the measured span starts at %v; want the warm-up's end, %v", at, want)
			}
			if got, want := n.noted(), []string{"start", "drain", "measure 1h0m0s"}; !slices.Equal(got, want) {
				t.Errorf("steps %v; want %v", got, want)
			}
		})
	}
}
