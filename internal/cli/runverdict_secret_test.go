package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileThresholdsErrorShowsNoValue: the run's own read of a config file (for its
// thresholds: list) names a YAML error by line, never with the file's values.
func TestFileThresholdsErrorShowsNoValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("driver: memory\ndrivers:\n  ? {password: s3cr3t-Pw}\n  : 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fileThresholds(path)
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("error %q: want line 3 and no value", err)
	}
}
