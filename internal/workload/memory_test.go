package workload

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

func TestEstimateMemory(t *testing.T) {
	const gib = int64(1) << 30
	tests := []struct {
		name string
		p    MemoryParams
		// parts maps a part's name to its expected bytes.
		parts map[string]int64
		peak  int64
		// over is the budget it must exceed (0: none), and the pieces the error names.
		over int64
		want []string
	}{
		{"default-sized pool, no workers", MemoryParams{Values: ValueParams{NumValues: 100, DataSize: 128}},
			map[string]int64{"value pool": 100 * 160}, 2 * 100 * 160, 0, nil},
		{"a billion one-byte values", MemoryParams{Values: ValueParams{NumValues: 1e9, DataSize: 1}},
			map[string]int64{"value pool": 33e9}, 66e9, gib,
			[]string{"workload.numValues", `"1000000000"`, "workload.numValues=1000000000, workload.dataSize=1", "value pool needs ~30.7GiB",
				"~61.5GiB at its peak", "workload.memoryBudget=1GiB"}},
		{"tracker for 2^30 keys", MemoryParams{Values: ValueParams{NumValues: 1, DataSize: 32}, TrackedKeys: 1 << 30},
			map[string]int64{"value pool": 64, "validation tracker": 4 * gib}, 4*gib + 128, gib,
			[]string{"workload.numKeys", "workload.numKeys=1073741824, workload.validate=true", "validation tracker needs ~4GiB"}},
		{"variable sizes count the largest", MemoryParams{Values: ValueParams{NumValues: 1000, Variable: true, DataSizeMin: 1, DataSizeMax: 1 << 20}},
			map[string]int64{"value pool": 1000 * (1<<20 + 32)}, 2 * 1000 * (1<<20 + 32), 1 << 30,
			[]string{"workload.dataSizeMax=1048576"}},
		{"workers hold a value each", MemoryParams{Values: ValueParams{NumValues: 1, DataSize: 1 << 20}, Readers: 5000, Writers: 5000, Backfill: 1},
			map[string]int64{"workers": 10001 * (16<<10 + 1<<20)}, 2*(1<<20+32) + 10001*(16<<10+1<<20), gib,
			[]string{"workload.readers", `"5000"`, "workload.readers=5000, workload.writers=5000, workload.backfillWorkers=1, workload.dataSize=1048576", "workers need ~9.92GiB"}},
		{"disabled classes count nothing", MemoryParams{Values: ValueParams{NumValues: 1, DataSize: 1}, Writers: 2},
			map[string]int64{"workers": 2 * (16<<10 + 1)}, 2*33 + 2*(16<<10+1), 0, nil},
		{"absurd options saturate, never wrap", MemoryParams{Values: ValueParams{NumValues: math.MaxInt, DataSize: MaxValueSize}, TrackedKeys: math.MaxInt64},
			map[string]int64{"value pool": math.MaxInt64}, math.MaxInt64, math.MaxInt64 - 1, []string{"workload.numValues"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := EstimateMemory(tt.p)
			for name, want := range tt.parts {
				found := false
				for _, p := range e.Parts {
					if p.Name == name {
						found = true
						if p.Bytes != want {
							t.Errorf("%s = %d bytes, want %d", name, p.Bytes, want)
						}
					}
				}
				if !found {
					t.Errorf("no part %s in %+v", name, e.Parts)
				}
			}
			if e.Peak != tt.peak {
				t.Errorf("peak = %d, want %d", e.Peak, tt.peak)
			}
			if err := e.Check(e.Peak, "workload.memoryBudget"); err != nil {
				t.Errorf("a budget equal to the peak is exceeded: %v", err)
			}
			if tt.over == 0 {
				return
			}
			err := e.Check(tt.over, "workload.memoryBudget")
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) != 1 {
				t.Fatalf("over budget %d: %v", tt.over, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestApproxBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 100: "100B", 1536: "1.5KiB", 4 << 30: "4GiB", 33e9: "30.7GiB", 1<<20 - 1: "1020KiB"} {
		if got := ApproxBytes(n); got != want {
			t.Errorf("ApproxBytes(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestEstimateMatchesAllocation builds a realistic workload and checks the estimate of
// each part against what building it allocated (runtime.MemStats.TotalAlloc), within 25%.
func TestEstimateMatchesAllocation(t *testing.T) {
	vp := ValueParams{NumValues: 50_000, DataSize: 1000, Header: true}
	const keys, inserted = 5_000_000, 1_000_000
	e := EstimateMemory(MemoryParams{Values: vp, TrackedKeys: keys, TrackedInserts: inserted})
	est := map[string]int64{}
	for _, p := range e.Parts {
		est[p.Name] = p.Bytes
	}
	measure := func(f func()) int64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc - before.TotalAlloc)
	}
	var v *Values
	var tr *Tracker
	got := map[string]int64{
		"value pool": measure(func() {
			var err error
			if v, err = NewValues(vp, 1); err != nil {
				t.Fatal(err)
			}
		}),
		"validation tracker": measure(func() {
			var err error
			if tr, err = NewTracker(TrackerParams{NumKeys: keys, MaxInserted: inserted}); err != nil {
				t.Fatal(err)
			}
		}),
		// Inserts past the tracked ones allocate nothing more.
		"validation of inserted keys": measure(func() {
			seq := tr.Seq()
			for i := range int64(2 * inserted) {
				tr.Ack(keys+i, seq)
			}
		}),
		// Refresh builds a whole second pool beside the first: the x2 of the peak.
		"refresh": measure(func() { v.Refresh(2) }),
	}
	est["refresh"] = est["value pool"]
	runtime.KeepAlive(tr)
	for name, g := range got {
		ratio := float64(g) / float64(est[name])
		t.Logf("%s: estimated %s, allocated %s (%.2f)", name, ApproxBytes(est[name]), ApproxBytes(g), ratio)
		if ratio < 0.75 || ratio > 1.25 {
			t.Errorf("%s: allocated %d bytes, estimated %d: off by more than 25%%", name, g, est[name])
		}
	}
}

// TestBackfillBatchesCounted: a validating backfill through bulk writes holds a batch of
// encoded values per worker, and the estimate says so.
func TestBackfillBatchesCounted(t *testing.T) {
	p := MemoryParams{Values: ValueParams{NumValues: 10, DataSize: 1 << 20}, TrackedKeys: 1000, Backfill: 8}
	var got int64
	for _, part := range EstimateMemory(p).Parts {
		if part.Name == "backfill batches" {
			got = part.Bytes
		}
	}
	if want := int64(8 * BackfillBatch * ((1 << 20) + ValueOverhead)); got != want {
		t.Fatalf("backfill batches estimate %d, want %d", got, want)
	}
	p.TrackedKeys = 0 // without validation a batch refers to pooled values
	for _, part := range EstimateMemory(p).Parts {
		if part.Name == "backfill batches" {
			t.Fatalf("backfill batches counted without validation: %+v", part)
		}
	}
}
