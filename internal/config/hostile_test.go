package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
)

// withMemoryCeiling makes memoryCeiling answer n for the rest of t, so that tests of the
// budget do not depend on the machine's memory.
func withMemoryCeiling(t *testing.T, n int64) {
	t.Helper()
	saved := memoryCeiling
	memoryCeiling = func() (int64, string) { return n, "test machine" }
	t.Cleanup(func() { memoryCeiling = saved })
}

// numericOptions returns the keys of every numeric workload and op class option (the op
// class as workload.ops.extra.<option>), with their schema.
func numericOptions() map[string]driver.Option {
	out := map[string]driver.Option{}
	for prefix, schema := range map[string][]driver.Option{"workload.": WorkloadSchema(), "workload.ops.extra.": OpClassSchema()} {
		for _, o := range schema {
			switch o.Type {
			case "int", "uint", "float", "duration", "size":
				out[prefix+o.Name] = o
			}
		}
	}
	return out
}

// TestEveryNumericOptionIsBounded: every numeric option states both bounds, so that no
// value is accepted that the engine cannot honour (workload.readRate=1e308 once wedged a
// node). The seed is the one exception: every 64-bit value is a seed.
func TestEveryNumericOptionIsBounded(t *testing.T) {
	for key, o := range numericOptions() {
		if key == "workload.seed" {
			continue
		}
		if o.Min == "" || o.Max == "" {
			t.Errorf("%s (%s) has bounds [%s..%s]: want both", key, o.Type, o.Min, o.Max)
		}
	}
}

// TestHostileNumbersThroughTheStore sets every numeric option, one at a time through a
// config store (as PATCH /api/v1/config does), to its maximum, past it, negative, NaN,
// ±Inf and 1e308: each is either accepted within the option's documented bounds, or
// refused with a field error that names the option (on it, or among the values that drive
// a memory estimate it failed), and a refusal changes nothing.
func TestHostileNumbersThroughTheStore(t *testing.T) {
	withMemoryCeiling(t, 4<<30)
	base := mustLoad(t, Sources{Env: selectFake, Sets: []string{"workload.ops.extra.mix=read"}})
	for key, o := range numericOptions() {
		values := []string{"-1", "NaN", "+Inf", "-Inf", "Inf", "1e308", "-1e308"}
		if o.Max != "" {
			values = append(values, o.Max, beyond(o.Max, o.Type))
		}
		for _, v := range values {
			t.Run(key+"="+v, func(t *testing.T) {
				st := NewStore(base)
				snap, err := st.Patch(LayerRuntime, map[string]string{key: v})
				if err != nil {
					fes := fieldErrors(t, err)
					named := false
					for _, fe := range fes {
						named = named || fe.Field == key || strings.Contains(fe.Allowed, key+"=")
					}
					if !named {
						t.Errorf("%s=%s refused without naming it: %v", key, v, err)
					}
					if st.Current() != base {
						t.Errorf("%s=%s refused but the store changed", key, v)
					}
					return
				}
				got, _, _ := snap.Value(key)
				if key == "workload.seed" {
					return
				}
				if o.Max == "" {
					t.Fatalf("%s=%s accepted (as %s) and the option has no upper bound", key, v, got)
				}
				if v != o.Max {
					t.Errorf("%s=%s accepted (as %s), beyond [%s..%s]", key, v, got, o.Min, o.Max)
				}
			})
		}
	}
}

// TestRateBoundIsThePacers: the rates' documented maximum is the pacer's MaxRate, the
// highest rate its shapes accept.
func TestRateBoundIsThePacers(t *testing.T) {
	for key, o := range numericOptions() {
		if !strings.HasSuffix(strings.ToLower(key), "rate") {
			continue
		}
		if o.Max != fmt.Sprintf("%.0f", float64(pacer.MaxRate)) {
			t.Errorf("%s: max %q, want pacer.MaxRate %.0f", key, o.Max, float64(pacer.MaxRate))
		}
	}
}

