package engine

import (
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
	"github.com/ndbench/ndbench/internal/config"
)

// TestSameKeysSeesEveryKeyOption: a live change of any option the key generator is built
// from builds a new generator; sameKeys deciding "same" would keep the old one running.
func TestSameKeysSeesEveryKeyOption(t *testing.T) {
	changes := map[string]string{
		"pattern": "zipfian", "numKeys": "7", "patternOptions": "x=1",
		"zipfExponent": "0.5", "windowSize": "7", "windowDuration": "2m",
		"hotKeys": "0.5", "hotFraction": "0.5", "expPercentile": "50", "expFraction": "0.5",
	}
	// Every option of every registered pattern that is a workload option must be here.
	schema := config.WorkloadSchema()
	for _, d := range keydist.All() {
		opts, err := d.Schema()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range opts {
			if _, isWorkload := driver.Canonical(schema, o.Name); isWorkload && changes[o.Name] == "" {
				t.Errorf("pattern %s reads workload.%s: add it to this test (and to sameKeys)", d.Name, o.Name)
			}
		}
	}
	base := config.DefaultWorkload()
	for opt, v := range changes {
		w := base
		if err := driver.Set(&w, map[string]string{opt: v}); err != nil {
			t.Fatalf("%s=%s: %v", opt, v, err)
		}
		if sameKeys(base, w) {
			t.Errorf("workload.%s changed from the default to %s, but sameKeys keeps the old generator", opt, v)
		}
	}
	if !sameKeys(base, base) {
		t.Error("sameKeys of a workload and itself is false")
	}
}
