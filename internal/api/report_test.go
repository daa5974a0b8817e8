package api

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/report"
)

func TestReportEndpoints(t *testing.T) {
	e := newEnv(t, "workload.readRate=500", "workload.writeRate=100")
	e.initMemory(nil)
	e.must(200, "POST", "/api/v1/load/start", nil, nil)
	time.Sleep(2200 * time.Millisecond) // two whole intervals in the series

	st, body := e.call("GET", "/api/v1/report", nil)
	if st != 200 {
		t.Fatalf("GET /api/v1/report: %d %s", st, body)
	}
	var r report.Report
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Ops["read"].Count == 0 || r.Ops["write"].Count == 0 || r.Driver.Name != "memory" || len(r.Series) == 0 || len(r.Config) == 0 {
		t.Fatalf("report lacks results: ops %+v driver %q series %d config %d", r.Ops, r.Driver.Name, len(r.Series), len(r.Config))
	}

	st, body = e.call("GET", "/api/v1/report.html", nil)
	if st != 200 || !strings.Contains(string(body), "<html") || !strings.Contains(string(body), "ndbench report") {
		t.Fatalf("GET /api/v1/report.html: %d %.200s", st, body)
	}
	// Self-contained: the page loads nothing from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)=["']?(https?:)?//`).FindString(string(body)); m != "" {
		t.Fatalf("HTML report refers outside itself: %s", m)
	}

	for _, p := range []string{"/api/v1/report", "/api/v1/report.html"} {
		if st, _ := e.callAs("", "GET", p, nil); st != 401 {
			t.Errorf("GET %s without token: %d, want 401", p, st)
		}
	}
}
