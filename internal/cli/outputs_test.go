package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An output path the end of the run could not write is refused before any load: a report
// refused after hours of load loses everything they measured.
func TestUnwritableOutputsAreRefusedBeforeTheLoad(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-dir", "r.json")
	scen := writeScenario(t, `
config: {driver: {name: memory}, workload: {readRate: 100, writeEnabled: false, numKeys: 100}}
phases: [{name: p, duration: 200ms}]
`)
	cases := []struct {
		name     string
		args     []string
		flag     string
		loadSign string // printed once the load starts: must not appear
	}{
		{"run report", []string{"run", "--driver", "memory", "--duration", "200ms", "--report", missing}, "--report", "ndbench "},
		{"run report is a directory", []string{"run", "--driver", "memory", "--duration", "200ms", "--report", dir}, "--report", "ndbench "},
		{"run report-html", []string{"run", "--driver", "memory", "--duration", "200ms", "--report-html", missing}, "--report-html", "ndbench "},
		{"serve report", []string{"serve", "--listen", "127.0.0.1:0", "--report", missing}, "--report", "serving on"},
		{"autotune report-html", []string{"autotune", "--driver", "memory", "--max-rate", "200", "--report-html", missing}, "--report-html", "step"},
		{"scenario junit", []string{"scenario", "run", scen, "--junit", missing}, "--junit", "phase"},
		{"scenario markdown", []string{"scenario", "run", scen, "--markdown", missing}, "--markdown", "phase"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := ndbench(t, nil, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, c.flag+":") {
				t.Errorf("error does not name %s: %s", c.flag, stderr)
			}
			if strings.Contains(stdout, c.loadSign) {
				t.Errorf("the load ran before the path was checked:\n%s", stdout)
			}
		})
	}
	// The check leaves nothing behind in a directory it could write to.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".ndbench") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}
