// Package node is one running ndbench node: a driver, the engine driving it, the
// configuration store every change goes through, and the statistics collector. It owns
// the whole lifecycle of a run: connecting the driver, applying the configuration,
// starting and stopping op classes, a backfill phase, closing, and the report input of
// what the session measured. `ndbench run` and `ndbench serve` (through the REST API and
// the web UI) both drive it, so there is one composition of driver, engine and collector;
// a fleet is a list of them.
//
// Configuration is the single source of truth: a change from the API, a watched file or
// etcd lands in the config store, is validated as a whole, and only then reaches the
// engine (workload) and the driver (live options). Options that cannot change while the
// driver is connected are kept and reported as pending until the next Init.
//
// Live driver options are applied by a goroutine per driver session, outside every lock:
// a driver's Reconfigure may take seconds (reconnecting, switching endpoints), and status,
// config reads and other changes must not wait for it. Reconfigurations run one at a time
// in config order; one queued behind a running one is replaced by a later change, so the
// driver goes straight to the newest options.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// ErrNotInitialized is returned by actions that need a connected driver.
var ErrNotInitialized = errors.New("no driver is initialized: init one first")

// ErrAlreadyInitialized is returned by Init while a driver is connected.
var ErrAlreadyInitialized = errors.New("a driver is already initialized: shut it down first")

// Node is one ndbench node. Its methods are safe for concurrent use.
type Node struct {
	store     *config.Store
	coll      *stats.Collector
	intervals *stats.IntervalLog
	log       *slog.Logger

	created time.Time    // the span a report covers before the first Init starts here
	usage0  report.Usage // the process's CPU usage at created

	// ticks guards stopTicks and ticking: Init restarts the ticker, Finish ends it.
	ticks     sync.Mutex
	stopTicks context.CancelFunc
	ticking   chan struct{}
	finished  time.Time // when Finish closed the last interval; zero before
	unsub     func()

	// life serialises Init, Shutdown and Close. It is never taken by onConfig, which runs
	// under the config store's lock: lock order is life, then the store, then mu.
	life sync.Mutex
	// mu guards the fields below. It is never held across a call into the store, nor
	// across a driver's Reconfigure.
	mu        sync.Mutex
	drv       driver.Driver
	drvName   string
	drvInit   any // options the driver was initialised with
	drvOpts   any // options the driver runs with: drvInit with the live options last applied
	reconf    *reconfigurer
	eng       *engine.Engine
	started   time.Time
	pending   []string // keys whose configured value differs from what the driver runs with until the next Init
	lastErr   *ErrorEvent
	unrequire func()
	session   Session // the current or last driver session
	// warmGen counts warm-ups begun and cancelled: a warm-up's timer measures only if it
	// is still the latest; warmUntil is when the current one ends (zero: none).
	warmGen   uint64
	warmUntil time.Time
}

// ErrorEvent is the last error the instance met outside a request (a config change from a
// watched source that could not be applied, a driver reconfiguration that failed).
type ErrorEvent struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// New returns an instance on store, with no driver connected. Close releases it.
func New(store *config.Store, log *slog.Logger) *Node {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	i := &Node{store: store, coll: stats.NewCollector(stats.Config{}), log: log, created: time.Now(), usage0: report.ReadUsage()}
	i.intervals = stats.NewIntervalLog(i.coll, IntervalsKept, IntervalsIdle)
	i.startTicks()
	i.unsub = store.Subscribe(i.onConfig)
	i.unrequire = store.Require(i.requireApplicable)
	return i
}

// requireConnectedOptions is a store requirement: while driver.name selects another
// driver than the connected one (a change pending until the next Init), the connected
// driver's options must still be valid, because it takes live changes from them. The
// store's own validation covers the selected driver.
func (i *Node) requireConnectedOptions(next *config.Snapshot) error {
	i.mu.Lock()
	name := i.drvName
	i.mu.Unlock()
	if name == "" || name == next.Config.DriverName {
		return nil
	}
	_, err := next.DriverOptions(name)
	return err
}

// startTicks starts the collector's 1 s ticks from now.
func (i *Node) startTicks() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); i.coll.Run(ctx) }()
	i.stopTicks, i.ticking = cancel, done
}

