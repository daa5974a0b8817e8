package all

import (
	"os"
	"slices"
	"strings"
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

// TestEveryOptionDocumented keeps docs/drivers.md true: every option of every registered
// driver must appear there as drivers.<name>.<option>.
func TestEveryOptionDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/drivers.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := string(b)
	for _, name := range driver.Names() {
		def, _ := driver.Lookup(name)
		schema, err := driver.Schema(def.NewOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range schema {
			if key := "`drivers." + name + "." + o.Name + "`"; !strings.Contains(docs, key) {
				t.Errorf("docs/drivers.md does not document %s", key)
			}
		}
	}
}

// TestPipelinersDeclareWhen: a driver that can give pipelines says with which options
// (Definition.Pipelines), or workload.pipeline above 1 would be refused for it when the
// configuration is written; a definition that says so has a driver that can.
func TestPipelinersDeclareWhen(t *testing.T) {
	for _, name := range driver.Names() {
		def, _ := driver.Lookup(name)
		_, can := def.New().(driver.Pipeliner)
		switch {
		case can && def.Pipelines == nil:
			t.Errorf("driver %s implements driver.Pipeliner but its Definition has no Pipelines func", name)
		case !can && def.Pipelines != nil:
			t.Errorf("driver %s declares Pipelines but does not implement driver.Pipeliner", name)
		}
	}
}
