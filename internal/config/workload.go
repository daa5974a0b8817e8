package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/workload"
)

// Workload is the typed workload section (keys "workload.<option>"). It uses the same tag
// scheme as driver options, so parsing, bounds, field errors and the rendered schema come
// from package driver: a parameter is declared once, here, and validation, the engine's
// inputs, `ndbench config`, the API schema, the UI form, the docs check and the NDBench
// mappings (properties files, /REST/ndbench config routes) all derive from its tags. The
// `ndbench` tag is NDBench's own property name, also accepted as an alias, so `--set
// workload.numReaders=8` works as well as `workload.readers=8`.
//
// Defaults follow NDBench (IConfiguration.java) where it has one, except readers and
// writers (NDBench uses 4 per CPU, which varies by machine), the op timeout (NDBench has
// none) and the zipfian exponent (YCSB's 0.99, the skew zipfian workloads are known by,
// rather than NDBench's 0.5).
type Workload struct {
	NumKeys          int64   `opt:"numKeys" default:"1000" ndbench:"numKeys" min:"1" max:"1000000000000000" help:"number of distinct keys in the keyspace" live:"true"`
	NumValues        int     `opt:"numValues" default:"100" ndbench:"numValues" min:"1" max:"1000000000" help:"number of values in the pre-generated value pool" live:"true"`
	DataSize         int     `opt:"dataSize" default:"128" ndbench:"dataSize" min:"1" max:"67108864" help:"value size in bytes when variableDataSize is off" live:"true"`
	VariableDataSize bool    `opt:"variableDataSize" default:"false" ndbench:"useVariableDataSize" help:"draw each value size from [dataSizeMin, dataSizeMax]" live:"true"`
	DataSizeMin      int     `opt:"dataSizeMin" default:"1000" min:"1" max:"67108864" ndbench:"dataSizeLowerBound" help:"smallest value size in bytes with variableDataSize" live:"true"`
	DataSizeMax      int     `opt:"dataSizeMax" default:"5000" min:"1" max:"67108864" ndbench:"dataSizeUpperBound" help:"largest value size in bytes with variableDataSize" live:"true"`
	Readers          int     `opt:"readers" default:"4" min:"0" max:"10000" ndbench:"numReaders" live:"true" help:"number of read workers"`
	Writers          int     `opt:"writers" default:"4" min:"0" max:"10000" ndbench:"numWriters" live:"true" help:"number of write workers"`
	MaxReaders       int     `opt:"maxReaders" default:"0" min:"0" max:"10000" live:"true" help:"most read workers an open-loop read pool may grow to while it falls behind its rate (elastic, like an arrival-rate executor); 0 = auto: ceil(readRate x opTimeout), at most max(4 x readers, 64); 1..readers: a fixed pool"`
	MaxWriters       int     `opt:"maxWriters" default:"0" min:"0" max:"10000" live:"true" help:"most write workers an open-loop write pool may grow to while it falls behind its rate; 0 = auto: ceil(writeRate x opTimeout), at most max(4 x writers, 64); 1..writers: a fixed pool"`
	ReadRate         float64 `opt:"readRate" default:"100" min:"0" max:"1000000000" ndbench:"readRateLimit" live:"true" help:"reads per second across all readers; 0 = closed loop, as fast as possible"`
	WriteRate        float64 `opt:"writeRate" default:"100" min:"0" max:"1000000000" ndbench:"writeRateLimit" live:"true" help:"writes per second across all writers; 0 = closed loop, as fast as possible"`
	ReadEnabled      bool    `opt:"readEnabled" default:"true" ndbench:"readEnabled" live:"true" help:"run reads"`
	WriteEnabled     bool    `opt:"writeEnabled" default:"true" ndbench:"writeEnabled" live:"true" help:"run writes"`
	// ReadMix and WriteMix are what NDBench calls a plugin putting "any type of read
	// operation" behind its read port: the driver operations the read and write classes run.
	ReadMix  string `opt:"readMix" default:"read" live:"true" help:"driver operations the read class runs, by weight: an operation name (read, or one the driver declares), or name:weight,name:weight"`
	WriteMix string `opt:"writeMix" default:"write" live:"true" help:"driver operations the write class runs, by weight, as readMix"`
	// Pattern has no enum tag: the patterns are those registered (package keydist), which a
	// tag cannot list; Validate checks the name through workload.KeyParams, and
	// WorkloadSchema fills the option's Enum with workload.Patterns() for forms and
	// listings. The aliases "random" and "scrambled" are accepted; the loader rewrites them
	// to canonical names. windowDuration's max must equal workload.MaxWindowDuration.
	Pattern        string        `opt:"pattern" default:"uniform" alias:"loadPattern" ndbench:"cli.loadPattern" live:"true" help:"key access pattern"`
	PatternOptions string        `opt:"patternOptions" default:"" live:"true" help:"options of a pattern registered by a plugin (ndbench workloads lists them), as name=value,name=value; the built-in patterns' options are the workload options of their own"`
	ZipfExponent   float64       `opt:"zipfExponent" default:"0.99" ndbench:"zipfExponent" min:"0.01" max:"100" live:"true" help:"skew (theta) of the zipfian, scrambled_zipfian and latest patterns: P(rank k) ~ 1/k^theta; YCSB's 0.99 by default"`
	WindowSize     int64         `opt:"windowSize" default:"1000" ndbench:"cli.windowSize" min:"1" max:"1000000000000000" live:"true" help:"keys in the window of the sliding_window patterns"`
	WindowDuration time.Duration `opt:"windowDuration" default:"1m" ndbench:"cli.windowDurationInSec,seconds" min:"1ms" max:"8760h" live:"true" help:"time the sliding window takes for one pass over the keyspace (sliding_window moves continuously, sliding_window_flip jumps block by block)"`
	HotKeys        float64       `opt:"hotKeys" default:"0.2" min:"0" max:"1" live:"true" help:"hotspot: fraction of the keyspace that is hot, in (0, 1]"`
	HotFraction    float64       `opt:"hotFraction" default:"0.8" min:"0" max:"1" live:"true" help:"hotspot: fraction of operations on the hot keys, in [0, 1]"`
	ExpPercentile  float64       `opt:"expPercentile" default:"95" min:"0" max:"100" live:"true" help:"exponential: percent of operations on the first expFraction of the keys, in (0, 100); YCSB's exponential.percentile"`
	ExpFraction    float64       `opt:"expFraction" default:"0.8571428571" min:"0" max:"1" live:"true" help:"exponential: fraction of the keyspace that gets expPercentile percent of operations, in (0, 1]; YCSB's exponential.frac"`
	// ValidateValues is option "validate"; the field cannot share the name of the method.
	ValidateValues bool          `opt:"validate" default:"false" ndbench:"validateChecksum" help:"write values with a header and check every value read" live:"true"`
	OpTimeout      time.Duration `opt:"opTimeout" default:"5s" min:"1ms" max:"5m" live:"true" help:"deadline of one operation; at most 5m, so that a stop or a SIGTERM waits at most that long for operations in flight"`
	// CatchUp is what an open-loop worker does with operations that are already late when
	// it gets to them (the store stalled, or the pool is too small): send them at once,
	// measured from their intended start (burst, the honest open-loop default), or skip
	// those more than MaxLateness late and count them as dropped, so a recovering store is
	// not hit by the backlog. Never silent: dropped operations are counted per class, with
	// their lateness in a histogram, in every output.
	CatchUp     string        `opt:"catchUp" default:"burst" enum:"burst,drop" live:"true" help:"what an open-loop worker does with overdue operations: burst = send them at once, timed from their intended start; drop = skip those more than maxLateness late, counted as dropped"`
	MaxLateness time.Duration `opt:"maxLateness" default:"1s" min:"1ms" max:"1h" live:"true" help:"with catchUp=drop: how late an operation may be when a worker gets to it and still be sent"`
	// Pipeline is the depth redis-benchmark calls -P and memtier --pipeline; see
	// driver.Pipeliner.
	Pipeline int `opt:"pipeline" default:"1" min:"1" max:"1024" live:"true" help:"operations a worker keeps in flight on its own connection, with drivers that pipeline (redis and postgres mode=direct, memcached client=direct; each its default): every operation due, up to this many, goes out in one batch; 1 = one at a time"`
	// Warmup is `ndbench run --warmup` as configuration, so `ndbench serve` (a start from
	// the API, the UI or a fleet) honours it too.
	Warmup          time.Duration `opt:"warmup" default:"0s" min:"0s" max:"24h" live:"true" help:"run the load this long after a start before measuring: the time series shows it, the summary, reports and thresholds exclude it; applies at the next start"`
	Backfill        bool          `opt:"backfill" default:"false" help:"write every key once before the load starts"`
	BackfillWorkers int           `opt:"backfillWorkers" default:"1" min:"1" max:"10000" ndbench:"numBackfill" help:"parallel backfill workers"`
	BackfillRate    float64       `opt:"backfillRate" default:"0" min:"0" max:"1000000000" help:"backfill writes per second; 0 = unlimited"`
	BackfillVerify  bool          `opt:"backfillVerify" default:"false" help:"read every key back after the backfill"`
	KeyPrefix       string        `opt:"keyPrefix" default:"T" help:"key prefix; NDBench's keys are T<number>, so its stores can be read" live:"true"`
	Seed            uint64        `opt:"seed" default:"0" help:"random seed for reproducible runs; 0 = random" live:"true"`
	// MemoryBudget bounds what the workload may allocate (value pool, validation tracker,
	// worker buffers; see workload.EstimateMemory), so a typo is an error instead of an
	// out-of-memory kill. 1 GiB fits every NDBench default many times over and leaves
	// room on a small node for the store client and the statistics.
	// InsertMember and InsertMembers split the keys inserts add among the nodes that
	// insert into one keyspace, so that no two insert the same key: member i of n inserts
	// numKeys+i, numKeys+i+n, ... A fleet's coordinator sets them on each node (its index
	// in the sorted member list); nodes configured one by one (NDBench's way) set them
	// themselves.
	InsertMember  int `opt:"insertMember" default:"0" min:"0" max:"100000" live:"true" help:"this node's index among the workload.insertMembers nodes inserting into one keyspace: it inserts the keys numKeys+insertMember, +insertMembers, ...; a fleet's coordinator sets it"`
	InsertMembers int `opt:"insertMembers" default:"1" min:"1" max:"100000" live:"true" help:"the number of nodes inserting into one keyspace, each taking every insertMembers-th new key; a fleet's coordinator sets it"`
	// InsertBase is where a fleet's split of the new keys starts: a coordinator that
	// re-splits them while inserts run (a node joined or left) gives every node one base
	// beyond every key any of them claimed, since nodes that counted their inserts apart
	// would each start their new share from another key and insert some keys twice.
	InsertBase int64 `opt:"insertBase" default:"0" min:"0" max:"1000000000000000" live:"true" help:"the first key index of this node's share of the new keys (workload.insertMember of insertMembers) when above numKeys: a node inserts its remaining keys of its previous share below it first; 0 starts the share where this node's inserts stopped; a fleet's coordinator sets it"`
	// TrackedInserts bounds the validation tracker's growth: inserts add keys for as long
	// as a run lasts, and a tracker that followed them all would pass any budget.
	TrackedInserts int64       `opt:"trackedInserts" default:"16777216" min:"0" max:"1073741824" live:"true" help:"with validate: how many keys beyond numKeys validation tracks (4 bytes each, counted in memoryBudget); keys inserted past them are not validated; a change starts a new tracker"`
	MemoryBudget   driver.Size `opt:"memoryBudget" default:"1GiB" min:"1MiB" max:"1TiB" live:"true" help:"most memory the workload may allocate (value pool, validation tracker, worker buffers); a change needing more is rejected; at most three quarters of the machine's memory (never less than the default)"`

	// Ops are the op classes beyond read and write, by name (keys
	// "workload.ops.<class>.<option>"); nil when there are none. It has no opt tag: the
	// loader decodes each class with OpClass's own tags.
	Ops map[string]OpClass
}

