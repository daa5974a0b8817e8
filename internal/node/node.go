// Package node is one running ndbench node: a driver, the engine driving it, the
// configuration store every change goes through, and the statistics collector. It owns
// the whole lifecycle of a run: connecting the driver, applying the configuration,
// starting and stopping op classes, a backfill phase, closing, and the report input of
// what the session measured. Every command drives it, so there is one composition of
// driver, engine and collector (a fleet is a list of them), and one sequence of a run's
// steps, Run (run.go), which `ndbench run`, `serve --start`, scenarios and auto-tune drive;
// the REST API, the web UI and the fleet agent take its load step through StartLoad.
// Controllers hold a node as control.Node.
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
	"log/slog"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// ErrNotInitialized is returned by actions that need a connected driver (the one error
// of the node interface, control.ErrNotInitialized).
var ErrNotInitialized = control.ErrNotInitialized

// ErrAlreadyInitialized is returned by Init while a driver is connected.
var ErrAlreadyInitialized = errors.New("a driver is already initialized: shut it down first")

// Node is one ndbench node. Its methods are safe for concurrent use.
type Node struct {
	store     *config.Store
	coll      *stats.Collector
	intervals *stats.IntervalLog
	log       *slog.Logger
	clk       clock.Clock // the engine's, the collector's and the warm-up's time

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
	fence     time.Time // the load's fence (SendUntil), given to each new engine
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

// New returns an instance on store, with no driver connected. Close releases it.
func New(store *config.Store, log *slog.Logger) *Node { return NewOn(store, log, clock.Real) }

// Clock is the clock the node's load, intervals and warm-up run on (NewOn's): a run's
// steps (Run) and auto-tune's windows time themselves on it.
func (n *Node) Clock() clock.Clock { return n.clk }

// NewOn is New on the clock c (nil: clock.Real): the engine's schedules, the collector's
// 1 s intervals and the warm-up all run on it, so a test on a simulated clock (clock.Sim)
// drives a whole node in simulated time.
func NewOn(store *config.Store, log *slog.Logger, c clock.Clock) *Node {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c = clock.Or(c)
	i := &Node{store: store, coll: stats.NewCollector(stats.Config{Clock: c}), log: log, clk: c, created: c.Now(), usage0: report.ReadUsage()}
	i.intervals = stats.NewIntervalLog(i.coll, IntervalsKept, IntervalsIdle)
	i.startTicks()
	i.unsub = store.Subscribe(i.onConfig)
	i.unrequire = store.Require(i.requireApplicable)
	return i
}

// Collector returns the statistics collector; it outlives driver re-initializations, so
// the time series covers the instance's whole life.
func (i *Node) Collector() *stats.Collector { return i.coll }

// Config returns the current configuration snapshot.
func (i *Node) Config() *config.Snapshot { return i.store.Current() }

// Store returns the configuration store, for sources that feed it (file, etcd).
func (i *Node) Store() *config.Store { return i.store }

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

func (i *Node) engine() (*engine.Engine, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.eng == nil {
		return nil, ErrNotInitialized
	}
	return i.eng, nil
}

// SendUntil fences the node's load at until (zero: none), as engine.Engine.SendUntil:
// no operation of an op class starts at or after it. A fleet agent sets it to its
// lease's end, so a node paused past its lease sends nothing before it stops. The fence
// holds for the engines of later driver sessions too.
func (i *Node) SendUntil(until time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.fence = until
	if i.eng != nil {
		i.eng.SendUntil(until)
	}
}

// A node is driven through the one interface every controller holds.
var _ control.Node = (*Node)(nil)
