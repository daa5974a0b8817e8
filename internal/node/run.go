package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
)

// RunOptions are a run's phases as the configuration sets them. They are read from it
// in this one place, so that every entry point backfills and warms up alike.
type RunOptions struct {
	// Backfill says whether a backfill phase runs before the load (workload.backfill).
	Backfill bool
	// BackfillOptions are the backfill's workers, rate and verify setting
	// (workload.backfillWorkers, backfillRate, backfillVerify).
	BackfillOptions engine.BackfillOptions
	// Warmup is how long the load runs before its figures start (workload.warmup).
	Warmup time.Duration
}

// RunOptionsOf returns the run options workload w configures.
func RunOptionsOf(w config.Workload) RunOptions {
	return RunOptions{
		Backfill:        w.Backfill,
		BackfillOptions: engine.BackfillOptions{Workers: w.BackfillWorkers, Rate: w.BackfillRate, Verify: w.BackfillVerify},
		Warmup:          w.Warmup,
	}
}

// connectTimeout bounds connecting the driver at a run's start.
const connectTimeout = time.Minute

// Run is one run's sequence on a node, or on a fleet seen as one: connect, backfill,
// warm-up, load, drain, finish, report input. `ndbench run`, `serve --start`, scenarios
// and auto-tune drive it; the API's and UI's start, NDBench's routes and the fleet agent
// take its load step through the node's StartLoad and StartLoadAt, which warm up the same
// way. No entry point sequences the steps itself, so a phase added here (or an option of
// one) reaches all of them.
//
// The options of every step are read from the node's configuration when the step runs
// (RunOptionsOf), so a change made before it (over the API, by --set) applies.
type Run struct {
	// Node is what the run drives.
	Node control.Node
	// Pin makes Connect write driver.name into the runtime configuration layer, as the
	// API's init does, so no watched source switches the driver under a service (serve).
	// Without it every value keeps the source the user gave it (run, scenario, autotune).
	Pin bool
	// Backfill asks for a backfill phase besides workload.backfill (a scenario's own
	// backfill: true).
	Backfill bool
	// Progress, when set, is called with the backfill's progress when the backfill phase
	// starts, and with nil when it ends: a live display polls it.
	Progress func(func() engine.BackfillStatus)
	// Measuring, when set, is called when the measured span starts: at the load's start
	// without a warm-up, at the warm-up's end with one (warmup > 0).
	Measuring func(at time.Time, warmup time.Duration)
	// Log gets the steps of a run in the background (Serve); nil discards them.
	Log *slog.Logger
	// Clock times the warm-up and stamps the measured span's start. Nil is the node's own
	// clock when it has one (a Node's, a fleet's coordinator's: control.ClockOf), else real time.
	Clock clock.Clock
}

// Options returns the run's options as the node's configuration sets them now.
func (r *Run) Options() RunOptions {
	o := RunOptionsOf(r.Node.Config().Config.Workload)
	o.Backfill = o.Backfill || r.Backfill
	return o
}

// Connect connects the driver the configuration selects, within a minute.
func (r *Run) Connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if r.Pin {
		return r.Node.Init(ctx, r.Node.Config().Config.DriverName, nil)
	}
	return r.Node.InitConfigured(ctx)
}

// BackfillPhase runs the backfill as a phase of its own when the run has one, and returns
// when it ends (ran is false without one). ctx ending stops it: then the error is nil
// and the caller, which owns ctx, decides what an interrupted run does.
func (r *Run) BackfillPhase(ctx context.Context) (st engine.BackfillStatus, ran bool, err error) {
	o := r.Options()
	if !o.Backfill {
		return st, false, nil
	}
	if r.Progress != nil {
		r.Progress(r.Node.BackfillStatus)
		defer r.Progress(nil)
	}
	st, err = r.Node.Backfill(ctx, o.BackfillOptions)
	if ctx.Err() != nil {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("backfill: %w", err)
	}
	return st, true, err
}