// OpClass is one named op class beyond read and write: a pool of workers with its own
// rate, enable flag and mix of driver operations, started and stopped by name. Its
// options are "workload.ops.<class>.<option>".
type OpClass struct {
	Workers    int     `opt:"workers" default:"1" min:"0" max:"10000" live:"true" help:"number of workers of the class"`
	MaxWorkers int     `opt:"maxWorkers" default:"0" min:"0" max:"10000" live:"true" help:"most workers the pool may grow to while it falls behind its rate; 0 = auto: ceil(rate x opTimeout), at most max(4 x workers, 64); 1..workers: a fixed pool"`
	Rate       float64 `opt:"rate" default:"100" min:"0" max:"1000000000" live:"true" help:"operations per second across the class's workers; 0 = closed loop"`
	Enabled    bool    `opt:"enabled" default:"true" live:"true" help:"run the class"`
	Mix        string  `opt:"mix" default:"" live:"true" help:"driver operations the class runs, by weight (name or name:weight,name:weight); empty = the operation named like the class"`
}

// ClassSpec is the settings of one op class, whatever its kind: read, write, or one of
// Ops. The engine and the outputs iterate classes through it.
type ClassSpec struct {
	Name       string
	Workers    int
	MaxWorkers int
	Rate       float64
	Enabled    bool
	Mix        Mix
}

