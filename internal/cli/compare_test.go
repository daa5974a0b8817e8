package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/ndbench/ndbench/internal/compare"
	"github.com/ndbench/ndbench/internal/report"
)

// TestCompareRealRuns is issue 13's bar on reports from the real run path: three runs of
// the memory store, two at the same service time and one 20% slower, run at the same time
// so that the machine's load (this one is shared) falls on all three alike. The 20%
// regression is significant at p99 and trips read.p99 > +10% (exit 1); the two runs of
// one configuration pass (exit 0).
//
// The service times are seconds long because on a busy 2-core machine scheduling delays
// reach a few hundred milliseconds at p99: a 20% regression must stand out from them. The
// runs are 8 s, so each has ~6 whole seconds with answers: the test lowers
// --min-intervals to 5 (with 6 intervals each, complete separation gives p = 0.005).
func TestCompareRealRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine for 8 s")
	}
	dir := t.TempDir()
	runs := []struct{ name, service string }{{"base", "2s"}, {"same", "2s"}, {"slower", "2400ms"}}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--duration", "8s",
				"--set", "workload.readRate=25", "--set", "workload.readers=100", "--set", "workload.writeEnabled=false",
				"--set", "drivers.memory.serviceTime="+r.service, "--report", filepath.Join(dir, r.name+".json"))
			if code != 0 {
				t.Errorf("run %s: exit %d\n%s\n%s", r.name, code, out, errOut)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	path := func(n string) string { return filepath.Join(dir, n+".json") }
	cmp := func(cand string) (int, *compare.Result, string) {
		code, out, errOut := ndbench(t, nil, "compare", path("base"), path(cand), "--min-intervals", "5",
			"--fail-on", "read.p99 > +10%", "--format", "json")
		var res compare.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("compare %s: output is not JSON (%v), exit %d:\n%s\n%s", cand, err, code, out, errOut)
		}
		return code, &res, errOut
	}
	p99 := func(res *compare.Result) compare.Metric {
		for _, s := range res.Series {
			for _, m := range s.Metrics {
				if s.Name == "read" && m.Name == "p99" {
					return m
				}
			}
		}
		t.Fatalf("no read.p99 in %+v", res.Series)
		return compare.Metric{}
	}

	code, res, errOut := cmp("slower")
	m := p99(res)
	t.Logf("20%% slower: read.p99 %.1f → %.1f ms, p=%v, samples %v", m.Baseline/1000, m.Candidate/1000, deref(m.P), m.Samples)
	if code != 1 || !res.Failed || !m.Significant || m.DiffPct == nil || *m.DiffPct < 10 {
		t.Errorf("20%% slower: exit %d, read.p99 %+v (diff %v%%), conditions %+v\n%s", code, m, deref(m.DiffPct), res.Conditions, errOut)
	}
	if !strings.Contains(errOut, "read.p99 > +10%") {
		t.Errorf("the error does not name the condition that triggered:\n%s", errOut)
	}

	code, res, errOut = cmp("same")
	m = p99(res)
	t.Logf("same configuration: read.p99 %.1f → %.1f ms, p=%v, samples %v", m.Baseline/1000, m.Candidate/1000, deref(m.P), m.Samples)
	// At alpha 0.05 one same-configuration pair in twenty is significant on a given
	// metric by design; p < 0.01 would mean the runs differ, not chance (0.4% with 6
	// intervals each).
	if code != 0 || res.Failed || m.P == nil || *m.P < 0.01 {
		t.Errorf("same configuration: exit %d, read.p99 %+v (p %v), conditions %+v\n%s", code, m, deref(m.P), res.Conditions, errOut)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCompareExitCodes: usage and input errors exit 2 and name what is wrong, a
// misspelled name lists the valid ones; a triggered condition exits 1; the Markdown
// output is appended to GITHUB_STEP_SUMMARY.
func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--duration", "1500ms",
		"--set", "workload.readRate=200", "--set", "workload.writeRate=50", "--report", base)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	v2 := write("v2.json", strings.Replace(string(b), `"formatVersion": 1`, `"formatVersion": 2`, 1))
	usage := []struct {
		name string
		args []string
		want string
	}{
		{"one report", []string{base}, "two reports"},
		{"missing file", []string{base, filepath.Join(dir, "nope.json")}, "nope.json"},
		{"not JSON", []string{base, write("bad.json", "{")}, "not a JSON report"},
		{"other format version", []string{base, v2}, "formatVersion 2"},
		{"misspelled metric", []string{base, base, "--fail-on", "read.p98 > +10%"}, "p99.9"},
		{"misspelled series", []string{base, base, "--fail-on", "raed.p99 > +10%"}, "series in both: read, write"},
		{"bad bound", []string{base, base, "--fail-on", "read.p99 > 10%"}, "+10%"},
		{"bad format", []string{base, base, "--format", "yaml"}, "markdown"},
		{"bad latency", []string{base, base, "--latency", "total"}, "service"},
		{"bad alpha", []string{base, base, "--alpha", "5"}, "alpha"},
	}
	for _, tt := range usage {
		code, out, errOut := ndbench(t, nil, append([]string{"compare"}, tt.args...)...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, want 2 with %q:\n%s\n%s", tt.name, code, tt.want, out, errOut)
		}
	}

	summary := filepath.Join(dir, "summary.md")
	env := []string{"GITHUB_STEP_SUMMARY=" + summary}
	// A report against itself: nothing changed, and an absolute bound the run misses.
	code, out, errOut = ndbench(t, env, "compare", base, base, "--format", "markdown", "--fail-on", "read.p99 > 1us,read.p99 > +10%")
	if code != 1 || !strings.Contains(out, "FAIL: 1 of 2") || !strings.Contains(errOut, "read.p99 > 1us") {
		t.Errorf("absolute bound exceeded: exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(summary)
	if err != nil || string(got) != out {
		t.Errorf("GITHUB_STEP_SUMMARY holds %q (%v), want the Markdown printed", got, err)
	}
	code, out, errOut = ndbench(t, env, "compare", base, base, "--fail-on", "read.p99 > +10%")
	if code != 0 || !strings.Contains(out, "PASS") {
		t.Errorf("a report against itself: exit %d\n%s\n%s", code, out, errOut)
	}
	if got2, _ := os.ReadFile(summary); len(got2) != len(got) {
		t.Error("text output was appended to GITHUB_STEP_SUMMARY")
	}

	// The text fits 100 columns (issue 36: the header line ran to 115, each warning past
	// 110); --wide keeps each sentence on one line.
	code, out, errOut = ndbench(t, nil, "compare", base, base, "--fail-on", "read.p99 > +10%")
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > consoleWidth {
			t.Errorf("compare: a line of %d columns: %q", n, line)
		}
	}
	code, wide, errOut := ndbench(t, nil, "compare", base, base, "--fail-on", "read.p99 > +10%", "--wide")
	if code != 0 || !strings.Contains(wide, "Mann-Whitney U over per-second values at alpha 0.05 (at least 10 intervals per run)") ||
		len(strings.Split(wide, "\n")) >= len(strings.Split(out, "\n")) {
		t.Errorf("compare --wide: exit %d, want its sentences on one line each:\n%s\n%s", code, wide, errOut)
	}
}

