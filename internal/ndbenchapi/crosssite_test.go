package ndbenchapi

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/node"
)

func nodeState(inst *node.Node) string {
	st := inst.Status()
	bf := "none"
	if st.Backfill != nil {
		bf = st.Backfill.Phase
	}
	return fmt.Sprintf("config v%d, driver %q, reads %v, writes %v, backfill %s", st.ConfigVersion, st.Driver, st.ReadsRunning, st.WritesRunning, bf)
}

// TestCrossSiteRefusedWhateverTheMethod walks the route table: every route that changes
// state refuses a page on another site for every method it accepts, GET included, and
// changes nothing; routes that only report still answer.
func TestCrossSiteRefusedWhateverTheMethod(t *testing.T) {
	srv, inst := newServer(t)
	headers := []map[string]string{
		{"Origin": "http://evil.com", "Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "http://evil.com"},
		{"Origin": "null"},
	}
	changing := 0
	for _, phase := range []string{"no driver", "driver connected"} {
		if phase == "driver connected" {
			mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
		}
		for _, r := range Routes() {
			path := strings.NewReplacer("{client}", "memory", "{key}", "T1").Replace(r.Path)
			if strings.Contains(path, "/config/") && strings.HasSuffix(path, "/set") {
				path += "?readRateLimit=20000&numReaders=64"
			}
			for _, m := range append(slices.Clone(r.Methods), http.MethodOptions) {
				for _, h := range headers {
					req, err := http.NewRequest(m, srv.URL+path, nil)
					if err != nil {
						t.Fatal(err)
					}
					for k, v := range h {
						req.Header.Set(k, v)
					}
					before := nodeState(inst)
					resp, err := srv.Client().Do(req)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					refused := resp.StatusCode == http.StatusForbidden
					if refused != r.ChangesState {
						t.Errorf("%s: %s %s with %v: status %d; changes state: %v", phase, m, r.Path, h, resp.StatusCode, r.ChangesState)
					}
					if after := nodeState(inst); r.ChangesState && after != before {
						t.Errorf("%s: %s %s with %v changed the node: %s -> %s", phase, m, r.Path, h, before, after)
					}
				}
			}
			if r.ChangesState && phase == "no driver" {
				changing++
			}
		}
	}
	if changing < 15 {
		t.Errorf("only %d routes declared as changing state", changing)
	}
	// The same request from the same origin, or from a script, still works.
	for _, h := range []map[string]string{nil, {"Sec-Fetch-Site": "same-origin"}, {"Origin": srv.URL}} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/REST/ndbench/config/set?numReaders=3", nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("config/set with %v: status %d, want 200", h, resp.StatusCode)
		}
	}
}