// The built-in op classes, NDBench's readers and writers.
const (
	ClassRead  = "read"
	ClassWrite = "write"
)

// AutoMaxWorkers is the most workers an open-loop pool of workers grows to when its
// maximum is 0 (auto): as many as hold rate if every operation took the whole op timeout
// (Little's law at the worst latency that still counts as an answer; beyond it more
// workers only add timeouts), capped at max(4 × workers, 64) so that a store's connection
// limit is not overrun by surprise (with drivers that give each worker a connection), and
// never fewer than workers. Without the growth, a pool sized for a store's usual latency
// falls behind its schedule at the first slow stretch and the run reports its own queue
// as the store's latency (NDBench's configs run 8 workers at thousands of ops/s).
func AutoMaxWorkers(workers int, rate float64, opTimeout time.Duration) int {
	if workers <= 0 || rate <= 0 {
		return workers
	}
	need := math.Ceil(rate * opTimeout.Seconds())
	most := float64(min(max(4*workers, autoMaxFloor), maxWorkers))
	return max(workers, int(min(need, most)))
}

// autoMaxFloor is the least cap of AutoMaxWorkers: small pools may still grow to 64.
const autoMaxFloor = 64

// MostWorkers is the most workers c's pool may have at rate: MaxWorkers, or
// AutoMaxWorkers when it is 0; never fewer than Workers.
func (c ClassSpec) MostWorkers(rate float64, opTimeout time.Duration) int {
	if c.MaxWorkers == 0 {
		return AutoMaxWorkers(c.Workers, rate, opTimeout)
	}
	return max(c.Workers, c.MaxWorkers)
}