// Session is one driver session: from a driver's Init to its shutdown (results stay
// readable after it until the next Init).
type Session struct {
	Driver string
	// Started is the Init: the session's time series starts here.
	Started time.Time
	// Measured is when the span the figures cover began: Started, or later when a
	// backfill phase (Backfill) or a warm-up (StartMeasuring) was left out of them.
	Measured time.Time
	// Usage is the process's CPU usage at Measured, so a report's ops per CPU-second
	// count the measured span's CPU only.
	Usage report.Usage
	// Warmup is how long the load ran unmeasured before Measured (StartMeasuring).
	Warmup time.Duration
	// Phases are the phases that ended before Measured, oldest first: "backfill" (Backfill)
	// and "warmup" (StartMeasuring), each with what it measured.
	Phases []report.Phase
	// Clock is the engine's clock, read for its source when a report is built.
	Clock pacer.Clock
}

// Session returns the current or last driver session; zero before the first Init.
func (i *Node) Session() Session {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.session
}

// IntervalsKept is how many encoded 1 s intervals a node keeps for readers (5 minutes).
const IntervalsKept = 300

// IntervalsIdle is how long the node keeps encoding intervals after the last read.
const IntervalsIdle = 5 * time.Minute

// Intervals returns the encoded 1 s intervals from seq on (see stats.IntervalLog).
func (i *Node) Intervals(seq uint64) stats.IntervalsPage { return i.intervals.Since(seq) }

// Collector returns the statistics collector; it outlives driver re-initializations, so
// the time series covers the instance's whole life.
func (i *Node) Collector() *stats.Collector { return i.coll }

// Config returns the current configuration snapshot.
func (i *Node) Config() *config.Snapshot { return i.store.Current() }

// Store returns the configuration store, for sources that feed it (file, etcd).
func (i *Node) Store() *config.Store { return i.store }

// Init connects driver name with the configured options overlaid by opts (option name to
// value). The options are validated before anything happens; on success they are written
// into the runtime config layer, with driver.name, so status and config listings show
// them and no other source (a watched file, etcd) switches the driver under the API.
// opts are untrusted, as Patch's values are: refused before anything connects when they
// reach beyond the store without the operator's config.Allow.
func (i *Node) Init(ctx context.Context, name string, opts map[string]string) error {
	return i.init(ctx, name, opts, true)
}

// InitConfigured connects the driver the configuration selects, with its configured
// options, and writes nothing into the configuration: what a command that runs the
// workload it was given (`ndbench run`) does, so every value keeps the source the user
// gave it, in the effective config and in the report.
func (i *Node) InitConfigured(ctx context.Context) error {
	return i.init(ctx, i.store.Current().Config.DriverName, nil, false)
}

