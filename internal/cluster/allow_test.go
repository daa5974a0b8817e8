package cluster_test

import (
	"net/http"
	"strings"
	"testing"

	_ "github.com/ndbench/ndbench/drivers/http"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/config"
)

// TestFleetPatchPassesTheAllowGate: the nodes take the fleet's values as API input and
// gate them with their own --allow, so the coordinator checks the same gate before any
// node is told. A fleet change to an option that reaches beyond the store (an http
// target, a path, a script), which the coordinator's --allow does not permit, is refused
// with 403 naming the key and the flag, and applies nowhere: not in the fleet's
// configuration, and not on a node whose own --allow would have taken it. Before the
// coordinator gated it, the permissive node applied it, the other refused it, and the
// fleet's configuration kept it.
func TestFleetPatchPassesTheAllowGate(t *testing.T) {
	tests := []struct {
		name, key, value, flag string
		allow                  config.Allow // the coordinator's
		accepted               bool
	}{
		{name: "http target", key: "drivers.http.url", value: "http://elsewhere.example:8080", flag: "--allow=http-targets"},
		{name: "request line to another host", key: "drivers.http.read", value: "GET http://elsewhere.example/kv/{key}", flag: "--allow=http-targets"},
		{name: "allowed by the coordinator's --allow", key: "drivers.http.url", value: "http://elsewhere.example:8080",
			allow: config.Allow{Targets: true}, accepted: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// On a simulated clock moved on only once every node has been beaten
			// (pumpedFleet): a node judged lost on a loaded machine is not the subject.
			f := newPumpedFleet(t, 2, func(o *cluster.Options) { o.Allow = tc.allow })
			nodes, coord, url := f.nodes, f.coord, f.url
			// One node's operator allowed everything; the other allowed nothing but what
			// the coordinator allows.
			nodes[0].inst.Store().SetAllow(config.AllowAll())
			nodes[1].inst.Store().SetAllow(tc.allow)
			before := make([]string, len(nodes))
			for i, n := range nodes {
				before[i], _, _ = n.inst.Config().Value(tc.key)
			}
			fleetBefore := coord.FleetConfig().Version

			err := callAs(inToken, http.MethodPatch, url("/api/v1/fleet/config"),
				map[string]any{"values": map[string]string{tc.key: tc.value}}, nil)
			if tc.accepted {
				if err != nil {
					t.Fatalf("fleet PATCH refused: %v", err)
				}
				for i, n := range nodes {
					if got, _, _ := n.inst.Config().Value(tc.key); got != tc.value {
						t.Errorf("node %d: %s=%q, want %q", i, tc.key, got, tc.value)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("fleet PATCH of %s: got %v, want 403 naming %s and %s", tc.key, err, tc.key, tc.flag)
			}
			for i, n := range nodes {
				if got, _, _ := n.inst.Config().Value(tc.key); got != before[i] {
					t.Errorf("node %d applied the refused change: %s=%q (was %q)", i, tc.key, got, before[i])
				}
			}
			if v := coord.FleetConfig().Version; v != fleetBefore {
				t.Errorf("the fleet's configuration moved to version %d (was %d) on a refused change", v, fleetBefore)
			}
			if sc := coord.Scopes(); len(sc["fleet"]) != 0 {
				t.Errorf("the fleet's scopes keep the refused change: %v", sc)
			}
		})
	}
}

// TestFleetDriverInitPassesTheAllowGate: a fleet driver init whose options reach beyond
// the store, which the coordinator's --allow does not permit, is refused with 403 before
// any node is told: a node whose own --allow would take it does not connect alone.
func TestFleetDriverInitPassesTheAllowGate(t *testing.T) {
	f := newPumpedFleet(t, 2, nil) // no node judged lost on a loaded machine
	nodes, url := f.nodes, f.url
	nodes[0].inst.Store().SetAllow(config.AllowAll())
	err := callAs(inToken, http.MethodPost, url("/api/v1/driver/init"),
		map[string]any{"driver": "http", "options": map[string]string{"url": "http://elsewhere.example:8080"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "drivers.http.url") || !strings.Contains(err.Error(), "--allow=http-targets") {
		t.Fatalf("fleet driver init: %v; want 403 naming drivers.http.url and --allow=http-targets", err)
	}
	for i, n := range nodes {
		if st := n.inst.Status(); st.Initialized {
			t.Errorf("node %d connected %s on a refused fleet init", i, st.Driver)
		}
	}
}
