// Package engine runs a workload against a driver: named op classes (NDBench's read and
// write, and any class the workload adds), each a pool of workers with its own rate,
// worker count, enable flag and weighted mix of driver operations, plus a finite backfill. Every workload parameter applies while the engine runs: pools grow and shrink,
// rates re-anchor their schedules, and key patterns, keyspace and values swap atomically.
//
// Workers take intended start times from an open-loop pacer and record response time (end
// minus intended start) and service time (end minus actual start), so a store that stalls is
// charged for every operation it delayed. A failed operation is counted by class and never
// stops a worker.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// ValueRefreshInterval is how often the value pool is rebuilt from a new seed, so a long
// run does not write the same few values for days (which compressing or deduplicating
// stores would flatter).
const ValueRefreshInterval = time.Minute

// Options are the engine's collaborators.
type Options struct {
	// Collector receives the measurements; nil creates one with default settings.
	Collector *stats.Collector
	// Logger gets lifecycle messages and the first driver panic; nil discards them.
	Logger *slog.Logger
	// Now is the clock of time-based key patterns; nil means Clock's Now.
	Now func() time.Time
	// Clock is the time the engine runs on: its schedules (intended start times), the
	// operations' start, end and timeout, and its background loops (elastic pools, the
	// op-timeout watchdog, the value refresh). Nil means real time, read through the
	// pacer's fast counter clock; a test passes a clock.Sim and steps it.
	Clock clock.Clock
	// Operations are the operations the driver declares beyond Read and Write (its
	// Definition's), which op class mixes may name; the driver then implements
	// driver.Operator.
	Operations []driver.Operation
}

// generation is everything workers read per operation that a config change replaces. It
// is immutable: a change builds a new one and swaps the pointer, so a worker sees either
// the old settings or the new ones, never a mix.
type generation struct {
	w       config.Workload
	keys    workload.Keys
	values  *workload.Values
	tracker *workload.Tracker // nil unless validating
	// deletes says a class deletes keys: a read that misses a key expected present is
	// then lost only if no delete touched the key while the read ran.
	deletes bool
	seed    uint64
	// dropLate is workload.maxLateness in nanoseconds under catchUp=drop, 0 under burst:
	// the worker loop's whole test is one comparison.
	dropLate int64
	// classes are w's op classes with their mixes resolved to driver calls, in
	// Workload.Classes order.
	classes []classGen
	// keyNames are the keys of a small keyspace, by index (nil for a large one): workers
	// take a key from it instead of formatting one per operation.
	keyNames []string
}

// keyNamesMax bounds the memory of a generation's keyNames: a keyspace whose key table
// would take more formats its keys per operation instead. 1 MiB holds NDBench's default
// 1,000 keys many times over and ~40,000 keys of a short prefix.
const keyNamesMax = 1 << 20

// makeKeyNames returns the keys of a keyspace of n keys with prefix, or nil when their
// table would take more than keyNamesMax bytes. The keys' bytes share one allocation and
// are never written again, so they are ordinary immutable strings.
func makeKeyNames(prefix string, n int64) []string {
	per := int64(unsafe.Sizeof("")) + int64(len(prefix)) + int64(len(strconv.FormatInt(max(n-1, 0), 10)))
	if n <= 0 || n > keyNamesMax/per {
		return nil
	}
	buf := make([]byte, 0, n*(per-int64(unsafe.Sizeof(""))))
	names := make([]string, n)
	for i := range names {
		k0 := len(buf)
		buf = workload.AppendKey(buf, prefix, int64(i))
		names[i] = unsafe.String(&buf[k0], len(buf)-k0)
	}
	return names
}

// classGen is one op class of a generation.
type classGen struct {
	spec config.ClassSpec
	mix  []mixEntry
}

// class returns the class called name, or nil when the workload has no such class.
func (g *generation) class(name string) *classGen {
	for i := range g.classes {
		if g.classes[i].spec.Name == name {
			return &g.classes[i]
		}
	}
	return nil
}