// WorkersBound returns the upper bound of the workers option of class
// (ClassOption(class, "workers")) as its tag declares it: what any configuration accepts
// at most, before the rules across options (WorkersAllowed).
func WorkersBound(class string) int {
	schema, name := opClassSchema(), "workers"
	if names, ok := classOptions["workers"]; ok {
		switch class {
		case ClassRead:
			schema, name = workloadSchema(), names[0]
		case ClassWrite:
			schema, name = workloadSchema(), names[1]
		}
	}
	for _, o := range schema {
		if o.Name == name {
			n, _ := strconv.Atoi(o.Max) // the tag is fixed at compile time and tested
			return n
		}
	}
	return 0
}

// WorkersAllowed returns the most workers class may be set to (its workers option), the
// rest of w as it is, that Validate accepts: the option's bound, the bound on all pools
// together, the memory budget. It is the most a message suggesting more workers may
// suggest. It is at least class's current workers when w is valid; when w is not (or has
// no such class), it is WorkersBound.
func (w Workload) WorkersAllowed(class string) int {
	hi := WorkersBound(class)
	c, ok := w.Class(class)
	if !ok || w.Validate() != nil {
		return hi
	}
	with := func(n int) Workload {
		v := w
		switch class {
		case ClassRead:
			v.Readers = n
		case ClassWrite:
			v.Writers = n
		default:
			v.Ops = maps.Clone(w.Ops)
			oc := v.Ops[class]
			oc.Workers = n
			v.Ops[class] = oc
		}
		return v
	}
	// Every rule bounds the workers from above (more workers never make a valid workload
	// of an invalid one), so the valid counts are lo..answer: search between.
	lo := c.Workers
	if lo >= hi || with(hi).Validate() == nil {
		return max(lo, hi)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if with(mid).Validate() == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// The values of workload.catchUp.
const (
	CatchUpBurst = "burst"
	CatchUpDrop  = "drop"
)

// MaxOpClasses bounds the classes beyond read and write. Each class and each operation of
// a mixed class is a statistics series (stats.MaxSeries in all, with read, write and
// backfill).
const MaxOpClasses = 8

// Classes returns every op class of w: read, write, then Ops sorted by name. A mix that
// does not parse (which Validate rejects) comes back empty.
func (w Workload) Classes() []ClassSpec {
	rm, _ := ParseMix(w.ReadMix, ClassRead)
	wm, _ := ParseMix(w.WriteMix, ClassWrite)
	out := []ClassSpec{
		{Name: ClassRead, Workers: w.Readers, MaxWorkers: w.MaxReaders, Rate: w.ReadRate, Enabled: w.ReadEnabled, Mix: rm},
		{Name: ClassWrite, Workers: w.Writers, MaxWorkers: w.MaxWriters, Rate: w.WriteRate, Enabled: w.WriteEnabled, Mix: wm},
	}
	for _, name := range slices.Sorted(maps.Keys(w.Ops)) {
		c := w.Ops[name]
		m, _ := ParseMix(c.Mix, name)
		out = append(out, ClassSpec{Name: name, Workers: c.Workers, MaxWorkers: c.MaxWorkers, Rate: c.Rate, Enabled: c.Enabled, Mix: m})
	}
	return out
}

// Class returns the op class called name.
func (w Workload) Class(name string) (ClassSpec, bool) {
	for _, c := range w.Classes() {
		if c.Name == name {
			return c, true
		}
	}
	return ClassSpec{}, false
}

// ClassNames returns the names of w's op classes in Classes order.
func (w Workload) ClassNames() []string {
	names := []string{ClassRead, ClassWrite}
	return append(names, slices.Sorted(maps.Keys(w.Ops))...)
}

// Mix is a weighted choice of driver operations, in the order written.
type Mix []MixEntry

// MixEntry is one operation of a Mix.
type MixEntry struct {
	Op     string
	Weight float64
}

// Ops returns the operation names of m in order.
func (m Mix) Ops() []string {
	out := make([]string, len(m))
	for i, e := range m {
		out[i] = e.Op
	}
	return out
}

// ParseMix parses "op" or "op:weight,op:weight" (weights positive numbers; a bare name
// weighs 1). An empty s is the operation named def.
func ParseMix(s, def string) (Mix, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = def
	}
	var m Mix
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		name, weight, hasWeight := strings.Cut(strings.TrimSpace(part), ":")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("empty operation name in %q", s)
		}
		if seen[name] {
			return nil, fmt.Errorf("operation %q named twice in %q", name, s)
		}
		seen[name] = true
		w := 1.0
		if hasWeight {
			v, err := strconv.ParseFloat(strings.TrimSpace(weight), 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("weight %q of operation %q: want a positive number", weight, name)
			}
			w = v
		}
		m = append(m, MixEntry{Op: name, Weight: w})
	}
	if len(m) > maxMixOps {
		return nil, fmt.Errorf("%d operations in %q: at most %d", len(m), s, maxMixOps)
	}
	return m, nil
}

