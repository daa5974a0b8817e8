package scenario

import (
	"bytes"
	"encoding/xml"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// sec builds a synthetic 1 s interval of class read starting at t0+i seconds: ok answers
// at latency lat, errs failures, at a target of target ops/s.
func sec(t0 time.Time, i int, ok int64, lat time.Duration, errs int64, target float64) *stats.Interval {
	h := stats.NewHistogram()
	us, _ := stats.Micros(lat)
	if ok > 0 {
		_ = h.RecordValues(us, ok)
	}
	o := stats.OpInterval{Name: "read", Response: h, TargetRate: target, Workers: 4}
	o.Successes = ok
	o.Failures[driver.ClassTimeout] = errs
	start := t0.Add(time.Duration(i) * time.Second)
	return &stats.Interval{Start: start, End: start.Add(time.Second), Ops: []stats.OpInterval{o}}
}

func evalScenario(t *testing.T, thresholds string) *Scenario {
	t.Helper()
	text := `
config:
  driver: {name: memory}
sla:
  read: {p99: 10ms, errors: 1%, achieved: 90%, stable: 2s}
phases:
  - {name: a, duration: 4s}
  - {name: b, duration: 10s}
hooks:
  - {name: h, at: b + 1s, run: "true", for: 3s, undo: {run: "true"}}
thresholds:
` + thresholds
	sc, err := parse(t, text)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// drive feeds events and intervals as a run would: phase a at t0, b at t0+4s, hook h from
// t0+5s to t0+8s, end at t0+14s; lat gives each second's latency, stalled seconds answer
// nothing.
func drive(sc *Scenario, t0 time.Time, second func(i int) *stats.Interval) []Result {
	e := NewEvaluator(sc)
	e.Event(EvRunStart, "", t0)
	e.Event(EvPhase, "a", t0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	for i := range 14 {
		switch i {
		case 4:
			e.Event(EvPhaseEnd, "a", at(4))
			e.Event(EvPhase, "b", at(4))
		case 5:
			e.Event(EvHook, "h", at(5))
		case 8:
			e.Event(EvHookEnd, "h", at(8.01))
		}
		e.Add(SecondOf(second(i), sc.ThresholdClasses()))
	}
	e.Event(EvPhaseEnd, "b", at(14))
	e.Close()
	return e.Results()
}

// TestWindowPercentilesFromMergedHistograms: a window's percentile is that of the merged
// histograms, not an average of per-second percentiles.
func TestWindowPercentilesFromMergedHistograms(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.p75 < 30ms, window: phase a}
  - {check: read.p50 < 30ms, window: phase a}
  - {check: read.max <= 51ms, window: phase a}
  - {check: read.rate > 99, window: phase a}
`)
	t0 := time.Unix(1000, 0)
	res := drive(sc, t0, func(i int) *stats.Interval {
		if i%2 == 0 {
			return sec(t0, i, 100, time.Millisecond, 0, 100)
		}
		return sec(t0, i, 100, 50*time.Millisecond, 0, 100)
	})
	// Averaged p75s would be 25.5 ms and pass; the merged p75 is 50 ms.
	if r := res[0]; r.Status != Fail || r.Value == nil || math.Abs(*r.Value-50000) > 100 || r.Intervals != 4 {
		t.Errorf("p75: %+v", r)
	}
	if r := res[1]; r.Status != Pass || math.Abs(*r.Value-1000) > 10 {
		t.Errorf("p50: %+v", r)
	}
	if r := res[2]; r.Status != Pass {
		t.Errorf("max: %+v", r)
	}
	if r := res[3]; r.Status != Pass || *r.Value != 100 {
		t.Errorf("rate: %+v", r)
	}
}

// stall is the SIGSTOP shape: seconds 5-7 answer nothing, second 8 answers the backlog
// late, the rest are fast.
func stall(t0 time.Time) func(int) *stats.Interval {
	return func(i int) *stats.Interval {
		switch {
		case i >= 5 && i <= 7:
			return sec(t0, i, 0, 0, 0, 100)
		case i == 8:
			return sec(t0, i, 400, 2500*time.Millisecond, 0, 100)
		}
		return sec(t0, i, 100, time.Millisecond, 0, 100)
	}
}

func TestHookWindowsAndRecovery(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.p99 < 20ms, window: during h}
  - {check: read.p99 < 20ms, window: from h + 5s}
  - {check: read.recovery < 10s, window: from h}
  - {check: read.recovery < 3s, window: from h}
  - {check: read.p99 < 20ms, window: phase b sustained 2s}
  - {check: read.p99 < 20ms, window: phase a sustained 2s}
  - {check: read.errors < 1, window: from h}
  - {check: read.achieved > 99%, window: during h}
`)
	t0 := time.Unix(1000, 0)
	res := drive(sc, t0, stall(t0))
	// during h: seconds 5-8 (the hook's end and the interval after it, where the stalled
	// operations complete).
	if r := res[0]; r.Status != Fail || r.Intervals != 4 || *r.Value < 2e6 {
		t.Errorf("during: %+v", r)
	}
	// from h + 5s: seconds 10-13, fast.
	if r := res[1]; r.Status != Pass || r.Intervals != 4 {
		t.Errorf("from + 5s: %+v", r)
	}
	// The hook started at 5 and ended at 8.01; seconds 5-8 violate the SLA, 9 and 10 are
	// the first two within it after the hook's end: recovered 4 s after the hook started.
	for i, want := range []string{Pass, Fail} {
		if r := res[2+i]; r.Status != want || r.Value == nil || *r.Value != 4 {
			t.Errorf("recovery %d: %+v", i, r)
		}
	}
	if r := res[4]; r.Status != Fail || r.Intervals != 2 {
		t.Errorf("sustained over the stall: %+v", r)
	}
	if r := res[5]; r.Status != Pass || !strings.Contains(r.Detail, "worst") {
		t.Errorf("sustained, no stall: %+v", r)
	}
	if r := res[6]; r.Status != Pass || *r.Value != 0 {
		t.Errorf("error count: %+v", r)
	}
	// 400 attempted of 400 owed over seconds 5-8 is 100%: the backlog caught up.
	if r := res[7]; r.Status != Pass {
		t.Errorf("achieved during: %+v", r)
	}
}

func TestRecoveryEdges(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.recovery < 10s, window: from h}
  - {check: read.recovery < 10s, window: from h for 4s}
`)
	t0 := time.Unix(1000, 0)
	// Never leaves the SLA: recovery 0.
	res := drive(sc, t0, func(i int) *stats.Interval { return sec(t0, i, 100, time.Millisecond, 0, 100) })
	if r := res[0]; r.Status != Pass || *r.Value != 0 || !strings.Contains(r.Detail, "never left") {
		t.Errorf("no violation: %+v", r)
	}
	// Errors from the hook on, never back: fails, unbounded, within the horizon too.
	res = drive(sc, t0, func(i int) *stats.Interval {
		if i >= 5 {
			return sec(t0, i, 90, time.Millisecond, 10, 100)
		}
		return sec(t0, i, 100, time.Millisecond, 0, 100)
	})
	for i, r := range res {
		if r.Status != Fail || r.Value != nil || r.Observed != "∞" {
			t.Errorf("%d not recovered: %+v", i, r)
		}
	}
}

func TestNoDataFails(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.p99 < 20ms, window: phase a}
  - {check: read.errors < 1%, window: phase a}
  - {check: read.achieved > 90%, window: phase a}
`)
	t0 := time.Unix(1000, 0)
	res := drive(sc, t0, func(i int) *stats.Interval { return sec(t0, i, 0, 0, 0, 0) })
	for i, r := range res {
		if r.Status != Fail || r.Observed != "no data" || r.Detail == "" {
			t.Errorf("%d: %+v", i, r)
		}
	}
}