// mixEntry is one driver operation of a class's mix, resolved once per generation so the
// worker loop picks and calls it without a lookup or an allocation.
type mixEntry struct {
	name string
	idx  int // opRead, opWrite, or the index for driver.Operator.Do
	kind driver.Kind
	wop  workload.Op // how the key pattern treats it (latest: writes append)
	// upTo is the cumulative weight, as a fraction of the class's total, up to this entry.
	upTo float64
	// series is the operation's own statistics series when the class mixes several
	// operations (own); a class of one operation records under the class only.
	series stats.Op
	own    bool
	// parts are the series of an rmw's read and write.
	parts [2]stats.Op
}

// The indexes of the built-in operations in mixEntry.idx (a declared operation's is its
// index for driver.Operator.Do).
const (
	opRead   = driver.IndexRead
	opWrite  = driver.IndexWrite
	opDelete = driver.IndexDelete
	opRMW    = driver.IndexRMW
	opScan   = driver.IndexScan
	opInsert = driver.IndexInsert
)

// scanLengthMax is the longest scan: a scan's length is uniform in [1, scanLengthMax],
// YCSB's defaults (maxscanlength 100, scanlengthdistribution uniform).
const scanLengthMax = 100

// ScanLengthMax is the longest scan the engine asks for (scanLengthMax), for those that
// describe a run.
const ScanLengthMax = scanLengthMax

// plainRead and plainWrite are Driver.Read and Driver.Write as operations outside a
// class's mix: backfill's writes, its verification's reads, and the parts of an rmw.
var (
	plainRead  = mixEntry{name: driver.OpRead, idx: opRead, kind: driver.KindRead, wop: workload.OpRead, upTo: 1}
	plainWrite = mixEntry{name: driver.OpWrite, idx: opWrite, kind: driver.KindWrite, wop: workload.OpWrite, upTo: 1}
)

// Engine runs workloads against one driver. Its methods are safe for concurrent use.
type Engine struct {
	drv   driver.Driver
	coll  *stats.Collector
	log   *slog.Logger
	now   func() time.Time
	start time.Time   // time-based key patterns count from here across generations
	clock pacer.Clock // every pacer and op deadline reads this one clock
	timer clock.Clock // what the background loops and closed-loop backoffs wait on
	dog   watchdog

	runCtx    context.Context // cancelled by Close after its grace: a hard stop for operations in flight
	cancelRun context.CancelFunc
	bgCtx     context.Context // cancelled when Close starts: background tasks stop
	cancelBg  context.CancelFunc
	bgWG      sync.WaitGroup

	liveMu sync.Mutex    // guards live and idle
	live   int           // worker goroutines (load and backfill) still running
	idle   chan struct{} // closed while live == 0

	ops      []driver.Operation // the driver's declared operations (Options.Operations)
	operator driver.Operator    // the driver as an Operator; nil if it declares none
	deleter  driver.Deleter     // the driver as a Deleter (operation delete); nil if it is none
	scanner  driver.Scanner     // the driver as a Scanner (operation scan); nil if it is none
	inserter driver.Inserter    // the driver as an Inserter (operation insert); nil: Write
	// pipeliner is the driver as a Pipeliner when it gives pipelines as configured: each
	// worker then runs on a connection of its own (workPipelined).
	pipeliner driver.Pipeliner

	mu      sync.Mutex // serialises control: Apply, Start, Stop, Backfill, Close
	gen     atomic.Pointer[generation]
	classes []*opClass // every class the engine has run, in creation order (under mu)
	closed  bool

	backfill backfillState
	panics   atomic.Int64
	// inserts is how inserts claim new keys: each once, whatever the generation (a key is
	// never inserted twice, also when numKeys or the node's share changes).
	inserts insertKeys
	// fence is the reading of clock from which no operation of an op class starts (0:
	// none); see SendUntil.
	fence atomic.Int64
}

