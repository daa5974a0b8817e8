package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// nightlyStore records a nightly series in a fresh SQLite store: n runs of redis tagged
// store=redis-7.2 whose read p99 (about 10 ms, 3% noise) steps up 20% from run stepAt
// (1-based), then one memory run of the ycsb-b workload with another tag.
func nightlyStore(t *testing.T, n, stepAt int) history.Store {
	t.Helper()
	st, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rng := rand.New(rand.NewPCG(3, 1))
	start := time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	rec := func(i int, driver, workload string, tags map[string]string, p99 float64) {
		r := &report.Report{FormatVersion: report.Version, Tool: report.Tool{Name: "ndbench", Version: "v1"},
			Started: start.AddDate(0, 0, i), Ended: start.AddDate(0, 0, i).Add(time.Minute), Seconds: 60,
			Driver: report.Driver{Name: driver},
			Ops: map[string]stats.OpSummary{
				"read":  {Count: 60000, Rate: 1000, ResponseTime: stats.Latency{P50: p99 / 10, P99: p99, P999: 2 * p99, Max: 3 * p99}},
				"write": {Count: 6000, Rate: 100, ResponseTime: stats.Latency{P50: 500, P99: 900, Max: 1000}},
			}}
		raw, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		run, err := history.FromReport(r, raw)
		if err != nil {
			t.Fatal(err)
		}
		run.Kind, run.Tags, run.Workload = "run", tags, workload
		if _, err := st.Record(context.Background(), run); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		p99 := 10000.0
		if i+1 >= stepAt {
			p99 *= 1.2
		}
		rec(i, "redis", "", map[string]string{"store": "redis-7.2", "build": fmt.Sprint(100 + i + 1)}, p99*(1+0.03*rng.NormFloat64()))
	}
	rec(n, "memory", "ycsb-b", map[string]string{"store": "memory"}, 500)
	return st
}

func historyEnv(t *testing.T, st history.Store) *env {
	return newEnvOpts(t, Options{Token: testToken, CORSOrigins: []string{"https://ui.example.com"}, Version: "test",
		History: func(context.Context) (history.Store, error) { return st, nil }, HistoryName: "history.db"})
}

func TestHistoryRuns(t *testing.T) {
	e := historyEnv(t, nightlyStore(t, 12, 7))
	for _, tc := range []struct {
		query string
		want  string // the runs' IDs
	}{
		{"", "[1 2 3 4 5 6 7 8 9 10 11 12 13]"},
		{"?tag=store%3Dredis-7.2&last=3", "[10 11 12]"},
		{"?tag=store%3Dredis-7.2&tag=build%3D105", "[5]"},
		{"?driver=memory", "[13]"},
		{"?workload=ycsb-b", "[13]"},
		{"?kind=import", "[]"},
		{"?driver=cassandra", "[]"},
	} {
		var res HistoryRuns
		e.must(http.StatusOK, "GET", "/api/v1/history/runs"+tc.query, nil, &res)
		var ids []int64
		for _, r := range res.Runs {
			ids = append(ids, r.ID)
		}
		if got := fmt.Sprint(ids); got != tc.want && !(got == "[]" && tc.want == "[]") {
			t.Errorf("runs%s: %s, want %s", tc.query, got, tc.want)
		}
		if res.Store != "history.db" {
			t.Errorf("runs%s: store %q, want history.db", tc.query, res.Store)
		}
	}
	var res HistoryRuns
	e.must(http.StatusOK, "GET", "/api/v1/history/runs?workload=ycsb-b", nil, &res)
	if r := res.Runs[0]; r.Driver != "memory" || r.Kind != "run" || r.Tags["store"] != "memory" || r.Seconds != 60 || r.Started.IsZero() {
		t.Errorf("run listed as %+v", r)
	}
	for _, bad := range []string{"?tag=store", "?kind=nightly", "?last=-1", "?color=red"} {
		if st, body := e.call("GET", "/api/v1/history/runs"+bad, nil); st != http.StatusUnprocessableEntity {
			t.Errorf("runs%s: %d %s, want 422", bad, st, body)
		}
	}
}

