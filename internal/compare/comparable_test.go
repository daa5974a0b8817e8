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