// opClass is one pool of workers: an op class of the workload. A class removed from the
// workload keeps its opClass (with no workers), so its statistics series stays and it
// resumes where it was if the class comes back.
type opClass struct {
	name    string
	series  stats.Op
	pacer   *pacer.Pacer
	rec     *stats.Recorder
	started bool      // Start was called and Stop was not (under Engine.mu)
	workers []*worker // running workers by index (under Engine.mu)
	target  atomic.Int64
	rate    float64 // the pacer's rate (under Engine.mu)
	active  bool    // the pool has workers (under Engine.mu)
	// runSeed seeds the workers' random streams for one start of the pool (under
	// Engine.mu): fresh at every start unless workload.seed is set, so a Stop/Start does
	// not replay the previous run's keys into the caches it warmed.
	runSeed uint64
	// shape replaces the configured rate while set (SetShape); shapeGen counts SetShape
	// calls and installedGen is the one the pacer runs, so a new shape is installed even
	// when it compares equal to the old one (under Engine.mu).
	shape                  pacer.Shape
	shapeGen, installedGen uint64
	// extra is how many workers an elastic pool added beyond its configured count
	// (under Engine.mu), and elastic what its check has observed (see elastic.go).
	extra   int
	elastic elasticState
	// unsampled is set while a pool with workers is fixed: the elastic check then reads
	// none of its workers, so their counters ran on, and its first check once elastic
	// takes them as the baseline (under Engine.mu).
	unsampled bool
	// startAt is when the pool's next start is due, a reading of the engine's clock set by
	// StartAt (0: at once); the start that uses it clears it (under Engine.mu).
	startAt int64
	// firstOp is the actual start of the pool's first operation since it last started
	// (engine clock; 0 until then): how a fleet measures how far each node's first
	// operation was from the common start instant.
	firstOp atomic.Int64
	// paced is set while the pool's pacer runs a schedule (a rate or a shape), whose
	// slots each have an intended start time of their own: an operation then draws its
	// key and value from its slot's stream (opPath.next), not its worker's.
	paced atomic.Bool
}

// sizing returns the class's configured workers (0 when it is not started, not enabled,
// or no longer in the workload), the most it may grow to (config.ClassSpec.MostWorkers),
// and its configured rate.
func (c *opClass) sizing(g *generation) (workers, most int, rate float64) {
	cg := g.class(c.name)
	if cg == nil {
		return 0, 0, 0
	}
	workers, rate = cg.spec.Workers, cg.spec.Rate
	// An automatic maximum follows the rate the pool runs at: a load shape's, while set.
	now := rate
	if c.shape != nil {
		now = c.pacer.Rate()
	}
	most = cg.spec.MostWorkers(now, g.w.OpTimeout)
	if !c.started || !cg.spec.Enabled {
		workers = 0
	}
	return workers, most, rate
}

type worker struct {
	cancel context.CancelFunc
	// slot is the worker's operation slot once it runs: the elastic check reads from it
	// whether an operation is in flight, since when, and what the worker's operations took.
	slot atomic.Pointer[opSlot]
	// seen is the slot's spent counter at the elastic check before (under Engine.mu).
	seen uint64
}

