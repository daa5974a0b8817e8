package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/engine"
)

// initMemory returns an initialised instance on the memory driver with no load running:
// these tests are about which configuration is in effect, not about operations.
func initMemory(t *testing.T, sets ...string) *Node {
	t.Helper()
	i := newInstance(t, append([]string{"workload.readEnabled=false", "workload.writeEnabled=false"}, sets...)...)
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	return i
}

// TestPendingFollowsTheConfig: pending lists what differs between the configuration and
// the connected driver, so a key set back to what the driver runs with leaves it.
func TestPendingFollowsTheConfig(t *testing.T) {
	tests := []struct {
		name        string
		change, bak map[string]string
		pending     string
	}{
		{"driver name", map[string]string{"driver.name": "fake-pending"}, map[string]string{"driver.name": "memory"}, "driver.name"},
		{"restart option", map[string]string{"drivers.memory.shards": "8"}, map[string]string{"drivers.memory.shards": "64"}, "drivers.memory.shards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := initMemory(t)
			res, err := i.Patch(tt.change)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(res.Pending, tt.pending) {
				t.Fatalf("pending after %v = %v, want %s", tt.change, res.Pending, tt.pending)
			}
			res, err = i.Patch(tt.bak)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Pending) != 0 || len(i.Status().Pending) != 0 {
				t.Fatalf("pending after setting %v back = %v (status %v), want none", tt.bak, res.Pending, i.Status().Pending)
			}
		})
	}
}

// TestDriverOptionErrorsNameTheDriverOnce: whatever path reports a bad option of the
// running driver (the patch itself, or lastError), "options of driver memory" appears
// at most once in the message.
func TestDriverOptionErrorsNameTheDriverOnce(t *testing.T) {
	i := initMemory(t)
	// With another driver selected, the memory driver's options are still the running
	// driver's: a bad value must be rejected, and said once.
	if _, err := i.Patch(map[string]string{"driver.name": "fake-pending"}); err != nil {
		t.Fatal(err)
	}
	_, err := i.Patch(map[string]string{"drivers.memory.errorRatio": "7"})
	msgs := []string{}
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if le := i.Status().LastError; le != nil {
		msgs = append(msgs, le.Message)
	}
	if err == nil {
		t.Errorf("errorRatio=7 for the running driver accepted; lastError: %v", msgs)
	}
	for _, m := range msgs {
		if n := strings.Count(m, "options of driver memory"); n > 1 {
			t.Errorf("prefix repeated %d times: %s", n, m)
		}
	}
}

// fakePending is a registered driver that is never initialised here: selecting it makes
// driver.name pending while the memory driver runs.
type fakePendingOptions struct {
	Depth int `opt:"depth" default:"1" min:"1" max:"9" help:"depth"`
}

type fakePendingDriver struct{}

func (fakePendingDriver) Init(context.Context, any) error { return nil }
func (fakePendingDriver) Read(context.Context, string) ([]byte, error) {
	return nil, driver.ErrNotFound
}
func (fakePendingDriver) Write(context.Context, string, []byte) error { return nil }
func (fakePendingDriver) Close() error                                { return nil }

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-pending", Summary: "test", New: func() driver.Driver { return fakePendingDriver{} },
		NewOptions: func() any { return &fakePendingOptions{} }})
}

// randomPatch draws one to three keys with values that are valid or not, alone or in
// combination. With the test's memory budget (at most 64 MiB) every accepted workload is
// cheap to build, while the rejected ones would need far more.
func randomPatch(r *rand.Rand) map[string]string {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	gens := []func() (string, string){
		func() (string, string) {
			return "workload.numKeys", pick("0", "1", "7", "1000", "100000", strconv.Itoa(1<<30+1), "2147483648", "5000000000")
		},
		func() (string, string) { return "workload.numValues", pick("0", "1", "10", "1000", "30000") },
		func() (string, string) {
			return "workload.dataSize", pick("0", "1", "31", "32", "128", "4096", "67108865")
		},
		func() (string, string) { return "workload.variableDataSize", pick("true", "false") },
		func() (string, string) { return "workload.dataSizeMin", pick("1", "32", "100", "5000") },
		func() (string, string) { return "workload.dataSizeMax", pick("16", "64", "5000", "70000") },
		func() (string, string) { return "workload.validate", pick("true", "false") },
		func() (string, string) {
			return "workload.pattern", pick("uniform", "random", "zipfian", "scrambled_zipfian", "sliding_window",
				"sliding_window_flip", "latest", "hotspot", "sequential", "exponential", "spiral")
		},
		func() (string, string) { return "workload.windowSize", pick("0", "1", "10", "1000", "1000000") },
		func() (string, string) {
			return "workload.windowDuration", pick("0s", "1ms", "1m", "8760h", "8761h", "100000h")
		},
		func() (string, string) {
			return "ndbench.config.cli.windowDurationInSec", pick("60", "31536000", "99999999")
		},
		func() (string, string) { return "workload.zipfExponent", pick("0", "0.5", "0.99", "1.5", "101") },
		func() (string, string) { return "workload.hotKeys", pick("0", "0.2", "1", "1.5") },
		func() (string, string) { return "workload.hotFraction", pick("0", "0.8", "1", "-0.1") },
		func() (string, string) { return "workload.readers", pick("0", "4", "6000", "10001") },
		func() (string, string) { return "workload.writers", pick("0", "4", "5000", "-1") },
		func() (string, string) { return "workload.readRate", pick("0", "777", "-1", "NaN") },
		func() (string, string) { return "workload.opTimeout", pick("0s", "1ms", "5s") },
		func() (string, string) { return "workload.keyPrefix", pick("T", "key:") },
		func() (string, string) { return "workload.seed", pick("0", "1", "42") },
		func() (string, string) { return "driver.name", pick("memory", "fake-pending", "nosuch") },
		func() (string, string) { return "drivers.memory.errorRatio", pick("0", "0.5", "7") },
		func() (string, string) { return "drivers.memory.shards", pick("0", "8", "64") },
	}
	gens = append(gens, extraGens(pick)...)
	p := map[string]string{}
	for n := 1 + r.IntN(3); n > 0; n-- {
		k, v := gens[r.IntN(len(gens))]()
		p[k] = v
	}
	return p
}

