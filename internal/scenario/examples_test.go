package scenario

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/ndbench/ndbench/drivers/all"
)

// TestExamplesLoad loads every scenario in examples/ (checked as `scenario run` checks
// them, with no environment: their ${VAR:-default}s apply) and prints its timeline, so the
// examples never rot.
func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[filepath.Base(f)] = true
		t.Run(filepath.Base(f), func(t *testing.T) {
			sc, err := Load(f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Thresholds) == 0 {
				t.Error("an example without thresholds judges nothing")
			}
			var b bytes.Buffer
			sc.Timeline(&b)
			if !strings.Contains(b.String(), "phase "+sc.Phases[0].Name) {
				t.Errorf("timeline:\n%s", b.String())
			}
		})
	}
	for _, want := range []string{"ami-certification.yaml", "capacity-steps.yaml", "capacity-search.yaml", "cache-warmup.yaml", "yugabyte-soak.yaml"} {
		if !seen[want] {
			t.Errorf("examples/%s is missing", want)
		}
	}
}
