package config

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/workload"
)

// Workload is the typed workload section (keys "workload.<option>"). It uses the same tag
// scheme as driver options, so parsing, bounds, field errors and the rendered schema come
// from package driver. Aliases are NDBench's own property names, so `--set
// workload.numReaders=8` works as well as `workload.readers=8`.
//
// Defaults follow NDBench (IConfiguration.java) where it has one, except readers and
// writers (NDBench uses 4 per CPU, which varies by machine), the op timeout (NDBench has
// none) and the zipfian exponent (YCSB's 0.99, the skew zipfian workloads are known by,
// rather than NDBench's 0.5).
type Workload struct {
	NumKeys          int64   `opt:"numKeys" default:"1000" min:"1" help:"number of distinct keys in the keyspace" live:"true"`
	NumValues        int     `opt:"numValues" default:"100" min:"1" help:"number of values in the pre-generated value pool" live:"true"`
	DataSize         int     `opt:"dataSize" default:"128" min:"1" max:"67108864" help:"value size in bytes when variableDataSize is off" live:"true"`
	VariableDataSize bool    `opt:"variableDataSize" default:"false" alias:"useVariableDataSize" help:"draw each value size from [dataSizeMin, dataSizeMax]" live:"true"`
	DataSizeMin      int     `opt:"dataSizeMin" default:"1000" min:"1" max:"67108864" alias:"dataSizeLowerBound" help:"smallest value size in bytes with variableDataSize" live:"true"`
	DataSizeMax      int     `opt:"dataSizeMax" default:"5000" min:"1" max:"67108864" alias:"dataSizeUpperBound" help:"largest value size in bytes with variableDataSize" live:"true"`
	Readers          int     `opt:"readers" default:"4" min:"0" max:"10000" alias:"numReaders" live:"true" help:"number of read workers"`
	Writers          int     `opt:"writers" default:"4" min:"0" max:"10000" alias:"numWriters" live:"true" help:"number of write workers"`
	MaxReaders       int     `opt:"maxReaders" default:"0" min:"0" max:"10000" live:"true" help:"most read workers an open-loop read pool may grow to while it falls behind its rate (elastic, like an arrival-rate executor); 0 or at most readers: never grows"`
	MaxWriters       int     `opt:"maxWriters" default:"0" min:"0" max:"10000" live:"true" help:"most write workers an open-loop write pool may grow to while it falls behind its rate; 0 or at most writers: never grows"`
	ReadRate         float64 `opt:"readRate" default:"100" min:"0" alias:"readRateLimit" live:"true" help:"reads per second across all readers; 0 = closed loop, as fast as possible"`
	WriteRate        float64 `opt:"writeRate" default:"100" min:"0" alias:"writeRateLimit" live:"true" help:"writes per second across all writers; 0 = closed loop, as fast as possible"`
	ReadEnabled      bool    `opt:"readEnabled" default:"true" live:"true" help:"run reads"`
	WriteEnabled     bool    `opt:"writeEnabled" default:"true" live:"true" help:"run writes"`
	// The enum must equal workload.Patterns() (a tag cannot call it; a test checks). It
	// keeps the aliases "random" and "scrambled"; the loader rewrites them to canonical names.
	// Likewise windowDuration's max must equal workload.MaxWindowDuration.
	Pattern        string        `opt:"pattern" default:"uniform" enum:"uniform,random,zipfian,scrambled_zipfian,scrambled,sliding_window,sliding_window_flip,latest,hotspot,sequential,exponential" alias:"loadPattern" live:"true" help:"key access pattern"`
	ZipfExponent   float64       `opt:"zipfExponent" default:"0.99" min:"0.01" max:"100" live:"true" help:"skew (theta) of the zipfian, scrambled_zipfian and latest patterns: P(rank k) ~ 1/k^theta; YCSB's 0.99 by default"`
	WindowSize     int64         `opt:"windowSize" default:"1000" min:"1" live:"true" help:"keys in the window of the sliding_window patterns"`
	WindowDuration time.Duration `opt:"windowDuration" default:"1m" min:"1ms" max:"8760h" live:"true" help:"time the sliding window takes for one pass over the keyspace (sliding_window moves continuously, sliding_window_flip jumps block by block)"`
	HotKeys        float64       `opt:"hotKeys" default:"0.2" min:"0" max:"1" live:"true" help:"hotspot: fraction of the keyspace that is hot, in (0, 1]"`
	HotFraction    float64       `opt:"hotFraction" default:"0.8" min:"0" max:"1" live:"true" help:"hotspot: fraction of operations on the hot keys, in [0, 1]"`
	// ValidateValues is option "validate"; the field cannot share the name of the method.
	ValidateValues  bool          `opt:"validate" default:"false" alias:"validateChecksum" help:"write values with a header and check every value read" live:"true"`
	OpTimeout       time.Duration `opt:"opTimeout" default:"5s" min:"1ms" live:"true" help:"deadline of one operation"`
	Backfill        bool          `opt:"backfill" default:"false" help:"write every key once before the load starts"`
	BackfillWorkers int           `opt:"backfillWorkers" default:"1" min:"1" max:"10000" alias:"numBackfill" help:"parallel backfill workers"`
	BackfillRate    float64       `opt:"backfillRate" default:"0" min:"0" help:"backfill writes per second; 0 = unlimited"`
	BackfillVerify  bool          `opt:"backfillVerify" default:"false" help:"read every key back after the backfill"`
	KeyPrefix       string        `opt:"keyPrefix" default:"T" help:"key prefix; NDBench's keys are T<number>, so its stores can be read" live:"true"`
	Seed            uint64        `opt:"seed" default:"0" help:"random seed for reproducible runs; 0 = random" live:"true"`
	// MemoryBudget bounds what the workload may allocate (value pool, validation tracker,
	// worker buffers; see workload.EstimateMemory), so a typo is an error instead of an
	// out-of-memory kill. 1 GiB fits every NDBench default many times over and leaves
	// room on a small node for the store client and the statistics.
	MemoryBudget driver.Size `opt:"memoryBudget" default:"1GiB" min:"1MiB" live:"true" help:"most memory the workload may allocate (value pool, validation tracker, worker buffers); a change needing more is rejected"`
}

