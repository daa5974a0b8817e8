// Package stats records per-operation latency and outcome counters on the engine's hot
// path and turns them into interval snapshots, a bounded time series, a cumulative view,
// HdrHistogram V2 encodings for cluster aggregation, and HdrHistogram interval logs.
//
// Latencies are kept in HDR histograms in microseconds (see NewHistogram), sharded per
// worker so that thousands of goroutines record without contending, and swapped every
// interval so a snapshot never stops recording.
//
// What is measured is a set of named series: one per op class ("read", "write",
// "backfill", and any class a workload adds) and one per operation of a class that mixes
// several ("search.byTitle"). Series are registered by name (Collector.Register) and
// every output iterates them by name, so a new class or operation needs no change here.
package stats

import (
	"fmt"
	"slices"
	"strings"
)

// Op identifies a series of a Collector: an index in registration order. The three
// built-in op classes are registered by every collector, in this order, so their Ops
// are constants.
type Op uint16

// The built-in series. Backfill is kept apart from writes so that loading a store does
// not pollute the latency of the steady-state workload.
const (
	OpRead Op = iota
	OpWrite
	OpBackfill
	numBuiltin
)

// MaxSeries bounds the series of one collector. A series costs ~1 MB of interval and
// cumulative histograms even when idle, and up to ~12 MB more while 16 or more workers
// record into it (two buffers per shard, see TestDefaultShardsBoundsMemory): 32 series
// keep a node's worst case under half a gigabyte, and a chart or report with more lines is
// not read by anyone.
const MaxSeries = 32

// builtinNames are the names of the built-in series, in Op order.
var builtinNames = [numBuiltin]string{"read", "write", "backfill"}

// BuiltinNames returns the names of the series every collector has: read, write,
// backfill.
func BuiltinNames() []string { return builtinNames[:] }

// OperationSeries returns the name of the series of operation op within a class that
// mixes several operations: "class.op" ("read.scan", and "read.read" for the driver's Read
// within class read). A class of one operation has only its class series.
func OperationSeries(class, op string) string { return class + "." + op }

// CheckSeriesName reports whether name can name a series: 1 to 64 characters of letters,
// digits, '_', '-' and '.', starting with a letter. The names end up in JSON keys,
// Prometheus label values, HDR log tags (which must not contain ',' or whitespace) and
// URLs.
func CheckSeriesName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("series name %q: want 1 to 64 characters", name)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || strings.ContainsRune("_-.", r)):
		default:
			return fmt.Errorf("series name %q: want letters, digits, '_', '-' and '.', starting with a letter", name)
		}
	}
	return nil
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

// ReportOrder returns the series names of ops in the order reports list them: read,
// write, the other classes sorted by name, backfill last; each class followed by its
// operations ("search" before "search.byTitle").
func ReportOrder[T any](ops map[string]T) []string {
	rank := func(n string) int {
		n, _, _ = strings.Cut(n, ".")
		switch n {
		case "read":
			return 0
		case "write":
			return 1
		case "backfill":
			return 3
		}
		return 2
	}
	names := make([]string, 0, len(ops))
	for n := range ops {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return names
}

// IsOperationSeries reports whether name is the series of one operation of a mixed class
// ("search.byTitle") rather than of a class.
func IsOperationSeries(name string) bool { return strings.Contains(name, ".") }
