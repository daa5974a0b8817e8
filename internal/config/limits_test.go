package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestConfigRejectsWhatTheEngineWould lists rules the engine and the workload package
// enforce when they build a workload: the config store must reject the same values up
// front, naming the key and the rule, or it would accept a change that never applies.
func TestConfigRejectsWhatTheEngineWould(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		// field is the key the error must name; rule a piece of its allowed text.
		field, rule string
	}{
		{"window duration over a year", []string{"workload.pattern=sliding_window", "workload.windowDuration=8761h"},
			"workload.windowDuration", "8760h"},
		{"window duration over a year, unused pattern", []string{"workload.windowDuration=100000h"},
			"workload.windowDuration", "8760h"},
		{"NDBench window seconds over a year", []string{"ndbench.config.cli.windowDurationInSec=99999999"},
			"workload.windowDuration", "8760h"},
		{"tracker over 2^30 keys", []string{"workload.validate=true", "workload.numKeys=1073741825"},
			"workload.numKeys", "1073741824"},
		{"value pool over the budget", []string{"workload.numValues=300000", "workload.dataSize=4096"},
			"workload.numValues", "workload.memoryBudget"},
		{"variable value pool over the budget", []string{"workload.numValues=300000", "workload.variableDataSize=true",
			"workload.dataSizeMax=5000"}, "workload.numValues", "workload.memoryBudget"},
		{"window over the keyspace", []string{"workload.pattern=sliding_window_flip", "workload.numKeys=10", "workload.windowSize=11"},
			"workload.windowSize", "numKeys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{Env: selectFake, Sets: tt.sets})
			if err == nil {
				t.Fatalf("%v accepted", tt.sets)
			}
			fes := fieldErrors(t, err)
			if !slices.ContainsFunc(fes, func(fe *driver.FieldError) bool {
				return strings.HasPrefix(fe.Error(), tt.field+":") && strings.Contains(fe.Error(), tt.rule)
			}) {
				t.Fatalf("errors do not name %s with %q:\n%v", tt.field, tt.rule, err)
			}
		})
	}
}

// TestBoundedOptionsStateBothBounds: an out-of-range value of an option with a lower and
// an upper bound gets an error stating both, for every workload option and every option
// of a registered test driver.
func TestBoundedOptionsStateBothBounds(t *testing.T) {
	for _, o := range WorkloadSchema() {
		if o.Min == "" || o.Max == "" {
			continue
		}
		t.Run(o.Name, func(t *testing.T) {
			_, err := Load(Sources{Env: selectFake, Sets: []string{"workload." + o.Name + "=" + beyond(o.Max, o.Type)}})
			if err == nil {
				t.Fatalf("%s=%s accepted", o.Name, beyond(o.Max, o.Type))
			}
			if msg := err.Error(); !strings.Contains(msg, o.Min) || !strings.Contains(msg, o.Max) {
				t.Errorf("error does not state both bounds %s and %s: %s", o.Min, o.Max, msg)
			}
		})
	}
	// The one the issue was found with: NDBench's seconds, far beyond the window limit.
	_, err := Load(Sources{Env: selectFake, Sets: []string{"ndbench.config.cli.windowDurationInSec=99999999"}})
	if err == nil || !strings.Contains(err.Error(), "1ms") || !strings.Contains(err.Error(), "8760h") {
		t.Errorf("windowDurationInSec=99999999: %v; want both bounds, 1ms and 8760h", err)
	}
}

// beyond returns a value of type typ above the bound max.
func beyond(max, typ string) string {
	if typ == "duration" {
		d, _ := time.ParseDuration(max)
		return (2 * d).String()
	}
	return fmt.Sprint(max + "1")
}

// TestMemoryBudget: what a workload would allocate is estimated from its options and
// checked against workload.memoryBudget; the error names the keys that drive the
// estimate, the estimate, and the budget.
func TestMemoryBudget(t *testing.T) {
	withMemoryCeiling(t, 64<<30)
	tests := []struct {
		name string
		sets []string
		// want are pieces of the error; nil means the configuration is accepted.
		want []string
	}{
		{"defaults fit", nil, nil},
		{"a billion one-byte values: payload fits 1 GiB, the pool does not",
			[]string{"workload.numValues=1000000000", "workload.dataSize=1"},
			[]string{"workload.numValues=1000000000", "workload.dataSize=1", "value pool needs ~30.7GiB", "workload.memoryBudget=1GiB"}},
		{"validation tracker for 2^30 keys",
			[]string{"workload.validate=true", "workload.numKeys=1073741824"},
			[]string{"workload.numKeys=1073741824", "workload.validate=true", "validation tracker needs ~4GiB", "workload.memoryBudget=1GiB"}},
		{"a tracker that fits", []string{"workload.validate=true", "workload.numKeys=100000000"}, nil},
		{"workers holding large values",
			[]string{"workload.readers=5000", "workload.writers=5000", "workload.dataSize=1048576"},
			[]string{"workload.readers=5000", "workload.writers=5000", "workload.dataSize=1048576", "workers"}},
		{"variable sizes count the largest",
			[]string{"workload.numValues=20000", "workload.variableDataSize=true", "workload.dataSizeMin=1", "workload.dataSizeMax=67108864"},
			[]string{"workload.numValues=20000", "workload.dataSizeMax=67108864", "value pool"}},
		{"a raised budget admits it",
			[]string{"workload.validate=true", "workload.numKeys=1073741824", "workload.memoryBudget=8GiB"}, nil},
		{"a lowered budget rejects the defaults' neighbours",
			[]string{"workload.numValues=100000", "workload.dataSize=1024", "workload.memoryBudget=64MiB"},
			[]string{"workload.numValues=100000", "workload.dataSize=1024", "workload.memoryBudget=64MiB"}},
		{"budget below its minimum", []string{"workload.memoryBudget=1KiB"}, []string{"workload.memoryBudget", "1MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{Env: selectFake, Sets: tt.sets})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%v accepted", tt.sets)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
