package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// The per-item costs EstimateMemory counts, besides the payload bytes themselves.
const (
	// ValueOverhead is what each pooled value costs beyond its payload: its slice header
	// in the pool (24 bytes) and its entry in the size table Refresh builds the pool from
	// (8 bytes). A billion one-byte values need 33 GB, not 1 GB.
	ValueOverhead = 32
	// TrackerSlotBytes is the validation tracker's cost per key: one atomic uint32.
	TrackerSlotBytes = 4
	// WorkerOverhead is a worker's fixed cost: its goroutine stack (8 KiB to start, more
	// under a deep driver call), op context, RNG and key buffer. Each worker also holds one
	// value of the largest size at a time (the value a read returns, the encoded copy a
	// validated write sends), counted separately.
	WorkerOverhead = 16 << 10
	// BackfillBatch is the most keys one backfill bulk write carries (drivers with
	// driver.BulkWriter); with validation each carries its own encoded value.
	BackfillBatch = 100
)

// MemoryParams are the workload settings that size what the engine allocates.
type MemoryParams struct {
	// Values is the value pool.
	Values ValueParams
	// TrackedKeys is the validation tracker's keyspace: numKeys when validating, else 0.
	TrackedKeys int64
	// TrackedInserts is how many keys beyond TrackedKeys the tracker follows as inserts
	// add them (workload.trackedInserts): set when validating with a class that inserts,
	// else 0.
	TrackedInserts int64
	// Readers, Writers and Backfill count the workers that may run at once: the readers
	// and writers of enabled classes, and the backfill workers (a backfill may run beside
	// the load).
	Readers, Writers, Backfill int
	// Pools, when set, say what sets Readers and Writers, largest pool first: an elastic
	// maximum, automatic or set, is not the readers option, and an error must name the
	// option the user can change. Without them the estimate names workload.readers and
	// workload.writers.
	Pools []PoolSize
}

// PoolSize is what sets the size of one pool of workers, for messages: Field and Value
// are the option an error is reported on, Key says how the pool's size follows from it
// ("workload.maxReaders=0 (auto: 64 read workers: ...)").
type PoolSize struct {
	Field, Value, Key string
}

// MemoryPart is one allocation of a workload.
type MemoryPart struct {
	// Name says what it is: "value pool", "validation tracker", "workers".
	Name string
	// Bytes is the estimate.
	Bytes int64
	// Keys are the options that size it, with their values ("workload.numValues=1000"),
	// for messages.
	Keys []string
	// Field and Value are the option an error about this part is reported on.
	Field, Value string
}

// MemoryEstimate is what a workload allocates, part by part.
type MemoryEstimate struct {
	Parts []MemoryPart
	// Peak is the most the workload holds at once: every part, plus a second value pool,
	// because Refresh builds the next pool beside the current one every refresh interval.
	Peak int64
}