// init is Init; pin says whether driver.name and opts go into the runtime layer.
func (i *Node) init(ctx context.Context, name string, opts map[string]string, pin bool) error {
	i.life.Lock()
	defer i.life.Unlock()
	i.mu.Lock()
	busy := i.drv != nil
	i.mu.Unlock()
	if busy {
		return ErrAlreadyInitialized
	}
	def, ok := driver.Lookup(name)
	if !ok {
		return driver.UnknownDriverError(name)
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		return err
	}
	// Options given by alias or in another case replace the configured value of the same
	// option rather than sitting beside it, where either could win.
	canon := make(map[string]string, len(opts))
	// A composition's children may come with its options as REF.OPTION (redis@replica.addrs):
	// they are configured under drivers.REF.OPTION like the composition's own.
	_, composes := def.NewOptions().(driver.Composer)
	children := map[string]string{}
	for k, v := range opts {
		if c, ok := driver.Canonical(schema, k); ok {
			k = c
		} else if ref, opt, ok := strings.Cut(k, "."); ok && composes {
			children["drivers."+ref+"."+opt] = v
			continue
		}
		canon[k] = v
	}
	opts = canon
	values := maps.Clone(i.store.Current().Config.Drivers[name])
	if values == nil {
		values = map[string]string{}
	}
	maps.Copy(values, opts)
	decoded, err := driver.NewOptions(name, values)
	if err != nil {
		return err
	}
	patch := map[string]string{}
	if pin {
		patch["driver.name"] = name
	}
	for k, v := range opts {
		patch["drivers."+name+"."+k] = v
	}
	maps.Copy(patch, children)
	// Validate the whole config with the change before connecting, so a failed Init
	// leaves nothing behind and a successful one cannot be rejected afterwards.
	next := i.store.Current()
	if len(patch) > 0 {
		if next, err = i.store.PreviewFrom(config.LayerRuntime, config.OriginAPI, patch); err != nil {
			return err
		}
	}
	// A composition's children are configured under their own drivers.<ref>.* keys.
	if err := next.ComposeChildren(name, decoded); err != nil {
		return err
	}
	d := def.New()
	if err := d.Init(ctx, decoded); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	if err := i.measure(name, d); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	if err := i.fitsConnected(d, def, next); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	i.mu.Lock()
	i.drv, i.drvName, i.drvInit, i.drvOpts, i.pending = d, name, decoded, decoded, nil
	if r, ok := d.(driver.Reconfigurer); ok {
		i.reconf = i.startReconfigurer(r, name, decoded)
	}
	i.mu.Unlock()
	snap, err := i.store.Current(), error(nil)
	if len(patch) > 0 {
		snap, err = i.store.PatchFrom(config.LayerRuntime, config.OriginAPI, patch)
	}
	if err == nil {
		i.mu.Lock()
		if i.reconf != nil && i.reconf.status.AppliedVersion == 0 {
			// The driver runs with the options of the version that recorded them.
			i.reconf.status.AppliedVersion = snap.Version
		}
		i.mu.Unlock()
		var e *engine.Engine
		def, _ := driver.Lookup(name)
		if e, err = engine.New(d, snap.Config.Workload, engine.Options{Collector: i.coll, Logger: i.log, Operations: def.Operations}); err == nil {
			i.mu.Lock()
			i.eng, i.started = e, time.Now()
			// A change that landed between the patch and now found no engine to apply to.
			if cur := i.store.Current(); cur.Version != snap.Version {
				err = e.Apply(cur.Config.Workload)
			}
			i.mu.Unlock()
			if err != nil {
				i.closeDriver()
				return err
			}
			// A driver session's results are its own: the cumulative view, the report and
			// the UI's totals start afresh, so a second session never shows the first one's
			// counts under its driver's name. Its 1 s intervals start with it too, so a
			// run's first interval is a whole second.
			i.ticks.Lock()
			if i.finished.IsZero() {
				i.stopTicks()
				<-i.ticking
				i.coll.Reset()
				i.startTicks()
			}
			i.ticks.Unlock()
			start := i.coll.SpanStart()
			i.mu.Lock()
			i.session = Session{Driver: name, Started: start, Measured: start, Usage: report.ReadUsage(), Clock: e.Clock()}
			i.mu.Unlock()
			i.log.Info("driver initialized", "driver", name)
			return nil
		}
	}
	i.closeDriver()
	return err
}

// Shutdown stops all load, waits for operations in flight (up to the op timeout, at most
// closeGrace, then cancels them) and disconnects the driver.
func (i *Node) Shutdown() error {
	i.life.Lock()
	defer i.life.Unlock()
	i.mu.Lock()
	none := i.drv == nil
	i.mu.Unlock()
	if none {
		return ErrNotInitialized
	}
	i.closeDriver()
	return nil
}

// closeGrace is the longest a shutdown (Shutdown, Close: a SIGTERM) lets operations in
// flight finish before it cancels them. A shutdown waited for the op timeout and a second,
// and a SIGTERM could wait an hour on a long workload.opTimeout and a store that does not
// answer; Drain, which a final report needs, still waits the whole op timeout, so the
// figures count every operation started.
const closeGrace = 2 * time.Second

// closeDriver detaches the engine and driver and closes them outside mu, so status calls
// do not wait for operations in flight. Called with life held.
func (i *Node) closeDriver() {
	i.mu.Lock()
	e, d, name, r := i.eng, i.drv, i.drvName, i.reconf
	i.drv, i.eng, i.drvName, i.drvInit, i.drvOpts, i.reconf, i.pending = nil, nil, "", nil, nil, nil, nil
	i.warmGen++
	i.warmUntil = time.Time{}
	i.mu.Unlock()
	if r != nil {
		// A reconfiguration in flight is cancelled and waited for: the driver is not
		// closed under it.
		r.stop()
	}
	if e != nil {
		_ = e.Close(min(i.store.Current().Config.Workload.OpTimeout, closeGrace))
	}
	if d != nil {
		if err := d.Close(); err != nil {
			i.log.Warn("close driver", "driver", name, "err", err)
		}
	}
}

