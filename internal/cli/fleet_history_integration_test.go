//go:build integration

package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/history"
)

// TestFleetRecordsTheMergedRun: a coordinator started with --results records the merged
// run of a fleet-wide driver session (two `ndbench serve` nodes) as one run of kind
// fleet, when the session ends through the fleet view; its figures are the fleet's
// (both nodes' reads), and the fleet view's History routes list it.
func TestFleetRecordsTheMergedRun(t *testing.T) {
	nodes := serveNodes(t, 2)
	db := filepath.Join(t.TempDir(), "history.db")
	base, out, errOut, _ := startServe(t, []string{"NDBENCH_TOKEN=" + fleetToken}, "--listen", "127.0.0.1:0", "--peers", peersOf(nodes),
		"--coordinate", "--results", db, "--tag", "fleet=two", "--set", "workload.readRate=400", "--set", "workload.writeEnabled=false")
	do := func(method, path, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fleetToken)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s (%v)\n%s%s", method, path, resp.StatusCode, b, err, out, errOut)
		}
		return b
	}
	do("POST", "/fleet/api/v1/driver/init", `{"driver":"memory"}`)
	do("POST", "/fleet/api/v1/load/start", "")
	var reads int64
	for deadline := time.Now().Add(time.Minute); reads < 400; {
		var r struct {
			Ops map[string]struct{ Count int64 } `json:"ops"`
		}
		if err := json.Unmarshal(do("GET", "/fleet/api/v1/report", ""), &r); err == nil {
			reads = r.Ops["read"].Count
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet reported %d reads within a minute", reads)
		}
		time.Sleep(100 * time.Millisecond)
	}
	do("POST", "/fleet/api/v1/driver/shutdown", "")

	var runs []history.Run
	for deadline := time.Now().Add(30 * time.Second); len(runs) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		runs = recorded(t, db)
	}
	if len(runs) != 1 || runs[0].Kind != "fleet" || runs[0].Driver != "memory" || runs[0].Tags["fleet"] != "two" {
		t.Fatalf("recorded %+v, want one fleet run of memory tagged fleet=two\n%s%s", runs, out, errOut)
	}
	if v, ok := figureOf(t, db, runs[0].ID, history.Figure{Series: "read", Metric: "count"}); !ok || v < float64(reads) {
		t.Errorf("read.count of the fleet run: %v (%v), want at least the %d reads the fleet reported before the shutdown", v, ok, reads)
	}
	if body := do("GET", "/fleet/api/v1/history/runs?kind=fleet", ""); !strings.Contains(string(body), `"kind":"fleet"`) {
		t.Errorf("the fleet view's History routes: %s", body)
	}
}
