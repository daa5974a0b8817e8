package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzParse feeds scenario YAML to the parser. It returns an error or a scenario whose
// phases follow each other from 0 (only the last may be forever), whose names are
// unique, and whose hooks and thresholds are all there; and parsing the same text again
// gives the same plan.
func FuzzParse(f *testing.F) {
	f.Add(base)
	for _, name := range []string{"cache-warmup.yaml", "capacity-steps.yaml", "ami-certification.yaml"} {
		if b, err := os.ReadFile(filepath.Join("..", "..", "examples", name)); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("phases:\n  - name: a\n    duration: forever\n")
	f.Add("phases:\n  - name: a\n    duration: 1s\n    set: {workload.readRate: ${RATE}}\nhooks:\n  - name: h\n    at: a + 1s\n    run: 'true'\n")
	f.Fuzz(func(t *testing.T, text string) {
		// A scenario names files to read (configFile, a workload file): files named on the
		// command line are trusted, and the fuzzer must not read /dev/zero.
		var file File
		if yaml.Unmarshal([]byte(text), &file) == nil && (file.ConfigFile != "" || strings.ContainsAny(file.Workload, `/\.`)) {
			return
		}
		sc, err := Parse("fuzz.yaml", []byte(text), Options{})
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
			if p.Duration == Forever && i != len(sc.Phases)-1 || p.Duration <= 0 && p.Duration != Forever {
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
		again, err := Parse("fuzz.yaml", []byte(text), Options{})
		if err != nil {
			t.Fatalf("accepted once, then: %v", err)
		}
		if len(again.Phases) != len(sc.Phases) || len(again.Hooks) != len(sc.Hooks) || len(again.Thresholds) != len(sc.Thresholds) || again.End() != sc.End() {
			t.Fatal("parsing the same text twice gave two plans")
		}
	})
}