// New builds an engine for drv, which must be initialised, with workload w. Nothing runs
// until Start.
func New(drv driver.Driver, w config.Workload, opts Options) (*Engine, error) {
	if drv == nil {
		return nil, errors.New("new engine: nil driver")
	}
	e := &Engine{drv: drv, coll: opts.Collector, log: opts.Logger, now: opts.Now, clock: pacer.ClockOn(opts.Clock), timer: clock.Or(opts.Clock), ops: opts.Operations}
	e.operator, _ = drv.(driver.Operator)
	e.deleter, _ = drv.(driver.Deleter)
	e.scanner, _ = drv.(driver.Scanner)
	e.inserter, _ = drv.(driver.Inserter)
	if len(e.ops) > 0 && e.operator == nil {
		return nil, fmt.Errorf("new engine: the driver declares %d operations but does not implement driver.Operator", len(e.ops))
	}
	if p, ok := drv.(driver.Pipeliner); ok && p.Pipelines() {
		e.pipeliner = p
	}
	e.dog.clock = e.clock
	if e.coll == nil {
		e.coll = stats.NewCollector(stats.Config{})
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = e.timer.Now
	}
	e.start = e.now()
	g, err := e.build(w, nil)
	if err != nil {
		return nil, err
	}
	e.gen.Store(g)
	e.runCtx, e.cancelRun = context.WithCancel(context.Background())
	e.bgCtx, e.cancelBg = context.WithCancel(context.Background())
	e.idle = make(chan struct{})
	close(e.idle)
	e.addClasses(g)
	e.bgWG.Add(backgroundLoops)
	go e.refreshValues()
	go e.watch()
	go e.elastic()
	return e, nil
}

// Collector returns the collector the engine records into.
func (e *Engine) Collector() *stats.Collector { return e.coll }

// Workload returns the workload in effect.
func (e *Engine) Workload() config.Workload { return e.gen.Load().w }

// addClasses creates a pool for every class of g the engine does not have yet. Called
// with e.mu held (or before the engine is shared).
func (e *Engine) addClasses(g *generation) {
	for i := range g.classes {
		name := g.classes[i].spec.Name
		if e.lookupClass(name) != nil {
			continue
		}
		series, _ := e.coll.Register(name) // build registered it
		c := &opClass{name: name, series: series, pacer: pacer.NewWithClock(0, e.clock), rec: e.coll.Recorder(series)}
		e.classes = append(e.classes, c)
		e.coll.SetBacklog(series, c.pacer.Backlog)
	}
}

func (e *Engine) lookupClass(name string) *opClass {
	for _, c := range e.classes {
		if c.name == name {
			return c
		}
	}
	return nil
}

// resolveClasses resolves every class's mix of w to driver calls and registers the
// statistics series they record into.
func (e *Engine) resolveClasses(w config.Workload) (classes []classGen, deletes bool, err error) {
	// The driver's operations as its definition resolves them, so a mix means here what
	// the configuration's check took it to mean.
	def := driver.Definition{Operations: e.ops, New: func() driver.Driver { return e.drv }}
	specs := w.Classes()
	out := make([]classGen, 0, len(specs))
	for _, spec := range specs {
		classOp, err := e.coll.Register(spec.Name)
		if err != nil {
			return nil, false, fmt.Errorf("op class %s: %w", spec.Name, err)
		}
		cg := classGen{spec: spec}
		total := 0.0
		for _, m := range spec.Mix {
			total += m.Weight
		}
		sum := 0.0
		for _, m := range spec.Mix {
			me := mixEntry{name: m.Op}
			op, idx, ok := def.Operation(m.Op)
			if !ok {
				return nil, false, &driver.FieldError{Field: config.ClassOption(spec.Name, "mix"), Value: m.Op,
					Allowed: "operations of the driver: " + strings.Join(def.OperationNames(), ", ")}
			}
			me.idx, me.kind = idx, op.Kind
			me.wop = workload.OpRead
			if me.kind == driver.KindWrite || me.kind == driver.KindInsert {
				me.wop = workload.OpWrite
			}
			if me.kind == driver.KindDelete {
				deletes = true
			}
			if idx == opRMW {
				// Its two parts have series of their own, whatever the class mixes.
				for i, part := range []string{driver.OpRead, driver.OpWrite} {
					s, err := e.coll.Register(stats.OperationSeries(stats.OperationSeries(spec.Name, m.Op), part))
					if err != nil {
						return nil, false, fmt.Errorf("op class %s: %w", spec.Name, err)
					}
					me.parts[i] = s
				}
			}
			sum += m.Weight
			me.upTo = sum / total
			if len(spec.Mix) > 1 {
				// A part of the class's series: an answered operation is recorded once,
				// in its own series, and counted in the class's at the tick.
				s, err := e.coll.RegisterPart(classOp, stats.OperationSeries(spec.Name, m.Op))
				if err != nil {
					return nil, false, fmt.Errorf("op class %s: %w", spec.Name, err)
				}
				me.series, me.own = s, true
			}
			cg.mix = append(cg.mix, me)
		}
		if len(cg.mix) > 0 {
			cg.mix[len(cg.mix)-1].upTo = 1 // no rounding gap at the top
		}
		out = append(out, cg)
	}
	return out, deletes, nil
}

