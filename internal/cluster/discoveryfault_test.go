package cluster_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
)

// faultyDiscovery is a discoverer that can hang (a registry cut off: a lookup answers
// nothing until its context ends) and hide members (their registrations lapsed).
type faultyDiscovery struct {
	discovery.Discoverer
	mu      sync.Mutex
	hang    bool
	release chan struct{} // closed when a hang ends
	hidden  map[string]bool
}

func (d *faultyDiscovery) Members(ctx context.Context) ([]discovery.Member, error) {
	d.mu.Lock()
	hang, release, hidden := d.hang, d.release, d.hidden
	d.mu.Unlock()
	if hang {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return nil, context.DeadlineExceeded
		}
	}
	ms, err := d.Discoverer.Members(ctx)
	var out []discovery.Member
	for _, m := range ms {
		if !hidden[m.ID] {
			out = append(out, m)
		}
	}
	return out, err
}

func (d *faultyDiscovery) set(hang bool, hidden ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.release == nil {
		d.release = make(chan struct{})
	}
	if d.hang && !hang {
		close(d.release)
		d.release = make(chan struct{})
	}
	d.hang, d.hidden = hang, map[string]bool{}
	for _, id := range hidden {
		d.hidden[id] = true
	}
}

// The registry the coordinator discovers its members in fails while the fleet runs, for
// longer than the nodes' lease (2 s): first it answers nothing, then it no longer lists
// a node that still answers its beats. Either way every node keeps running its share,
// and the membership stays as it was: discovery decides who is a member, beats decide who
// runs, and a live node's share taken away would be run twice. (The same with real etcd
// cut off over a network: TestPartitionEtcdCutOff.)
//
// The fleet runs on a simulated clock moved on only once every node has been beaten
// (pumpedFleet): on real time, a loaded machine's late beats could find a node lost that
// the test says stays alive.
func TestInProcessFleetOutlivesItsDiscovery(t *testing.T) {
	var fd *faultyDiscovery
	f := newPumpedFleet(t, 3, func(o *cluster.Options) {
		if o.Discovery != nil {
			fd = &faultyDiscovery{Discoverer: o.Discovery}
			o.Discovery = fd
		}
		o.Refresh = 100 * time.Millisecond
	})
	nodes, coord, url := f.nodes, f.coord, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 90, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	allIn := func(when string) {
		t.Helper()
		ms := coord.Members()
		if len(ms) != 3 {
			t.Fatalf("%s: %d members, want 3: %+v", when, len(ms), ms)
		}
		for _, m := range ms {
			if m.Health != cluster.Alive || !m.InRun || m.Assigned["read"] != 30 {
				t.Errorf("%s: member %s is %s, in the run %v, assigned %v reads/s; want alive, in the run, 30/s",
					when, m.ID, m.Health, m.InRun, m.Assigned["read"])
			}
		}
		for i, n := range nodes {
			if !n.inst.Status().Running["read"] {
				t.Errorf("%s: node %d does not run its reads", when, i)
			}
		}
	}
	for end := time.Now().Add(time.Minute); ; {
		in := 0
		for _, m := range coord.Members() {
			if m.InRun && m.Health == cluster.Alive {
				in++
			}
		}
		if in == 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the fleet does not run on its 3 members: %+v", coord.Members())
		}
		time.Sleep(50 * time.Millisecond)
	}
	victim := coord.Members()[2].ID
	// kept says which members the fleet view says it keeps after they left discovery.
	kept := func() []string {
		var body struct {
			Members []struct {
				ID   string `json:"id"`
				Kept bool   `json:"keptAfterLeftDiscovery"`
			} `json:"members"`
		}
		inCall(t, http.MethodGet, url("/api/v1/fleet/members"), nil, &body)
		var ids []string
		for _, m := range body.Members {
			if m.Kept {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	for _, tc := range []struct {
		name   string
		hang   bool
		hidden []string
	}{
		{name: "discovery answers nothing", hang: true},
		{name: "discovery no longer lists a live node", hidden: []string{victim}},
	} {
		fd.set(tc.hang, tc.hidden...)
		f.waitSim(t, 5*time.Second) // past the lease (2 s) and the lost time (1 s)
		allIn(tc.name)
		// The fleet view says which node it keeps though discovery lost it.
		if got := kept(); strings.Join(got, ",") != strings.Join(tc.hidden, ",") {
			t.Errorf("%s: the members kept after they left discovery are %v, want %v", tc.name, got, tc.hidden)
		}
		fd.set(false)
		f.waitSim(t, 500*time.Millisecond)
		allIn(tc.name + ", then healed")
		if got := kept(); len(got) > 0 {
			t.Errorf("%s, then healed: members %v still said kept after they left discovery", tc.name, got)
		}
	}
	// The API's document describes the flag.
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	inCall(t, http.MethodGet, url("/openapi.json"), nil, &doc)
	if d := doc.Components.Schemas["MemberStatus"].Properties["keptAfterLeftDiscovery"].Description; !strings.Contains(d, "Discovery no longer lists the node") {
		t.Errorf("the OpenAPI document's MemberStatus.keptAfterLeftDiscovery says %q; want it described", d)
	}
	// Once the run ends, a node discovery no longer lists leaves.
	inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)
	fd.set(false, victim)
	for end := time.Now().Add(time.Minute); ; {
		var health []string
		for _, m := range coord.Members() {
			if m.ID == victim {
				health = append(health, string(m.Health))
			}
		}
		if strings.Join(health, "") == string(cluster.Left) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("a node discovery no longer lists after the run is %v, want left", health)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A node goes silent and leaves discovery at once (its registration's TTL shorter than
// the lease, or revoked): it may still run its share until its lease lapses, as a lost
// node may, so its share moves only then, not when discovery stops listing it.
//
// The fleet runs on a simulated clock, stepped 100 ms at a time once every node still
// beaten (not left) has been beaten twice at the step's instant, as
// TestInProcessLostNodeKeepsItsShareUntilItsLeaseLapses's: the silent node is kept while
// it is alive or suspect, lost 1 s after its last answer, then left, and its share moves
// at the first step at or past the lease last sent to it (with its last beat while
// alive, at SuspectAfter), not one step before. On real time the move was timed by the
// wall clock, which a loaded machine's late beats stretched. On the simulated clock this
// found the refresh judging the left node's lease on real time (time.Now), and moving
// its share at once.
func TestInProcessUndiscoveredSilentNodeKeepsItsShareUntilItsLeaseLapses(t *testing.T) {
	const suspectAfter, lease, step = 600 * time.Millisecond, 2 * time.Second, 100 * time.Millisecond
	sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	var fd *faultyDiscovery
	nodes, coord, url := inFleetOn(t, 3, true, func(o *cluster.Options) {
		if o.Discovery != nil {
			fd = &faultyDiscovery{Discoverer: o.Discovery}
			o.Discovery = fd
		}
		o.Clock, o.BeatEvery, o.Refresh = sim, 20*time.Millisecond, 100*time.Millisecond
		o.SuspectAfter, o.Lease = suspectAfter, lease
	})
	logs := map[string]*beatLog{}
	for _, n := range nodes {
		logs[nodeID(n)] = logBeats(n)
	}
	// beaten is beatenAt for the members still beaten, looked up while it waits: one
	// found left meanwhile (the refresh runs on real time) is sent no more beats.
	beaten := func() {
		t.Helper()
		now := sim.Now()
		marks := map[string]int{}
		for id, l := range logs {
			marks[id] = l.mark()
		}
		for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			done := true
			for _, m := range coord.Members() {
				done = done && (m.Health == cluster.Left || logs[m.ID].since(marks[m.ID], now) >= 2)
			}
			if done {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("the nodes were not beaten at %v within 30 s: %+v", now, coord.Members())
			}
		}
	}
	readRate := func(n *inNode) string { v, _, _ := n.inst.Config().Value("workload.readRate"); return v }
	beaten()
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 600, "workload.writeEnabled": false, "workload.numKeys": 500}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	if _, err := coord.Start(context.Background(), "read"); err != nil {
		t.Fatal(err)
	}
	for range 10 { // a second of load
		sim.Advance(step)
		beaten()
	}

	cutOff := nodes[2]
	logs[nodeID(cutOff)].setCut(true) // its API answers 503, as one cut off behind a proxy
	fd.set(false, nodeID(cutOff))
	beaten()
	for elapsed := time.Duration(0); elapsed <= suspectAfter+lease+3*step; elapsed += step {
		if elapsed > 0 {
			sim.Advance(step)
			beaten()
		}
		if elapsed >= suspectAfter+lease {
			for end := time.Now().Add(time.Minute); readRate(nodes[0]) != "300"; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%v after the cut the share has not moved: %+v", elapsed, coord.Members())
				}
			}
		} else if r := readRate(nodes[0]); r != "200" {
			t.Fatalf("%v after the cut node 0 runs %s reads/s: the share of a node that went silent and left discovery moved before the lease last sent to it (at %v) lapsed",
				elapsed, r, suspectAfter)
		}
	}
}
