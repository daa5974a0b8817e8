package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/ndbenchapi"
)

// stateRoute is one method of a route that changes the node's state.
type stateRoute struct{ method, path string }

// stateChangingRoutes walks every route the server declares as changing state, its own
// and NDBench's, with every method each accepts (OPTIONS included for NDBench's, which
// answer it).
func stateChangingRoutes(e *env) []stateRoute {
	var out []stateRoute
	for _, d := range e.srv.declared {
		if d.effect == changesState {
			out = append(out, stateRoute{d.method, d.path})
		}
	}
	for _, r := range ndbenchapi.Routes() {
		if !r.ChangesState {
			continue
		}
		for _, m := range append(slices.Clone(r.Methods), http.MethodOptions) {
			out = append(out, stateRoute{m, r.Path})
		}
	}
	return out
}

// mustChangeState are routes the walk must include: a declaration that drops one of them
// (or a table that loses it) fails here, not in production.
var mustChangeState = []stateRoute{
	{"GET", "/REST/ndbench/driver/init/{client}"},
	{"GET", "/REST/ndbench/config/set"},
	{"GET", "/REST/ndbench/config/tunable/set"},
	{"GET", "/REST/ndbench/driver/start"},
	{"GET", "/REST/ndbench/driver/startReads"},
	{"GET", "/REST/ndbench/driver/startWrites"},
	{"GET", "/REST/ndbench/driver/stop"},
	{"GET", "/REST/ndbench/driver/startDataFill"},
	{"GET", "/REST/ndbench/driver/startDataFillAsync"},
	{"GET", "/REST/ndbench/driver/shutdownclient"},
	{"GET", "/REST/ndbench/driver/writeSingle/{key}"},
	{"POST", "/api/v1/driver/init"},
	{"POST", "/api/v1/driver/shutdown"},
	{"POST", "/api/v1/load/start"},
	{"POST", "/api/v1/load/stop"},
	{"POST", "/api/v1/backfill/start"},
	{"POST", "/api/v1/backfill/stop"},
	{"POST", "/api/v1/stats/reset"},
	{"PATCH", "/api/v1/config"},
	{"PUT", "/api/v1/kv/{key}"},
	{"POST", "/api/v1/session"},
	{"DELETE", "/api/v1/session"},
	{"POST", "/api/v1/cluster/beat"},
	{"POST", "/api/v1/cluster/start"},
	{"POST", "/api/v1/cluster/release"},
	{"POST", "/api/v1/cluster/shape"},
}

