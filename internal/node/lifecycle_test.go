package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
)

// TestRunLifecycle drives a node the way `ndbench run` does: the configured driver, a
// backfill phase, load with a warm-up, drain, finish, report. The backfill is reported as
// it was when it ended, the load is measured on its own after the warm-up, and the time
// series covers all of it.
func TestRunLifecycle(t *testing.T) {
	i := newSimInstance(t, "workload.numKeys=2000", "workload.readRate=400", "workload.readers=1", "workload.maxReaders=1", "workload.writeEnabled=false")
	ctx := context.Background()
	if err := i.InitConfigured(ctx); err != nil {
		t.Fatal(err)
	}
	if _, src, _ := i.Config().Value("driver.name"); src != "--set" {
		t.Errorf("InitConfigured changed driver.name's source to %q: the report would not show the user's", src)
	}
	// The backfill runs unpaced (no backfill rate): it needs no clock to move.
	st, err := i.Backfill(ctx, engine.BackfillOptions{})
	if err != nil || st.Phase != "done" || st.Written != 2000 {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
	i.to(time.Second) // the load starts a second after the backfill
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	i.to(1300 * time.Millisecond)
	i.StartMeasuring(300 * time.Millisecond)
	i.to(1800 * time.Millisecond)
	// Finish closes the figures at 1.8 s; the drain follows, as the run's last step does
	// after its figures are taken (on the simulated clock, workers that a stop wakes may
	// still send before they exit: see the report of branch h-sweep).
	i.Finish()
	if err := i.Drain(); err != nil {
		t.Fatal(err)
	}
	in := i.ReportInput("test")
	sess := i.Session()
	if measured := simStart.Add(1300 * time.Millisecond); !in.Started.Equal(sess.Measured) || !in.Started.Equal(measured) {
		t.Errorf("report starts %v, want the measured span's start 1.3s (session's %v)", in.Started.Sub(simStart), sess.Measured.Sub(simStart))
	}
	if in.Warmup != 300*time.Millisecond || in.Backfill == nil || in.Backfill.Phase != "done" {
		t.Errorf("warm-up %v, backfill %+v", in.Warmup, in.Backfill)
	}
	if len(in.Series) == 0 || in.Series[0].Time.Before(sess.Started) {
		t.Errorf("series of %d points does not start with the session", len(in.Series))
	}
	if len(in.Phases) != 2 || in.Phases[0].Name != "backfill" || in.Phases[1].Name != "warmup" || in.Phase != "load" {
		t.Fatalf("phases %+v, measured phase %q; want backfill, warmup, then load", in.Phases, in.Phase)
	}
	bf, wu := in.Phases[0], in.Phases[1]
	if bf.Ops["backfill"].Count != 2000 || bf.Ops["read"].Count != 0 || !bf.Ended.Equal(simStart) {
		t.Errorf("backfill phase %+v", bf)
	}
	// At 400/s, one read every 2.5 ms: 1.0 s to 1.3 s is 121 reads before the figures
	// start (the one due at 1.3 s ran before StartMeasuring), and 1.3025 s to 1.8 s 200
	// after. The warm-up phase runs from the backfill's end (0 s: it was unpaced).
	if wu.Ops["read"].Count != 121 || wu.Ops["backfill"].Count != 0 || !wu.Started.Equal(bf.Ended) || !wu.Ended.Equal(in.Started) {
		t.Errorf("warm-up phase %v..%v with %d reads; want 0s..1.3s with 121", wu.Started.Sub(simStart), wu.Ended.Sub(simStart), wu.Ops["read"].Count)
	}
	r := report.Build(in)
	if len(r.Phases) != 2 || r.Phase != "load" {
		t.Errorf("report phases %+v, measured phase %q", r.Phases, r.Phase)
	}
	if n := r.Ops["backfill"].Count; n != 2000 {
		t.Errorf("report has %d backfill writes, want the phase's 2000", n)
	}
	if n := r.Ops["read"].Count; n != 200 {
		t.Errorf("report has %d reads in the 0.5 s measured at 400/s, want 200 (not the warm-up's as well)", n)
	}
	// After Finish nothing ticks: the report's end stays where the run ended.
	i.clk.Advance(3 * time.Second)
	if again := i.ReportInput("test"); !again.Ended.Equal(in.Ended) || len(again.Series) != len(in.Series) {
		t.Errorf("the series went on after Finish: ended %v then %v, %d then %d points", in.Ended, again.Ended, len(in.Series), len(again.Series))
	}
}

// TestReportBeforeInitCoversTheNode: GET /api/v1/report before any driver session reports
// the node's life so far, with no driver.
func TestReportBeforeInitCoversTheNode(t *testing.T) {
	i := newInstance(t)
	in := i.ReportInput("test")
	if in.DriverName != "" || in.Started.IsZero() || in.Started.After(time.Now()) || in.Backfill != nil || in.Phases != nil {
		t.Errorf("report input before Init: %+v", in)
	}
}

// TestBackfillNeedsADriver: the phase methods report a missing driver instead of running.
func TestBackfillNeedsADriver(t *testing.T) {
	i := newInstance(t)
	if _, err := i.Backfill(context.Background(), engine.BackfillOptions{}); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Backfill without a driver: %v", err)
	}
	if err := i.Drain(); !errors.Is(err, ErrNotInitialized) {
		t.Errorf("Drain without a driver: %v", err)
	}
}
