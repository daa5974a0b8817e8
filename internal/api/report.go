package api

import (
	"bytes"
	"context"
	"time"

	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/instance"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/web"
)

// ReportInput gathers what the run report of inst needs, as of now: what GET
// /api/v1/report returns and what `ndbench serve --report` writes at shutdown. st is the
// status to report, taken by the caller before a shutdown changes it; started and usage0
// mark the start of the reported span.
//
// The report covers the current or last driver session (from its Init), not what earlier
// sessions measured: their counts are not the current driver's.
func ReportInput(inst *instance.Instance, st instance.Status, version string, started time.Time, usage0 report.Usage) report.Input {
	coll := inst.Collector()
	driverName := st.Driver
	if sess := inst.Session(); !sess.Started.IsZero() {
		started, usage0 = sess.Started, sess.Usage
		if driverName == "" {
			driverName = sess.Driver // shut down since: the report is still its session's
		}
	}
	return report.Input{
		ToolVersion: version,
		Started:     started,
		Ended:       time.Now(),
		DriverName:  driverName,
		Panics:      st.DriverPanics,
		Cumulative:  coll.Cumulative(),
		Series:      coll.SeriesSince(started),
		Backfill:    ranBackfill(st),
		Errors:      coll.Errors(),
		Snapshot:    inst.Config(),
		UsageStart:  usage0,
		UsageEnd:    report.ReadUsage(),
		DriverInfo:  st.ConnectionInfo,
		DriverStats: st.DriverStats,
	}
}

// ranBackfill returns the backfill status for the report when a backfill ran.
func ranBackfill(st instance.Status) *engine.BackfillStatus {
	if st.Backfill == nil || st.Backfill.Phase == "idle" || st.Backfill.Phase == "" {
		return nil
	}
	return st.Backfill
}

// HTMLReport is a self-contained HTML report.
type HTMLReport struct {
	ContentType        string `header:"Content-Type"`
	ContentDisposition string `header:"Content-Disposition"`
	Body               []byte
}

func (s *Server) currentReport() *report.Report {
	return report.Build(ReportInput(s.inst, s.inst.Status(), s.opts.Version, s.started, s.usage0))
}

func (s *Server) reportHTML(context.Context, *empty) (*HTMLReport, error) {
	var b bytes.Buffer
	if err := report.WriteHTML(&b, s.currentReport(), report.Charts(web.Charts())); err != nil {
		return nil, err
	}
	return &HTMLReport{
		ContentType:        "text/html; charset=utf-8",
		ContentDisposition: `attachment; filename="ndbench-report-` + time.Now().UTC().Format("20060102T150405Z") + `.html"`,
		Body:               b.Bytes(),
	}, nil
}