// Close shuts the driver down (if any) and stops the collector (Finish).
func (i *Node) Close() error {
	i.unsub()
	i.unrequire()
	i.life.Lock()
	i.closeDriver()
	i.life.Unlock()
	i.Finish()
	return nil
}

// Drain stops all load (reads, writes and a backfill) and waits, up to the op timeout and
// a second, for the operations in flight, so that figures taken next count every
// operation started. The driver stays connected: its connection info and counters are
// still there to report.
func (i *Node) Drain() error {
	e, err := i.engine()
	if err != nil {
		return err
	}
	if err := e.Stop(); err != nil {
		return err
	}
	e.StopBackfill()
	ctx, cancel := context.WithTimeout(context.Background(), i.store.Current().Config.Workload.OpTimeout+time.Second)
	defer cancel()
	if err := e.Wait(ctx); err != nil {
		return fmt.Errorf("wait for operations in flight: %w", err)
	}
	return nil
}

// Finish ends the time series: it stops the 1 s ticks and closes the last, partial
// interval now, so a report built next counts everything recorded and ends where the run
// did. The collector's views stay readable; later calls do nothing (Close calls it).
func (i *Node) Finish() {
	i.ticks.Lock()
	defer i.ticks.Unlock()
	if !i.finished.IsZero() {
		return
	}
	i.stopTicks()
	<-i.ticking
	i.intervals.Close()
	now := time.Now()
	i.coll.Tick(now)
	i.finished = now
}

// StartMeasuring starts the span the figures cover now: what ran before stays in the time
// series but not in the summary, the report or the UI's totals. warmup is how long load
// ran before, reported as the warm-up (0 when the restart is not one).
func (i *Node) StartMeasuring(warmup time.Duration) {
	name := ""
	if warmup > 0 {
		name = "warmup"
	}
	i.endPhase(name)
	i.mu.Lock()
	i.session.Warmup = warmup
	i.mu.Unlock()
}

// endPhase closes the current interval and starts a new cumulative span now, recording its
// start in the session. The span that ended is kept as a phase of the session under name
// ("" keeps nothing).
func (i *Node) endPhase(name string) {
	now := time.Now()
	i.coll.Tick(now)
	ended, errs := i.coll.Cumulative(), i.coll.Errors()
	i.coll.Reset()
	start, usage := i.coll.SpanStart(), report.ReadUsage()
	i.mu.Lock()
	defer i.mu.Unlock()
	if name != "" {
		p := report.Phase{Name: name, Started: i.session.Measured, Ended: now, Ops: map[string]stats.OpSummary{}}
		p.Seconds = p.Ended.Sub(p.Started).Seconds()
		// The classes that ran, and always the one the phase is named after, whose
		// figures the report shows as that class's.
		for op, s := range ended.Ops {
			if s.Count+s.Errors > 0 || op == name {
				p.Ops[op] = s
				if len(errs[op]) > 0 {
					if p.Errors == nil {
						p.Errors = map[string][]stats.ErrorMessage{}
					}
					p.Errors[op] = errs[op]
				}
			}
		}
		i.session.Phases = append(i.session.Phases, p)
	}
	i.session.Measured, i.session.Usage = start, usage
}

// Start starts the named op classes (none given: every class of the workload).
func (i *Node) Start(classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.Start(classes...)
}

// StartAt is Start with the first operations due at the instant at (see
// engine.Engine.StartAt): a fleet starts its nodes together this way.
func (i *Node) StartAt(at time.Time, classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.StartAt(at, classes...)
}

// SetShape gives class a load shape in place of its configured rate (nil: back to the
// rate), as engine.Engine.SetShape: auto-tune and scenarios drive the load through it.
func (i *Node) SetShape(class string, shape pacer.Shape) error {
	if err := i.checkClasses([]string{class}); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.SetShape(class, shape)
}

// Stop stops the named op classes (none given: every class). Once nothing runs, a
// warm-up in progress is cancelled.
func (i *Node) Stop(classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	if err := e.Stop(classes...); err != nil {
		return err
	}
	if !slices.Contains(slices.Collect(maps.Values(e.Running())), true) {
		i.mu.Lock()
		i.warmGen++
		i.warmUntil = time.Time{}
		i.mu.Unlock()
	}
	return nil
}