// EstimateMemory estimates what the engine allocates for a workload:
//
//	value pool  numValues × (largest value + ValueOverhead), held twice while refreshed
//	tracker     numKeys × TrackerSlotBytes, when validating
//	inserted    TrackerGrowth(numKeys, trackedInserts), when validating with inserts
//	workers     (readers + writers + backfill workers) × (WorkerOverhead + largest value)
//	batches     backfill workers × BackfillBatch × (largest value + 32), when validating
//
// where the largest value is dataSize, or dataSizeMax with variable sizes (an upper bound:
// a variable pool averages (dataSizeMin+dataSizeMax)/2 per value). Key generators hold
// O(1) state, so keys add nothing (the engine's table of a small keyspace's key names is
// at most 1 MiB); statistics are sized by CPUs, not by the workload, and
// the data a store under test keeps in this process (the memory driver) is the store's,
// so neither is counted. A change that rebuilds a part briefly holds the old one as well.
func EstimateMemory(p MemoryParams) MemoryEstimate {
	var e MemoryEstimate
	largest := p.Values.largest()
	sizeKey := "workload.dataSize=" + strconv.Itoa(largest)
	if p.Values.Variable {
		sizeKey = "workload.dataSizeMax=" + strconv.Itoa(largest)
	}
	pool := MemoryPart{Name: "value pool", Field: "workload.numValues", Value: strconv.Itoa(p.Values.NumValues),
		Bytes: mulSat(int64(p.Values.NumValues), int64(largest)+ValueOverhead),
		Keys:  []string{"workload.numValues=" + strconv.Itoa(p.Values.NumValues), sizeKey}}
	e.Parts = append(e.Parts, pool)
	if p.TrackedKeys > 0 {
		n := strconv.FormatInt(p.TrackedKeys, 10)
		e.Parts = append(e.Parts, MemoryPart{Name: "validation tracker", Field: "workload.numKeys", Value: n,
			Bytes: mulSat(p.TrackedKeys, TrackerSlotBytes), Keys: []string{"workload.numKeys=" + n, "workload.validate=true"}})
	}
	if p.TrackedKeys > 0 && p.TrackedInserts > 0 {
		n := strconv.FormatInt(p.TrackedInserts, 10)
		e.Parts = append(e.Parts, MemoryPart{Name: "validation of inserted keys", Field: "workload.trackedInserts", Value: n,
			Bytes: TrackerGrowth(p.TrackedKeys, p.TrackedInserts), Keys: []string{"workload.trackedInserts=" + n, "workload.validate=true"}})
	}
	if workers := int64(p.Readers) + int64(p.Writers) + int64(p.Backfill); workers > 0 {
		w := MemoryPart{Name: "workers", Bytes: mulSat(workers, WorkerOverhead+int64(largest))}
		pools := p.Pools
		if pools == nil {
			for _, c := range []struct {
				key string
				n   int
			}{{"workload.readers", p.Readers}, {"workload.writers", p.Writers}} {
				if c.n > 0 {
					pools = append(pools, PoolSize{Field: c.key, Value: strconv.Itoa(c.n), Key: c.key + "=" + strconv.Itoa(c.n)})
				}
			}
		}
		if p.Backfill > 0 {
			n := strconv.Itoa(p.Backfill)
			pools = append(pools, PoolSize{Field: "workload.backfillWorkers", Value: n, Key: "workload.backfillWorkers=" + n})
		}
		for _, ps := range pools {
			w.Keys = append(w.Keys, ps.Key)
			if w.Field == "" {
				w.Field, w.Value = ps.Field, ps.Value
			}
		}
		w.Keys = append(w.Keys, sizeKey)
		e.Parts = append(e.Parts, w)
	}
	if p.Backfill > 0 && p.TrackedKeys > 0 {
		e.Parts = append(e.Parts, MemoryPart{Name: "backfill batches", Field: "workload.backfillWorkers", Value: strconv.Itoa(p.Backfill),
			Bytes: mulSat(int64(p.Backfill)*BackfillBatch, int64(largest)+ValueOverhead),
			Keys:  []string{"workload.backfillWorkers=" + strconv.Itoa(p.Backfill), sizeKey, "workload.validate=true"}})
	}
	e.Peak = pool.Bytes
	for _, part := range e.Parts {
		e.Peak = addSat(e.Peak, part.Bytes)
	}
	return e
}

// Check returns a driver.FieldErrors when the peak exceeds budget bytes, reported on the
// largest part's option and naming the options that size it, the estimates and the
// budget (budgetKey is the option that sets it).
func (e MemoryEstimate) Check(budget int64, budgetKey string) error {
	if e.Peak <= budget || len(e.Parts) == 0 {
		return nil
	}
	big := e.Parts[0]
	for _, p := range e.Parts[1:] {
		if p.Bytes > big.Bytes {
			big = p
		}
	}
	parts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		parts[i] = p.Name + " ~" + ApproxBytes(p.Bytes)
		if p.Name == "value pool" {
			parts[i] += " (x2 while refreshed)"
		}
	}
	verb := "needs"
	if strings.HasSuffix(big.Name, "s") {
		verb = "need"
	}
	return driver.FieldErrors{{Field: big.Field, Value: big.Value, Allowed: fmt.Sprintf(
		"a workload within its memory budget: %s: %s %s ~%s; the workload needs ~%s at its peak (%s); budget %s=%s",
		strings.Join(big.Keys, ", "), big.Name, verb, ApproxBytes(big.Bytes), ApproxBytes(e.Peak), strings.Join(parts, ", "),
		budgetKey, driver.Size(budget))}}
}

// ApproxBytes writes n with three significant digits in the largest binary unit that
// keeps it at least 1: "30.7GiB", "4GiB", "512KiB", "100B".
func ApproxBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	x, i := float64(n), 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	return strconv.FormatFloat(roundSig(x, 3), 'f', -1, 64) + units[i]
}

// roundSig rounds x to d significant digits.
func roundSig(x float64, d int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(d-1-int(math.Floor(math.Log10(math.Abs(x))))))
	return math.Round(x*p) / p
}

// mulSat is a*b for non-negative a and b, saturating at math.MaxInt64: options have no
// upper bound of their own, and an estimate must not wrap around to a small number.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// addSat is a+b for non-negative a and b, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