// build makes the generation for w, reusing what prev already has when its inputs did not
// change (rebuilding a large value pool or a tracker for every rate change would be waste,
// and a new tracker forgets which writes were acknowledged).
//
// Its only validation is Check (w.Validate and what depends on the driver), which a
// node's config store consults before it accepts a change; the constructors it calls
// check again with the same methods, so a workload the store accepted cannot fail here
// (TestApplyAcceptsExactlyWhatValidateAccepts, TestApplyAcceptsExactlyWhatCheckAccepts).
func (e *Engine) build(w config.Workload, prev *generation) (*generation, error) {
	if err := e.Check(w); err != nil {
		return nil, err
	}
	classes, deletes, err := e.resolveClasses(w)
	if err != nil {
		return nil, err
	}
	g := &generation{w: w, seed: w.Seed, classes: classes, deletes: deletes}
	if w.CatchUp == config.CatchUpDrop {
		g.dropLate = int64(w.MaxLateness)
	}
	if prev != nil && prev.w.Seed == w.Seed {
		g.seed = prev.seed
	} else if g.seed == 0 {
		g.seed = randomSeed()
	}
	// The parameters come from the same methods Validate checks, so what passed Validate
	// is exactly what the constructors below are given.
	kp := w.KeyParams()
	kp.Seed, kp.Now, kp.Start, kp.Size = g.seed, e.now, e.start, e.inserts.size
	if prev != nil && sameKeys(prev.w, w) && prev.seed == g.seed {
		g.keys = prev.keys
	} else {
		keys, err := workload.NewKeys(kp)
		if err != nil {
			return nil, err
		}
		g.keys = keys
	}
	if prev != nil && prev.w.NumKeys == w.NumKeys && prev.w.KeyPrefix == w.KeyPrefix {
		g.keyNames = prev.keyNames
	} else {
		g.keyNames = makeKeyNames(w.KeyPrefix, w.NumKeys)
	}
	vp := w.ValueParams()
	if prev != nil && prev.values.Params() == vp {
		g.values = prev.values
	} else {
		values, err := workload.NewValues(vp, g.seed)
		if err != nil {
			return nil, err
		}
		g.values = values
	}
	if w.ValidateValues {
		if prev != nil && prev.tracker != nil && prev.tracker.NumKeys() == w.NumKeys && prev.w.TrackedInserts == w.TrackedInserts && !prev.tracker.Expired() {
			g.tracker = prev.tracker
		} else {
			tp := w.TrackerParams()
			tp.Now = e.now
			t, err := workload.NewTracker(tp)
			if err != nil {
				return nil, err
			}
			g.tracker = t
		}
	}
	// Last, once nothing can fail, and before workers use g: keys below numKeys are the
	// initial keyspace's, never claimed by an insert, and the node inserts its share of
	// the new keys.
	e.inserts.plan(w.NumKeys, w.InsertBase, int64(w.InsertMember), int64(w.InsertMembers))
	return g, nil
}

// runSeed returns the seed of one start of a pool: derived from seed when it is set, so
// runs with the same seed draw the same keys and values, else random.
func runSeed(seed uint64) uint64 {
	if seed != 0 {
		return seed
	}
	return randomSeed()
}