// maxWorkers bounds readers+writers: each worker is a goroutine with its own RNG and
// buffers, and more than this on one node measures the scheduler, not the store.
const maxWorkers = 10000

// canonicalPattern rewrites an alias ("random") to its canonical pattern name ("uniform"),
// so consumers see one name per pattern. Unknown names are left for validation to reject.
func canonicalPattern(p string) string {
	if c, ok := workload.CanonicalPattern(p); ok {
		return c
	}
	return p
}

// WorkloadSchema returns the workload options, for `ndbench config`, the API and the UI.
func WorkloadSchema() []driver.Option {
	return slices.Clone(workloadSchema())
}

// workloadSchema is the workload schema, reflected once: every key of every change is
// checked against it, and reflecting the struct each time was most of a change's cost.
// Callers must not modify it.
var workloadSchema = sync.OnceValue(func() []driver.Option {
	s, err := driver.Schema(Workload{})
	if err != nil {
		// The struct is fixed at compile time and covered by tests, so this cannot happen
		// at run time; an empty schema is the least harmful answer if it ever did.
		return nil
	}
	return s
})

// driverSchemas caches the option schema of each registered driver by name, for the same
// reason. Drivers register at init, before any configuration is read, and never change.
var driverSchemas sync.Map // name -> []driver.Option

// driverSchema returns the option schema of registered driver def. Callers must not
// modify it.
func driverSchema(def driver.Definition) ([]driver.Option, error) {
	if s, ok := driverSchemas.Load(def.Name); ok {
		return s.([]driver.Option), nil
	}
	s, err := driver.Schema(def.NewOptions())
	if err != nil {
		return nil, err
	}
	driverSchemas.Store(def.Name, s)
	return s, nil
}

// DefaultWorkload returns the workload with every option at its default.
func DefaultWorkload() Workload {
	var w Workload
	_ = driver.ApplyDefaults(&w) // defaults are tested; they parse
	return w
}

