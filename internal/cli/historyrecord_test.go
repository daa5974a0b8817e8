package cli

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/stats"
)

// recorded returns the runs of the store at db, oldest first.
func recorded(t *testing.T, db string) []history.Run {
	t.Helper()
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(context.Background(), history.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// figureOf returns run id's value of fig in the store at db.
func figureOf(t *testing.T, db string, id int64, fig history.Figure) (float64, bool) {
	t.Helper()
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := r.Figures[fig]
	return v, ok
}

// histogramOf decodes run id's histogram name from the store at db (nil: none).
func histogramOf(t *testing.T, db string, id int64, name string) *hdrhistogram.Histogram {
	t.Helper()
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Histograms[name] == "" {
		return nil
	}
	h, err := stats.DecodeHistogram([]byte(r.Histograms[name]))
	if err != nil {
		t.Fatalf("run %d %s: %v", id, name, err)
	}
	return h
}

// TestScenarioRecordsInHistory: a scenario run records one run of kind scenario, named
// by the scenario, with its tags and its outcome kept in the report; a bad tag stops it
// before any load.
func TestScenarioRecordsInHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	db := filepath.Join(t.TempDir(), "history.db")
	file := writeScenario(t, `
name: nightly-smoke
config:
  driver: {name: memory}
  workload: {readRate: 200, writeRate: 50}
phases: [{name: steady, duration: 1500ms}]
`)
	code, out, errOut := ndbench(t, []string{"NDBENCH_RESULTS=" + db}, "scenario", "run", file, "--tag", "build=42")
	// 4 (invalid: the generator was late) on a machine too busy; recorded all the same.
	if (code != 0 && code != 4) || !strings.Contains(out, "recorded as run 1 in "+db) {
		t.Fatalf("scenario run: exit %d, want 0 and recorded as run 1\n%s%s", code, out, errOut)
	}
	runs := recorded(t, db)
	if len(runs) != 1 || runs[0].Kind != "scenario" || runs[0].Workload != "nightly-smoke" || runs[0].Driver != "memory" || runs[0].Tags["build"] != "42" {
		t.Fatalf("recorded %+v, want one scenario run of nightly-smoke tagged build=42", runs)
	}
	if v, ok := figureOf(t, db, 1, history.Figure{Series: "read", Metric: "rate"}); !ok || v <= 0 {
		t.Errorf("read.rate of the scenario run: %v (%v), want a rate", v, ok)
	}
	code, out, _ = ndbench(t, []string{"NDBENCH_RESULTS=" + db}, "history", "list", "--kind", "scenario", "--workload", "nightly-smoke", "--driver", "memory")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.Contains(lines[1], "scenario  memory  nightly-smoke") {
		t.Errorf("history list --kind scenario --workload nightly-smoke: exit %d, want the run with its kind and workload\n%s", code, out)
	}
	if code, out, _ = ndbench(t, []string{"NDBENCH_RESULTS=" + db}, "history", "list", "--kind", "run"); code != 0 || strings.Contains(out, "nightly-smoke") {
		t.Errorf("history list --kind run lists the scenario run: exit %d\n%s", code, out)
	}
	code, out, _ = ndbench(t, []string{"NDBENCH_RESULTS=" + db}, "history", "show", "1", "--format", "json")
	if code != 0 || !strings.Contains(out, `"scenario":{`) {
		t.Errorf("the recorded report has no scenario outcome: exit %d\n%.400s", code, out)
	}

	code, _, errOut = ndbench(t, []string{"NDBENCH_RESULTS=" + db}, "scenario", "run", file, "--tag", "build")
	if code != 2 || !strings.Contains(errOut, "--tag") {
		t.Errorf("scenario run --tag build: exit %d, want 2 naming --tag\n%s", code, errOut)
	}
	if n := len(recorded(t, db)); n != 1 {
		t.Errorf("%d runs after a refused scenario, want 1", n)
	}
}

// TestAutotuneRecordsInHistory: an auto-tune search records its result, whose capacity
// is a figure; without --results, --tag or NDBENCH_RESULTS nothing is recorded.
func TestAutotuneRecordsInHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	args := []string{"autotune", "--driver", "memory", "--set", "workload.writeEnabled=false", "--start", "1000", "--max-rate", "1500",
		"--percentile", "50", "--latency", "1s", "--settle", "200ms", "--window", "1s", "--max-window", "2s", "--confirm", "1s", "--tolerance", "50%"}
	code, out, errOut := ndbench(t, nil, append(args, "--results", db, "--tag", "store=memory")...)
	if !strings.Contains(out, "recorded as run 1 in "+db) {
		t.Fatalf("autotune: exit %d, want recorded as run 1\n%s%s", code, out, errOut)
	}
	runs := recorded(t, db)
	if len(runs) != 1 || runs[0].Kind != "autotune" || runs[0].Tags["store"] != "memory" {
		t.Fatalf("recorded %+v, want one autotune run tagged store=memory", runs)
	}
	if v, ok := figureOf(t, db, 1, history.Figure{Series: history.AutotuneSeries, Metric: "capacity"}); code == 0 && (!ok || v < 100) {
		t.Errorf("autotune.capacity: %v (%v), want the capacity found (exit %d)\n%s", v, ok, code, out)
	}

	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data")}
	_, out, _ = ndbench(t, env, args...)
	if strings.Contains(out, "recorded as run") || !strings.Contains(out, "--tag KEY=VALUE") {
		t.Errorf("autotune without --results: recorded, or no hint how to\n%s", out)
	}
}