// crossSiteHeaders are what browsers send with a request made by a page on another site,
// in the forms current and older browsers use.
var crossSiteHeaders = []struct {
	name    string
	headers map[string]string
}{
	{"Origin and Sec-Fetch-Site cross-site", map[string]string{"Origin": "http://evil.com", "Sec-Fetch-Site": "cross-site"}},
	{"Sec-Fetch-Site cross-site only (img src)", map[string]string{"Sec-Fetch-Site": "cross-site"}},
	{"Sec-Fetch-Site same-site (another port)", map[string]string{"Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}},
	{"Origin only (older browser)", map[string]string{"Origin": "http://evil.com"}},
	{"Origin null", map[string]string{"Origin": "null"}},
}

// stateRequest is a request to r that would change state if accepted: the query of the
// issue's attacks and a valid body.
func stateRequest(e *env, r stateRoute, token string, headers map[string]string) *http.Request {
	e.t.Helper()
	path := strings.NewReplacer("{client}", "memory", "{key}", "T1", "{id}", "n1").Replace(r.path)
	var body string
	switch {
	case strings.Contains(path, "/config/") && strings.HasPrefix(path, ndbenchapi.Prefix):
		path += "?readRateLimit=20000&numReaders=64&redis.addrs=192.0.2.10:6379"
	case strings.HasSuffix(path, "/driver/start"):
		path += "?loadPattern=zipfian"
	case path == "/api/v1/driver/init":
		body = `{"driver":"memory"}`
	case path == "/api/v1/config":
		body = `{"values":{"workload.readRate":"20000","workload.readers":"64"}}`
	case path == "/api/v1/kv/T1":
		body = `{"value":"aGk="}`
	case path == "/api/v1/session" && r.method == http.MethodPost:
		body = `{"token":"` + testToken + `"}`
	case strings.HasPrefix(path, "/api/v1/cluster/"):
		// A page on another site posing as a coordinator: it would start the load.
		body = `{"coordinator":"evil","run":"r1","leaseMs":60000,"at":"2020-01-01T00:00:00Z"}`
	case path == "/api/v1/autotune":
		body = `{"latency":"10ms","start":1000}`
	case path == "/api/v1/fleet/config":
		body = `{"scope":"fleet","values":{"workload.readRate":"20000"}}`
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	e.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, r.method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// fingerprint is the node's state a cross-site request could change: configuration,
// driver, load, backfill, statistics span and the debug key.
func (e *env) fingerprint() string {
	e.t.Helper()
	st := e.inst.Status()
	backfill := "none"
	if st.Backfill != nil {
		backfill = fmt.Sprintf("%s/%d", st.Backfill.Phase, st.Backfill.Written)
	}
	key := "no driver"
	if st.Initialized {
		_, err := e.inst.Read(context.Background(), "T1")
		key = fmt.Sprintf("T1 missing %v", errors.Is(err, driver.ErrNotFound))
	}
	return fmt.Sprintf("config v%d, driver %q initialized %v, reads %v, writes %v, backfill %s, stats since %s, %s",
		st.ConfigVersion, st.Driver, st.Initialized, st.ReadsRunning, st.WritesRunning, backfill,
		e.inst.Collector().Cumulative().Start.Format(time.RFC3339Nano), key)
}

func TestCrossSiteRefusedOnEveryStateChangingRoute(t *testing.T) {
	for _, token := range []string{"", testToken} {
		t.Run(fmt.Sprintf("token %v", token != ""), func(t *testing.T) {
			e := newEnvToken(t, token, "workload.numKeys=100", "workload.readRate=10", "workload.writeRate=10")
			routes := stateChangingRoutes(e)
			for _, want := range mustChangeState {
				if !slices.Contains(routes, want) {
					t.Errorf("%s %s is not declared as changing state", want.method, want.path)
				}
			}
			// Without a driver, init would connect one; with one, start, backfill, kv and
			// shutdown would act: walk both states.
			for _, phase := range []string{"no driver", "driver connected"} {
				if phase == "driver connected" {
					e.initMemory(nil)
				}
				for _, r := range routes {
					for _, h := range crossSiteHeaders {
						before := e.fingerprint()
						resp, err := e.ts.Client().Do(stateRequest(e, r, token, h.headers))
						if err != nil {
							t.Fatalf("%s %s: %v", r.method, r.path, err)
						}
						resp.Body.Close()
						if resp.StatusCode != http.StatusForbidden {
							t.Errorf("%s: %s %s with %s: status %d, want 403", phase, r.method, r.path, h.name, resp.StatusCode)
						}
						if after := e.fingerprint(); after != before {
							t.Errorf("%s: %s %s with %s changed the node:\n  before %s\n  after  %s", phase, r.method, r.path, h.name, before, after)
						}
					}
				}
			}
		})
	}
}

// TestSameOriginAndScriptsStillChangeState: the protection must not lock out the UI (same
// origin), a user typing an address, curl and scripts (no browser headers), or a UI served
// from an allowlisted origin.
func TestSameOriginAndScriptsStillChangeState(t *testing.T) {
	e := newEnvToken(t, "")
	allowed := []struct {
		name    string
		headers map[string]string
	}{
		{"no browser headers (curl)", nil},
		{"Sec-Fetch-Site same-origin", map[string]string{"Sec-Fetch-Site": "same-origin"}},
		{"Origin equal to the host", map[string]string{"Origin": e.ts.URL}},
		{"Sec-Fetch-Site none (typed address)", map[string]string{"Sec-Fetch-Site": "none"}},
		{"allowlisted origin", map[string]string{"Origin": "https://ui.example.com", "Sec-Fetch-Site": "cross-site"}},
	}
	for i, a := range allowed {
		for _, r := range []stateRoute{{"GET", "/REST/ndbench/config/set"}, {"PATCH", "/api/v1/config"}} {
			v := e.fingerprint()
			resp, err := e.ts.Client().Do(stateRequest(e, r, "", a.headers))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s with %s: status %d, want 200", r.method, r.path, a.name, resp.StatusCode)
			}
			if e.fingerprint() == v {
				t.Errorf("%s %s with %s (%d): nothing changed", r.method, r.path, a.name, i)
			}
			// Put the config back so the next request changes it again.
			e.must(200, "PATCH", "/api/v1/config", map[string]any{"values": map[string]string{"workload.readRate": "10", "workload.readers": "1"}}, nil)
		}
	}
	req := stateRequest(e, stateRoute{"GET", "/REST/ndbench/driver/init/{client}"}, "", map[string]string{"Sec-Fetch-Site": "same-origin"})
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !e.inst.Status().Initialized {
		t.Errorf("same-origin GET driver/init/memory: status %d, initialized %v", resp.StatusCode, e.inst.Status().Initialized)
	}
}