// TestMemoryBudgetCeiling: workload.memoryBudget is bounded by what the machine can
// honour, three quarters of its memory, and the error says so; the ceiling never refuses
// the default.
func TestMemoryBudgetCeiling(t *testing.T) {
	withMemoryCeiling(t, 3<<30)
	if _, err := Load(Sources{Env: selectFake, Sets: []string{"workload.memoryBudget=3GiB"}}); err != nil {
		t.Fatalf("a budget at the ceiling: %v", err)
	}
	_, err := Load(Sources{Env: selectFake, Sets: []string{"workload.memoryBudget=3073MiB"}})
	fes := fieldErrors(t, err)
	if len(fes) != 1 || fes[0].Field != "workload.memoryBudget" || !strings.Contains(fes[0].Allowed, "3GiB") ||
		!strings.Contains(fes[0].Allowed, "machine's memory") || fes[0].Source != "--set" {
		t.Fatalf("a budget past the ceiling: %v", err)
	}

	// The real ceiling: at least the default, at most the machine's memory.
	saved := memoryCeiling
	memoryCeiling = saved
	hi, source := memoryCeiling()
	if hi < defaultMemoryBudget || source == "" {
		t.Errorf("ceiling %d (%s): want at least the default budget and a source", hi, source)
	}
	if total, _ := physicalMemory(); total > 0 && hi > max(total, defaultMemoryBudget) {
		t.Errorf("ceiling %d above the machine's memory %d", hi, total)
	}
}

// TestMemoryErrorNamesWhatDrivesTheEstimate: when the workers dominate the memory
// estimate, the error names the option that sets their number, with where it came from:
// the elastic maximum (automatic by default: 64 read workers with readers at 4), not
// workload.readers "64 (from default)", which the user never set to 64.
func TestMemoryErrorNamesWhatDrivesTheEstimate(t *testing.T) {
	big := "workload.dataSize=10000000" // 128 workers of 10 MB outweigh 100 pooled values
	tests := []struct {
		name                 string
		sets                 []string
		field, value, source string
		says                 []string
	}{
		{"automatic maximum", []string{big}, "workload.maxReaders", "0", "default",
			[]string{"workload.maxReaders=0 (auto: 64 read workers", "readRate 100", "opTimeout 5s", "readers 4", "workload.maxWriters=0 (auto: 64 write workers"}},
		{"a maximum set", []string{big, "workload.maxWriters=200"}, "workload.maxWriters", "200", "--set",
			[]string{"workload.maxWriters=200", "workload.maxReaders=0 (auto: 64 read workers"}},
		{"fixed pools", []string{big, "workload.readRate=0", "workload.writeRate=0", "workload.readers=100"}, "workload.readers", "100", "--set",
			[]string{"workload.readers=100", "workload.writers=4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{Env: selectFake, Sets: tt.sets})
			fes := fieldErrors(t, err)
			fe := fes[0]
			if len(fes) != 1 || fe.Field != tt.field || fe.Value != tt.value || fe.Source != tt.source {
				t.Fatalf("error on %s=%s (from %s), want %s=%s (from %s): %v", fe.Field, fe.Value, fe.Source, tt.field, tt.value, tt.source, err)
			}
			for _, s := range tt.says {
				if !strings.Contains(fe.Allowed, s) {
					t.Errorf("error lacks %q: %v", s, err)
				}
			}
		})
	}
}

// TestForeignKeysAreBounded: options of drivers this build does not have are kept as
// written, so their number and size are bounded over the whole configuration: PATCHes of
// a thousand new keys each stop being accepted at the bound, with an error naming the
// driver and the limits, and the configuration stays its size. They once piled up (40
// PATCHes kept 40,000 keys, GET /api/v1/config grew to ~5 MB).
func TestForeignKeysAreBounded(t *testing.T) {
	st := NewStore(mustLoad(t, Sources{Env: selectFake}))
	refused := 0
	for p := range 40 {
		values := map[string]string{}
		for k := range MaxChangeKeys {
			values[fmt.Sprintf("drivers.elsewhere.opt%d_%d", p, k)] = "v"
		}
		_, err := st.Patch(LayerRuntime, values)
		if err == nil {
			continue
		}
		refused++
		fes := fieldErrors(t, err)
		if len(fes) != 1 || fes[0].Field != "drivers.elsewhere" || !strings.Contains(fes[0].Allowed, fmt.Sprint(MaxForeignKeys)) {
			t.Fatalf("patch %d: %v", p, err)
		}
	}
	if refused < 39 {
		t.Errorf("%d of 40 patches of %d foreign keys refused, want all beyond the first", refused, MaxChangeKeys)
	}
	if n := len(st.Current().Entries); n > MaxForeignKeys+500 {
		t.Errorf("the configuration kept %d entries", n)
	}
	// Size counts too: a few huge values.
	big := strings.Repeat("x", MaxForeignBytes/2)
	if _, err := st.Update(LayerRuntime, map[string]string{"drivers.elsewhere.a": big, "drivers.elsewhere.b": big, "drivers.elsewhere.c": big}); err == nil {
		t.Errorf("%d bytes of foreign values accepted", 3*len(big))
	}
	// And a key of a known driver still goes in.
	if _, err := st.Patch(LayerRuntime, map[string]string{"drivers.fake-kv.colsPerRow": "3"}); err != nil {
		t.Errorf("a known key after the refusals: %v", err)
	}
}

