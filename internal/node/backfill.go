package node

import (
	"context"
	"errors"

	"github.com/ndbench/ndbench/internal/engine"
)

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