// StartLoad is Start as a user asks for it (the API, the UI, NDBench's routes, a fleet's
// nodes): when no class was running, the figures start workload.warmup later, as with
// `ndbench run --warmup` (see WarmUp).
func (i *Node) StartLoad(classes ...string) error {
	idle := !slices.Contains(slices.Collect(maps.Values(i.Status().Running)), true)
	if err := i.Start(classes...); err != nil {
		return err
	}
	if idle {
		i.WarmUp(i.store.Current().Config.Workload.Warmup)
	}
	return nil
}

// WarmUp makes the figures start d from now: the load that runs meanwhile stays in the
// time series but not in the summary, the reports or the UI's totals (StartMeasuring at
// its end). Stopping every class, shutting the driver down or another WarmUp before then
// cancels it; d ≤ 0 only cancels.
func (i *Node) WarmUp(d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.warmGen++
	i.warmUntil = time.Time{}
	if d <= 0 {
		return
	}
	gen := i.warmGen
	i.warmUntil = time.Now().Add(d)
	time.AfterFunc(d, func() {
		i.mu.Lock()
		current := i.warmGen == gen && i.eng != nil
		if current {
			i.warmUntil = time.Time{}
		}
		i.mu.Unlock()
		if current {
			i.StartMeasuring(d)
		}
	})
}

// checkClasses rejects a class the configured workload does not have, also before a
// driver is initialized: a typo is the user's error whatever the node's state. The error
// names the field "ops", as the API's request body and NDBench's routes call it.
func (i *Node) checkClasses(classes []string) error {
	w := i.store.Current().Config.Workload
	var errs driver.FieldErrors
	for _, c := range classes {
		if _, ok := w.Class(c); !ok {
			errs = append(errs, &driver.FieldError{Field: "ops", Value: c,
				Allowed: "op classes of the workload: " + strings.Join(w.ClassNames(), ", ")})
		}
	}
	if errs != nil {
		return errs
	}
	return nil
}

// StartBackfill starts a backfill with the configured workers, rate and verify setting,
// each overridable (zero values keep the configuration). It runs beside the load and is
// measured with it; Backfill runs one as a phase of its own.
func (i *Node) StartBackfill(opts engine.BackfillOptions) error {
	e, opts, err := i.backfillEngine(opts)
	if err != nil {
		return err
	}
	return e.StartBackfill(opts)
}

// Backfill runs a backfill as a phase of its own (options as in StartBackfill) and waits
// for it to end, or for ctx, which stops it. The phase's figures are then set aside (a
// report shows them under "backfill" as they were when it ended) and the measured span
// restarts, so load started next is measured on its own. The status is the backfill's;
// the error is the engine's, ctx's cause when ctx stopped it.
func (i *Node) Backfill(ctx context.Context, opts engine.BackfillOptions) (engine.BackfillStatus, error) {
	e, opts, err := i.backfillEngine(opts)
	if err != nil {
		return engine.BackfillStatus{}, err
	}
	st, err := e.Backfill(ctx, opts)
	if err != nil && ctx.Err() == nil && !errors.Is(err, engine.ErrBackfillStopped) {
		return st, err // it did not run: there is no phase to set aside
	}
	i.endPhase("backfill")
	return st, err
}

// backfillEngine returns the engine and opts with the configuration's defaults filled in.
// More workers than configured need more memory than the workload was validated with, so
// the budget is checked for them as well.
func (i *Node) backfillEngine(opts engine.BackfillOptions) (*engine.Engine, engine.BackfillOptions, error) {
	e, err := i.engine()
	if err != nil {
		return nil, opts, err
	}
	opts = i.backfillDefaults(opts)
	w := i.store.Current().Config.Workload
	// What a request sets beyond the configuration is held to the one validator too: more
	// workers need memory, and a rate past the bound the pacer honours is refused as
	// workload.backfillRate would be.
	if opts.Workers > w.BackfillWorkers || opts.Rate != w.BackfillRate {
		w.BackfillWorkers = max(w.BackfillWorkers, opts.Workers)
		w.BackfillRate = opts.Rate
		if err := w.Validate(); err != nil {
			return nil, opts, err
		}
	}
	return e, opts, nil
}