// StartLoad starts every op class and returns once the load is measured: at once without
// a warm-up, after it with one (the load runs on, and what it did meanwhile stays in the
// time series but not in the figures). measured is false when ctx ended during the
// warm-up; the load then runs on for the caller to end (End).
func (r *Run) StartLoad(ctx context.Context) (measured bool, err error) {
	warmup := r.Options().Warmup
	if warmup <= 0 {
		r.measuring(r.clock().Now(), 0)
	}
	if err := r.Node.Start(); err != nil {
		return false, err
	}
	if warmup <= 0 {
		return true, nil
	}
	return r.wait(ctx, warmup, false)
}

// WarmUp runs the warm-up as a phase of its own, for a run whose load step starts the op
// classes itself (a scenario's first phase, auto-tune's first step): every class runs
// for workload.warmup, the load is then drained and the figures start. It does nothing
// without a warm-up. measured is false when ctx ended during it.
func (r *Run) WarmUp(ctx context.Context) (measured bool, err error) {
	warmup := r.Options().Warmup
	if warmup <= 0 {
		r.measuring(r.clock().Now(), 0)
		return true, nil
	}
	if err := r.Node.Start(); err != nil {
		return false, err
	}
	return r.wait(ctx, warmup, true)
}

// wait waits out the warm-up, then (unless ctx ended first) drains the load when drain
// is set and starts the measured span.
func (r *Run) wait(ctx context.Context, warmup time.Duration, drain bool) (bool, error) {
	t := r.clock().NewTimer(warmup)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false, nil
	case <-t.C():
	}
	if drain {
		if err := r.Node.Drain(); err != nil {
			return false, fmt.Errorf("end the warm-up: %w", err)
		}
	}
	now := r.clock().Now()
	r.Node.StartMeasuring(warmup)
	r.measuring(now, warmup)
	return true, nil
}

// clock is the time the run is timed on: the caller's (Run.Clock), or the node's own.
func (r *Run) clock() clock.Clock {
	if r.Clock != nil {
		return r.Clock
	}
	return control.ClockOf(r.Node)
}

func (r *Run) measuring(at time.Time, warmup time.Duration) {
	if r.Measuring != nil {
		r.Measuring(at, warmup)
	}
}

// Serve is the run of a service (`ndbench serve --start`): the backfill, when the run has
// one, runs in the background while the API serves (it shows the backfill's progress and
// can stop it), and the load starts after it as a user's start does (StartLoad: the
// warm-up runs in the background too, and a stop over the API cancels it). The load is not
// started when ctx ends, or the backfill was stopped or failed: a load on a keyspace the
// backfill did not fill would measure misses, so it is left to the user. The error is
// that of a load started at once.
func (r *Run) Serve(ctx context.Context) error {
	if !r.Options().Backfill {
		if err := r.Node.StartLoad(); err != nil {
			return err
		}
		r.log().Info("load started", "driver", r.Node.Status().Driver)
		return nil
	}
	go r.serveBackfill(ctx)
	return nil
}

func (r *Run) serveBackfill(ctx context.Context) {
	log := r.log()
	log.Info("backfill started")
	st, _, err := r.BackfillPhase(ctx)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		log.Error("backfill failed; the load was not started (POST /api/v1/load/start starts it)", "err", err)
		return
	case st.Phase == "stopped":
		log.Warn("backfill stopped; the load was not started (POST /api/v1/load/start starts it)",
			"written", st.Written, "total", st.Total)
		return
	}
	log.Info("backfill done", "written", st.Written, "failed", st.Failed, "took", st.Ended.Sub(st.Started).Round(time.Millisecond))
	if err := r.Node.StartLoad(); err != nil {
		log.Error("start the load after the backfill", "err", err)
		return
	}
	log.Info("load started")
}

func (r *Run) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// End ends the run: it stops the load, waits for the operations in flight and closes the
// last interval, so the report built next counts every operation started and ends where
// the run did. A node with no driver has nothing to drain.
func (r *Run) End() error {
	err := r.Node.Drain()
	r.Node.Finish()
	if errors.Is(err, ErrNotInitialized) {
		return nil
	}
	return err
}

// ReportInput is the report input of the run (after End: of the whole run).
func (r *Run) ReportInput(version string) report.Input { return r.Node.ReportInput(version) }
