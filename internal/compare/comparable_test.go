package compare

import (
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/report"
)

func TestDifferences(t *testing.T) {
	cfg := func(driver string, kv ...string) *report.Report {
		r := &report.Report{Driver: report.Driver{Name: driver}}
		r.Config = append(r.Config, config.Entry{Key: "driver.name", Value: driver, Source: "--set"})
		for i := 0; i+2 < len(kv)+1; i += 3 {
			r.Config = append(r.Config, config.Entry{Key: kv[i], Value: kv[i+1], Source: kv[i+2]})
		}
		return r
	}
	base := cfg("redis", "workload.readRate", "100", "default", "drivers.redis.addrs", "a:6379", "--set")
	tests := []struct {
		name string
		cand *report.Report
		want []string // each in one difference; none: comparable
	}{
		{"same workload, other store address", cfg("redis", "workload.readRate", "100", "default", "drivers.redis.addrs", "b:6379", "--set"), nil},
		{"driver", cfg("memory", "workload.readRate", "100", "default"), []string{"driver: redis vs memory"}},
		{"rate", cfg("redis", "workload.readRate", "200", "--set"), []string{"workload.readRate: 100 vs 200"}},
		{"a named class's mix", cfg("redis", "workload.readRate", "100", "default", "workload.ops.scan.mix", "scan", "--set"), []string{"workload.ops.scan.mix: (none) vs scan"}},
		{"presets", cfg("redis", "workload.readRate", "100", "preset ycsb-b"), nil}, // one preset, same values: comparable
	}
	for _, tt := range tests {
		got, checked := Differences(base, tt.cand)
		if !checked || len(got) != len(tt.want) {
			t.Errorf("%s: %q (checked %v), want %q", tt.name, got, checked, tt.want)
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: %q, want %q", tt.name, got[i], w)
			}
		}
	}
	a, b := cfg("redis", "workload.readRate", "100", "preset ycsb-a"), cfg("redis", "workload.readRate", "100", "preset ycsb-b")
	if got, _ := Differences(a, b); len(got) != 1 || !strings.Contains(got[0], "workload preset: ycsb-a vs ycsb-b") {
		t.Errorf("two presets: %q", got)
	}
	if _, checked := Differences(&report.Report{}, base); checked {
		t.Errorf("a report without configuration was checked")
	}
}

// TestTailsFromMergedDistributions: a tail is judged from the runs' merged
// distributions with a bootstrap over the intervals, not from per-second values; a
// consistent +191% p99.9 is significant, a tail with too few operations beyond it is
// "sample too small to judge" (never "not significant") and a bound on it still gates.
func TestTailsFromMergedDistributions(t *testing.T) {
	secs := func(n int, rate, p99 float64) []second {
		out := make([]second, n)
		for i := range out {
			// A little spread, as real seconds have.
			out[i] = second{rate: rate, p99: p99 * (1 + 0.02*float64(i%5))}
		}
		return out
	}
	tests := []struct {
		name        string
		base, cand  []second
		tested, sig bool
		note        string
		triggered   bool
	}{
		{"+191% p99.9 over 30 s", secs(30, 1000, 1000), secs(30, 1000, 2910), true, true, "bootstrap over intervals", true},
		{"the same tail", secs(30, 1000, 1000), secs(30, 1000, 1000), true, false, "bootstrap over intervals", false},
		{"too few operations beyond p99.9", secs(12, 50, 1000), secs(12, 50, 2910), false, false, "sample too small to judge", true},
	}
	for _, tt := range tests {
		res, err := Compare(synthetic(tt.base), synthetic(tt.cand), defaults("read.p99.9 > +10%"))
		if err != nil {
			t.Fatal(err)
		}
		m := metric(t, res, "read", "p99.9")
		if m.Tested != tt.tested || m.Significant != tt.sig || !strings.Contains(m.Note, tt.note) {
			t.Errorf("%s: tested %v significant %v note %q; want %v %v %q", tt.name, m.Tested, m.Significant, m.Note, tt.tested, tt.sig, tt.note)
		}
		if res.Conditions[0].Triggered != tt.triggered {
			t.Errorf("%s: read.p99.9 > +10%% triggered %v, want %v: %s", tt.name, res.Conditions[0].Triggered, tt.triggered, res.Conditions[0].Reason)
		}
	}
}
