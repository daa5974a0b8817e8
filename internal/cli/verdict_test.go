package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ndbench/ndbench/internal/autotune"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/verdict"
)

// TestRunDefaultVerdict: a run given no thresholds fails (exit 1) when nothing succeeded
// or when most attempted operations failed, says why below the summary and in the
// report, and shows no latency for a class that had no answer (0.000 would read as a
// fast store).
func TestRunDefaultVerdict(t *testing.T) {
	tests := []struct {
		name       string
		errorRatio string
		sets       []string
		code       int
		want       []string // in stdout
	}{
		{"every operation fails", "1", nil, verdict.Failed,
			[]string{"verdict: FAILED (exit 1", "read: none of", "write: none of", "no latencies (shown as -)"}},
		{"most operations fail", "0.6", nil, verdict.Failed,
			[]string{"verdict: FAILED (exit 1", "attempted operations failed (", "more than 50%)"}},
		{"a few operations fail", "0.2", nil, verdict.Pass, []string{"verdict: PASSED (exit 0"}},
		{"one class fails entirely", "0", []string{"--set", "drivers.memory.maxBytes=1", "--set", "workload.readRate=2000", "--set", "workload.writeRate=100"},
			verdict.Failed, []string{"verdict: FAILED (exit 1", "write: none of"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", "--driver", "memory", "--duration", "1500ms", "--report", rep,
				"--set", "drivers.memory.errorRatio=" + tt.errorRatio}, tt.sets...)
			code, out, errOut := ndbench(t, nil, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			r := readReport(t, rep)
			if r.Verdict == nil || r.Verdict.ExitCode != tt.code || r.Verdict.By != "default" {
				t.Errorf("report verdict %+v, want exit code %d by default", r.Verdict, tt.code)
			}
			if tt.code == verdict.Pass && len(r.Verdict.Reasons) > 0 {
				t.Errorf("a passed run gives reasons: %v", r.Verdict.Reasons)
			}
			if tt.errorRatio == "1" {
				if !strings.Contains(errOut, "run FAILED") {
					t.Errorf("stderr does not say the run failed: %s", errOut)
				}
				// No latency figure on the rows of a class that never answered.
				for _, line := range strings.Split(out, "\n") {
					if f := strings.Fields(line); len(f) > 2 && (f[0] == "read" || f[0] == "write") && f[1] == "response" && strings.Contains(line, "0.000") {
						t.Errorf("a class with no answer shows a latency of 0: %q", line)
					}
				}
			}
		})
	}
}

// TestRunInterrupted: a signal ends an unbounded run (--duration 0) normally, judged as
// any run; it cuts a bounded run short, which exits 3 (aborted), and so does a signal
// in the warm-up, before anything was measured.
func TestRunInterrupted(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"unbounded", []string{"--duration", "0"}, verdict.Pass},
		{"bounded", []string{"--duration", "1m"}, verdict.Aborted},
		{"unbounded, in the warm-up", []string{"--duration", "0", "--warmup", "1m"}, verdict.Aborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "r.json")
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			var out, errOut bytes.Buffer
			args := append([]string{"run", "--driver", "memory", "--report", rep}, tt.args...)
			code := execute(ctx, args, &streams{out: &out, err: &errOut})
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out.String(), errOut.String())
			}
			if v := readReport(t, rep).Verdict; v == nil || v.ExitCode != tt.code {
				t.Errorf("report verdict %+v, want exit code %d", v, tt.code)
			}
			// Cut short, it says so plainly, not as an error of the tool (issue 36).
			if aborted := tt.code == verdict.Aborted; aborted != strings.Contains(errOut.String(), "interrupted: the run was stopped by a signal") ||
				strings.Contains(errOut.String(), "error:") {
				t.Errorf("exit %d: stderr %q, want \"interrupted: ...\" (exit 3) and no \"error:\"", code, errOut.String())
			}
			// A run without an end says how it ends (it ran silently until Ctrl-C).
			const says = "no --duration: runs until Ctrl-C"
			if unbounded := tt.args[1] == "0"; unbounded != strings.Contains(out.String(), says) {
				t.Errorf("--duration %s: output says %q: %v, want %v\n%s", tt.args[1], says, !unbounded, unbounded, out.String())
			}
		})
	}
}