// TestUnusedDriverValuesChecked: a value for a bundled driver that is not selected is
// checked against the option's type and bounds when it is written, and refused naming
// the key; it was kept (drivers.redis.poolSize=1e308 answered 200) until a switch of
// driver.name tripped on it. Rules between options wait for the driver to be selected:
// a driver set up ahead of a switch may be half done.
func TestUnusedDriverValuesChecked(t *testing.T) {
	st := NewStore(mustLoad(t, Sources{Env: selectFake}))
	for _, v := range []string{"0", "-1", "NaN", "+Inf", "1e308", "9223372036854775808", "v1"} {
		_, err := st.Patch(LayerRuntime, map[string]string{"drivers.fake-other.depth": v})
		fes := fieldErrors(t, err)
		if len(fes) != 1 || fes[0].Field != "drivers.fake-other.depth" || !strings.Contains(fes[0].Allowed, "1") {
			t.Errorf("depth=%s: %v, want one field error on drivers.fake-other.depth", v, err)
		}
	}
	if _, err := st.Patch(LayerRuntime, map[string]string{"drivers.fake-other.depth": "7"}); err != nil {
		t.Errorf("a good value for the unused driver: %v", err)
	}
}

// fakeClaimOptions are the options of a driver that takes memory of its own, as the
// script driver's memoryLimit does.
type fakeClaimOptions struct {
	Limit driver.Size `opt:"limit" default:"256MiB" min:"1MiB" max:"1TiB" help:"memory"`
}

func (o *fakeClaimOptions) MemoryClaim() (int64, string) { return int64(o.Limit), "limit" }

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-claim", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeClaimOptions{} }})
}

// TestDriverMemoryClaimWithinBudget: what a driver's options claim of the node's memory
// (the script driver's memoryLimit) counts against workload.memoryBudget beside the
// workload's estimate; past it the driver's option is refused, naming the budget, and a
// budget raised to fit lets it in. A script allocating in a loop once killed ndbench
// serve with "fatal error: out of memory" because its limit was nobody's budget.
func TestDriverMemoryClaimWithinBudget(t *testing.T) {
	withMemoryCeiling(t, 64<<30)
	sel := []string{"NDBENCH_DRIVER_NAME=fake-claim"}
	mustLoad(t, Sources{Env: sel})
	for _, sets := range [][]string{
		{"drivers.fake-claim.limit=1GiB"},
		{"drivers.fake-claim.limit=1TiB", "workload.memoryBudget=16GiB"},
		{"drivers.fake-claim.limit=900MiB", "workload.dataSize=1000000"}, // the workload's value pool takes its share
	} {
		_, err := Load(Sources{Env: sel, Sets: sets})
		fes := fieldErrors(t, err)
		if len(fes) != 1 || fes[0].Field != "drivers.fake-claim.limit" || !strings.Contains(fes[0].Allowed, "workload.memoryBudget=") || fes[0].Source != "--set" {
			t.Errorf("%v: %v, want the limit refused naming the budget", sets, err)
		}
	}
	mustLoad(t, Sources{Env: sel, Sets: []string{"drivers.fake-claim.limit=8GiB", "workload.memoryBudget=9GiB"}})
	// A driver that is not selected claims nothing.
	mustLoad(t, Sources{Env: selectFake, Sets: []string{"drivers.fake-claim.limit=1TiB"}})
}
