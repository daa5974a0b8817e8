package scenariofuzz

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeFuzzRunsEveryTarget reads the Makefile the way CI runs it: every fuzz target in
// the repository is in FUZZ_TARGETS with its package, and the fuzz command bounds
// minimization (without it FuzzParse stalls: see the Makefile's comment).
func TestMakeFuzzRunsEveryTarget(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(mk), "\\\n", " ")
	listed := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "FUZZ_TARGETS :="); ok {
			for _, f := range strings.Fields(rest) {
				name, rest, _ := strings.Cut(f, ":")
				pkg, budget, _ := strings.Cut(rest, ":")
				listed[name] = filepath.Clean(pkg)
				// A duration budget races Go 1.26's fuzz coordinator at its deadline
				// (golang/go#75804): CI failed FuzzProperties with "context deadline
				// exceeded" and no crasher. A count has no deadline.
				if !regexp.MustCompile(`^[1-9][0-9]*x$`).MatchString(budget) {
					t.Errorf("%s's budget %q in FUZZ_TARGETS is not an execution count such as 50000x", name, budget)
				}
			}
		}
	}
	if !regexp.MustCompile(`-fuzz "[^"]*" .*-fuzzminimizetime [0-9]+x `).MatchString(text) {
		t.Error("make fuzz does not bound minimization (-fuzzminimizetime Nx): FuzzParse would stall in it")
	}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(f \*testing\.F\)`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			found++
			if got, ok := listed[m[1]]; !ok || got != rel {
				t.Errorf("%s (in %s) is not in the Makefile's FUZZ_TARGETS as %s:./%s/ (listed: %q)", m[1], path, m[1], rel, got)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 8 {
		t.Errorf("found %d fuzz targets; the walk missed some", found)
	}
}