// randomSeed returns a random non-zero seed.
func randomSeed() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

func sameKeys(a, b config.Workload) bool {
	return a.Pattern == b.Pattern && a.NumKeys == b.NumKeys && a.ZipfExponent == b.ZipfExponent &&
		a.WindowSize == b.WindowSize && a.WindowDuration == b.WindowDuration &&
		a.HotKeys == b.HotKeys && a.HotFraction == b.HotFraction &&
		a.ExpPercentile == b.ExpPercentile && a.ExpFraction == b.ExpFraction && a.PatternOptions == b.PatternOptions
}

// KeyspaceSize returns the number of keys the workload addresses: workload.numKeys, plus
// the keys inserts claimed beyond it (the keys 0 .. size-1; a key claimed by an insert
// that failed or is in flight may not exist). A node inserting one share of the new keys
// (workload.insertMembers > 1) counts the others' shares as claimed as far as its own:
// its keyspace is the fleet's when the members insert at one pace.
func (e *Engine) KeyspaceSize() int64 { return e.inserts.size() }

// Inserted returns how many new keys this engine's inserts claimed (a claimed key whose
// insert failed or is in flight may not exist): a fleet's keyspace is numKeys plus the
// sum over its nodes.
func (e *Engine) Inserted() int64 { return e.inserts.inserted() }

// Clock returns the clock the engine times operations with.
func (e *Engine) Clock() pacer.Clock { return e.clock }

// Apply changes the workload while the engine runs. The whole workload is validated and
// every new part built before anything changes, so an invalid change leaves the engine as
// it was.
func (e *Engine) Apply(w config.Workload) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("apply workload: engine closed")
	}
	g, err := e.build(w, e.gen.Load())
	if err != nil {
		return err
	}
	e.gen.Store(g)
	e.addClasses(g)
	e.reconcile()
	return nil
}

// Start starts the named op classes (as permitted by their enabled options), or every
// class of the workload when none is named.
func (e *Engine) Start(classes ...string) error { return e.setStarted(true, classes, time.Time{}) }

// StartAt is Start with the classes' schedules anchored at the instant at: their workers
// start now and wait in the pacer, so the first operation starts at at (open loop: the
// first intended start is at; closed loop: no operation starts before it). A fleet starts
// every node this way at one common instant. A class already running is left as it is; an
// instant already past means now.
func (e *Engine) StartAt(at time.Time, classes ...string) error {
	return e.setStarted(true, classes, at)
}

// FirstOps returns, per op class started since it was last stopped, the actual start of
// its first operation (absent until it has one).
func (e *Engine) FirstOps() map[string]time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]time.Time)
	for _, c := range e.classes {
		if ns := c.firstOp.Load(); ns != 0 && c.active {
			out[c.name] = e.clock.Time(ns)
		}
	}
	return out
}

// SendUntil fences the op classes' load at the instant until (zero: no fence): an
// operation whose start comes at or after it is not sent, and its worker waits until the
// fence moves past the clock or the pool stops. A fleet node's lease sets it, so that a
// node whose process was paused past its lease (SIGSTOP, a stalled VM) sends nothing of
// the backlog the pause left on its schedule before it stops its load: the check is made
// by the worker after its wait, on the clock, whichever goroutine runs first after the
// pause. Backfill is not fenced.
func (e *Engine) SendUntil(until time.Time) {
	var f int64
	if !until.IsZero() {
		f = max(e.clock.Now()+int64(clock.Until(e.timer, until)), 1)
	}
	e.fence.Store(f)
}

// Stop stops the named op classes, or every class when none is named. Workers finish the
// operation in flight; Stop does not wait for them (Wait does).
func (e *Engine) Stop(classes ...string) error { return e.setStarted(false, classes, time.Time{}) }