// maxSeries is stats.MaxSeries (a test checks): the series a workload's classes need
// must fit in a node's collector, or the engine would reject a change the store accepted.
const maxSeries = 32

// seriesCount is how many statistics series w's classes record into: read, write and
// backfill, one per other class, one per operation of each class that mixes several, and
// two per rmw (its read and write parts).
func (w Workload) seriesCount() int {
	n := 3
	for _, c := range w.Classes() {
		if c.Name != ClassRead && c.Name != ClassWrite {
			n++
		}
		if len(c.Mix) > 1 {
			n += len(c.Mix)
		}
		for _, m := range c.Mix {
			if m.Op == driver.OpRMW {
				n += 2
			}
		}
	}
	return n
}

// maxMixOps bounds the operations of one class: each is a statistics series.
const maxMixOps = 8

// checkClassName reports whether name can name an op class: a letter, then letters,
// digits and '_' (at most 32), and not one of the built-in series.
func checkClassName(name string) error {
	if name == ClassRead || name == ClassWrite || name == "backfill" {
		return fmt.Errorf("%q is a built-in class: set it with workload.%s options", name, map[string]string{ClassRead: "read*", ClassWrite: "write*", "backfill": "backfill*"}[name])
	}
	if name == "" || len(name) > 32 {
		return errors.New("want 1 to 32 characters")
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '_')) {
			return errors.New("want a letter, then letters, digits and '_'")
		}
	}
	return nil
}

