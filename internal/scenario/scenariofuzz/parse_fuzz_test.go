package scenariofuzz

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/scenario"
)

// base is a valid scenario using every part of the format.
const base = `
name: t
config:
  driver: {name: memory}
  workload: {readRate: 100, writeRate: 20, numKeys: 100}
sla:
  read: {p99: 10ms, errors: 1%}
phases:
  - name: warm
    duration: 10s
  - name: steady
    duration: 1m
    set: {workload.readRate: 200}
    load:
      read: {ramp: {from: 10, to: 100, over: 30s}}
      write: {steps: {rates: [10, 20], every: 10s}}
hooks:
  - name: pause
    at: steady + 10s
    run: "true"
    for: 3s
    undo: {run: "true"}
thresholds:
  - check: read.p99 < 20ms
    window: phase steady
  - check: write.errors < 0.1%
    window: from pause + 10s for 20s
  - check: read.achieved > 99%
    window: phase steady sustained 10s
    abort: true
`

// FuzzParse feeds scenario YAML to the parser. It returns an error or a scenario whose
// phases follow each other from 0 (only the last may be forever), whose names are
// unique, and whose hooks and thresholds are all there; and parsing the same text again
// gives the same plan.
func FuzzParse(f *testing.F) {
	f.Add(base)
	for _, name := range []string{"cache-warmup.yaml", "capacity-steps.yaml", "ami-certification.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", name)); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("phases:\n  - name: a\n    duration: forever\n")
	f.Add("phases:\n  - name: a\n    duration: 1s\n    set: {workload.readRate: ${RATE}}\nhooks:\n  - name: h\n    at: a + 1s\n    run: 'true'\n")
	f.Fuzz(func(t *testing.T, text string) {
		// A scenario names files to read (configFile, a workload file): files named on the
		// command line are trusted, and the fuzzer must not read /dev/zero.
		var file scenario.File
		if yaml.Unmarshal([]byte(text), &file) == nil && (file.ConfigFile != "" || strings.ContainsAny(file.Workload, `/\.`)) {
			return
		}
		sc, err := scenario.Parse("fuzz.yaml", []byte(text), scenario.Options{})
		if err != nil {
			if sc != nil {
				t.Fatalf("error %v with a scenario", err)
			}
			return
		}
		if len(sc.Phases) == 0 {
			t.Fatal("accepted without a phase")
		}
		var at = sc.Phases[0].Start
		seen := map[string]bool{}
		for i, p := range sc.Phases {
			if p.Start != at || seen[p.Name] {
				t.Fatalf("phase %d %q starts at %v (want %v) or repeats a name", i, p.Name, p.Start, at)
			}
			seen[p.Name] = true
			if p.Duration == scenario.Forever && i != len(sc.Phases)-1 || p.Duration <= 0 && p.Duration != scenario.Forever {
				t.Fatalf("phase %d %q lasts %v", i, p.Name, p.Duration)
			}
			at += p.Duration
		}
		if at != 0 && sc.Phases[0].Start != 0 {
			t.Fatalf("the first phase starts at %v", sc.Phases[0].Start)
		}
		for _, h := range sc.Hooks {
			if h.At < 0 || h.Action.Timeout <= 0 {
				t.Fatalf("hook %q at %v, timeout %v", h.Name, h.At, h.Action.Timeout)
			}
		}
		again, err := scenario.Parse("fuzz.yaml", []byte(text), scenario.Options{})
		if err != nil {
			t.Fatalf("accepted once, then: %v", err)
		}
		if len(again.Phases) != len(sc.Phases) || len(again.Hooks) != len(sc.Hooks) || len(again.Thresholds) != len(sc.Thresholds) || again.End() != sc.End() {
			t.Fatal("parsing the same text twice gave two plans")
		}
	})
}
