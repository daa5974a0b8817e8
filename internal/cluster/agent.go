package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/pacer"
)

// AgentOptions configure an Agent.
type AgentOptions struct {
	// ID is this node's id, Version its ndbench version, Labels its group labels.
	ID      string
	Version string
	Labels  map[string]string
	// Logger gets the lease events; nil discards them.
	Logger *slog.Logger
	// Clock gives the instants the agent waits for (a shape's, a lease's end) and stamps
	// its beats with; nil is the real clock. Tests pass a clock.Sim.
	Clock clock.Clock
}

// ErrClaimed is returned to a coordinator that tries to control a node another
// coordinator's run holds: two control points fighting over one node would each count its
// load as theirs.
var ErrClaimed = errors.New("node is part of another coordinator's run")

// Agent is the node side of a fleet: it answers its coordinator's beats, starts op classes
// at the common instant, and holds the lease. While the node runs load for a coordinator,
// a coordinator that stays silent for the lease time (killed, partitioned away) makes the
// node stop its load by itself: a fleet never leaves rogue load behind.
type Agent struct {
	node control.Node
	// fence is the node's SendUntil when it has one: the lease's end bounds what the
	// node sends, also while nothing runs the agent's goroutines (a paused process).
	fence func(until time.Time)
	opts  AgentOptions
	log   *slog.Logger
	clk   clock.Clock
	// boot names this process: a node restarted under the same id answers beats with a
	// new one, so its coordinator knows that everything it told the old process is gone.
	boot string

	mu          sync.Mutex
	coordinator string        // the run's coordinator ("" when none)
	run         string        // the run the node's load belongs to ("" when none)
	lease       time.Duration // how long the run lasts without a beat
	lastBeat    time.Time     // monotonic
	orphaned    bool          // the last run's lease lapsed and the load was stopped
	lastRun     runRef        // the run whose lease lapsed last
	// The runs released last, by their coordinators: a beat of one still in flight when
	// its release arrived must not take the lease again (TestAgentIgnoresABeatOfAReleasedRun).
	// Not only the last one: under load a beat can arrive a few start-stop cycles late
	// (TestAgentIgnoresLateBeatsOfEarlierReleasedRuns).
	released     [releasedRuns]runRef
	releasedNext int
	wake         chan struct{} // a new lease was taken: recompute the deadline
}

// releasedRuns is how many released runs an agent remembers. Auto-tune starts and stops
// a fleet's load once per step, seconds apart; a beat is late by a scheduling delay, so
// a handful covers a beat late by many steps.
const releasedRuns = 16

// fencer is a node whose load can be fenced at an instant (node.Node.SendUntil): no
// operation starts at or after it.
type fencer interface{ SendUntil(until time.Time) }

// runRef names a run.
type runRef struct{ coordinator, run string }

// forgetRelease removes run of coordinator from the released runs: it was started again.
func (a *Agent) forgetRelease(coordinator, run string) {
	for i, r := range a.released {
		if r == (runRef{coordinator, run}) {
			a.released[i] = runRef{}
		}
	}
}

// NewAgent returns the agent of node.
func NewAgent(node control.Node, opts AgentOptions) *Agent {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	a := &Agent{node: node, opts: opts, log: log, clk: clock.Or(opts.Clock), boot: hex.EncodeToString(b[:]), wake: make(chan struct{}, 1),
		fence: func(time.Time) {}}
	if f, ok := node.(fencer); ok {
		a.fence = f.SendUntil
	}
	return a
}

// Boot returns the id of this process's agent, as its beats carry it.
func (a *Agent) Boot() string { return a.boot }

// heldBy returns the error a command of run of coordinator gets from a node that another
// run holds (its lease alive), nil when the node is free or held by that run; called
// with a.mu held.
func (a *Agent) heldBy(coordinator, run string, now time.Time) error {
	if a.run == "" || now.Sub(a.lastBeat) > a.lease || (a.coordinator == coordinator && a.run == run) {
		return nil
	}
	return fmt.Errorf("%w: run %q of coordinator %q (lease %v)", ErrClaimed, a.run, a.coordinator, a.lease)
}

// Admit says whether a fleet command of run from coordinator may change this node: a node
// that another run holds refuses, before anything applies, every command that does not
// come from that run (a second coordinator's stop, config change, driver init, ...).
// Calls a person makes to the node itself name no coordinator and are admitted: the
// node's operator may always stop its load.
func (a *Agent) Admit(coordinator, run string) error {
	if coordinator == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heldBy(coordinator, run, a.clk.Now())
}