// CheckMixOps checks that every operation the classes of w run is one driver def offers,
// naming the option and the driver's operations when one is not.
func (w Workload) CheckMixOps(def driver.Definition) error {
	var errs driver.FieldErrors
	names := def.OperationNames()
	for _, c := range w.Classes() {
		// A class must not take the name of a series the driver measures itself (the
		// composite driver's visibility), or both would be recorded as one.
		for _, series := range def.Series {
			if prefix, _, _ := strings.Cut(series, "."); c.Name == series || c.Name == prefix {
				errs = append(errs, &driver.FieldError{Field: "workload.ops." + c.Name, Value: c.Name,
					Allowed: fmt.Sprintf("a class name other than the series driver %s measures itself (%s)", def.Name, strings.Join(def.Series, ", "))})
				break
			}
		}
		for _, e := range c.Mix {
			if _, _, ok := def.Operation(e.Op); !ok {
				errs = append(errs, &driver.FieldError{Field: ClassOption(c.Name, "mix"), Value: e.Op,
					Allowed: fmt.Sprintf("operations of driver %s: %s", def.Name, strings.Join(names, ", "))})
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// classOptions maps OpClass's option names to those of the read and write classes.
var classOptions = map[string][2]string{
	"workers": {"readers", "writers"}, "maxWorkers": {"maxReaders", "maxWriters"},
	"rate": {"readRate", "writeRate"}, "enabled": {"readEnabled", "writeEnabled"}, "mix": {"readMix", "writeMix"},
}

// ClassOption returns the full key of option opt (an OpClass option: workers,
// maxWorkers, rate, enabled, mix) of class: "workload.readers" for the read class's
// workers, "workload.ops.<class>.<opt>" for a class of Ops. Messages that tell the user
// which option to change use it.
func ClassOption(class, opt string) string {
	if names, ok := classOptions[opt]; ok {
		switch class {
		case ClassRead:
			return "workload." + names[0]
		case ClassWrite:
			return "workload." + names[1]
		}
	}
	return "workload.ops." + class + "." + opt
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
// The pattern option's Enum lists the patterns registered now (with their aliases).
func WorkloadSchema() []driver.Option {
	s := slices.Clone(workloadSchema())
	for i := range s {
		if s[i].Name == "pattern" {
			s[i].Enum = workload.Patterns()
		}
	}
	return s
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

// OpClassSchema returns the options of one op class (workload.ops.<class>.<option>), for
// the API and the UI's op class editor.
func OpClassSchema() []driver.Option {
	return slices.Clone(opClassSchema())
}

// opClassSchema is OpClass's schema, reflected once (see workloadSchema).
var opClassSchema = sync.OnceValue(func() []driver.Option {
	s, _ := driver.Schema(OpClass{}) // fixed at compile time and tested
	return s
})

// DefaultOpClass returns an op class with every option at its default.
func DefaultOpClass() OpClass {
	var c OpClass
	_ = driver.ApplyDefaults(&c) // defaults are tested; they parse
	return c
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
	if ceiling, memory := memoryCeiling(); int64(w.MemoryBudget) > ceiling && !slices.ContainsFunc(errs, func(fe *driver.FieldError) bool {
		return fe.Field == "workload.memoryBudget"
	}) {
		add("memoryBudget", w.MemoryBudget.String(), fmt.Sprintf("a size from 1MiB to %s: three quarters of this machine's memory, %s, so that what the estimate approves fits beside the store client and the statistics",
			driver.Size(ceiling), memory))
	}
	// The tags bound hotKeys and hotFraction to [0, 1]; an empty hot set is the one case
	// they cannot express. Checked whatever the pattern, so switching to hotspot later
	// cannot fail on a value accepted earlier.
	if w.HotKeys <= 0 {
		add("hotKeys", fmt.Sprint(w.HotKeys), "a number greater than 0 and at most 1")
	}
	// Likewise the open ends of exponential's parameters (workload.KeyParams reads a zero
	// as "the default", which a configured zero must not silently become).
	if v := w.ExpPercentile; v <= 0 || v >= 100 {
		add("expPercentile", fmt.Sprint(v), "a percentage greater than 0 and less than 100")
	}
	if w.ExpFraction <= 0 {
		add("expFraction", fmt.Sprint(w.ExpFraction), "a fraction greater than 0 and at most 1")
	}
	classWorkers := 0
	var classKeys []string // the options that size the other classes' pools, for the error
	if len(w.Ops) > MaxOpClasses {
		add("ops", fmt.Sprintf("%d classes", len(w.Ops)), fmt.Sprintf("at most %d op classes beyond read and write", MaxOpClasses))
	}
	for _, name := range slices.Sorted(maps.Keys(w.Ops)) {
		c := w.Ops[name]
		if err := checkClassName(name); err != nil {
			add("ops."+name, name, "an op class name: "+err.Error())
			continue
		}
		if err := driver.CheckTags(&c); err != nil {
			fes, _ := driver.AsFieldErrors(err)
			for _, fe := range fes {
				add("ops."+name+"."+fe.Field, fe.Value, fe.Allowed)
			}
		}
		if c.Enabled {
			classWorkers += max(c.Workers, c.MaxWorkers)
			classKeys = append(classKeys, fmt.Sprintf("workload.ops.%s.workers=%d, workload.ops.%s.maxWorkers=%d", name, c.Workers, name, c.MaxWorkers))
		}
	}
	for _, c := range []struct{ field, value, def string }{{"readMix", w.ReadMix, ClassRead}, {"writeMix", w.WriteMix, ClassWrite}} {
		if _, err := ParseMix(c.value, c.def); err != nil {
			add(c.field, c.value, "operation names with optional weights, e.g. read or read:9,scan:1: "+err.Error())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.Ops)) {
		if checkClassName(name) != nil {
			continue
		}
		if _, err := ParseMix(w.Ops[name].Mix, name); err != nil {
			add("ops."+name+".mix", w.Ops[name].Mix, "operation names with optional weights, e.g. search or search:9,scan:1: "+err.Error())
		}
	}
	if n := w.seriesCount(); n > maxSeries {
		add("ops", fmt.Sprintf("%d series", n), fmt.Sprintf("at most %d statistics series per node: read, write, backfill, one per other class, one per operation of a class that mixes several, and two per rmw", maxSeries))
	}
	if n := max(w.Readers, w.MaxReaders) + max(w.Writers, w.MaxWriters) + classWorkers; n > maxWorkers && classWorkers > 0 {
		add("ops", fmt.Sprintf("%d workers", classWorkers), fmt.Sprintf("the workers of all op classes together at most %d (read %d: workload.readers=%d, workload.maxReaders=%d; write %d: workload.writers=%d, workload.maxWriters=%d; the other classes %d: %s)",
			maxWorkers, max(w.Readers, w.MaxReaders), w.Readers, w.MaxReaders, max(w.Writers, w.MaxWriters), w.Writers, w.MaxWriters, classWorkers, strings.Join(classKeys, ", ")))
	} else if max(w.Readers, w.MaxReaders)+max(w.Writers, w.MaxWriters) > maxWorkers {
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
	if w.InsertMember >= w.InsertMembers && !slices.ContainsFunc(errs, func(fe *driver.FieldError) bool {
		return fe.Field == "workload.insertMember" || fe.Field == "workload.insertMembers"
	}) {
		add("insertMember", strconv.Itoa(w.InsertMember), fmt.Sprintf("an index from 0 to insertMembers-1 = %d", w.InsertMembers-1))
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
		HotKeys: w.HotKeys, HotFraction: w.HotFraction, ExpPercentile: w.ExpPercentile,
		ExpFraction: w.ExpFraction, Options: w.PatternOptions, Seed: w.Seed,
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
	return workload.TrackerParams{NumKeys: w.NumKeys, MaxWriteTime: w.OpTimeout, MaxInserted: w.TrackedInserts}
}

// inserts reports whether an enabled class's mix names the built-in insert, which grows
// the keyspace (a driver's own operation of that name does not, but the estimate errs
// towards counting).
func (w Workload) inserts() bool {
	for _, c := range w.Classes() {
		if c.Enabled && slices.Contains(c.Mix.Ops(), driver.OpInsert) {
			return true
		}
	}
	return false
}

// MemoryParams returns what sizes the workload's allocations: the value pool, the tracker
// when validating, and the workers that may run at once (the readers and writers of
// enabled classes, and the backfill workers).
func (w Workload) MemoryParams() workload.MemoryParams {
	p := workload.MemoryParams{Values: w.ValueParams(), Backfill: w.BackfillWorkers}
	if w.ValidateValues {
		p.TrackedKeys = w.NumKeys
		if w.inserts() {
			p.TrackedInserts = w.TrackedInserts
		}
	}
	// An elastic pool may grow to its maximum (at the configured rate, for an automatic
	// one): that is what it may allocate. The other classes' workers hold write buffers
	// when they write: they count as writers, the larger of the two.
	type pool struct {
		n    int
		size workload.PoolSize
	}
	var pools []pool
	for _, c := range w.Classes() {
		if !c.Enabled {
			continue
		}
		n := c.MostWorkers(c.Rate, w.OpTimeout)
		if c.Name == ClassRead {
			p.Readers = n
		} else {
			p.Writers += n
		}
		if n > 0 {
			pools = append(pools, pool{n, c.poolSize(n, w.OpTimeout)})
		}
	}
	// The largest pool first: an error about the workers names its option.
	slices.SortStableFunc(pools, func(a, b pool) int { return b.n - a.n })
	p.Pools = []workload.PoolSize{}
	for _, q := range pools {
		p.Pools = append(p.Pools, q.size)
	}
	return p
}

// poolSize says which option sets the n workers c's pool may have at most
// (MostWorkers), for the memory estimate's messages: the workers option for a fixed pool,
// the maximum for an elastic one, with how an automatic maximum was worked out, so that an
// error names the value that drives the estimate and where it came from rather than a
// workers option the user did not set to that.
func (c ClassSpec) poolSize(n int, opTimeout time.Duration) workload.PoolSize {
	workers, most := ClassOption(c.Name, "workers"), ClassOption(c.Name, "maxWorkers")
	switch {
	case n <= c.Workers:
		v := strconv.Itoa(c.Workers)
		return workload.PoolSize{Field: workers, Value: v, Key: workers + "=" + v}
	case c.MaxWorkers > 0:
		v := strconv.Itoa(c.MaxWorkers)
		return workload.PoolSize{Field: most, Value: v, Key: most + "=" + v}
	}
	rate := ClassOption(c.Name, "rate")
	key := fmt.Sprintf("%s=0 (auto: %d %s workers, the least of ⌈%s %s × workload.opTimeout %v⌉ and max(4 × %s %d, %d))",
		most, n, c.Name, strings.TrimPrefix(rate, "workload."), strconv.FormatFloat(c.Rate, 'g', -1, 64), opTimeout,
		strings.TrimPrefix(workers, "workload."), c.Workers, autoMaxFloor)
	return workload.PoolSize{Field: most, Value: "0", Key: key}
}
