package compare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndbench/ndbench/internal/report"
)

// comparedKeys are the configuration keys two runs must share to be compared: the
// driver, the workload's shape (pattern, keyspace, value sizes) and what it offered the
// store (each class's rate, enable flag and operation mix). Any other difference (workers,
// timeouts, the store's address) is what a comparison is usually for.
var comparedKeys = []string{
	"driver.name",
	"workload.pattern", "workload.numKeys", "workload.dataSize", "workload.variableDataSize", "workload.dataSizeMin", "workload.dataSizeMax",
	"workload.readRate", "workload.writeRate", "workload.readEnabled", "workload.writeEnabled", "workload.readMix", "workload.writeMix",
}

// comparedClassOptions are the options of a named op class (workload.ops.NAME.OPTION)
// two runs must share.
var comparedClassOptions = []string{"rate", "enabled", "mix"}

// Differences lists what makes two reports not comparable: a different driver,
// workload preset or pattern, keyspace, value size, op mix or rate, each as
// "KEY: BASE vs CAND". It is empty when they are comparable; checked is false when a
// report has no configuration to tell by (a fleet's merged report, an older one).
func Differences(base, cand *report.Report) (diffs []string, checked bool) {
	if len(base.Config) == 0 || len(cand.Config) == 0 {
		return nil, false
	}
	bv, cv := configValues(base), configValues(cand)
	var out []string
	if b, c := base.Driver.Name, cand.Driver.Name; b != c {
		out = append(out, fmt.Sprintf("driver: %s vs %s", b, c))
	}
	// One run's preset and the other's own keys may be the same workload: the keys below
	// tell; two different presets are named.
	if b, c := presetOf(base), presetOf(cand); b != "" && c != "" && b != c {
		out = append(out, fmt.Sprintf("workload preset: %s vs %s", orNone(b), orNone(c)))
	}
	keys := slices.Clone(comparedKeys)
	for _, m := range []map[string]string{bv, cv} {
		for k := range m {
			if rest, ok := strings.CutPrefix(k, "workload.ops."); ok {
				if i := strings.LastIndex(rest, "."); i > 0 && slices.Contains(comparedClassOptions, rest[i+1:]) && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	slices.Sort(keys[len(comparedKeys):])
	for _, k := range keys {
		if k == "driver.name" && base.Driver.Name != cand.Driver.Name {
			continue // said above
		}
		b, bok := bv[k]
		c, cok := cv[k]
		if b != c || bok != cok {
			out = append(out, fmt.Sprintf("%s: %s vs %s", k, orNone(b), orNone(c)))
		}
	}
	return out, true
}

// NotComparableError is returned by Compare for reports of runs that differ in what
// they offered the store, unless Options.Force.
type NotComparableError struct{ Differences []string }

func (e *NotComparableError) Error() string {
	return "the runs are not comparable (" + strings.Join(e.Differences, "; ") + "); give --force to compare them anyway"
}

func configValues(r *report.Report) map[string]string {
	m := make(map[string]string, len(r.Config))
	for _, e := range r.Config {
		m[e.Key] = e.Value
	}
	return m
}

// presetOf is the workload preset a run's configuration came from ("" for none): its
// keys' source names it.
func presetOf(r *report.Report) string {
	for _, e := range r.Config {
		if p, ok := strings.CutPrefix(e.Source, "preset "); ok {
			return p
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