func TestHistoryRunAndReport(t *testing.T) {
	e := historyEnv(t, nightlyStore(t, 6, 4))
	var run HistoryRun
	e.must(http.StatusOK, "GET", "/api/v1/history/runs/2", nil, &run)
	figs := map[string]HistoryFigure{}
	for _, f := range run.Figures {
		figs[f.Figure] = f
	}
	if f := figs["read.p99"]; f.Unit != "ms" || !f.WorseUp || f.Value == nil || *f.Value < 9 || *f.Value > 11 {
		t.Errorf("read.p99 of run 2: %+v, want about 10 ms, worse up", f)
	}
	if f := figs["read.rate"]; f.Value == nil || *f.Value != 1000 || f.WorseUp {
		t.Errorf("read.rate of run 2: %+v", f)
	}
	if f, ok := figs["read.failed"]; !ok || f.Value == nil || *f.Value != 0 {
		t.Errorf("read.failed of run 2: %+v, want 0 given", f)
	}
	if run.Tags["build"] != "102" {
		t.Errorf("run 2's tags: %v", run.Tags)
	}
	st, body := e.call("GET", "/api/v1/history/runs/2/report", nil)
	var rep report.Report
	if err := json.Unmarshal(body, &rep); st != http.StatusOK || err != nil || rep.Driver.Name != "redis" || rep.Ops["read"].Count != 60000 {
		t.Errorf("report of run 2: %d %.200s (%v)", st, body, err)
	}

	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/history/runs/2/report.html", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		resp.Header.Get("Content-Security-Policy") != "sandbox allow-scripts" {
		t.Errorf("report.html: %d %q CSP %q, want an HTML page in a sandbox", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"))
	}

	for _, p := range []string{"/api/v1/history/runs/99", "/api/v1/history/runs/99/report", "/api/v1/history/runs/99/report.html"} {
		if st, body := e.call("GET", p, nil); st != http.StatusNotFound || !strings.Contains(string(body), "no recorded run 99") {
			t.Errorf("GET %s: %d %s, want 404 naming the run", p, st, body)
		}
	}
	if st, body := e.call("GET", "/api/v1/history/runs/0", nil); st != http.StatusUnprocessableEntity {
		t.Errorf("run 0: %d %s, want 422", st, body)
	}
}

// TestHistoryReportHTMLNeedsAReport: a run recorded without a report (another tool's
// row in a shared PostgreSQL) has no page to render: 422, not a 500.
func TestHistoryReportHTMLNeedsAReport(t *testing.T) {
	st := nightlyStore(t, 1, 9)
	if _, err := st.Record(context.Background(), &history.Run{Kind: "import", Driver: "x", Started: time.Now(), Ended: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e := historyEnv(t, st)
	if st, body := e.call("GET", "/api/v1/history/runs/3/report.html", nil); st != http.StatusUnprocessableEntity || !strings.Contains(string(body), "no report") {
		t.Errorf("report.html of a run without a report: %d %s, want 422", st, body)
	}
}

// TestHistoryTrendMarksTheStep is the bar through the API: 30 runs, +20% p99 at
// run 21: the trend has one change point, at run 21 ± 1, a regression, and the verdict
// names it; read.rate did not change.
func TestHistoryTrendMarksTheStep(t *testing.T) {
	e := historyEnv(t, nightlyStore(t, 30, 21))
	var tr HistoryTrend
	e.must(http.StatusOK, "GET", "/api/v1/history/trend?figure=read.p99&tag=store%3Dredis-7.2", nil, &tr)
	if len(tr.Points) != 30 || tr.Unit != "ms" || !tr.WorseUp {
		t.Fatalf("trend: %d points, unit %q, worseUp %v; want 30 in ms, worse up", len(tr.Points), tr.Unit, tr.WorseUp)
	}
	if len(tr.ChangePoints) != 1 {
		t.Fatalf("change points %+v, want one", tr.ChangePoints)
	}
	c := tr.ChangePoints[0]
	if c.RunID < 20 || c.RunID > 22 || c.Direction != "regression" || c.Change < 0.15 || c.Change > 0.25 || c.P > 0.01 {
		t.Errorf("change point %+v, want a regression of about +20%% at run 21 ± 1", c)
	}
	if tr.Verdict.Status != "regression" || tr.Verdict.Cause != 0 || !strings.Contains(tr.Verdict.Detail, fmt.Sprintf("started at run %d [build=%d store=redis-7.2]", c.RunID, 100+c.RunID)) {
		t.Errorf("verdict %+v, want a regression naming run %d and its tags", tr.Verdict, c.RunID)
	}
	e.must(http.StatusOK, "GET", "/api/v1/history/trend?figure=read.throughput&tag=store%3Dredis-7.2", nil, &tr)
	if tr.Figure != "read.rate" || len(tr.ChangePoints) != 0 || tr.Verdict.Status != "pass" {
		t.Errorf("read.throughput: figure %q, %d change points, verdict %+v; want read.rate, none, pass", tr.Figure, len(tr.ChangePoints), tr.Verdict)
	}
	e.must(http.StatusOK, "GET", "/api/v1/history/trend?figure=read.p99&last=4", nil, &tr)
	if tr.Verdict.Status != "not judged" || len(tr.Points) != 4 {
		t.Errorf("4 runs: verdict %+v with %d points, want not judged", tr.Verdict, len(tr.Points))
	}
	for _, bad := range []string{"figure=read.p42", "figure=read.p99&alpha=1", "figure=read.p99&minSize=1", "alpha=0.1"} {
		if st, body := e.call("GET", "/api/v1/history/trend?"+bad, nil); st != http.StatusUnprocessableEntity {
			t.Errorf("trend?%s: %d %s, want 422", bad, st, body)
		}
	}

	var figs []HistoryFigure
	e.must(http.StatusOK, "GET", "/api/v1/history/figures?driver=memory", nil, &figs)
	var names []string
	for _, f := range figs {
		names = append(names, f.Figure)
	}
	if s := strings.Join(names, " "); !strings.Contains(s, "read.p99.9") || !strings.Contains(s, "write.rate") || !strings.Contains(s, "client.opsPerCPUSecond") {
		t.Errorf("figures: %s", s)
	}
	if st, _ := e.call("GET", "/api/v1/history/figures?tag=x", nil); st != http.StatusUnprocessableEntity {
		t.Errorf("figures?tag=x: %d, want 422", st)
	}
}

// TestHistoryWithoutAStore: a service started without --results says how to give one;
// a store that cannot be read is the store's failure (502), on every route.
func TestHistoryWithoutAStore(t *testing.T) {
	routes := []string{"/api/v1/history/runs", "/api/v1/history/runs/1", "/api/v1/history/runs/1/report",
		"/api/v1/history/runs/1/report.html", "/api/v1/history/figures", "/api/v1/history/trend?figure=read.p99"}
	e := newEnv(t)
	for _, p := range routes {
		if st, body := e.call("GET", p, nil); st != http.StatusNotFound || !strings.Contains(string(body), "--results") {
			t.Errorf("GET %s without a store: %d %s, want 404 saying how to record", p, st, body)
		}
	}
	down := newEnvOpts(t, Options{Token: testToken, Version: "test",
		History: func(context.Context) (history.Store, error) {
			return nil, errors.New("connect to db.example.com:5432: refused")
		}})
	for _, p := range routes {
		if st, body := down.call("GET", p, nil); st != http.StatusBadGateway || !strings.Contains(string(body), "results store: connect") {
			t.Errorf("GET %s with the store down: %d %s, want 502", p, st, body)
		}
	}
}

// TestHistoryRoutesAreReadOnly: the History routes only read: other methods are refused,
// they need the token like every route, and a page of another site cannot read their
// answers (no CORS grant), while the allowlisted origin can.
func TestHistoryRoutesAreReadOnly(t *testing.T) {
	e := historyEnv(t, nightlyStore(t, 2, 9))
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		if st, body := e.call(m, "/api/v1/history/runs", nil); st != http.StatusMethodNotAllowed {
			t.Errorf("%s /api/v1/history/runs: %d %s, want 405", m, st, body)
		}
	}
	if st, _ := e.callAs("", "GET", "/api/v1/history/runs", nil); st != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", st)
	}
	for _, tc := range []struct {
		origin string
		allow  bool
	}{{"https://ui.example.com", true}, {"http://evil.com", false}} {
		req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/history/runs", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Origin", tc.origin)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Access-Control-Allow-Origin") == tc.origin; got != tc.allow {
			t.Errorf("origin %s: Access-Control-Allow-Origin %q, want granted %v", tc.origin, resp.Header.Get("Access-Control-Allow-Origin"), tc.allow)
		}
	}
	for _, d := range e.srv.declared {
		if strings.HasPrefix(d.path, "/api/v1/history") && (d.method != "GET" || d.effect != readOnly) {
			t.Errorf("%s %s is declared %v, want a read-only GET", d.method, d.path, d.effect)
		}
	}
}

