package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/pacer"
)

// nodeID is a node's id in an in-process fleet (its address).
func nodeID(n *inNode) string { return strings.TrimPrefix(n.ts.URL, "http://") }

// waitFor polls cond every 50 ms until it holds or within passes, and says how long it
// took; what is the condition's description, cond's string the state it last saw.
func waitFor(t *testing.T, within time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s: not after %v; last seen: %s", what, within, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// simWaitFor is waitFor on a fleet on a simulated clock: it steps the fleet (stepOn)
// between looks, since what it waits for may wait on the clock (a shape's common
// instant, a start's). within is real time, a patience.
func simWaitFor(t *testing.T, within time.Duration, what string, stepOn func(), cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(within)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v; last seen: %s", what, within, state)
		}
		stepOn()
	}
}

// A node restarted mid-run (a new process under the same id, back before it is lost, or
// after it was lost and its share went to the others) gets its whole assignment again:
// the fleet's driver, its configuration scopes, its share of the rate and of the fleet's
// load shape, and the classes it ran; its share is assigned to it and achieved again.
//
// The fleet runs on one simulated clock, stepped once every node's address has been
// beaten, so a node down 100 ms is back before it is lost, and one down 3 s after it was
// lost (at 1 s) and its share moved (at 2.6 s: the lease last sent to it, at 600 ms when
// it was last alive, lapsed), as each case says (checked), however slowly a loaded
// machine runs the beats: on real time with LostAfter 1 s, the first could be found lost.
// (Down 2.5 s, the node came back at the step its share moved, and the two re-splits
// raced: docs/performance.md, stop 52.)
func TestInProcessRestartedNodeRejoinsWithItsAssignment(t *testing.T) {
	const lostAfter, step = time.Second, 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		down  time.Duration // how long the node is away (LostAfter is 1 s)
		shape bool          // the fleet runs a load shape rather than its rate
		write bool          // writes run too, and were stopped on the node before it restarted
	}{
		{name: "back before lost", down: 100 * time.Millisecond},
		{name: "back after lost", down: 3 * time.Second},
		{name: "shape, back before lost", down: 100 * time.Millisecond, shape: true},
		{name: "shape, back after lost", down: 3 * time.Second, shape: true},
		{name: "a stopped class stays stopped", down: 100 * time.Millisecond, write: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
			nodes, coord, url := inFleetOn(t, 3, true, func(o *cluster.Options) {
				o.Clock, o.BeatEvery, o.LostAfter = sim, 20*time.Millisecond, lostAfter
			})
			logs := make([]*beatLog, len(nodes))
			for i, n := range nodes {
				logs[i] = logBeats(n)
			}
			stepOn := func() { sim.Advance(step); beatenAt(t, sim, logs) }
			beatenAt(t, sim, logs)
			inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
				"workload.readRate": 600, "workload.writeRate": 300, "workload.writeEnabled": tc.write, "workload.numKeys": 100}}, nil)
			victim := nodes[2]
			id := nodeID(victim)
			inCall(t, http.MethodPatch, url("/api/v1/fleet/config"), map[string]any{"scope": "node:" + id,
				"values": map[string]any{"workload.readers": 3}}, nil)
			inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
			if tc.shape {
				// The fleet's SetShape returns at the shape's common instant.
				done := make(chan error, 1)
				go func() { done <- coord.Fleet().SetShape("read", pacer.Constant(900)) }()
				var err error
				simWaitFor(t, 30*time.Second, "the fleet's shape set", stepOn, func() (bool, string) {
					select {
					case err = <-done:
						return true, ""
					default:
						return false, "SetShape waiting"
					}
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			ctx := context.Background()
			if _, err := coord.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.write {
				if err := coord.StopNode(ctx, id, "write"); err != nil {
					t.Fatal(err)
				}
			}
			for range 10 { // a second of load
				stepOn()
			}

			victim.kill()
			beatenAt(t, sim, logs) // its last answer is at the kill
			for elapsed := step; elapsed <= tc.down; elapsed += step {
				stepOn()
			}
			health := cluster.Health("")
			for _, m := range coord.Members() {
				if m.ID == id {
					health = m.Health
				}
			}
			if lost := health == cluster.Lost; lost != (tc.down >= lostAfter) {
				t.Fatalf("down %v the node is %s; want lost if and only if down at least LostAfter (%v)", tc.down, health, lostAfter)
			}
			if tc.down >= lostAfter {
				simWaitFor(t, 30*time.Second, "the lost node's share moved to the others", func() { time.Sleep(5 * time.Millisecond) }, func() (bool, string) {
					r0, _, _ := nodes[0].inst.Config().Value("workload.readRate")
					r1, _, _ := nodes[1].inst.Config().Value("workload.readRate")
					return r0 == "300" && r1 == "300", "readRates " + r0 + ", " + r1
				})
			}
			victim.boot()
			back := sim.Now()
			// The waits return as soon as the state is seen; their bounds only turn a node
			// that never gets its assignment into a failure.
			simWaitFor(t, 30*time.Second, "restarted node runs its share", stepOn, func() (bool, string) {
				st := victim.inst.Status()
				readRate, _, _ := victim.inst.Config().Value("workload.readRate")
				readers, _, _ := victim.inst.Config().Value("workload.readers")
				state := "driver " + st.Driver + ", readRate " + readRate + ", readers " + readers
				ok := st.Driver == "memory" && st.Running["read"] && readRate == "200" && readers == "3"
				if tc.shape {
					sets := victim.shapes.sets()
					ok = ok && len(sets) > 0 && sets[len(sets)-1].shape.Rate(0) == 300
					state += ", shapes " + strings.Repeat("+", len(sets))
				}
				return ok, state
			})
			t.Logf("restarted node ran its share %v after it was back (simulated)", clock.Since(sim, back))
			if tc.write && victim.inst.Status().Running["write"] {
				t.Errorf("restarted node runs writes; want them stopped, as they were before it restarted")
			}
			// The coordinator assigns it its share again and sees it run. How close the node
			// comes to the share is the pacer's (tested on simulated time).
			simWaitFor(t, 30*time.Second, "the restarted node's share assigned and running", stepOn, func() (bool, string) {
				for _, m := range coord.Members() {
					if m.ID == id {
						return m.Health == cluster.Alive && m.InRun && m.Assigned["read"] == 200 &&
							m.Achieved["read"] > 0, fmt.Sprintf("%+v", m)
					}
				}
				return false, "not a member"
			})
			for _, n := range nodes[:2] {
				if got, _, _ := n.inst.Config().Value("workload.readRate"); got != "200" {
					t.Errorf("another node's readRate %s after the restart; want 200, a third of 600", got)
				}
			}
			if err := coord.Stop(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// secondCoordinator is another coordinator over the same nodes, holding the same token.
func secondCoordinator(t *testing.T, nodes []*inNode) *cluster.Coordinator {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, nodeID(n))
	}
	disc, err := discovery.Parse("static:"+strings.Join(addrs, ","), discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.New(cluster.Options{Self: discovery.Member{ID: "second", Addr: "127.0.0.1:1"}, Discovery: disc,
		Token: inToken, Config: snap, BeatEvery: 200 * time.Millisecond, SuspectAfter: 600 * time.Millisecond,
		LostAfter: time.Second, Lease: 2 * time.Second, StartDelay: 200 * time.Millisecond, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go c.Run(ctx)
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// A second coordinator holding the fleet's token can change nothing on nodes that another
// coordinator's run holds: every command is refused (409, ErrClaimed) and each node keeps
// its load, rate, driver and shape.
func TestInProcessSecondCoordinatorCannotChangeAHeldNode(t *testing.T) {
	nodes, coord, url := inFleet(t, 2)
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 400, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	ctx := context.Background()
	if _, err := coord.Start(ctx, "read"); err != nil {
		t.Fatal(err)
	}
	second := secondCoordinator(t, nodes)
	id := nodeID(nodes[1])
	for _, m := range second.Members() {
		if m.HeldBy != nodeID(nodes[0]) {
			t.Errorf("the second coordinator's view of %s: held by %q; want %s, the first coordinator", m.ID, m.HeldBy, nodeID(nodes[0]))
		}
	}
	for _, m := range coord.Members() {
		if m.HeldBy != "" {
			t.Errorf("the first coordinator's view of %s: held by %q; want none, its own run holds it", m.ID, m.HeldBy)
		}
	}
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"stop", func() error { return second.Stop(ctx) }},
		{"stop reads", func() error { return second.Stop(ctx, "read") }},
		{"stop one node", func() error { return second.StopNode(ctx, id) }},
		{"start", func() error { _, err := second.Start(ctx, "read"); return err }},
		{"start one node", func() error { return second.StartNode(ctx, id, "read") }},
		{"re-rate", func() error {
			_, err := second.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeFleet}, map[string]string{"workload.readRate": "50"})
			return err
		}},
		{"re-rate one node", func() error {
			_, err := second.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeNode, Node: id}, map[string]string{"workload.readRate": "5"})
			return err
		}},
		{"shape", func() error { return second.Fleet().SetShape("read", pacer.Constant(10)) }},
		{"driver init", func() error { return second.InitDriver(ctx, "memory", nil) }},
		{"driver shutdown", func() error { return second.Shutdown(ctx) }},
		{"backfill", func() error { return second.Backfill(ctx, cluster.BackfillOptions{}) }},
		{"stop backfill", func() error { return second.StopBackfill(ctx) }},
		{"stats reset", func() error { return second.ResetStats(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shapes := len(nodes[0].shapes.sets()) + len(nodes[1].shapes.sets())
			err := tc.do()
			if !errors.Is(err, cluster.ErrClaimed) {
				t.Errorf("%s by a second coordinator: %v; want ErrClaimed", tc.name, err)
			}
			for i, n := range nodes {
				st := n.inst.Status()
				rate, _, _ := n.inst.Config().Value("workload.readRate")
				if !st.Running["read"] || st.Driver != "memory" || rate != "200" {
					t.Errorf("node %d after a refused %s: driver %q, running %v, readRate %s; want memory, reads at 200 as the first run set",
						i, tc.name, st.Driver, st.Running, rate)
				}
			}
			if got := len(nodes[0].shapes.sets()) + len(nodes[1].shapes.sets()); got != shapes {
				t.Errorf("a refused %s set %d load shapes on the nodes", tc.name, got-shapes)
			}
		})
	}
	// The node itself refuses, whatever the second coordinator believes: a command that
	// names another coordinator or another run of the same one changes nothing.
	for _, as := range []struct{ coordinator, run string }{{"second", ""}, {"second", coord.RunID()}, {nodeID(nodes[0]), "another-run"}} {
		for _, c := range []struct{ method, path, body string }{
			{http.MethodPost, "/api/v1/load/stop", `{}`},
			{http.MethodPatch, "/api/v1/config", `{"values":{"workload.readRate":1}}`},
			{http.MethodPost, "/api/v1/driver/shutdown", ``},
		} {
			req, _ := http.NewRequest(c.method, nodes[1].ts.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Authorization", "Bearer "+inToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(cluster.HeaderCoordinator, as.coordinator)
			req.Header.Set(cluster.HeaderRun, as.run)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusConflict {
				t.Errorf("%s %s as %+v: %s; want 409 Conflict", c.method, c.path, as, resp.Status)
			}
		}
	}
	st := nodes[1].inst.Status()
	rate, _, _ := nodes[1].inst.Config().Value("workload.readRate")
	if !st.Running["read"] || st.Driver != "memory" || rate != "200" {
		t.Errorf("node after refused commands: driver %q, running %v, readRate %s; want memory, reads at 200", st.Driver, st.Running, rate)
	}
	// The run's own coordinator still controls it; once the run ends, the second may.
	if err := coord.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the second coordinator may change released nodes", func() (bool, string) {
		_, err := second.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeFleet}, map[string]string{"workload.readRate": "50"})
		if err != nil {
			return false, err.Error()
		}
		rate, _, _ := nodes[1].inst.Config().Value("workload.readRate")
		return rate == "25", "readRate " + rate
	})
}
