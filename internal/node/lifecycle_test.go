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
	i := newInstance(t, "workload.numKeys=2000", "workload.readRate=400", "workload.writeEnabled=false")
	ctx := context.Background()
	if err := i.InitConfigured(ctx); err != nil {
		t.Fatal(err)
	}
	if _, src, _ := i.Config().Value("driver.name"); src != "--set" {
		t.Errorf("InitConfigured changed driver.name's source to %q: the report would not show the user's", src)
	}
	st, err := i.Backfill(ctx, engine.BackfillOptions{})
	if err != nil || st.Phase != "done" || st.Written != 2000 {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	i.StartMeasuring(300 * time.Millisecond)
	measured := time.Now()
	time.Sleep(500 * time.Millisecond)
	if err := i.Drain(); err != nil {
		t.Fatal(err)
	}
	i.Finish()
	in := i.ReportInput("test")
	sess := i.Session()
	if in.Started != sess.Measured || in.Started.After(measured) || in.Started.Before(sess.Started) {
		t.Errorf("report starts %v, want the measured span's start %v (session %v)", in.Started, sess.Measured, sess.Started)
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
	if bf.Ops["backfill"].Count != 2000 || bf.Ops["read"].Count != 0 || !bf.Ended.After(bf.Started) {
		t.Errorf("backfill phase %+v", bf)
	}
	if wu.Ops["read"].Count == 0 || wu.Ops["backfill"].Count != 0 || wu.Started.Before(bf.Ended) || wu.Ended.After(in.Started) {
		t.Errorf("warm-up phase %+v (backfill ended %v, load started %v)", wu, bf.Ended, in.Started)
	}
	r := report.Build(in)
	if len(r.Phases) != 2 || r.Phase != "load" {
		t.Errorf("report phases %+v, measured phase %q", r.Phases, r.Phase)
	}
	if n := r.Ops["backfill"].Count; n != 2000 {
		t.Errorf("report has %d backfill writes, want the phase's 2000", n)
	}
	// 400/s over the ~0.5 s measured, not the warm-up's reads as well.
	if n := r.Ops["read"].Count; n < 100 || n > 260 {
		t.Errorf("report has %d reads in 0.5 s at 400/s", n)
	}
	// After Finish nothing ticks: the report's end stays where the run ended.
	time.Sleep(1100 * time.Millisecond)
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