// BackfillStatus returns the backfill's progress (zero without a driver): what a display
// polls, without the driver calls Status makes.
func (i *Node) BackfillStatus() engine.BackfillStatus {
	e, err := i.engine()
	if err != nil {
		return engine.BackfillStatus{}
	}
	return e.BackfillStatus()
}

// backfillDefaults fills the zero values of opts from the configuration.
func (i *Node) backfillDefaults(opts engine.BackfillOptions) engine.BackfillOptions {
	w := i.store.Current().Config.Workload
	if opts.Workers == 0 {
		opts.Workers = w.BackfillWorkers
	}
	if opts.Rate == 0 {
		opts.Rate = w.BackfillRate
	}
	opts.Verify = opts.Verify || w.BackfillVerify
	return opts
}

// StopBackfill stops a running backfill.
func (i *Node) StopBackfill() error {
	e, err := i.engine()
	if err != nil {
		return err
	}
	e.StopBackfill()
	return nil
}

func (i *Node) engine() (*engine.Engine, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.eng == nil {
		return nil, ErrNotInitialized
	}
	return i.eng, nil
}

// Read reads one key through the driver, for debugging, bounded by the op timeout.
func (i *Node) Read(ctx context.Context, key string) ([]byte, error) {
	d, timeout, err := i.driverForOp()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return d.Read(ctx, key)
}

// Write writes one key through the driver, for debugging, bounded by the op timeout.
func (i *Node) Write(ctx context.Context, key string, value []byte) error {
	d, timeout, err := i.driverForOp()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return d.Write(ctx, key, value)
}

func (i *Node) driverForOp() (driver.Driver, time.Duration, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.drv == nil {
		return nil, 0, ErrNotInitialized
	}
	return i.drv, i.store.Current().Config.Workload.OpTimeout, nil
}

// PatchResult says what a configuration change did.
type PatchResult struct {
	Snapshot *config.Snapshot
	// Pending lists changed keys that take effect at the next driver Init (options that
	// are not live, or another driver.name).
	Pending []string
}

