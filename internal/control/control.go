// Package control is the one interface through which a node is driven, and the types it
// speaks. A node (*node.Node) and a fleet seen as one node (cluster.Fleet) implement it;
// the REST API, NDBench's routes, scenarios, auto-tune, the fleet agent and the run
// sequence (node.Run) hold it. It lives apart from package node so that what drives a
// node, a fleet above all, depends on the contract and not on the node's implementation.
//
// The interface is made of named capabilities, each a small interface of its own, so a
// function can ask for only what it uses; none of them is optional: a type that drives
// as a node does all of it.
package control

import (
	"context"
	"errors"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// ErrNotInitialized is returned by actions that need a connected driver.
var ErrNotInitialized = errors.New("no driver is initialized: init one first")

// ClockOf returns the clock n runs on: its own when it has one (a node's, a fleet's,
// whose instants are its coordinator's), else real time. A run (node.Run) or a search
// (autotune.NodeProber) on n times itself on it, so that a node or a fleet on a
// simulated clock is driven on that clock.
func ClockOf(n Node) clock.Clock {
	if c, ok := n.(interface{ Clock() clock.Clock }); ok {
		return clock.Or(c.Clock())
	}
	return clock.Real
}

// Node is a node, or a fleet seen as one, with every capability a controller uses.
type Node interface {
	Sessions
	Loads
	Backfills
	Configs
	Observes
	Runs
	Keys
}

// Sessions connect and disconnect the driver.
type Sessions interface {
	// Init connects driver name with the configured options overlaid by opts, and writes
	// driver.name and opts into the runtime configuration layer (an API caller's choice).
	Init(ctx context.Context, name string, opts map[string]string) error
	// InitConfigured connects the driver the configuration selects, writing nothing into
	// the configuration, so every value keeps the source the user gave it.
	InitConfigured(ctx context.Context) error
	// Shutdown stops the load and disconnects the driver.
	Shutdown() error
}

// Loads start, stop and shape op classes. No class given means every class.
type Loads interface {
	// Start starts op classes now, as a step of a run whose phases the caller sequences:
	// no warm-up.
	Start(classes ...string) error
	// StartAt is Start with the first operations due at the instant at: a fleet's step
	// (a scenario phase, an auto-tune step, the run's own warm-up) starts its nodes
	// together this way, with no warm-up of each node's own.
	StartAt(at time.Time, classes ...string) error
	// StartLoad starts op classes as a user asks for it (the API, the UI, NDBench's
	// routes): from idle, the figures start workload.warmup later (the warm-up).
	StartLoad(classes ...string) error
	// StartLoadAt is StartLoad with the first operations due at the instant at: a fleet
	// starts its nodes together this way.
	StartLoadAt(at time.Time, classes ...string) error
	Stop(classes ...string) error
	// SetShape gives class a load shape in place of its configured rate (nil: back).
	SetShape(class string, shape pacer.Shape) error
}

// Backfills write the keyspace once.
type Backfills interface {
	// StartBackfill starts a backfill beside the load; zero options keep the configuration's.
	StartBackfill(opts engine.BackfillOptions) error
	// Backfill runs a backfill as a phase of its own and returns when it ends or ctx does
	// (which stops it); the load started next is measured apart from it.
	Backfill(ctx context.Context, opts engine.BackfillOptions) (engine.BackfillStatus, error)
	StopBackfill() error
	// BackfillStatus is the backfill's progress, cheap enough for a display to poll.
	BackfillStatus() engine.BackfillStatus
}

// Configs read and change the configuration.
type Configs interface {
	// Patch changes configuration values as an API caller (untrusted) would.
	Patch(values map[string]string) (PatchResult, error)
	Config() *config.Snapshot
}

// Observes say what the node does and measured.
type Observes interface {
	Status() Status
	// Collector delivers the 1 s intervals and the cumulative view.
	Collector() *stats.Collector
	// Intervals returns the encoded 1 s intervals from seq on.
	Intervals(seq uint64) stats.IntervalsPage
	// ReportInput gathers the report of the current or last driver session.
	ReportInput(version string) report.Input
}

// Runs end a run's phases: what a run sequence needs beyond starting and stopping.
type Runs interface {
	// StartMeasuring starts the span the figures cover now; warmup is how long load ran
	// before, reported as the warm-up.
	StartMeasuring(warmup time.Duration)
	// Drain stops all load and waits for the operations in flight.
	Drain() error
	// Finish closes the last interval, so a report built next counts everything.
	Finish()
}

// Keys read and write one key through the driver, for debugging.
type Keys interface {
	Read(ctx context.Context, key string) ([]byte, error)
	Write(ctx context.Context, key string, value []byte) error
}

// PatchResult says what a configuration change did.
type PatchResult struct {
	Snapshot *config.Snapshot
	// Pending lists changed keys that take effect at the next driver Init (options that
	// are not live, or another driver.name).
	Pending []string
}

// ErrorEvent is the last error a node met outside a request (a config change from a
// watched source that could not be applied, a driver reconfiguration that failed).
type ErrorEvent struct {
	Time    time.Time `json:"time"`
	Message string    `json:"message"`
}

// ReconfigureStatus is where the connected driver's live options stand: which config
// version's options it runs with, and the reconfiguration in progress or failed.
type ReconfigureStatus struct {
	State          string `json:"state" enum:"applied,pending,failed" doc:"applied: the driver runs with the live options of appliedVersion; pending: a Reconfigure to pendingVersion is queued or running; failed: the one to pendingVersion failed (error) and the driver keeps appliedVersion's"`
	AppliedVersion uint64 `json:"appliedVersion" doc:"Config version whose live driver options the driver runs with"`
	PendingVersion uint64 `json:"pendingVersion,omitempty" doc:"Config version being applied, or that failed"`
	Error          string `json:"error,omitempty" doc:"Why the last reconfiguration failed"`
}

// Status is what a node is doing.
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
	// KeyspaceSize is the number of keys the workload addresses: workload.numKeys plus
	// the keys inserts added beyond it (engine.Engine.KeyspaceSize); 0 before a driver is
	// initialized.
	KeyspaceSize int64 `json:"keyspaceSize,omitempty" doc:"Keys the workload addresses: numKeys plus the keys inserts added"`
	// Inserted is how many new keys the node's inserts claimed (engine.Engine.Inserted);
	// a fleet's status sums its nodes'.
	Inserted int64 `json:"inserted,omitempty" doc:"New keys this node's inserts claimed (a fleet: all its nodes')"`
	// FirstOps has, per op class running, when its first operation since it started
	// began: a fleet compares them with the common start instant.
	FirstOps map[string]time.Time `json:"firstOps,omitempty"`
	// WarmingUpUntil is when the warm-up of the load's start ends (workload.warmup): the
	// figures exclude what runs before it. Absent when none is in progress.
	WarmingUpUntil time.Time `json:"warmingUpUntil,omitzero"`
}

// Idle reports whether no op class runs.
func (s Status) Idle() bool {
	for _, r := range s.Running {
		if r {
			return false
		}
	}
	return true
}