// TestAutotuneExitCodes: a search's result maps onto the one exit-code table.
func TestAutotuneExitCodes(t *testing.T) {
	tests := []struct {
		res  autotune.Result
		code int
	}{
		{autotune.Result{Status: autotune.StatusFound}, verdict.Pass},
		{autotune.Result{Status: autotune.StatusAboveMax}, verdict.Pass},
		{autotune.Result{Status: autotune.StatusStopped, Hold: &autotune.HoldResult{}}, verdict.Pass},
		{autotune.Result{Status: autotune.StatusStopped}, verdict.Aborted},
		{autotune.Result{Status: autotune.StatusNone}, verdict.Failed},
		{autotune.Result{Status: autotune.StatusNotConfirmed}, verdict.Failed},
		{autotune.Result{Status: autotune.StatusClientBound}, verdict.Invalid},
		{autotune.Result{Status: autotune.StatusError}, verdict.Usage},
	}
	for _, tt := range tests {
		if got := autotuneExit(&tt.res); got != tt.code {
			t.Errorf("%s (hold %v): exit %d, want %d", tt.res.Status, tt.res.Hold != nil, got, tt.code)
		}
	}
}

// TestRunThresholds: --threshold (repeatable) and the config file's thresholds: use the
// scenario grammar over the measured load; each is shown pass or fail with its observed
// value in the summary, the JSON report, the HTML report and the JUnit file, and one
// failing exits 1.
func TestRunThresholds(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte("workload:\n  readRate: 500\n  writeRate: 100\nthresholds:\n  - write.p99 < 1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		status []string // per threshold, in order
		want   []string // in stdout
	}{
		{"all pass", []string{"--threshold", "read.p99 < 1h", "--threshold", "errors < 1%"}, verdict.Pass,
			[]string{"pass", "pass", "pass", "pass"}, []string{"PASS read.p99 < 1h: observed", "PASS read.errors < 1%: observed 0%", "PASS write.errors < 1%", "PASS write.p99 < 1h", "verdict: PASSED (exit 0)"}},
		{"one fails", []string{"--threshold", "read.p99 < 1us", "--set", "drivers.memory.serviceTime=2ms"}, verdict.Failed,
			[]string{"pass", "fail"}, []string{"FAIL read.p99 < 1us: observed ", "threshold read.p99 < 1us failed: observed", "verdict: FAILED (exit 1)"}},
		{"errors judged, not the default", []string{"--threshold", "errors < 90%", "--set", "drivers.memory.errorRatio=0.6"}, verdict.Pass,
			[]string{"pass", "pass", "pass"}, []string{"PASS read.errors < 90%: observed "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			rep, html, junit := filepath.Join(d, "r.json"), filepath.Join(d, "r.html"), filepath.Join(d, "junit.xml")
			args := append([]string{"run", "--driver", "memory", "-c", cfg, "--duration", "2s", "--report", rep, "--report-html", html, "--junit", junit}, tt.args...)
			code, out, errOut := ndbench(t, nil, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			r := readReport(t, rep)
			if len(r.Thresholds) != len(tt.status) {
				t.Fatalf("report thresholds %+v, want %d", r.Thresholds, len(tt.status))
			}
			// The file's thresholds come first, then the flags', in order.
			if r.Thresholds[0].Check != "write.p99 < 1h" || r.Thresholds[0].Source != "file "+cfg || r.Thresholds[1].Source != "flag --threshold" {
				t.Errorf("thresholds' order or sources: %+v", r.Thresholds)
			}
			for i, st := range tt.status {
				if th := r.Thresholds[i]; th.Status != st || th.Observed == "" || th.Intervals == 0 {
					t.Errorf("threshold %d = %+v, want status %s with an observed value", i, th, st)
				}
			}
			if r.Verdict == nil || r.Verdict.By != "thresholds" || r.Verdict.ExitCode != tt.code {
				t.Errorf("verdict %+v", r.Verdict)
			}
			h, _ := os.ReadFile(html)
			j, _ := os.ReadFile(junit)
			for _, th := range r.Thresholds {
				// Both escape the check's < as &lt;.
				esc := strings.ReplaceAll(th.Check, "<", "&lt;")
				if !strings.Contains(string(h), esc) {
					t.Errorf("HTML report lacks threshold %q", th.Check)
				}
				if !strings.Contains(string(j), esc) {
					t.Errorf("JUnit lacks threshold %q:\n%s", th.Check, j)
				}
			}
			if fails := strings.Count(string(j), "<failure"); fails != strings.Count(strings.Join(tt.status, " "), "fail") {
				t.Errorf("JUnit has %d failures, want those of %v:\n%s", fails, tt.status, j)
			}
		})
	}
}

// TestRunThresholdErrors: a threshold that does not parse exits 2 before any load,
// naming the flag or the file's entry and what is allowed.
func TestRunThresholdErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--threshold", "raed.p99 < 5ms"}, []string{"--threshold", `"raed"`, "op classes read, write"}},
		{[]string{"--threshold", "read.p99 < fast"}, []string{"--threshold", `"fast"`, "a duration"}},
		{[]string{"--threshold", "read.p99 5ms"}, []string{"--threshold", "CLASS.METRIC OP VALUE"}},
		{[]string{"--threshold", "read.speed > 5"}, []string{"--threshold", `"speed"`, "metrics"}},
		{[]string{"-c", write("bad.yaml", "thresholds:\n  - read.p99 < 5ms\n  - write.p99 < soon\n")}, []string{"thresholds[1] in " + filepath.Join(dir, "bad.yaml"), `"soon"`}},
		{[]string{"-c", write("notlist.yaml", "thresholds: read.p99 < 5ms\n")}, []string{"thresholds", "a list of checks"}},
	}
	for _, tt := range tests {
		args := append([]string{"run", "--driver", "memory", "--duration", "1m"}, tt.args...)
		code, out, errOut := ndbench(t, nil, args...)
		if code != verdict.Usage {
			t.Errorf("%v: exit %d, want 2\n%s\n%s", tt.args, code, out, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error does not say %q: %s", tt.args, w, errOut)
			}
		}
		if strings.Contains(out, "summary") {
			t.Errorf("%v: the load ran", tt.args)
		}
	}
}

