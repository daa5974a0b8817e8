package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/autotune"
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
