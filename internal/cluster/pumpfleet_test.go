package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
)

// pumpedFleet is an in-process fleet whose coordinator, agents and nodes' load all run on
// one simulated clock, moved on by a pump goroutine 100 ms at a time once every node it
// watches has been beaten twice at the current instant (beatenAt's rule). A node that
// answers is then never judged lost, however slowly a loaded machine runs the beats: the
// clock does not move past its last answer until it has answered again. On real time,
// with LostAfter 1 s, a healthy node was judged lost at load 35.
//
// The tests wait on it with real-time patiences (waitFor, waitSim); the patience only
// turns something that never happens into a failure.
type pumpedFleet struct {
	nodes []*inNode
	coord *cluster.Coordinator
	url   func(string) string
	sim   *clock.Sim
	logs  []*beatLog

	mu      sync.Mutex
	dropped []bool // nodes the pump no longer waits for (gone: they are sent no beats)
}

// pumpStep is how far the pump moves the clock at a time.
const pumpStep = 100 * time.Millisecond

// newPumpedFleet starts n in-process nodes on a simulated clock, with inFleet's timings
// (beats every 20 ms of real time, so the clock moves about 2.5 times faster than real
// time) adjusted by tune, and the pump that moves the clock.
func newPumpedFleet(t *testing.T, n int, tune func(*cluster.Options)) *pumpedFleet {
	t.Helper()
	return newPumpedFleetOn(t, n, true, tune)
}

// newPumpedFleetOn is newPumpedFleet; with shared false, the nodes' instances (their
// load, their collectors) run on real time, and only the coordinator and the agents on
// the simulated clock.
func newPumpedFleetOn(t *testing.T, n int, shared bool, tune func(*cluster.Options)) *pumpedFleet {
	t.Helper()
	// In the past, as the other simulated fleets' clocks: the fleet's stats merge judges
	// when a second is ready on real time (time.Now in fleetstats.go), and a simulated
	// clock ahead of it would hold every merged second back.
	sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	nodes, coord, url := inFleetOn(t, n, shared, func(o *cluster.Options) {
		o.BeatEvery = 20 * time.Millisecond
		if tune != nil {
			tune(o)
		}
		o.Clock = sim
	})
	f := &pumpedFleet{nodes: nodes, coord: coord, url: url, sim: sim, dropped: make([]bool, n)}
	for _, nd := range nodes {
		f.logs = append(f.logs, logBeats(nd))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.pump(ctx, t) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// pump moves the clock on a step whenever every watched node (not dropped, not left) has
// been sent two beats at its current reading, until ctx ends.
func (f *pumpedFleet) pump(ctx context.Context, t *testing.T) {
	for {
		now := f.sim.Now()
		marks := make([]int, len(f.logs))
		for i, l := range f.logs {
			marks[i] = l.mark()
		}
		for end := time.Now().Add(time.Minute); ; {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
			// A member found left (gone from discovery, its run over) is sent no beats.
			left := map[string]bool{}
			for _, m := range f.coord.Members() {
				left[m.ID] = m.Health == cluster.Left
			}
			beaten := true
			f.mu.Lock()
			for i, l := range f.logs {
				beaten = beaten && (f.dropped[i] || left[nodeID(f.nodes[i])] || l.since(marks[i], now) >= 2)
			}
			f.mu.Unlock()
			if beaten {
				break
			}
			if time.Now().After(end) {
				t.Errorf("the fleet's nodes were not beaten at %v within a minute: the pump stops", now)
				return
			}
		}
		f.sim.Advance(pumpStep)
	}
}

// drop stops the pump waiting for node i's beats: it is gone, and is sent none.
func (f *pumpedFleet) drop(i int) {
	f.mu.Lock()
	f.dropped[i] = true
	f.mu.Unlock()
}

// waitSim waits (a minute's patience) until the clock has moved d on from now.
func (f *pumpedFleet) waitSim(t *testing.T, d time.Duration) {
	t.Helper()
	until := f.sim.Now().Add(d)
	waitFor(t, time.Minute, "the fleet's clock at "+until.Format(time.TimeOnly+".000"), func() (bool, string) {
		return !f.sim.Now().Before(until), "at " + f.sim.Now().Format(time.TimeOnly+".000")
	})
}
