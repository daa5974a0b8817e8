package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
)

// A node without a token takes no fleet control, from anyone: a coordinator's beat or
// start would otherwise be accepted from any process that can reach it.
func TestClusterRoutesNeedAToken(t *testing.T) {
	e := newEnvToken(t, "", "workload.readRate=10", "workload.writeRate=10")
	e.initMemory(nil)
	at := time.Now().Format(time.RFC3339Nano)
	for path, req := range map[string]map[string]any{
		"/api/v1/cluster/beat":    {"coordinator": "c", "run": "r", "leaseMs": 1000, "sent": at},
		"/api/v1/cluster/start":   {"coordinator": "c", "run": "r", "leaseMs": 1000, "at": at},
		"/api/v1/cluster/release": {"coordinator": "c", "run": "r"},
		"/api/v1/cluster/shape":   {"coordinator": "c", "class": "read", "shape": map[string]any{"kind": "constant", "rate": 5}},
	} {
		st, body := e.callAs("", http.MethodPost, path, req)
		if st != http.StatusForbidden || !strings.Contains(string(body), "accepts no fleet control") {
			t.Errorf("POST %s on a node without a token: %d %s; want 403 saying it accepts no fleet control", path, st, body)
		}
	}
	if st := e.inst.Status(); st.ReadsRunning || st.WritesRunning {
		t.Fatal("a start from an unauthenticated peer started the load")
	}

	// With a token, the coordinator that knows it controls the node.
	e = newEnv(t, "workload.readRate=10", "workload.writeRate=10")
	e.initMemory(nil)
	var resp cluster.BeatResponse
	e.must(http.StatusOK, http.MethodPost, "/api/v1/cluster/beat", map[string]any{"coordinator": "c", "sent": at}, &resp)
	if resp.ID != "test-node" || resp.Driver != "memory" || resp.Received.IsZero() {
		t.Errorf("beat answer %+v", resp)
	}
	e.must(http.StatusOK, http.MethodPost, "/api/v1/cluster/start", map[string]any{"coordinator": "c", "run": "r", "leaseMs": 60000, "at": at}, nil)
	if !e.inst.Status().ReadsRunning {
		t.Error("an authenticated coordinator's start did not start the load")
	}
	// The run's coordinator sets a class's shape; a bad one is refused naming the field,
	// and so is another coordinator.
	e.must(http.StatusNoContent, http.MethodPost, "/api/v1/cluster/shape", map[string]any{"coordinator": "c", "run": "r", "class": "read",
		"shape": map[string]any{"kind": "ramp", "from": 5, "to": 20, "overMs": 2000}}, nil)
	if st, body := e.call(http.MethodPost, "/api/v1/cluster/shape", map[string]any{"coordinator": "c", "run": "r", "class": "read",
		"shape": map[string]any{"kind": "steps", "everyMs": 1000}}); st != http.StatusUnprocessableEntity || !strings.Contains(string(body), "shape.rates") {
		t.Errorf("steps without rates: %d %s, want 422 naming shape.rates", st, body)
	}
	for _, who := range []map[string]any{{"coordinator": "other"}, {"coordinator": "other", "run": "r"}, {"coordinator": "c"}, {"coordinator": "c", "run": "r2"}} {
		req := map[string]any{"class": "read", "shape": map[string]any{"kind": "constant", "rate": 5}}
		for k, v := range who {
			req[k] = v
		}
		if st, body := e.call(http.MethodPost, "/api/v1/cluster/shape", req); st != http.StatusConflict {
			t.Errorf("a shape of %v while run r of c holds the node: %d %s, want 409", who, st, body)
		}
	}
	// Another coordinator is refused while the run holds the node.
	if st, body := e.call(http.MethodPost, "/api/v1/cluster/beat", map[string]any{"coordinator": "other", "run": "r2", "leaseMs": 1000, "sent": at}); st != http.StatusConflict {
		t.Errorf("second coordinator's beat: %d %s, want 409", st, body)
	}
}

// The fleet view's routes that change state refuse pages on other sites like a node's,
// and its controls do nothing then.
func TestFleetRoutesRefuseCrossSite(t *testing.T) {
	disc, err := discovery.Parse("static:127.0.0.1:1", discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	coord, err := cluster.New(cluster.Options{Self: discovery.Member{ID: "self", Addr: "127.0.0.1:1"}, Discovery: disc, Token: testToken, Config: snap})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Instance: coord.Fleet(), Coordinator: coord, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	e := &env{t: t, srv: srv, ts: ts}
	routes := stateChangingRoutes(e)
	for _, want := range []stateRoute{{"PATCH", "/api/v1/fleet/config"}, {"POST", "/api/v1/fleet/nodes/{id}/load/start"},
		{"POST", "/api/v1/fleet/nodes/{id}/load/stop"}, {"POST", "/api/v1/load/start"}, {"PATCH", "/api/v1/config"}} {
		if !slicesContains(routes, want) {
			t.Errorf("fleet view: %s %s is not declared as changing state", want.method, want.path)
		}
	}
	for _, r := range routes {
		for _, h := range crossSiteHeaders {
			resp, err := ts.Client().Do(stateRequest(e, r, "", h.headers))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("fleet view: %s %s with %s: status %d, want 403", r.method, r.path, h.name, resp.StatusCode)
			}
		}
	}
	if sc := coord.Scopes(); len(sc) != 0 || coord.RunID() != "" {
		t.Errorf("cross-site requests changed the fleet: scopes %v, run %q", sc, coord.RunID())
	}
}

func slicesContains(rs []stateRoute, r stateRoute) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// TestFleetViewWithoutAFleetSaysHow: /fleet/ on a node that coordinates no fleet answers
// 404 saying how to make it one (it was a bare 404 page).
func TestFleetViewWithoutAFleetSaysHow(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/fleet", "/fleet/", "/fleet/api/v1/status"} {
		code, body := e.call(http.MethodGet, path, nil)
		if code != http.StatusNotFound || !strings.Contains(string(body), "--peers") || !strings.Contains(string(body), "--discovery") {
			t.Errorf("GET %s: %d %s; want 404 naming --peers and --discovery", path, code, body)
		}
	}
}
