package deprules

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ndbench/ndbench"

// sourceLibraries are the client libraries of configuration sources (etcd, file watching,
// YAML files through koanf): package internal/config/source links them, and the run
// machinery must not.
var sourceLibraries = []string{
	"go.etcd.io/etcd",
	"github.com/fsnotify/fsnotify",
	"github.com/knadh/koanf",
	module + "/internal/config/source",
}

// rules lists, per package, the import path prefixes it must not depend on, directly or
// through any other package.
var rules = map[string][]string{
	"internal/engine": append([]string{module + "/internal/web"}, sourceLibraries...),
	"internal/report": append([]string{module + "/internal/web"}, sourceLibraries...),
	// compare reads reports; it must not pull in the UI or the config sources either.
	"internal/compare": append([]string{module + "/internal/web"}, sourceLibraries...),
	"internal/config":  sourceLibraries,
	// The public plugin APIs are all a third party imports: they cannot reach into
	// internal packages (Go would refuse the import in another module anyway, but only
	// there, long after the dependency was added here).
	"driver":         {module + "/internal"},
	"driver/keydist": {module + "/internal", module + "/drivers"},
	// What drives a node holds the one node interface (internal/control), never the
	// node's implementation: a fleet, a scenario and auto-tune drive a node and a fleet
	// view alike (DESIGN.md: "through the same interface the API uses").
	"internal/cluster":  {module + "/internal/node"},
	"internal/scenario": {module + "/internal/node"},
	"internal/autotune": {module + "/internal/node"},
	"internal/control":  {module + "/internal/node"},
}

// deps returns every package pkg depends on (itself included), for the platform the
// test runs on; build-tagged files elsewhere are rare and covered by CI on each OS.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

func TestDependencyRule(t *testing.T) {
	for pkg, forbidden := range rules {
		t.Run(pkg, func(t *testing.T) {
			for _, d := range deps(t, module+"/"+pkg) {
				for _, f := range forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s depends on %s, which the dependency rule forbids (DESIGN.md, Layout); `go list -deps` and `go mod why` show through which import", pkg, d)
					}
				}
			}
		})
	}
}

// TestRuleSeesTheLibraries guards the test itself: if the forbidden paths stopped
// matching anything (a library renamed, a module path changed), the rule would pass
// vacuously. The config sources must still be found where they belong.
func TestRuleSeesTheLibraries(t *testing.T) {
	all := strings.Join(deps(t, module+"/internal/config/source"), "\n")
	for _, lib := range sourceLibraries[:3] {
		if !strings.Contains(all, lib) {
			t.Errorf("internal/config/source no longer depends on %s: update the rule's list", lib)
		}
	}
}