// TestRunFromReport: a report records every flag with its source, and run --from-report
// rebuilds the run from it: the same effective configuration, length and thresholds;
// flags given beside it override.
func TestRunFromReport(t *testing.T) {
	dir := t.TempDir()
	first, again, changed := filepath.Join(dir, "1.json"), filepath.Join(dir, "2.json"), filepath.Join(dir, "3.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--backfill", "--warmup", "500ms", "--duration", "1s",
		"--set", "workload.readRate=300", "--set", "workload.writeRate=50", "--set", "workload.numKeys=500",
		"--set", "drivers.memory.errorRatio=0.01", "--threshold", "read.p99 < 1h", "--report", first)
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s\n%s", code, out, errOut)
	}
	r1 := readReport(t, first)
	sources := map[string]string{}
	for _, e := range r1.Config {
		sources[e.Key] = e.Value + " (" + e.Source + ")"
	}
	for key, want := range map[string]string{
		"workload.backfill": "true (flag --backfill)", "workload.warmup": "500ms (flag --warmup)",
		"driver.name": "memory (flag --driver)", "workload.readRate": "300 (--set)",
	} {
		if sources[key] != want {
			t.Errorf("first report: %s = %q, want %q", key, sources[key], want)
		}
	}
	if r1.Run == nil || r1.Run.Duration != "1s" || r1.Run.Warmup != "500ms" || !r1.Run.Backfill || len(r1.Run.Thresholds) != 1 {
		t.Fatalf("first report's run record: %+v", r1.Run)
	}

	code, out, errOut = ndbench(t, nil, "run", "--from-report", first, "--report", again)
	if code != 0 {
		t.Fatalf("rebuilt run: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "backfill ") || !strings.Contains(out, "PASS read.p99 < 1h") {
		t.Errorf("the rebuilt run did not backfill or judge the threshold:\n%s", out)
	}
	r2 := readReport(t, again)
	values := func(r *report.Report) map[string]string {
		m := map[string]string{}
		for _, e := range r.Config {
			m[e.Key] = e.Value
		}
		return m
	}
	v1, v2 := values(r1), values(r2)
	for k, v := range v1 {
		if v2[k] != v {
			t.Errorf("rebuilt run: %s = %q, want %q", k, v2[k], v)
		}
	}
	if len(v1) != len(v2) {
		t.Errorf("rebuilt run has %d keys, the first %d", len(v2), len(v1))
	}
	if r2.Run.Duration != r1.Run.Duration || r2.Run.Warmup != r1.Run.Warmup || strings.Join(r2.Run.Thresholds, ";") != strings.Join(r1.Run.Thresholds, ";") || r2.Run.FromReport != first {
		t.Errorf("rebuilt run record %+v, first %+v", r2.Run, r1.Run)
	}
	for _, e := range r2.Config {
		if e.Key == "workload.backfill" && e.Source != "report "+first {
			t.Errorf("rebuilt run: workload.backfill from %q, want the report", e.Source)
		}
	}

	code, out, errOut = ndbench(t, nil, "run", "--from-report", first, "--set", "workload.readRate=200", "--duration", "500ms", "--warmup", "0s", "--report", changed)
	if code != 0 {
		t.Fatalf("rebuilt run with overrides: exit %d\n%s\n%s", code, out, errOut)
	}
	r3 := readReport(t, changed)
	if v := values(r3); v["workload.readRate"] != "200" || v["workload.warmup"] != "0s" || v["workload.writeRate"] != "50" || r3.Run.Duration != "500ms" {
		t.Errorf("overrides beside --from-report: readRate %s warmup %s writeRate %s duration %s", v["workload.readRate"], v["workload.warmup"], v["workload.writeRate"], r3.Run.Duration)
	}
}