// claim takes or renews the lease of run for coordinator; called with a.mu held. A node
// serves one run at a time: another coordinator gets ErrClaimed until that run is released
// or its lease lapses.
func (a *Agent) claim(coordinator, run string, lease time.Duration, now time.Time) error {
	if run == "" {
		return &driver.FieldError{Field: "run", Value: "", Allowed: "the fleet run's id"}
	}
	if lease <= 0 {
		return &driver.FieldError{Field: "leaseMs", Value: strconv.FormatInt(lease.Milliseconds(), 10), Allowed: "1 or more (milliseconds)"}
	}
	if err := a.heldBy(coordinator, run, now); err != nil {
		return err
	}
	// A lease that lapsed unnoticed (the process was paused: Run had no chance to see
	// it) is not renewed: the load is stopped first, so its schedule and the backlog the
	// pause left on it are dropped, and the node sends again only once its coordinator
	// starts it (TestAgentPausedPastItsLeaseDropsItsSchedule).
	a.lapseLocked(now)
	renewed := a.run == run && a.coordinator == coordinator
	a.coordinator, a.run, a.lease, a.lastBeat, a.orphaned = coordinator, run, lease, now, false
	a.fence(now.Add(lease))
	if !renewed {
		a.log.Info("fleet run joined", "coordinator", coordinator, "run", run, "lease", lease)
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Beat answers a coordinator's heartbeat; a beat naming a run renews its lease.
func (a *Agent) Beat(req BeatRequest) (BeatResponse, error) {
	received := a.clk.Now()
	a.mu.Lock()
	a.lapseLocked(received)
	if a.orphaned && req.Run != "" && (runRef{req.Coordinator, req.Run}) == a.lastRun {
		// A beat of the run whose lease lapsed here: the node answers as orphaned until
		// the coordinator starts it again (join), on a fresh schedule, rather than the
		// beat taking the lease without the load.
		req.Run = ""
	}
	if req.Run != "" {
		// A beat of a run its coordinator released is answered like a membership beat:
		// the coordinator sent it before the release. Only a start takes that run again.
		if !slices.Contains(a.released[:], runRef{req.Coordinator, req.Run}) {
			if err := a.claim(req.Coordinator, req.Run, time.Duration(req.LeaseMs)*time.Millisecond, received); err != nil {
				a.mu.Unlock()
				return BeatResponse{}, err
			}
		}
	}
	run, coord, orphaned := a.run, a.coordinator, a.orphaned
	if run != "" && received.Sub(a.lastBeat) > a.lease {
		run, coord = "", "" // lapsed: the node is free, whether or not Run has noticed yet
	}
	a.mu.Unlock()
	st := a.node.Status()
	resp := BeatResponse{ID: a.opts.ID, Version: a.opts.Version, Labels: a.opts.Labels, Boot: a.boot, Received: received,
		Driver: st.Driver, Running: st.Running, FirstOps: st.FirstOps, Run: run, Coordinator: coord, Orphaned: orphaned,
		Backfill: st.Backfill, KeyspaceSize: st.KeyspaceSize, Inserted: st.Inserted}
	resp.Sent = a.clk.Now()
	return resp, nil
}

// Start takes the run's lease and starts the op classes at req.At as a user's start does:
// from idle, the node's figures start workload.warmup after req.At (the warm-up); a step
// of the coordinator's run (req.NoWarmup) starts them with no warm-up of the node's own,
// since the run has its one warm-up already.
//
// A start the node refuses changes nothing: its op classes are checked before the lease is
// taken, and a lease this start took is given back when the node does not start (no
// driver, say), so a bad start does not hold the node for a run that never ran.
func (a *Agent) Start(req StartRequest) error {
	if len(req.Ops) > 0 {
		if err := checkOps(a.node.Config().Config.Workload, req.Ops); err != nil {
			return err
		}
	}
	a.mu.Lock()
	held := a.run == req.Run && a.coordinator == req.Coordinator && a.run != ""
	err := a.claim(req.Coordinator, req.Run, time.Duration(req.LeaseMs)*time.Millisecond, a.clk.Now())
	if err == nil {
		a.forgetRelease(req.Coordinator, req.Run)
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if req.NoWarmup {
		err = a.node.StartAt(req.At, req.Ops...)
	} else {
		err = a.node.StartLoadAt(req.At, req.Ops...)
	}
	if err != nil && !held {
		a.mu.Lock()
		if a.run == req.Run && a.coordinator == req.Coordinator {
			a.run, a.coordinator = "", ""
			a.fence(time.Time{})
		}
		a.mu.Unlock()
	}
	return err
}

// checkOps refuses a start's op classes when one is named twice (opsOnce) or is not a
// class of the workload w, naming the field "ops" as POST /api/v1/load/start does.
func checkOps(w config.Workload, ops []string) error {
	if err := opsOnce(ops); err != nil {
		return err
	}
	for _, op := range ops {
		if _, ok := w.Class(op); !ok {
			return &driver.FieldError{Field: "ops", Value: op, Allowed: "op classes of the workload: " + strings.Join(w.ClassNames(), ", ")}
		}
	}
	return nil
}

// opsOnce refuses op classes of which one is named twice.
func opsOnce(ops []string) error {
	for i, op := range ops {
		if slices.Contains(ops[:i], op) {
			return &driver.FieldError{Field: "ops", Value: op, Allowed: "each op class at most once"}
		}
	}
	return nil
}

// maxShapeWait bounds how far ahead a shape's instant may be: a coordinator sets it a few
// round trips ahead, and a node must not hold a call (and its connection) for long.
const maxShapeWait = 10 * time.Second

// SetShape checks a shape request and, unless it is a dry run, applies it at req.At. A
// node that another run holds refuses (ErrClaimed).
func (a *Agent) SetShape(ctx context.Context, req ShapeRequest) error {
	if err := a.Admit(req.Coordinator, req.Run); err != nil {
		return err
	}
	classes := a.node.Status().Running // every class of the workload
	if _, ok := classes[req.Class]; !ok {
		return &driver.FieldError{Field: "class", Value: req.Class, Allowed: "op classes of the workload: " + strings.Join(slices.Sorted(maps.Keys(classes)), ", ")}
	}
	var shape pacer.Shape
	if req.Shape != nil {
		var err error
		if shape, err = req.Shape.Shape(); err != nil {
			return err
		}
	}
	wait := clock.Until(a.clk, req.At)
	if wait > maxShapeWait {
		return &driver.FieldError{Field: "at", Value: req.At.Format(time.RFC3339Nano), Allowed: fmt.Sprintf("an instant at most %v ahead of this node's clock", maxShapeWait)}
	}
	if req.DryRun {
		return nil
	}
	if wait > 0 {
		t := a.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("set shape of %s: %w", req.Class, ctx.Err())
		case <-t.C():
		}
	}
	return a.node.SetShape(req.Class, shape)
}

// StartMeasuring starts the span of the node's own figures now, as its coordinator's fleet
// figures start theirs (node.Node.StartMeasuring). A node another run holds refuses.
func (a *Agent) StartMeasuring(req MeasureRequest) error {
	if err := a.Admit(req.Coordinator, req.Run); err != nil {
		return err
	}
	a.node.StartMeasuring(time.Duration(req.WarmupMs) * time.Millisecond)
	return nil
}

// Claim takes the run's lease without starting anything: a backfill the coordinator
// started is its load too.
func (a *Agent) Claim(coordinator, run string, lease time.Duration) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.claim(coordinator, run, lease, a.clk.Now())
}

// Release ends the node's part in a run: its load (if any is left) is its own again.
func (a *Agent) Release(req ReleaseRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run == "" {
		return nil
	}
	if a.run != req.Run || a.coordinator != req.Coordinator {
		return fmt.Errorf("%w: run %q of coordinator %q", ErrClaimed, a.run, a.coordinator)
	}
	a.run, a.coordinator = "", ""
	a.fence(time.Time{}) // the load left is the node's own
	a.released[a.releasedNext] = runRef{req.Coordinator, req.Run}
	a.releasedNext = (a.releasedNext + 1) % releasedRuns
	a.log.Info("fleet run released", "coordinator", req.Coordinator, "run", req.Run)
	return nil
}

// lapseLocked ends the run whose lease lapsed by now, if any: the node stops its load and
// backfill, which drops their schedules (a start re-anchors them at its instant, with no
// carry), and it is orphaned until a coordinator starts it again. It reports whether a
// lease lapsed. Called with a.mu held, and stops the load under it, so that no claim
// (a start) lands between the lapse and the stop and is stopped with it. The node never
// calls into its agent, so holding a.mu across its Stop cannot deadlock.
func (a *Agent) lapseLocked(now time.Time) bool {
	if a.run == "" || now.Sub(a.lastBeat) <= a.lease {
		return false
	}
	coord, run, lease := a.coordinator, a.run, a.lease
	a.lastRun = runRef{coord, run}
	a.run, a.coordinator, a.orphaned = "", "", true
	a.log.Warn("fleet coordinator silent for the lease time: stopping this node's load", "coordinator", coord, "run", run, "lease", lease)
	if err := a.node.Stop(); err != nil && !errors.Is(err, control.ErrNotInitialized) {
		a.log.Error("stop load after the lease lapsed", "err", err)
	}
	if err := a.node.StopBackfill(); err != nil && !errors.Is(err, control.ErrNotInitialized) {
		a.log.Error("stop backfill after the lease lapsed", "err", err)
	}
	// The pools are stopped and their schedules gone: what the node's operator starts
	// now is its own load, unfenced.
	a.fence(time.Time{})
	return true
}

// Run enforces the lease until ctx ends: when the run's coordinator has been silent for
// the lease time, the node stops its load and backfill and says so.
func (a *Agent) Run(ctx context.Context) {
	for {
		a.mu.Lock()
		wait := time.Hour
		if a.lapseLocked(a.clk.Now()) {
			a.mu.Unlock()
			continue
		}
		if a.run != "" {
			// To the first instant at which the lease has lapsed: strictly more than
			// the lease since the last beat. A timer for lastBeat+lease itself found the
			// lease alive and set one of zero, again and again until the clock moved:
			// a spin, and on a simulated clock one that never ends.
			wait = a.lease - clock.Since(a.clk, a.lastBeat) + time.Nanosecond
		}
		a.mu.Unlock()
		t := a.clk.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-a.wake:
		case <-t.C():
		}
		t.Stop()
	}
}