// TestCompareRefusesRunsNotComparable: runs that offered the store different rates, op
// mixes or workloads are refused (exit 2, naming each difference) unless --force, which
// compares them with a clear warning.
func TestCompareRefusesRunsNotComparable(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--duration", "1500ms",
		"--set", "workload.readRate=200", "--set", "workload.writeRate=50", "--report", base)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	r := readReport(t, base)
	variant := func(name string, change map[string]string) string {
		v := *r
		v.Config = slices.Clone(r.Config)
		for i, e := range v.Config {
			if val, ok := change[e.Key]; ok {
				v.Config[i].Value = val
			}
		}
		p := filepath.Join(dir, name+".json")
		if err := report.WriteFile(p, &v); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name   string
		change map[string]string
		want   []string
	}{
		{"rate", map[string]string{"workload.readRate": "400"}, []string{"workload.readRate: 200 vs 400"}},
		{"op mix and pattern", map[string]string{"workload.writeEnabled": "false", "workload.pattern": "zipfian"},
			[]string{"workload.writeEnabled: true vs false", "workload.pattern: "}},
	}
	for _, tt := range tests {
		cand := variant(tt.name, tt.change)
		code, out, errOut := ndbench(t, nil, "compare", base, cand)
		if code != 2 || !strings.Contains(errOut, "not comparable") || !strings.Contains(errOut, "--force") {
			t.Errorf("%s: exit %d, want 2 saying the runs are not comparable\n%s\n%s", tt.name, code, out, errOut)
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: the refusal does not name %q: %s", tt.name, w, errOut)
			}
		}
		code, out, errOut = ndbench(t, nil, "compare", base, cand, "--force")
		// The warning wraps at 100 columns: its words are read whatever the layout.
		if code != 0 || !strings.Contains(out, "NOT COMPARABLE") || !strings.Contains(strings.Join(strings.Fields(out), " "), tt.want[0]) {
			t.Errorf("%s --force: exit %d, want 0 with the warning\n%s\n%s", tt.name, code, out, errOut)
		}
	}
	// The same workload against a different store setting (the driver's options) is what
	// a comparison is for.
	if code, out, errOut := ndbench(t, nil, "compare", base, variant("same", map[string]string{"drivers.memory.serviceTime": "1ms"})); code != 0 {
		t.Errorf("same workload: exit %d\n%s\n%s", code, out, errOut)
	}
}
