// Package stats records per-operation latency and outcome counters on the engine's hot
// path and turns them into interval snapshots, a bounded time series, a cumulative view,
// HdrHistogram V2 encodings for cluster aggregation, and HdrHistogram interval logs.
//
// Latencies are kept in HDR histograms in microseconds (see NewHistogram), sharded per
// worker so that thousands of goroutines record without contending, and swapped every
// interval so a snapshot never stops recording.
package stats

// Op is an operation class that has its own recorder, rate and worker pool.
type Op uint8

// The operation classes. Backfill is kept apart from writes so that loading a store does
// not pollute the latency of the steady-state workload.
const (
	OpRead Op = iota
	OpWrite
	OpBackfill
	numOps
)

// NumOps is the number of operation classes; Op values are in [0, NumOps).
const NumOps = int(numOps)

// Ops lists every operation class in report order.
var Ops = [NumOps]Op{OpRead, OpWrite, OpBackfill}

var opNames = [NumOps]string{"read", "write", "backfill"}

// String returns the name used as the key of Summary.Ops and in HDR log tags.
func (o Op) String() string {
	if int(o) < NumOps {
		return opNames[o]
	}
	return "unknown"
}

// ParseOp returns the Op named s ("read", "write" or "backfill").
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if n == s {
			return Op(i), true
		}
	}
	return 0, false
}

// Validation is a kind of data-validation failure found when reading a value back. A
// read that fails validation still reached the store, so its latency is recorded as a
// success or miss and the validation failure is counted on top.
type Validation uint8

// The validation failures, as detected by the workload's value header.
const (
	// Corrupt: the value's checksum does not match its contents.
	Corrupt Validation = iota
	// WrongKey: the value is intact but was written for another key.
	WrongKey
	// Stale: the value is older than the latest write this node made to the key.
	Stale
	// Lost: a key this node wrote is missing.
	Lost
	numValidations
)

// NumValidations is the number of validation kinds; values are in [0, NumValidations).
const NumValidations = int(numValidations)

// Validations lists every validation kind in report order.
var Validations = [NumValidations]Validation{Corrupt, WrongKey, Stale, Lost}

var validationNames = [NumValidations]string{"corrupt", "wrongKey", "stale", "lost"}

// String returns the key used in OpSummary.Validation.
func (v Validation) String() string {
	if int(v) < NumValidations {
		return validationNames[v]
	}
	return "unknown"
}