// Patch changes configuration values in the runtime layer (the API's and UI's layer,
// above file, env and etcd). The whole configuration is validated first: an invalid
// change applies nothing and returns field errors. The change is untrusted
// (config.OriginAPI): what it sets beyond the store must pass the store's config.Allow.
func (i *Node) Patch(values map[string]string) (PatchResult, error) {
	snap, err := i.store.PatchFrom(config.LayerRuntime, config.OriginAPI, values)
	if err != nil {
		return PatchResult{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return PatchResult{Snapshot: snap, Pending: slices.Clone(i.pending)}, nil
}

// onConfig applies every accepted configuration change, whatever its source, to the
// engine and the driver. It runs under the store's lock, so it only does what is quick:
// the engine's Apply, and queueing live driver options for the reconfigurer.
func (i *Node) onConfig(_, new *config.Snapshot, changed []string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.drv == nil {
		return
	}
	if i.eng != nil && slices.ContainsFunc(changed, func(k string) bool { return strings.HasPrefix(k, "workload.") }) {
		// The store validated the workload with the validator the engine uses, so this
		// cannot fail on the workload itself; an error here is a bug worth reporting.
		if err := i.eng.Apply(new.Config.Workload); err != nil {
			i.recordErr(fmt.Errorf("apply workload: %w", err))
		}
	}
	i.syncDriver(new)
}

// syncDriver brings the connected driver's state in line with snap: pending lists every
// key whose configured value the driver cannot take before the next Init (computed afresh,
// so a key set back to the running value leaves it), and live options that changed are
// queued for Reconfigure. Called with mu held.
func (i *Node) syncDriver(snap *config.Snapshot) {
	var pending []string
	if snap.Config.DriverName != i.drvName {
		pending = append(pending, "driver.name")
	}
	// The store checked these options (Build for the selected driver, the requirement
	// otherwise), so this only fails if that check was bypassed.
	newOpts, err := snap.DriverOptions(i.drvName)
	if err != nil {
		i.recordErr(err)
		i.pending = pending
		return
	}
	prefix := "drivers." + i.drvName + "."
	live, restart := driver.Changed(i.drvInit, newOpts)
	for _, o := range restart {
		pending = append(pending, prefix+o)
	}
	// A composition's children take their options at Init only.
	pending = append(pending, changedChildren(i.drvInit, newOpts)...)
	target := liveOnly(i.drvInit, newOpts, live)
	// Live options wait for the next Init when the driver cannot reconfigure, or when
	// they only make sense with options that need a restart (memcached's localZone
	// naming a zone that is not connected yet). Then the driver keeps what it has, and
	// the live options that differ from that are pending.
	if len(live) > 0 && (i.reconf == nil || driver.Validate(target) != nil) {
		cur := i.drvOpts
		if i.reconf != nil {
			cur = i.reconf.want
		}
		differ, _ := driver.Changed(cur, target)
		for _, o := range differ {
			pending = append(pending, prefix+o)
		}
		slices.Sort(pending)
		i.pending = pending
		return
	}
	slices.Sort(pending)
	i.pending = pending
	if i.reconf != nil {
		i.reconf.queue(target, snap.Version)
	}
}

// measure gives a driver that measures things of its own (driver.Measurer) a series for
// each, registered like an op class so that every output shows it.
func (i *Node) measure(drvName string, d driver.Driver) error {
	m, ok := d.(driver.Measurer)
	if !ok {
		return nil
	}
	names := m.Measures()
	sinks := make([]driver.Sink, len(names))
	def, _ := driver.Lookup(drvName)
	for k, name := range names {
		if !slices.Contains(def.Series, name) {
			return fmt.Errorf("the driver measures series %s, which its definition does not declare (Definition.Series: %v)", name, def.Series)
		}
		op, err := i.coll.Register(name)
		if err != nil {
			return fmt.Errorf("register the driver's series %s: %w", name, err)
		}
		sinks[k] = i.coll.Recorder(op).Sink()
	}
	m.SetSinks(sinks)
	return nil
}

// changedChildren lists the drivers.<ref>.<option> keys whose value differs between the
// children of two options of a composition (none when they are not one, or when the set
// of children changed, which is an option of the composition itself).
func changedChildren(cur, next any) []string {
	c, ok := cur.(driver.Composer)
	n, ok2 := next.(driver.Composer)
	if !ok || !ok2 || !slices.Equal(c.Children(), n.Children()) {
		return nil
	}
	var out []string
	for _, ref := range c.Children() {
		co, no := c.Child(ref), n.Child(ref)
		if co == nil || no == nil {
			continue
		}
		live, restart := driver.Changed(co, no)
		for _, o := range append(live, restart...) {
			out = append(out, "drivers."+ref+"."+o)
		}
		out = append(out, changedChildren(co, no)...)
	}
	return out
}

// liveOnly returns a copy of the current options with only the live options taken from
// next, so Reconfigure never sees a change to an option that needs a restart.
func liveOnly(cur, next any, live []string) any {
	def := driver.Values(cur, false)
	nv := driver.Values(next, false)
	for _, o := range live {
		def[o] = nv[o]
	}
	// Both come from the same schema, so Set cannot fail on these values.
	out := cloneOptions(cur)
	_ = driver.Set(out, def)
	return out
}

// cloneOptions returns a copy of an options struct (a pointer to it).
func cloneOptions(opts any) any {
	v := reflect.ValueOf(opts).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return c.Interface()
}

func (i *Node) recordErr(err error) {
	// Errors come from drivers and sources too (a reconfigure that echoes a DSN, an etcd
	// endpoint): what is shown and logged goes through the one redaction.
	msg := driver.Shown(false, err.Error())
	i.lastErr = &ErrorEvent{Time: time.Now(), Message: msg}
	i.log.Error("configuration change not applied", "err", msg)
}

// Status is what the instance is doing.
type Status struct {
	Driver         string            `json:"driver"` // "" when none is initialized
	Initialized    bool              `json:"initialized"`
	Since          time.Time         `json:"since,omitzero"`
	ConnectionInfo map[string]string `json:"connectionInfo,omitempty"`
	DriverStats    map[string]int64  `json:"driverStats,omitempty"`
	ReadsRunning   bool              `json:"readsRunning"`
	WritesRunning  bool              `json:"writesRunning"`
	// Running has every op class of the workload (read, write and the others) and whether
	// it has running workers; empty before a driver is initialized.
	Running       map[string]bool        `json:"running"`
	Backfill      *engine.BackfillStatus `json:"backfill,omitempty"`
	ConfigVersion uint64                 `json:"configVersion"`
	Pending       []string               `json:"pending"`
	Reconfigure   *ReconfigureStatus     `json:"reconfigure,omitempty"`
	LastError     *ErrorEvent            `json:"lastError,omitempty"`
	DriverPanics  int64                  `json:"driverPanics"`
	// FirstOps has, per op class running, when its first operation since it started
	// began: a fleet compares them with the common start instant.
	FirstOps map[string]time.Time `json:"firstOps,omitempty"`
	// WarmingUpUntil is when the warm-up of the load's start ends (workload.warmup): the
	// figures exclude what runs before it. Absent when none is in progress.
	WarmingUpUntil time.Time `json:"warmingUpUntil,omitzero"`
}

// Status returns what the instance is doing now.
func (i *Node) Status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	s := Status{ConfigVersion: i.store.Current().Version, Pending: slices.Clone(i.pending), LastError: i.lastErr, Running: map[string]bool{}}
	if s.Pending == nil {
		s.Pending = []string{}
	}
	if i.drv == nil {
		return s
	}
	s.Driver, s.Initialized, s.Since = i.drvName, true, i.started
	s.WarmingUpUntil = i.warmUntil
	if i.reconf != nil {
		rs := i.reconf.status
		s.Reconfigure = &rs
	}
	if ci, ok := i.drv.(driver.ConnectionInfoer); ok {
		s.ConnectionInfo = ci.ConnectionInfo()
	}
	if sr, ok := i.drv.(driver.StatsReporter); ok {
		s.DriverStats = sr.DriverStats()
	}
	if i.eng != nil {
		s.Running = i.eng.Running()
		s.ReadsRunning, s.WritesRunning = s.Running[config.ClassRead], s.Running[config.ClassWrite]
		b := i.eng.BackfillStatus()
		s.Backfill = &b
		s.DriverPanics = i.eng.DriverPanics()
		if f := i.eng.FirstOps(); len(f) > 0 {
			s.FirstOps = f
		}
	}
	return s
}

// RecordError lets a configuration source (watched file, etcd) report a change it could
// not apply, so it shows in Status.
func (i *Node) RecordError(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.recordErr(err)
}

// ReportInput gathers what the report of the current or last driver session needs, as of
// now: its figures since the measured span began, its time series since Init, what the
// driver says about itself, and the configuration. Before the first Init it covers the
// instance's life. `ndbench run`, `ndbench serve --report` and GET /api/v1/report all
// build their reports from it.
//
// The report never covers earlier sessions: their counts are not the current driver's.
func (i *Node) ReportInput(version string) report.Input {
	st := i.Status()
	i.mu.Lock()
	sess := i.session
	i.mu.Unlock()
	i.ticks.Lock()
	ended := i.finished
	i.ticks.Unlock()
	if ended.IsZero() {
		ended = time.Now()
	}
	started, seriesFrom, usage0, driverName := i.created, i.created, i.usage0, st.Driver
	if !sess.Started.IsZero() {
		started, seriesFrom, usage0 = sess.Measured, sess.Started, sess.Usage
		if driverName == "" {
			driverName = sess.Driver // shut down since: the report is still its session's
		}
	}
	in := report.Input{
		ToolVersion: version,
		Started:     started,
		Ended:       ended,
		DriverName:  driverName,
		Panics:      st.DriverPanics,
		Cumulative:  i.coll.Cumulative(),
		Series:      i.coll.SeriesSince(seriesFrom),
		Backfill:    ranBackfill(st),
		Errors:      i.coll.Errors(),
		Snapshot:    i.store.Current(),
		UsageStart:  usage0,
		UsageEnd:    report.ReadUsage(),
		DriverInfo:  st.ConnectionInfo,
		DriverStats: st.DriverStats,
		Warmup:      sess.Warmup,
	}
	if len(sess.Phases) > 0 {
		in.Phases, in.Phase = slices.Clone(sess.Phases), "load"
	}
	if !sess.Started.IsZero() {
		in.Clock = sess.Clock.Source()
	}
	return in
}

// ranBackfill returns the backfill status for the report when a backfill ran.
func ranBackfill(st Status) *engine.BackfillStatus {
	if st.Backfill == nil || st.Backfill.Phase == "idle" || st.Backfill.Phase == "" {
		return nil
	}
	return st.Backfill
}