func (e *Engine) setStarted(on bool, names []string, at time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("engine closed")
	}
	if len(names) == 0 {
		names = e.gen.Load().w.ClassNames()
	}
	cs := make([]*opClass, 0, len(names))
	for _, name := range names {
		c, err := e.class(name)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	var anchor int64
	if !at.IsZero() {
		anchor = e.clock.Now() + int64(clock.Until(e.timer, at))
	}
	for _, c := range cs {
		if on && !c.started {
			c.startAt = anchor
		}
		c.started = on
	}
	e.reconcile()
	return nil
}

// class returns the pool of the workload's class called name. Called with e.mu held.
func (e *Engine) class(name string) (*opClass, error) {
	if c := e.lookupClass(name); c != nil && e.gen.Load().class(name) != nil {
		return c, nil
	}
	return nil, fmt.Errorf("%w %q; the workload's classes: %s", ErrUnknownClass, name, strings.Join(e.gen.Load().w.ClassNames(), ", "))
}

// ErrUnknownClass is returned for an op class the workload does not have.
var ErrUnknownClass = errors.New("unknown op class")

// Running reports, per op class of the workload, whether it has running workers.
func (e *Engine) Running() map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.gen.Load()
	out := make(map[string]bool, len(g.classes))
	for i := range g.classes {
		name := g.classes[i].spec.Name
		c := e.lookupClass(name)
		out[name] = c != nil && len(c.workers) > 0
	}
	return out
}

// reconcile makes each pool match the current generation and start state: rates,
// worker counts and gauges. Called with e.mu held.
func (e *Engine) reconcile() {
	g := e.gen.Load()
	w := g.w
	for _, c := range e.classes {
		workers, most, rate := c.sizing(g)
		if most > workers && workers > 0 && (rate > 0 || c.shape != nil) {
			workers = min(workers+c.extra, most)
		} else {
			c.extra = 0
		}
		// A pool that is off has no schedule, so nothing falls due and no backlog builds
		// while it is stopped; a pool that starts re-anchors its schedule at now instead of
		// bursting through every slot that fell due while it was off. A rate change while
		// it runs keeps the operations already due (a stall must stay in the numbers).
		active := workers > 0
		if !active {
			rate = 0
		}
		if active && !c.active {
			c.runSeed = runSeed(w.Seed)
		}
		// A load shape set by SetShape replaces the configured rate while it is set.
		shape := pacer.ForRate(rate)
		if c.shape != nil && active {
			shape = c.shape
		}
		if !active && c.active {
			// Cancel the workers before the pacer's reset wakes them: woken first, they
			// would find the closed loop an idle pool's pacer holds and send unpaced
			// operations until they saw the cancellation.
			e.resize(c, 0)
		}
		switch {
		case active != c.active:
			c.pacer.ResetAt(shape, c.startAt)
			c.firstOp.Store(0)
		case rate != c.rate || c.shapeGen != c.installedGen:
			c.pacer.SetShape(shape)
		}
		c.rate, c.installedGen = rate, c.shapeGen
		c.paced.Store(shape != nil)
		c.active = active
		c.startAt = 0
		e.resize(c, workers)
		e.coll.SetTarget(c.series, rate, workers)
		if c.shape != nil && active {
			e.coll.SetTargetFunc(c.series, c.pacer.Rate)
		} else {
			e.coll.SetTargetFunc(c.series, nil)
		}
	}
}

// SetShape gives class's pool a load shape (a ramp, steps, a sine: see package pacer) in place
// of its configured rate, from now on; nil goes back to the configured rate. Operations
// already due under the old schedule keep their intended start times, as with any rate
// change. Auto-tune and scenarios drive the load through it.
func (e *Engine) SetShape(class string, shape pacer.Shape) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("set load shape: engine closed")
	}
	c, err := e.class(class)
	if err != nil {
		return err
	}
	c.shape = shape
	c.shapeGen++
	e.reconcile()
	return nil
}