// TestRandomChangesApplyWholeOrNotAtAll drives hundreds of random patches through the
// instance and checks after each that the engine runs exactly the workload the config
// store holds, that the version moved only when a change was accepted, that a rejected
// change names its keys and left nothing behind, and that no change was accepted and then
// failed to apply (lastError stays empty). NDBENCH_TEST_SEED replays a failing sequence.
func TestRandomChangesApplyWholeOrNotAtAll(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv("NDBENCH_TEST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	i := initMemory(t, "workload.memoryBudget=64MiB")
	accepted, rejected := 0, 0
	for n := range 400 {
		patch := randomPatch(r)
		before, beforeStatus := i.Config(), i.Status()
		_, err := i.Patch(patch)
		after, st := i.Config(), i.Status()
		where := fmt.Sprintf("seed %d step %d patch %v", seed, n, patch)
		if err != nil {
			rejected++
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) == 0 {
				t.Fatalf("%s: rejected without field errors: %v", where, err)
			}
			for _, fe := range fes {
				if fe.Field == "" || fe.Allowed == "" {
					t.Fatalf("%s: field error without key or rule: %+v", where, fe)
				}
			}
			if after != before || st.ConfigVersion != beforeStatus.ConfigVersion ||
				!slices.Equal(st.Pending, beforeStatus.Pending) {
				t.Fatalf("%s: rejected (%v) but config %d->%d, pending %v->%v", where, err,
					before.Version, after.Version, beforeStatus.Pending, st.Pending)
			}
		} else {
			accepted++
			if after.Version != before.Version+1 {
				t.Fatalf("%s: accepted but version %d -> %d", where, before.Version, after.Version)
			}
		}
		i.mu.Lock()
		got := i.eng.Workload()
		i.mu.Unlock()
		if want := after.Config.Workload; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: engine runs\n%+v\nconfig holds\n%+v", where, got, want)
		}
		if st.LastError != nil {
			t.Fatalf("%s: a change was accepted but not applied: %s", where, st.LastError.Message)
		}
	}
	t.Logf("seed %d: %d accepted, %d rejected", seed, accepted, rejected)
	if accepted < 40 || rejected < 40 {
		t.Errorf("only %d accepted and %d rejected: the generator no longer covers both", accepted, rejected)
	}
	// After all that, a plain valid change still applies.
	if _, err := i.Patch(map[string]string{"workload.readRate": "777"}); err != nil {
		t.Fatalf("readRate=777 rejected: %v", err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if got := i.eng.Workload().ReadRate; got != 777 {
		t.Fatalf("readRate=777 accepted, engine runs %v", got)
	}
}

// extraGens are generators for keys that only some versions of the code know.
func extraGens(pick func(...string) string) []func() (string, string) {
	return []func() (string, string){
		func() (string, string) { return "workload.memoryBudget", pick("1KiB", "16MiB", "64MiB") },
		func() (string, string) { return "workload.backfillWorkers", pick("1", "100", "10001") },
	}
}

// TestBackfillWorkersWithinBudget: a backfill asking for more workers than configured is
// held to the memory budget like the configured ones.
func TestBackfillWorkersWithinBudget(t *testing.T) {
	i := initMemory(t, "workload.memoryBudget=16MiB", "workload.dataSize=1048576", "workload.numValues=1", "workload.numKeys=10")
	err := i.StartBackfill(engine.BackfillOptions{Workers: 100})
	fes, ok := driver.AsFieldErrors(err)
	if !ok || fes[0].Field != "workload.backfillWorkers" || !strings.Contains(err.Error(), "workload.memoryBudget=16MiB") {
		t.Fatalf("100 backfill workers of 1 MiB values within 16 MiB: %v", err)
	}
	if err := i.StartBackfill(engine.BackfillOptions{Workers: 2}); err != nil {
		t.Fatalf("2 workers: %v", err)
	}
}
