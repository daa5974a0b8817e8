package cli

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// writeNightly writes report files of a nightly series: n runs of the memory store, a
// read p99 of about 10 ms with 4% noise that steps up by step from run stepAt (1-based,
// 0 = never), one day apart.
func writeNightly(t *testing.T, dir string, seed uint64, n, stepAt int, step float64) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 10, 1, 2, 0, 0, 0, time.UTC)
	var paths []string
	for i := range n {
		p99 := 10000.0
		if stepAt > 0 && i+1 >= stepAt {
			p99 *= 1 + step
		}
		p99 *= 1 + 0.04*rng.NormFloat64()
		r := &report.Report{
			FormatVersion: report.Version, Tool: report.Tool{Name: "ndbench", Version: "v1." + fmt.Sprint(i)},
			Started: start.AddDate(0, 0, i), Ended: start.AddDate(0, 0, i).Add(time.Minute), Seconds: 60,
			Driver: report.Driver{Name: "memory"},
			Ops: map[string]stats.OpSummary{
				"read":  {Count: 60000, Rate: 1000, ResponseTime: stats.Latency{P50: p99 / 10, P99: p99, Max: 2 * p99}},
				"write": {Count: 6000, Rate: 100, ResponseTime: stats.Latency{P50: 500, P99: 900, Max: 1000}},
			},
			Client: report.Client{NumCPU: 2, OpsPerCPUSecond: 50000},
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("run-%02d.json", i+1))
		if err := report.WriteFile(path, r); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// TestHistoryCheckFindsTheStep is the bar through the command line: 30 nightly
// reports imported with their build tags, a +20% p99 step at run 21: check fails and
// names run 21 and its tags; the same setup without a step passes.
func TestHistoryCheckFindsTheStep(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	for _, store := range []string{"stepped", "flat"} {
		step := 0.2
		if store == "flat" {
			step = 0
		}
		for i, p := range writeNightly(t, filepath.Join(dir, store), 7, 30, 21, step) {
			if code, out, errOut := ndbench(t, nil, "history", "import", "--results", db, "--tag", "store="+store, "--tag", fmt.Sprintf("build=%d", 100+i+1), p); code != 0 {
				t.Fatalf("import %s: exit %d\n%s%s", p, code, out, errOut)
			}
		}
	}
	code, out, errOut := ndbench(t, nil, "history", "check", "read.p99", "--results", db, "--tag", "store=stepped")
	if code != 1 || !strings.Contains(out, "FAIL: the newest run (30) is in a regression of read.p99 that started at run 21 [build=121 store=stepped]") {
		t.Errorf("check of the stepped series: exit %d, want 1 naming run 21 and its tags\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "regression of read.p99 from run 21 [build=121 store=stepped]") {
		t.Errorf("the error line does not name the change point's run: %q", errOut)
	}
	code, out, errOut = ndbench(t, nil, "history", "check", "read.p99", "--results", db, "--tag", "store=flat")
	if code != 0 || !strings.Contains(out, "PASS") {
		t.Errorf("check of the flat series: exit %d, want 0\n%s%s", code, out, errOut)
	}
	// Throughput did not change: no regression there either.
	if code, out, errOut = ndbench(t, nil, "history", "check", "read.rate", "--results", db, "--tag", "store=stepped"); code != 0 {
		t.Errorf("check of read.rate: exit %d, want 0\n%s%s", code, out, errOut)
	}

	code, out, _ = ndbench(t, nil, "history", "trend", "read.p99", "--results", db, "--tag", "store=stepped")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 31 || !strings.Contains(lines[21], "regression +") || !strings.HasPrefix(lines[21], "21 ") {
		t.Errorf("trend: exit %d, want 30 rows with run 21 marked as a regression:\n%s", code, out)
	}
	page := filepath.Join(dir, "trend.html")
	code, out, _ = ndbench(t, nil, "history", "trend", "read.p99", "--results", db, "--tag", "store=stepped", "--html", page)
	html, err := os.ReadFile(page)
	if code != 0 || err != nil || !strings.Contains(string(html), "<svg") || !strings.Contains(string(html), "change point at run 21: +") {
		t.Errorf("trend --html: exit %d (%v), want a page with the change point at run 21 marked\n%s", code, err, out)
	}
	code, out, _ = ndbench(t, nil, "history", "list", "--results", db, "--tag", "store=flat", "--since", "2026-10-29", "--last", "2")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "59 ") || !strings.HasPrefix(lines[2], "60 ") {
		t.Errorf("list --since --last 2: exit %d, want runs 59 and 60:\n%s", code, out)
	}
}

// TestRunRecordsInHistory: a run with --tag is recorded (in NDBENCH_RESULTS's store),
// history show has its figures, and a store that cannot be written is a warning that
// changes neither the exit code nor the report file.
func TestRunRecordsInHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "h", "history.db")
	env := []string{"NDBENCH_RESULTS=" + db}
	code, out, errOut := ndbench(t, env, "run", "--driver", "memory", "--duration", "1s", "--set", "workload.readRate=200",
		"--set", "workload.writeRate=50", "--tag", "build=7", "--report", filepath.Join(dir, "r.json"))
	if code != 0 || !strings.Contains(out, "recorded as run 1 in "+db) {
		t.Fatalf("run: exit %d, want 0 and recorded as run 1\n%s%s", code, out, errOut)
	}
	code, out, errOut = ndbench(t, env, "history", "show", "1")
	if code != 0 || !strings.Contains(out, "tags: build=7") || !strings.Contains(out, "driver memory") ||
		!strings.Contains(out, "read ") || !strings.Contains(out, "client: cpuCores") {
		t.Errorf("show 1: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = ndbench(t, env, "history", "show", "1", "--format", "json")
	if code != 0 || !strings.Contains(out, `"formatVersion":1`) {
		t.Errorf("show 1 --format json: exit %d, want the report:\n%.300s", code, out)
	}

	// The store's directory is a file: recording fails, the run and its report do not.
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "r2.json")
	code, out, errOut = ndbench(t, nil, "run", "--driver", "memory", "--duration", "1s", "--set", "workload.readRate=100",
		"--results", filepath.Join(blocker, "history.db"), "--report", rep)
	if code != 0 || !strings.Contains(errOut, "WARNING: the run was not recorded in the results history") {
		t.Errorf("run with an unwritable store: exit %d, want 0 and a warning\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(rep); err != nil {
		t.Errorf("the report file was lost: %v", err)
	}
}

// TestRunNotRecordedByDefault: without --results, --tag or NDBENCH_RESULTS a run writes
// no history (tests and CI never write the user's home), and says how to record.
func TestRunNotRecordedByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine")
	}
	dir := t.TempDir()
	env := []string{"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data")}
	code, out, errOut := ndbench(t, env, "run", "--driver", "memory", "--duration", "1s", "--set", "workload.readRate=100",
		"--report", filepath.Join(dir, "r.json"))
	if code != 0 || strings.Contains(out, "recorded as run") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "ndbench")); !os.IsNotExist(err) {
		t.Errorf("a run without --results or --tag created the default store: %v", err)
	}
	if !strings.Contains(out, "--tag KEY=VALUE") {
		t.Errorf("the output does not say how to record the run:\n%s", out)
	}
}

