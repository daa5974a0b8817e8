package node

import (
	"context"
	"fmt"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

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
	now := i.clk.Now()
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

// WarmUp makes the figures start d from now: the load that runs meanwhile stays in the
// time series but not in the summary, the reports or the UI's totals (StartMeasuring at
// its end). Stopping every class, shutting the driver down or another WarmUp before then
// cancels it; d ≤ 0 only cancels.
func (i *Node) WarmUp(d time.Duration) { i.warmUp(time.Time{}, d) }

// warmUp is WarmUp for load whose first operations are due at from (zero: now): the
// warm-up lasts d from then.
func (i *Node) warmUp(from time.Time, d time.Duration) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.warmGen++
	i.warmUntil = time.Time{}
	if d <= 0 {
		return
	}
	if from.IsZero() {
		from = i.clk.Now()
	}
	gen := i.warmGen
	i.warmUntil = from.Add(d)
	i.clk.AfterFunc(clock.Until(i.clk, i.warmUntil), func() {
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
