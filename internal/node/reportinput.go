package node

import (
	"slices"

	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
)

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
		ended = i.clk.Now()
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
		Keyspace:    st.KeyspaceSize,
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