// TestServeRecordsEachSession: serve with --results records each driver session that
// ends through the API as a run of kind serve, and the session still open at exit;
// the History routes list them. A session that ran no load is not recorded.
func TestServeRecordsEachSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	db := filepath.Join(t.TempDir(), "history.db")
	base, out, errOut, stop := startServe(t, nil, "--listen", "127.0.0.1:0", "--results", db, "--tag", "env=ci",
		"--set", "workload.readRate=300", "--set", "workload.writeRate=50")
	post := func(path, body string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	session := func() {
		t.Helper()
		post("/api/v1/driver/init", `{"driver":"memory"}`)
		post("/api/v1/load/start", "")
		for deadline := time.Now().Add(30 * time.Second); ; {
			var r struct {
				Ops map[string]struct{ Count int64 } `json:"ops"`
			}
			_, body := get(t, base+"/api/v1/report", "")
			if json.Unmarshal(body, &r) == nil && r.Ops["read"].Count > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no reads reported within 30 s")
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// A session without load: nothing to record.
	post("/api/v1/driver/init", `{"driver":"memory"}`)
	post("/api/v1/driver/shutdown", "")
	session()
	post("/api/v1/driver/shutdown", "")
	var runs []history.Run
	for deadline := time.Now().Add(30 * time.Second); len(runs) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		runs = recorded(t, db)
	}
	if len(runs) != 1 || runs[0].Kind != "serve" || runs[0].Driver != "memory" || runs[0].Tags["env"] != "ci" {
		t.Fatalf("after the shutdown: recorded %+v, want one serve run of memory tagged env=ci\n%s%s", runs, out, errOut)
	}
	if v, ok := figureOf(t, db, runs[0].ID, history.Figure{Series: "read", Metric: "count"}); !ok || v <= 0 {
		t.Errorf("read.count of the serve run: %v (%v)", v, ok)
	}
	if h := histogramOf(t, db, runs[0].ID, "read.response"); h == nil || h.TotalCount() == 0 {
		t.Errorf("the serve run has no read.response histogram with reads in it")
	}
	st, body := get(t, base+"/api/v1/history/runs", "")
	if st != 200 || !strings.Contains(string(body), `"kind":"serve"`) {
		t.Errorf("GET /api/v1/history/runs: %d %s", st, body)
	}

	session() // still open at exit
	if code := stop(); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	runs = recorded(t, db)
	if len(runs) != 2 || runs[1].Kind != "serve" || !strings.Contains(out.String(), "recorded as run 2 in "+db) {
		t.Errorf("after the exit: recorded %+v, want a second serve run\n%s%s", runs, out, errOut)
	}
}

// TestServeHistoryRoutesWithoutAStore: a service with no results store (none given, no
// default store on disk) answers the History routes with how to give one, and creates
// no store.
func TestServeHistoryRoutesWithoutAStore(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data")}
	base, _, _, _ := startServe(t, env, "--listen", "127.0.0.1:0")
	if st, body := get(t, base+"/api/v1/history/runs", ""); st != http.StatusNotFound || !strings.Contains(string(body), "--results") {
		t.Errorf("GET /api/v1/history/runs: %d %s, want 404 saying how to give a store", st, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "ndbench")); !os.IsNotExist(err) {
		t.Errorf("serve created the default store: %v", err)
	}
}

// TestRecordedHistogramsRecomputePercentiles: a recorded run keeps its classes' cumulative
// histograms, from which the recorded percentiles are recomputed, and two runs' merge.
func TestRecordedHistogramsRecomputePercentiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	db := filepath.Join(t.TempDir(), "history.db")
	for i := range 2 {
		code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--duration", "1s", "--set", "workload.readRate=300",
			"--set", "workload.writeRate=50", "--results", db)
		if !strings.Contains(out, "recorded as run") {
			t.Fatalf("run %d: exit %d, not recorded\n%s%s", i+1, code, out, errOut)
		}
	}
	st, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	merged := stats.NewHistogram()
	var count int64
	for id := int64(1); id <= 2; id++ {
		r, err := st.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"read.response", "read.service", "write.response", "write.service"} {
			if r.Histograms[name] == "" {
				t.Errorf("run %d has no %s histogram (has %v)", id, name, slices.Collect(maps.Keys(r.Histograms)))
			}
		}
		h, err := stats.DecodeHistogram([]byte(r.Histograms["read.response"]))
		if err != nil {
			t.Fatalf("run %d read.response: %v", id, err)
		}
		want := r.Figures[history.Figure{Series: "read", Metric: "p99"}]
		if got := float64(h.ValueAtQuantile(99)) / 1000; math.Abs(got-want) > 0.01*want+0.001 {
			t.Errorf("run %d: read p99 recomputed from the histogram %.4f ms, recorded %.4f ms", id, got, want)
		}
		if c := r.Figures[history.Figure{Series: "read", Metric: "count"}]; h.TotalCount() != int64(c) {
			t.Errorf("run %d: the histogram counts %d reads, the figures %v", id, h.TotalCount(), c)
		}
		count += h.TotalCount()
		stats.MergeHistograms(merged, h)
	}
	if merged.TotalCount() != count {
		t.Errorf("the merged histogram counts %d, want %d", merged.TotalCount(), count)
	}
}