// Validate is the one validator of a workload: the config store calls it before it
// accepts any change (API, UI, watched file, etcd, --set, NDBench routes) and the engine
// calls it before it builds one, so the two cannot disagree. It checks, in order:
//
//   - every option against its tags (enum, bounds);
//   - rules across options that only this struct knows (readers + writers, hotKeys > 0);
//   - the rules of the parts the engine builds, by calling the same methods the
//     constructors call: workload.KeyParams.Validate (NewKeys), ValueParams.Validate
//     (NewValues) and, when validating, TrackerParams.Validate (NewTracker);
//   - the memory the workload would allocate (workload.EstimateMemory) against
//     memoryBudget.
//
// It returns driver.FieldErrors naming "workload.<option>" (without a source: the loader
// adds where each value came from). A rule reported on an option is not repeated by a
// later stage, and the memory estimate is only made for an otherwise valid workload.
func (w Workload) Validate() error {
	var errs driver.FieldErrors
	if err := driver.CheckTags(&w); err != nil {
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			return err
		}
		for _, fe := range fes {
			errs = append(errs, &driver.FieldError{Field: "workload." + fe.Field, Value: fe.Value, Allowed: fe.Allowed})
		}
	}
	add := func(field, value, allowed string) {
		errs = append(errs, &driver.FieldError{Field: "workload." + field, Value: value, Allowed: allowed})
	}
	// The tags bound hotKeys and hotFraction to [0, 1]; an empty hot set is the one case
	// they cannot express. Checked whatever the pattern, so switching to hotspot later
	// cannot fail on a value accepted earlier.
	if w.HotKeys <= 0 {
		add("hotKeys", fmt.Sprint(w.HotKeys), "a number greater than 0 and at most 1")
	}
	if max(w.Readers, w.MaxReaders)+max(w.Writers, w.MaxWriters) > maxWorkers {
		switch {
		case w.MaxReaders > w.Readers:
			add("maxReaders", fmt.Sprint(w.MaxReaders), fmt.Sprintf("the largest read and write pools together at most %d (maxReaders %d, writers %d, maxWriters %d)",
				maxWorkers, w.MaxReaders, w.Writers, w.MaxWriters))
		case w.MaxWriters > w.Writers:
			add("maxWriters", fmt.Sprint(w.MaxWriters), fmt.Sprintf("the largest read and write pools together at most %d (readers %d, maxReaders %d, maxWriters %d)",
				maxWorkers, w.Readers, w.MaxReaders, w.MaxWriters))
		default:
			add("readers", fmt.Sprint(w.Readers), fmt.Sprintf("readers + writers at most %d (writers is %d)", maxWorkers, w.Writers))
		}
	}
	reported := map[string]bool{}
	for _, fe := range errs {
		reported[fe.Field] = true
	}
	parts := []error{w.KeyParams().Validate(), w.ValueParams().Validate()}
	if w.ValidateValues {
		parts = append(parts, w.TrackerParams().Validate())
	}
	for _, err := range parts {
		fes, _ := driver.AsFieldErrors(err)
		for _, fe := range fes {
			if !reported[fe.Field] {
				errs = append(errs, fe)
			}
		}
	}
	if len(errs) == 0 {
		if err := workload.EstimateMemory(w.MemoryParams()).Check(int64(w.MemoryBudget), "workload.memoryBudget"); err != nil {
			return err
		}
		return nil
	}
	return errs
}

// KeyParams returns the key generator parameters of w. The caller adds what is not
// configuration (Seed when w.Seed is 0, Now, Start).
func (w Workload) KeyParams() workload.KeyParams {
	return workload.KeyParams{
		Pattern: w.Pattern, NumKeys: w.NumKeys, ZipfExponent: w.ZipfExponent,
		WindowSize: w.WindowSize, WindowDuration: w.WindowDuration,
		HotKeys: w.HotKeys, HotFraction: w.HotFraction, Seed: w.Seed,
	}
}

// ValueParams returns the value pool parameters of w.
func (w Workload) ValueParams() workload.ValueParams {
	return workload.ValueParams{
		NumValues: w.NumValues, DataSize: w.DataSize, Variable: w.VariableDataSize,
		DataSizeMin: w.DataSizeMin, DataSizeMax: w.DataSizeMax, Header: w.ValidateValues,
	}
}

// TrackerParams returns the validation tracker parameters of w (used when ValidateValues
// is on). The caller adds the clock.
func (w Workload) TrackerParams() workload.TrackerParams {
	return workload.TrackerParams{NumKeys: w.NumKeys, MaxWriteTime: w.OpTimeout}
}

// MemoryParams returns what sizes the workload's allocations: the value pool, the tracker
// when validating, and the workers that may run at once (the readers and writers of
// enabled classes, and the backfill workers).
func (w Workload) MemoryParams() workload.MemoryParams {
	p := workload.MemoryParams{Values: w.ValueParams(), Backfill: w.BackfillWorkers}
	if w.ValidateValues {
		p.TrackedKeys = w.NumKeys
	}
	// An elastic pool may grow to its maximum: that is what it may allocate.
	if w.ReadEnabled {
		p.Readers = max(w.Readers, w.MaxReaders)
	}
	if w.WriteEnabled {
		p.Writers = max(w.Writers, w.MaxWriters)
	}
	return p
}
