package cluster_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
func TestInProcessFleetOutlivesItsDiscovery(t *testing.T) {
	var fd *faultyDiscovery
	nodes, coord, url := inFleetWith(t, 3, func(o *cluster.Options) {
		if o.Discovery != nil {
			fd = &faultyDiscovery{Discoverer: o.Discovery}
			o.Discovery = fd
		}
		o.Refresh = 100 * time.Millisecond
	})
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
	for end := time.Now().Add(10 * time.Second); ; {
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
		time.Sleep(5 * time.Second) // past the lease (2 s) and the lost time (1 s)
		allIn(tc.name)
		// The fleet view says which node it keeps though discovery lost it.
		if got := kept(); strings.Join(got, ",") != strings.Join(tc.hidden, ",") {
			t.Errorf("%s: the members kept after they left discovery are %v, want %v", tc.name, got, tc.hidden)
		}
		fd.set(false)
		time.Sleep(500 * time.Millisecond)
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
	for end := time.Now().Add(5 * time.Second); ; {
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
func TestInProcessUndiscoveredSilentNodeKeepsItsShareUntilItsLeaseLapses(t *testing.T) {
	const lease = 2 * time.Second
	var fd *faultyDiscovery
	nodes, coord, url := inFleetWith(t, 3, func(o *cluster.Options) {
		if o.Discovery != nil {
			fd = &faultyDiscovery{Discoverer: o.Discovery}
			o.Discovery = fd
		}
		o.Refresh = 100 * time.Millisecond
	})
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 600, "workload.writeEnabled": false, "workload.numKeys": 500}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	time.Sleep(time.Second)

	cutOff := nodes[2]
	var dead http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "cut off", http.StatusServiceUnavailable)
	})
	cutOff.handler.Store(&dead)
	fd.set(false, strings.TrimPrefix(cutOff.ts.URL, "http://"))
	cut := time.Now()
	var moved time.Duration
	for moved == 0 {
		if got, _, _ := nodes[0].inst.Config().Value("workload.readRate"); got == "300" {
			moved = time.Since(cut)
		}
		if time.Since(cut) > lease+10*time.Second {
			t.Fatalf("%v after the cut the share has not moved: %+v", time.Since(cut), coord.Members())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the silent, undiscovered node's share moved %v after the cut (lease %v)", moved, lease)
	// Its last renewing beat answered at most a beat period (200 ms) before the cut.
	if moved < lease-200*time.Millisecond {
		t.Errorf("the share of a node that went silent and left discovery moved %v after the cut, before its lease (%v) could have lapsed", moved, lease)
	}
}