// TestNotReachedAndJUnit: a window whose hook never fired is not evaluated (skipped in
// JUnit); the JUnit XML parses with encoding/xml, a suite per phase, a case per
// threshold with its observed value.
func TestNotReachedAndJUnit(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.p99 < 20ms, window: phase a}
  - {check: read.p99 < 1ms, window: phase a}
  - {check: read.p99 < 20ms, window: during h}
  - {check: write.errors < 1%}
`)
	t0 := time.Unix(1000, 0)
	e := NewEvaluator(sc)
	e.Event(EvRunStart, "", t0)
	e.Event(EvPhase, "a", t0)
	for i := range 4 {
		e.Add(SecondOf(sec(t0, i, 100, 5*time.Millisecond, 0, 100), sc.ThresholdClasses()))
	}
	e.Cut("interrupted", t0.Add(4*time.Second))
	e.Event(EvPhaseEnd, "a", t0.Add(4*time.Second))
	e.Close()
	o := &Outcome{Scenario: "t", Phases: sc.phaseNames(), Started: t0, Ended: t0.Add(4 * time.Second), Thresholds: e.Results(),
		Marks: []Mark{{Kind: "phase", Name: "a", Start: t0, End: t0.Add(4 * time.Second)}}}
	if got := []string{o.Thresholds[0].Status, o.Thresholds[1].Status, o.Thresholds[2].Status}; got[0] != Pass || got[1] != Fail || got[2] != NotEvaluated {
		t.Errorf("statuses %v", got)
	}
	if o.ExitCode() != ExitFailed {
		t.Errorf("exit code %d", o.ExitCode())
	}
	var b bytes.Buffer
	if err := o.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name  string `xml:"name,attr"`
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b.String())
	}
	if doc.Tests != 4 || doc.Failures != 2 || len(doc.Suites) != 3 {
		t.Fatalf("JUnit: %+v\n%s", doc, b.String())
	}
	a := doc.Suites[0]
	if a.Name != "a" || len(a.Cases) != 2 || a.Cases[1].Failure == nil || !strings.Contains(a.Cases[1].Failure.Message, "observed 5.0") {
		t.Errorf("suite a: %+v", a)
	}
	if b := doc.Suites[1]; b.Name != "b" || len(b.Cases) != 1 || b.Cases[0].Skipped == nil {
		t.Errorf("suite b: %+v", b)
	}
	var md bytes.Buffer
	o.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "FAILED") || !strings.Contains(md.String(), "`read.p99 < 1ms`") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// TestDroppedThreshold: read.dropped bounds the share of due operations that
// workload.catchUp=drop skipped (dropped ÷ (attempted + dropped)), or their count.
func TestDroppedThreshold(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.dropped < 5%, window: phase a}
  - {check: read.dropped < 5%, window: phase b}
  - {check: read.dropped < 1, window: phase a}
`)
	t0 := time.Unix(1000, 0)
	res := drive(sc, t0, func(i int) *stats.Interval {
		iv := sec(t0, i, 90, time.Millisecond, 0, 100)
		if i >= 4 { // phase b: a tenth of what was due was dropped
			iv.Ops[0].Dropped = 10
		}
		return iv
	})
	if r := res[0]; r.Status != Pass || r.Value == nil || *r.Value != 0 {
		t.Errorf("dropped in phase a: %+v", r)
	}
	if r := res[1]; r.Status != Fail || r.Value == nil || math.Abs(*r.Value-0.1) > 1e-9 {
		t.Errorf("dropped in phase b: %+v, want 10%% and a failure", r)
	}
	if r := res[2]; r.Status != Pass {
		t.Errorf("dropped count in phase a: %+v", r)
	}
}