// TestSessionEndHook: a driver session ended through the API hands its report to
// OnSessionEnd, with what the session measured.
func TestSessionEndHook(t *testing.T) {
	got := make(chan *report.Report, 1)
	e := newEnvOpts(t, Options{Token: testToken, Version: "test", OnSessionEnd: func(r *report.Report, _ *stats.Collector) { got <- r }},
		"workload.readRate=500", "workload.writeEnabled=false")
	e.must(http.StatusOK, "POST", "/api/v1/driver/init", map[string]any{"driver": "memory"}, nil)
	e.must(http.StatusOK, "POST", "/api/v1/load/start", nil, nil)
	// A report counts whole 1 s intervals: wait for one with reads in it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var r report.Report
		e.must(http.StatusOK, "GET", "/api/v1/report", nil, &r)
		if r.Ops["read"].Count > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no reads reported within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.must(http.StatusOK, "POST", "/api/v1/driver/shutdown", nil, nil)
	select {
	case r := <-got:
		if r.Driver.Name != "memory" || r.Ops["read"].Count == 0 {
			t.Errorf("session report: driver %q, %d reads; want memory with reads", r.Driver.Name, r.Ops["read"].Count)
		}
	default:
		t.Fatal("OnSessionEnd was not called by the shutdown")
	}
	// A shutdown with no driver ends no session.
	if st, _ := e.call("POST", "/api/v1/driver/shutdown", nil); st != http.StatusConflict {
		t.Errorf("second shutdown: %d, want 409", st)
	}
	if len(got) != 0 {
		t.Error("OnSessionEnd called for a shutdown that ended no session")
	}
}