// resize grows or shrinks a pool to n workers. A worker whose index is at or above the
// target exits after its operation in flight; a pacer wait is cut short within the
// pacer's recheck interval (20 ms).
func (e *Engine) resize(c *opClass, n int) {
	c.target.Store(int64(n))
	for len(c.workers) > n {
		last := len(c.workers) - 1
		c.workers[last].cancel()
		c.workers = c.workers[:last]
	}
	for id := len(c.workers); id < n; id++ {
		ctx, cancel := context.WithCancel(e.runCtx)
		w := &worker{cancel: cancel}
		c.workers = append(c.workers, w)
		seed := c.runSeed
		e.spawn(func() {
			defer cancel()
			if e.pipeliner != nil {
				e.workPipelined(ctx, c, w, id, seed)
			} else {
				e.work(ctx, c, w, id, seed)
			}
		})
	}
}

// spawn runs f as a counted worker goroutine.
func (e *Engine) spawn(f func()) {
	e.liveMu.Lock()
	if e.live == 0 {
		e.idle = make(chan struct{})
	}
	e.live++
	e.liveMu.Unlock()
	go func() {
		defer func() {
			e.liveMu.Lock()
			e.live--
			if e.live == 0 {
				close(e.idle)
			}
			e.liveMu.Unlock()
		}()
		f()
	}()
}

// Waiters returns how many timers of the engine's clock (Options.Clock) the engine holds
// when every goroutine it runs waits: one per background loop and one per worker. A test
// on a simulated clock moves time only when that many are pending (clock.Sim.StepTo), so
// that the engine has done all it had to at each instant before the next. A running
// backfill's goroutine waits for its range workers instead: add its workers less one.
func (e *Engine) Waiters() int {
	e.liveMu.Lock()
	defer e.liveMu.Unlock()
	return backgroundLoops + e.live
}

// backgroundLoops is how many loops New starts: the elastic check, the op-timeout
// watchdog and the value refresh, each waiting on one timer.
const backgroundLoops = 3

// Wait blocks until no worker goroutine is left (after Stop, or a finished backfill) or
// ctx ends.
func (e *Engine) Wait(ctx context.Context) error {
	e.liveMu.Lock()
	idle := e.idle
	e.liveMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops everything, cancels operations still in flight after grace, and waits for
// every goroutine. It does not close the driver.
func (e *Engine) Close(grace time.Duration) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for _, c := range e.classes {
		c.started = false
		e.resize(c, 0)
		e.coll.SetTarget(c.series, 0, 0)
		e.coll.SetBacklog(c.series, nil)
	}
	e.backfill.stop()
	e.mu.Unlock()
	e.cancelBg()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if e.Wait(ctx) != nil {
		// Operations still in flight after the grace period are cancelled.
		e.cancelRun()
		_ = e.Wait(context.Background())
	}
	e.cancelRun()
	e.bgWG.Wait()
	return nil
}

// watch runs the op-timeout watchdog. It runs until the hard-stop context ends (the last
// step of Close), so operations in flight during Close's grace period still time out.
func (e *Engine) watch() {
	defer e.bgWG.Done()
	t := e.timer.NewTimer(watchPeriod(e.gen.Load().w.OpTimeout, e.dog.count()))
	defer t.Stop()
	for {
		select {
		case <-e.runCtx.Done():
			return
		case <-t.C():
		}
		e.dog.scan()
		t.Reset(watchPeriod(e.gen.Load().w.OpTimeout, e.dog.count()))
	}
}

// refreshValues rebuilds the value pool periodically until the engine closes.
func (e *Engine) refreshValues() {
	defer e.bgWG.Done()
	t := e.timer.NewTimer(ValueRefreshInterval)
	defer t.Stop()
	for n := uint64(1); ; n++ {
		select {
		case <-e.bgCtx.Done():
			return
		case at := <-t.C():
			g := e.gen.Load()
			g.values.Refresh(g.seed + n)
			t.Reset(ValueRefreshInterval - clock.Since(e.timer, at))
		}
	}
}