// On a fleet, a window holding merged seconds that lack a node's data says so in its
// result (and its JUnit properties): its counts are a lower bound of the fleet's.
func TestPartialSecondsAreReported(t *testing.T) {
	sc := evalScenario(t, `
  - {check: read.rate > 50, window: phase a}
  - {check: read.rate > 50, window: phase b}
  - {check: read.recovery < 5s, window: from h}
`)
	t0 := time.Unix(1000, 0)
	res := drive(sc, t0, func(i int) *stats.Interval {
		iv := sec(t0, i, 100, time.Millisecond, 0, 100)
		if i == 2 || i == 9 {
			iv.Nodes, iv.Partial, iv.Missing = 1, true, []string{"10.0.0.2:8080"}
		}
		return iv
	})
	for i, want := range []int{1, 1, 1} {
		r := res[i]
		if r.PartialIntervals != want || !strings.Contains(r.Detail, "partial (missing 10.0.0.2:8080)") {
			t.Errorf("%s: partial intervals %d, detail %q; want %d and the missing node named", r.Check, r.PartialIntervals, r.Detail, want)
		}
	}
	o := &Outcome{Scenario: "s", Phases: []string{"a", "b"}, Thresholds: res}
	var b bytes.Buffer
	if err := o.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `name="partialIntervals" value="1"`) {
		t.Errorf("JUnit has no partialIntervals property:\n%s", b.String())
	}
}
