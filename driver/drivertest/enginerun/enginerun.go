// Package enginerun runs ndbench's engine against a driver in a test: the set-up every
// driver's engine-level integration test repeated (an engine with a collector, closed
// when the test ends, a backfill that must write every key, a measured span that starts
// from a reset collector and ends with the engine stopped, drained and ticked), so that
// a test says only its workload and what it checks of the cumulative report.
//
// It lives beside package drivertest, not in it, because it runs ndbench's engine:
// drivertest itself imports nothing of ndbench but package driver.
package enginerun

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// closeGrace is how long the engine's workers get to finish when the test ends.
const closeGrace = 2 * time.Second

// Run is an engine over one driver and the collector it records into.
type Run struct {
	// Engine is the engine; a test may Apply a changed workload between spans.
	Engine *engine.Engine
	// Collector is what the engine records into (opts.Collector when given).
	Collector *stats.Collector
	// Workload is the workload the engine was built with.
	Workload config.Workload
}

// New builds an engine over d running w with opts, recording into opts.Collector or, when
// that is nil, a new collector of 4 shards; the engine is closed when the test ends
// (before the driver, when the test opened it earlier with a cleanup of its own). A
// failure to build it ends the test.
func New(t testing.TB, d driver.Driver, w config.Workload, opts engine.Options) *Run {
	t.Helper()
	if opts.Collector == nil {
		opts.Collector = stats.NewCollector(stats.Config{Shards: 4})
	}
	e, err := engine.New(d, w, opts)
	if err != nil {
		t.Fatalf("engine: %v", err)
	}
	t.Cleanup(func() { _ = e.Close(closeGrace) })
	return &Run{Engine: e, Collector: opts.Collector, Workload: w}
}

// Backfill writes every key of the workload with the given number of workers and ends
// the test unless it wrote them all.
func (r *Run) Backfill(t testing.TB, ctx context.Context, workers int) {
	t.Helper()
	if st, err := r.Engine.Backfill(ctx, engine.BackfillOptions{Workers: workers}); err != nil || st.Written != r.Workload.NumKeys {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
}

// Measure resets the collector (so the backfill and earlier spans do not count), starts
// the engine, calls during (which sleeps, waits for enough operations, or acts on the
// store meanwhile), stops the engine, waits for its operations in flight, ticks the
// collector and returns its cumulative report: the span's operations only. A failure to
// start, stop or drain ends the test.
func (r *Run) Measure(t testing.TB, ctx context.Context, during func()) stats.Summary {
	t.Helper()
	r.Collector.Reset()
	if err := r.Engine.Start(); err != nil {
		t.Fatal(err)
	}
	during()
	if err := r.Engine.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.Engine.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r.Collector.Tick(time.Now())
	return r.Collector.Cumulative()
}

// Sleep is a during for Measure that runs the engine for d.
func Sleep(d time.Duration) func() { return func() { time.Sleep(d) } }
