package all

import (
	"os"
	"slices"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// TestEveryDriverRegistered catches a driver package under drivers/ that was written but
// not added to the imports, so the binary would not know its name.
func TestEveryDriverRegistered(t *testing.T) {
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	names := driver.Names()
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "all" {
			continue
		}
		if !slices.Contains(names, e.Name()) {
			t.Errorf("drivers/%s is not registered; registered: %v (import it in all.go, or name the driver after its directory)", e.Name(), names)
		}
	}
}
