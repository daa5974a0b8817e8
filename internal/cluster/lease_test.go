package cluster_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
)

// A node cut off from its coordinator (here its API answers 503, its process and agent
// live on) is found lost after LostAfter, but its share moves to the others only once its
// lease has lapsed: until then it may still run it, and the fleet would run over its
// target. It stops its own load at its lease's end; when the link heals it rejoins and
// takes its share again.
//
// The whole fleet (coordinator, agents, the nodes' load) runs on one simulated clock,
// moved a step at a time once every node has been beaten at the step's instant, so each
// instant is exact: the node is lost LostAfter after its last answer, stops its load at
// the first step past its lease, and its share moves at the first step at or past the
// lease the coordinator last sent it (with the beat at SuspectAfter, its last one while it
// was alive) and not one step before. On real time this test bounded when the share moved
// by the wall clock, which a loaded machine's late beats made fail.
func TestInProcessLostNodeKeepsItsShareUntilItsLeaseLapses(t *testing.T) {
	const suspectAfter, lostAfter, lease, step = 600 * time.Millisecond, time.Second, 2 * time.Second, 100 * time.Millisecond
	sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	nodes, coord, url := inFleetOn(t, 3, true, func(o *cluster.Options) {
		o.Clock, o.BeatEvery = sim, 20*time.Millisecond
		o.SuspectAfter, o.LostAfter, o.Lease = suspectAfter, lostAfter, lease
	})
	logs := make([]*beatLog, len(nodes))
	for i, n := range nodes {
		logs[i] = logBeats(n)
	}
	beaten := func() { beatenAt(t, sim, logs) }
	stepOn := func() { sim.Advance(step); beaten() }
	readRate := func(n *inNode) string { v, _, _ := n.inst.Config().Value("workload.readRate"); return v }
	running := func(n *inNode) bool { return n.inst.Status().Running["read"] }
	// eventually waits for what a goroutine of the fleet does after a step (an agent's
	// stop, a re-split's calls); the patience only turns one that never comes into a
	// failure.
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%v after the cut: %s: not within 30 s", clock.Since(sim, sim.Now()), what)
			}
		}
	}

	beaten()
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 600, "workload.writeEnabled": false, "workload.numKeys": 500}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	// The coordinator's start returns at once (the fleet's API waits for the common
	// instant, on the simulated clock).
	if _, err := coord.Start(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	for range 10 { // a second of load, the leases renewed at every step
		stepOn()
	}
	for i, n := range nodes {
		if !running(n) || readRate(n) != "200" {
			t.Fatalf("node %d before the cut: running %v, readRate %s; want running at 200, a third of 600", i, running(n), readRate(n))
		}
	}

	cutOff := nodes[2]
	logs[2].setCut(true)
	cut := sim.Now()
	beaten() // its last answer and its last renewed lease are at the cut
	addr := nodeID(cutOff)
	for elapsed := time.Duration(0); elapsed <= suspectAfter+lease+3*step; elapsed += step {
		if elapsed > 0 {
			stepOn()
		}
		if got := clock.Since(sim, cut); got != elapsed {
			t.Fatalf("the clock reads %v after the cut, want %v", got, elapsed)
		}
		health := cluster.Health("")
		for _, m := range coord.Members() {
			if m.ID == addr {
				health = m.Health
			}
		}
		if lost := health == cluster.Lost; lost != (elapsed >= lostAfter) {
			t.Errorf("%v after the cut the cut-off node is %s; want lost from %v on, not before", elapsed, health, lostAfter)
		}
		// The node's own lease lapses at the first instant past cut+lease: its agent
		// stops its load then, in the agent's goroutine.
		if elapsed > lease {
			eventually("the cut-off node stops its load past its lease", func() bool { return !running(cutOff) })
		} else if !running(cutOff) {
			t.Errorf("%v after the cut the cut-off node stopped its load, within its lease of %v", elapsed, lease)
		}
		if elapsed >= suspectAfter+lease {
			eventually("its share moves to the others", func() bool { return readRate(nodes[0]) == "300" && readRate(nodes[1]) == "300" })
		} else if r0, r1 := readRate(nodes[0]), readRate(nodes[1]); r0 != "200" || r1 != "200" {
			t.Fatalf("%v after the cut the others' readRates are %s and %s: its share moved before the lease last sent to it (at %v) lapsed",
				elapsed, r0, r1, suspectAfter)
		}
	}

	logs[2].setCut(false)
	healed := sim.Now()
	for end := time.Now().Add(30 * time.Second); readRate(nodes[0]) != "200" || readRate(cutOff) != "200" || !running(cutOff); {
		if time.Now().After(end) {
			t.Fatalf("%v after the heal: node 0 readRate %s, healed node readRate %s, running %v; want both at 200, the healed node running",
				clock.Since(sim, healed), readRate(nodes[0]), readRate(cutOff), running(cutOff))
		}
		stepOn()
	}
	t.Logf("healed node runs its share again %v after the heal (simulated)", clock.Since(sim, healed))
	if err := coord.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