// TestAutotuneInterrupted: a search cut short by a signal prints its step table so far and
// what it found (the highest rate within SLA, the lowest outside it), within 100 columns,
// says "interrupted" rather than "error", and exits 3 (issue 36).
func TestAutotuneInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	code := execute(ctx, []string{"autotune", "--driver", "memory", "--set", "workload.writeEnabled=false", "--start", "100",
		"--percentile", "50", "--latency", "1s", "--settle", "200ms", "--window", "1s", "--max-window", "2s", "--confirm", "1s"},
		&streams{out: &out, err: &errOut})
	if code != verdict.Aborted {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, verdict.Aborted, out.String(), errOut.String())
	}
	text := out.String()
	soFar := strings.Index(text, "the search so far:")
	if soFar < 0 || !strings.Contains(text[soFar:], "  # phase") || !strings.Contains(text[soFar:], "STOPPED: stopped during a step at") {
		t.Errorf("no step table and outcome after the interrupt:\n%s", text)
	}
	flat := strings.Join(strings.Fields(text), " ")
	if !strings.Contains(flat, "so far the highest rate within SLA was") && !strings.Contains(flat, "so far no step was within SLA") {
		t.Errorf("the outcome does not say what the search found:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > consoleWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if e := errOut.String(); !strings.Contains(e, "interrupted: the search was stopped by a signal") || strings.Contains(e, "error:") {
		t.Errorf("stderr %q, want \"interrupted: ...\" and no \"error:\"", e)
	}
}