func TestHistoryBadUsage(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--driver", "memory", "--tag", "build"}, "--tag: tag \"build\": want KEY=VALUE"},
		{[]string{"history", "check", "read.p98", "--results", db}, "metrics: rate, count, errors"},
		{[]string{"history", "check", "read.p99", "--results", db}, "no recorded run matches and has read.p99"},
		{[]string{"history", "check", "read.p99", "--results", db, "--alpha", "2"}, "--alpha 2: allowed: between 0 and 1"},
		{[]string{"history", "check", "read.p99", "--results", db, "--min-size", "1"}, "--min-size 1: allowed: 2 or more"},
		{[]string{"history", "list", "--results", db, "--since", "last week"}, "--since: invalid value \"last week\"; allowed:"},
		{[]string{"history", "list", "--results", db, "--last", "-1"}, "--last -1: allowed"},
		{[]string{"history", "list", "--results", db, "--kind", "nightly"}, `--kind "nightly": allowed: run, serve, scenario, autotune, fleet, import`},
		{[]string{"history", "show", "abc", "--results", db}, "run ID \"abc\": allowed: a positive integer"},
		{[]string{"history", "show", "9", "--results", db}, "run 9: no such run"},
		{[]string{"history", "import", "--results", db, filepath.Join(dir, "missing.json")}, "import " + filepath.Join(dir, "missing.json")},
		{[]string{"history", "bogus"}, "unknown command \"bogus\""},
	} {
		code, out, errOut := ndbench(t, nil, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, want 2 with %q\n%s%s", tc.args, code, tc.want, out, errOut)
		}
	}
}

func TestHistoryPostgresPasswordNotShown(t *testing.T) {
	// Nothing listens on port 1: the error must name the store without its password.
	code, out, errOut := ndbench(t, nil, "history", "list", "--results", "postgres://bench:s3cret-pw@127.0.0.1:1/ndbench?connect_timeout=2")
	if code == 0 || strings.Contains(out+errOut, "s3cret-pw") || !strings.Contains(errOut, "postgres://bench:xxxxx@127.0.0.1:1/ndbench") {
		t.Errorf("exit %d; the output must name the store without its password:\n%s%s", code, out, errOut)
	}
}
