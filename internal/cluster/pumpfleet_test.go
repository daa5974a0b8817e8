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
// The pump also waits until the coordinator's pulls of the nodes' statistics have been
// merged, but for those the test's nodes hold on the simulated clock (held): the fleet's
// seconds are then judged at the instants they are due, as on a real clock that the
// coordinator keeps up with.
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
	// held, when set, counts the pulls of intervals the test's nodes hold on the clock
	// (a slow link's sleep, a hung endpoint): the pump does not wait for those.
	held func() int
}

// pumpStep is how far the pump moves the clock at a time.
const pumpStep = 100 * time.Millisecond

// newPumpedFleet starts n in-process nodes, their load included, on a simulated clock,
// with inFleet's timings (beats every 20 ms of real time, so the clock moves about 2.5
// times faster than real time; a merge wait of 1.5 s, since a node's second is pulled at
// the coordinator's next whole second, up to a second after it ends) adjusted by tune,
// and the pump that moves the clock.
func newPumpedFleet(t *testing.T, n int, tune func(*cluster.Options)) *pumpedFleet {
	t.Helper()
	// A past day: anything that still reads real time for a fleet instant shows at once.
	sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	nodes, coord, url := inFleetOn(t, n, true, func(o *cluster.Options) {
		o.BeatEvery, o.MergeWait = 20*time.Millisecond, 1500*time.Millisecond
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
			held := 0
			if f.held != nil {
				held = f.held()
			}
			f.mu.Unlock()
			beaten = beaten && cluster.PullsInFlight(f.coord) == held
			if beaten {
				break
			}
			if time.Now().After(end) {
				t.Errorf("the fleet's nodes were not beaten, or its pulls merged (%d out, %d held), at %v within a minute: the pump stops",
					cluster.PullsInFlight(f.coord), held, now)
				return
			}
		}
		f.sim.Advance(pumpStep)
	}
}

// hold makes the pump leave out the pulls held() counts (see held).
func (f *pumpedFleet) hold(held func() int) {
	f.mu.Lock()
	f.held = held
	f.mu.Unlock()
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
