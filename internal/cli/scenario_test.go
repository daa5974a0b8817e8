package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeScenario(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestScenarioExitCodes: a misspelled name exits 2 naming it, --dry-run prints the
// timeline and exits 0, a threshold with abort exits 3 and the report is still written
// (with the timeline), readable as a run report by compare.
func TestScenarioExitCodes(t *testing.T) {
	bad := writeScenario(t, `
config: {driver: {name: memory}}
phases: [{name: p, duration: 2s}]
thresholds: [{check: read.p99 < 1ms, window: phase q}]
`)
	code, _, stderr := ndbench(t, nil, "scenario", "run", bad)
	if code != 2 || !strings.Contains(stderr, "thresholds[0].window") || !strings.Contains(stderr, `phase "q"`) {
		t.Errorf("bad phase name: exit %d, %s", code, stderr)
	}
	code, _, _ = ndbench(t, nil, "scenario", "run", "--dry-run", bad)
	if code != 2 {
		t.Errorf("dry run of a bad file: exit %d", code)
	}

	abort := writeScenario(t, `
config:
  driver: {name: memory}
  drivers: {memory: {errorRatio: 1}}
  workload: {readRate: 100, writeEnabled: false}
phases: [{name: p, duration: 30s}]
thresholds: [{check: read.errors < 1%, window: phase p sustained 1s, abort: true}]
`)
	code, stdout, _ := ndbench(t, nil, "scenario", "run", "--dry-run", abort)
	if code != 0 || !strings.Contains(stdout, "phase p, for 30s") || !strings.Contains(stdout, "aborts on failure") {
		t.Errorf("dry run: exit %d\n%s", code, stdout)
	}
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr = ndbench(t, nil, "scenario", "run", abort, "--out-dir", out)
	if code != 3 || !strings.Contains(stdout, "ABORTED") {
		t.Errorf("abort: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rep := readReport(t, filepath.Join(out, "report.json"))
	if len(rep.Timeline) != 1 || rep.Timeline[0].Name != "p" || rep.Ops["read"].Errors == 0 {
		t.Errorf("report: timeline %+v, read %+v", rep.Timeline, rep.Ops["read"])
	}
	for _, f := range []string{"report.html", "junit.xml", "summary.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

// A fleet run without the fleet's token, or with both --peers and --discovery, is bad
// usage (exit 2) that names the flags, before any node is contacted.
func TestFleetFlagsNeedATokenAndOneSource(t *testing.T) {
	sc := writeScenario(t, `
config: {driver: {name: memory}}
phases: [{name: p, duration: 2s}]
`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scenario", "run", sc, "--peers", "127.0.0.1:1"}, "--token or NDBENCH_TOKEN"},
		{[]string{"autotune", "--driver", "memory", "--peers", "127.0.0.1:1"}, "--token or NDBENCH_TOKEN"},
		{[]string{"scenario", "run", sc, "--peers", "127.0.0.1:1", "--discovery", "static:127.0.0.1:2", "--token", "0123456789abcdef0123456789"}, "--peers and --discovery"},
	} {
		code, _, stderr := ndbench(t, []string{"NDBENCH_TOKEN="}, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 naming %s", tc.args, code, stderr, tc.want)
		}
	}
}

// An interrupted scenario (SIGINT, SIGTERM: the command's context) is never a pass: it
// exits 3 with the verdict INTERRUPTED even when every threshold window had started and
// passed so far, and its JUnit says so as an error, so a cancelled CI job never gates green.
func TestInterruptedScenarioIsNoPass(t *testing.T) {
	tests := []struct {
		name, text string
	}{
		{"every window started", `
config: {driver: {name: memory}, workload: {readRate: 100, writeEnabled: false, numKeys: 100}}
phases: [{name: p, duration: 30s}]
thresholds: [{check: read.p99 < 1s, window: phase p}, {check: read.errors < 1%, window: run}]
`},
		{"a window not reached", `
config: {driver: {name: memory}, workload: {readRate: 100, writeEnabled: false, numKeys: 100}}
phases: [{name: p, duration: 30s}, {name: q, duration: 30s}]
thresholds: [{check: read.p99 < 1s, window: phase q}]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			junit := filepath.Join(t.TempDir(), "junit.xml")
			ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
			defer cancel()
			var out, errOut bytes.Buffer
			code := execute(ctx, []string{"scenario", "run", writeScenario(t, tt.text), "--junit", junit}, &streams{out: &out, err: &errOut})
			if code != 3 || !strings.Contains(out.String(), "INTERRUPTED (exit 3)") {
				t.Errorf("exit %d, want 3 and the verdict INTERRUPTED\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
			}
			b, err := os.ReadFile(junit)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `<error message="interrupted`) {
				t.Errorf("JUnit has no interrupted error:\n%s", b)
			}
		})
	}
}

// TestScenarioPhaseSetsAreTrusted: a scenario file is named on the command line, so a
// phase may set what serve's API callers need --allow for (a path here); only the API is
// gated.
func TestScenarioPhaseSetsAreTrusted(t *testing.T) {
	s := writeScenario(t, `
config:
  driver: {name: memory}
  workload: {readRate: 50, writeRate: 50}
phases:
  - {name: a, duration: 1s}
  - {name: b, duration: 1s, set: {drivers.pebble.path: `+filepath.ToSlash(t.TempDir())+`}}
`)
	// The verdict (0, or 4 when a busy machine made the generator late) is not the point:
	// a refused phase would end the scenario with a config error, exit 2.
	code, stdout, stderr := ndbench(t, nil, "scenario", "run", s, "--out-dir", t.TempDir())
	if code == 2 || strings.Contains(stderr, "not allowed") || !strings.Contains(stdout+stderr, "phase b") {
		t.Errorf("exit %d: phase b's set refused or not reached\n%s\n%s", code, stdout, stderr)
	}
}

// TestDryRunChecksSeveralFiles: `scenario run --dry-run` checks several files at once, as
// CI checks a directory of scenarios (it took one file only, issue 36): each timeline or
// error under its file's name, every file checked whatever the others found, exit 2 when
// one failed; without --dry-run a run still takes exactly one file.
func TestDryRunChecksSeveralFiles(t *testing.T) {
	good := writeScenario(t, "config: {driver: {name: memory}}\nphases: [{name: warm, duration: 5s}, {name: peak, duration: 10s}]\n")
	other := writeScenario(t, "config: {driver: {name: memory}}\nphases: [{name: soak, duration: 1m}]\n")
	bad := writeScenario(t, "config: {driver: {name: memory}}\nphases: [{name: p, duration: 2s}]\nthresholds: [{check: read.p99 < 1ms, window: phase q}]\n")
	for _, tc := range []struct {
		files []string
		code  int
		want  []string
	}{
		{[]string{good, other}, 0, []string{"== " + good, "phase warm, for 5s", "phase peak", "== " + other, "phase soak, for 1m"}},
		{[]string{good, bad, other}, 2, []string{"== " + good, "phase peak", "== " + bad, `phase "q"`, "== " + other, "phase soak", "1 of 3 scenario files failed"}},
		{[]string{good}, 0, []string{"phase warm, for 5s"}},
	} {
		code, stdout, stderr := ndbench(t, nil, append([]string{"scenario", "run", "--dry-run"}, tc.files...)...)
		if code != tc.code {
			t.Errorf("%d files: exit %d, want %d\n%s%s", len(tc.files), code, tc.code, stdout, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout+stderr, w) {
				t.Errorf("%d files: output lacks %q:\n%s%s", len(tc.files), w, stdout, stderr)
			}
		}
	}
	if code, _, stderr := ndbench(t, nil, "scenario", "run", good, other); code != 2 || !strings.Contains(stderr, "several with --dry-run") {
		t.Errorf("a run of two files: exit %d, %s; want 2, saying --dry-run takes several", code, stderr)
	}
}
