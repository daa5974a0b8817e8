package scenario

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/stats"
)

// Second is one 1 s interval of the node, reduced to what thresholds judge and owned by the
// scenario (the collector reuses its Interval at the next tick).
type Second struct {
	Start, End time.Time
	Ops        map[string]*ClassSecond
	// Partial marks a fleet's merged second that lacks the data of the nodes in Missing:
	// its counts are a lower bound, and a window holding it says so.
	Partial bool
	Missing []string
}

// ClassSecond is one class's share of a Second.
type ClassSecond struct {
	stats.Counts
	// Expected is the operations the target rate asked for over the interval (target ×
	// seconds; 0 in closed loop or while stopped).
	Expected float64
	// Backlog is how late the oldest overdue operation was at the tick.
	Backlog time.Duration
	// Response is the interval's response-time histogram (µs).
	Response *hdrhistogram.Histogram
}

// SecondOf copies the classes of iv that thresholds need.
func SecondOf(iv *stats.Interval, classes []string) *Second {
	s := &Second{Start: iv.Start, End: iv.End, Ops: make(map[string]*ClassSecond, len(classes)),
		Partial: iv.Partial || len(iv.Missing) > 0, Missing: slices.Clone(iv.Missing)}
	secs := iv.Seconds()
	for _, c := range classes {
		o := iv.Op(c)
		if o == nil {
			continue
		}
		cs := &ClassSecond{Counts: o.Counts, Expected: o.TargetRate * secs, Backlog: o.Backlog}
		if o.Workers == 0 {
			cs.Expected = 0 // a stopped class owes nothing
		}
		if o.Response != nil {
			cs.Response = o.Response.Clone()
		}
		s.Ops[c] = cs
	}
	return s
}

// mid is the interval's midpoint: an interval belongs to a window when its midpoint is
// in it, so each interval counts in exactly one of two adjacent windows.
func (s *Second) mid() time.Time { return s.Start.Add(s.End.Sub(s.Start) / 2) }

// Status of a threshold.
const (
	Pass         = "pass"
	Fail         = "fail"
	NotEvaluated = "not evaluated"
)

// Result is a threshold's outcome.
type Result struct {
	Name   string `json:"name"`
	Check  string `json:"check"`
	Window string `json:"window"`
	Class  string `json:"class"`
	Metric string `json:"metric"`
	// Suite is the phase the window belongs to (the hook's phase for hook windows;
	// "run" for the whole run), for JUnit's testsuites.
	Suite  string `json:"suite"`
	Status string `json:"status"`
	// Observed is the value in the bound's unit, as text; Value is it as a number in the
	// metric's unit (µs, ratio, count, ops/s, seconds) when finite.
	Observed string    `json:"observed"`
	Value    *float64  `json:"value,omitempty"`
	From     time.Time `json:"from,omitzero"`
	To       time.Time `json:"to,omitzero"`
	// Intervals is how many 1 s intervals were merged; PartialIntervals how many of them
	// were a fleet's seconds lacking some node's data (a lower bound of the fleet's).
	Intervals        int    `json:"intervals"`
	PartialIntervals int    `json:"partialIntervals,omitempty"`
	Detail           string `json:"detail,omitempty"`
	Abort            bool   `json:"abort,omitempty"`
}

// accum is the merge of the intervals of a window.
type accum struct {
	counts    stats.Counts
	expected  float64
	seconds   float64
	hist      *hdrhistogram.Histogram
	n         int
	partial   int
	missing   []string
	from, end time.Time
}

// notePartial counts s in the window's partial seconds when it is one.
func (a *accum) notePartial(s *Second) {
	if !s.Partial {
		return
	}
	a.partial++
	for _, id := range s.Missing {
		if !slices.Contains(a.missing, id) {
			a.missing = append(a.missing, id)
		}
	}
}

// partialNote fills r's partial count from a and says what it means in its detail.
func partialNote(r *Result, a *accum) {
	r.PartialIntervals = a.partial
	if a.partial == 0 {
		return
	}
	who := ""
	if len(a.missing) > 0 {
		who = " (missing " + strings.Join(a.missing, ", ") + ")"
	}
	r.Detail = joinDetail(r.Detail, fmt.Sprintf("%d of %d intervals partial%s: the fleet's counts there are a lower bound", a.partial, a.n, who))
}

func (a *accum) add(s *Second, cs *ClassSecond) {
	if a.hist == nil {
		a.hist = stats.NewHistogram()
	}
	if a.n == 0 {
		a.from = s.Start
	}
	a.end = s.End
	a.n++
	a.notePartial(s)
	a.counts.Add(&cs.Counts)
	a.expected += cs.Expected
	a.seconds += s.End.Sub(s.Start).Seconds()
	stats.MergeHistograms(a.hist, cs.Response)
}

// value is the metric over the window; ok is false when the window had nothing to judge
// (then detail says why): a gate never passes because it could not look.
func (t *Threshold) value(a *accum) (v float64, ok bool, detail string) {
	attempted := a.counts.Count() + a.counts.Errors()
	switch t.kind {
	case kindLatency:
		if a.hist == nil || a.hist.TotalCount() == 0 {
			return 0, false, "no operations answered in the window"
		}
		switch t.Metric {
		case "max":
			return float64(a.hist.Max()), true, ""
		case "mean":
			return a.hist.Mean(), true, ""
		}
		return float64(a.hist.ValueAtQuantile(t.Quantile)), true, ""
	case kindRatio:
		n, of := a.counts.Errors(), attempted
		switch t.Metric {
		case "misses":
			n, of = a.counts.Misses, a.counts.Count()
		case "dropped":
			n, of = a.counts.Dropped, attempted+a.counts.Dropped
		}
		if !t.Percent {
			return float64(n), true, ""
		}
		if of == 0 {
			return 0, false, "no operations in the window"
		}
		return float64(n) / float64(of), true, ""
	case kindAchieved:
		if a.expected <= 0 {
			return 0, false, "no target rate in the window (closed loop or stopped)"
		}
		return float64(attempted) / a.expected, true, ""
	case kindRate:
		if a.seconds <= 0 {
			return 0, false, "no intervals in the window"
		}
		return float64(a.counts.Count()) / a.seconds, true, ""
	}
	return 0, false, "unknown metric"
}

func (t *Threshold) passes(v float64) bool {
	switch t.Op {
	case "<":
		return v < t.Bound
	case "<=":
		return v <= t.Bound
	case ">":
		return v > t.Bound
	}
	return v >= t.Bound
}

// format shows a value in the bound's unit.
func (t *Threshold) format(v float64) string {
	if math.IsInf(v, 1) {
		return "∞"
	}
	switch t.kind {
	case kindLatency:
		return fmtDuration(time.Duration(v * float64(time.Microsecond)))
	case kindRecovery:
		return fmtDuration(time.Duration(v * float64(time.Second)))
	case kindRatio, kindAchieved:
		if t.Percent || t.kind == kindAchieved {
			return fmt.Sprintf("%.3g%%", 100*v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f/s", v)
}

func fmtDuration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// tstate is one threshold's evaluation in progress.
type tstate struct {
	t        *Threshold
	from, to time.Time // to zero: open until the run ends
	known    bool      // from is known (its phase or hook has started)
	acc      accum
	ring     []*slot // sustained: the last Sustained seconds
	worst    *Result // sustained: the worst passing window so far
	rec      *recovery
	hookEnd  time.Time
	done     bool
	res      Result
}

type slot struct {
	s  *Second
	cs *ClassSecond
}

// recovery tracks a recovery check after its hook started.
type recovery struct {
	violated bool
	run      int
	runStart time.Time
}

// Evaluator judges thresholds from a stream of Seconds and timeline events. It is not
// safe for concurrent use: the runner feeds it from one goroutine.
type Evaluator struct {
	sc      *Scenario
	states  []*tstate
	events  map[string]time.Time
	lastMid time.Time
	// merged caches, for one Add, the sliding windows merged so far by class and span:
	// thresholds on one class over one sustained window share the merge.
	merged map[string]*accum
	// cut says why the run ended early, from cutAt on ("" when it runs to its end).
	cut   string
	cutAt time.Time
}

// Cut records that the run ends early, at at, for why: windows still open then are noted
// as cut short when they are judged.
func (e *Evaluator) Cut(why string, at time.Time) {
	if e.cut == "" {
		e.cut, e.cutAt = why, at
	}
}

// NewEvaluator returns an evaluator of sc's thresholds.
func NewEvaluator(sc *Scenario) *Evaluator {
	e := &Evaluator{sc: sc, events: map[string]time.Time{}}
	for _, t := range sc.Thresholds {
		st := &tstate{t: t, res: Result{Name: t.Name, Check: t.Check, Window: t.Window.Text, Class: t.Class, Metric: t.Metric,
			Suite: sc.suiteOf(t.Window), Status: NotEvaluated, Abort: t.Abort}}
		if st.res.Window == "" {
			st.res.Window = "run"
		}
		e.states = append(e.states, st)
	}
	return e
}

// suiteOf is the phase a window belongs to.
func (sc *Scenario) suiteOf(w Window) string {
	switch w.Kind {
	case "phase":
		return w.Ref
	case "during", "from":
		for _, h := range sc.Hooks {
			if h.Name == w.Ref {
				return sc.phaseAt(h.At)
			}
		}
	}
	return "run"
}

// phaseAt is the phase running at offset d (the last for an offset past the end).
func (sc *Scenario) phaseAt(d time.Duration) string {
	name := ""
	for _, p := range sc.Phases {
		if p.Start <= d {
			name = p.Name
		}
	}
	return name
}

// Classes are the classes whose intervals thresholds need.
func (sc *Scenario) ThresholdClasses() []string {
	var out []string
	for _, t := range sc.Thresholds {
		if !contains(out, t.Class) {
			out = append(out, t.Class)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Event kinds.
const (
	EvRunStart = "run"
	EvPhase    = "phase"
	EvPhaseEnd = "phaseEnd"
	EvHook     = "hook"
	EvHookEnd  = "hookEnd"
)

// Event records a timeline event (kind, and the phase or hook name) at at, and returns
// the thresholds it made fail.
func (e *Evaluator) Event(kind, name string, at time.Time) []Result {
	e.events[kind+":"+name] = at
	for _, st := range e.states {
		e.resolve(st)
	}
	return e.finishDue()
}

// resolve sets a threshold's window from the events known so far.
func (e *Evaluator) resolve(st *tstate) {
	if st.done {
		return
	}
	w := st.t.Window
	ev := func(k string) (time.Time, bool) { t, ok := e.events[k]; return t, ok }
	var from, to time.Time
	var ok bool
	switch w.Kind {
	case "run":
		from, ok = ev(EvRunStart + ":")
	case "phase":
		from, ok = ev(EvPhase + ":" + w.Ref)
		to, _ = ev(EvPhaseEnd + ":" + w.Ref)
	case "during":
		from, ok = ev(EvHook + ":" + w.Ref)
		// Latency is recorded when an operation completes: those the hook stalled complete
		// as it ends, so the window takes the interval after its end too.
		if end, ok := ev(EvHookEnd + ":" + w.Ref); ok {
			to = end.Add(time.Second)
		}
	case "from":
		from, ok = ev(EvHook + ":" + w.Ref)
		from = from.Add(w.Offset)
		if st.t.kind == kindRecovery && st.rec == nil && ok {
			st.rec = &recovery{}
		}
		st.hookEnd, _ = ev(EvHookEnd + ":" + w.Ref)
	}
	if !ok {
		return
	}
	if w.For > 0 && (to.IsZero() || from.Add(w.For).Before(to)) {
		to = from.Add(w.For)
	}
	st.from, st.to, st.known = from, to, true
}

// finishDue finishes the windows that the intervals seen so far have passed.
func (e *Evaluator) finishDue() []Result {
	var failed []Result
	for _, st := range e.states {
		if st.done || !st.known || st.to.IsZero() || e.lastMid.Before(st.to) {
			continue
		}
		e.finish(st, "")
		if st.res.Status == Fail {
			failed = append(failed, st.res)
		}
	}
	return failed
}

// Add judges one interval and returns the thresholds that failed with it.
func (e *Evaluator) Add(s *Second) []Result {
	mid := s.mid()
	e.lastMid = mid
	var failed []Result
	e.merged = map[string]*accum{}
	for _, st := range e.states {
		if st.done || !st.known {
			continue
		}
		cs := s.Ops[st.t.Class]
		if cs == nil {
			cs = &ClassSecond{}
		}
		if st.rec != nil {
			if e.recover(st, s, cs) && st.res.Status == Fail {
				failed = append(failed, st.res)
			}
			continue
		}
		if mid.Before(st.from) || (!st.to.IsZero() && !mid.Before(st.to)) {
			continue
		}
		if st.t.Window.Sustained > 0 {
			if e.slide(st, s, cs) {
				failed = append(failed, st.res)
			}
			continue
		}
		st.acc.add(s, cs)
	}
	return append(failed, e.finishDue()...)
}

// slide adds an interval to a sustained window and judges the sliding window once it is
// full; it reports whether the threshold failed.
func (e *Evaluator) slide(st *tstate, s *Second, cs *ClassSecond) bool {
	n := int(st.t.Window.Sustained / time.Second)
	st.ring = append(st.ring, &slot{s, cs})
	if len(st.ring) > n {
		st.ring[0] = nil
		st.ring = st.ring[1:]
	}
	if len(st.ring) < n {
		return false
	}
	key := fmt.Sprint(st.t.Class, st.from.UnixNano(), st.to.UnixNano(), n)
	a := e.merged[key]
	if a == nil {
		a = st.mergeRing()
		e.merged[key] = a
	}
	r := st.res
	st.judge(&r, a)
	if r.Status == Fail {
		st.res, st.done = r, true
		return true
	}
	if st.worst == nil || st.worse(r, *st.worst) {
		st.worst = &r
	}
	return false
}

// mergeRing merges the sliding window's intervals.
func (st *tstate) mergeRing() *accum {
	a := &accum{}
	for _, sl := range st.ring {
		a.add(sl.s, sl.cs)
	}
	return a
}

// judgeRing merges the sliding window's intervals and judges them.
func (st *tstate) judgeRing() Result {
	r := st.res
	st.judge(&r, st.mergeRing())
	return r
}

// worse reports whether a is further from failing than b is not (the worst window).
func (st *tstate) worse(a, b Result) bool {
	if a.Value == nil || b.Value == nil {
		return a.Value == nil
	}
	if st.t.Op == "<" || st.t.Op == "<=" {
		return *a.Value > *b.Value
	}
	return *a.Value < *b.Value
}

// judge fills r from the merged window a.
func (st *tstate) judge(r *Result, a *accum) {
	r.Intervals, r.From, r.To = a.n, a.from, a.end
	defer partialNote(r, a)
	v, ok, detail := st.t.value(a)
	if !ok {
		r.Status, r.Observed, r.Value, r.Detail = Fail, "no data", nil, detail
		return
	}
	r.Value, r.Observed = &v, st.t.format(v)
	r.Status = Fail
	if st.t.passes(v) {
		r.Status = Pass
	}
}

// recover feeds a recovery check; it reports whether the check finished.
func (e *Evaluator) recover(st *tstate, s *Second, cs *ClassSecond) bool {
	if !s.End.After(st.from) {
		return false
	}
	if !st.to.IsZero() && !s.mid().Before(st.to) {
		e.finish(st, "")
		return true
	}
	rc := st.rec
	st.acc.n++
	st.acc.notePartial(s)
	if !st.t.SLA.ok(cs) {
		rc.violated, rc.run = true, 0
		return false
	}
	if st.hookEnd.IsZero() || s.Start.Before(st.hookEnd) {
		return false // the fault may still be in force: a stretch within the SLA counts after it
	}
	if rc.run == 0 {
		rc.runStart = s.Start
	}
	rc.run++
	if time.Duration(rc.run)*time.Second < st.t.SLA.Stable {
		return false
	}
	v := 0.0
	if rc.violated {
		v = rc.runStart.Sub(st.from).Seconds()
	}
	r := &st.res
	r.From, r.To, r.Intervals = st.from, s.End, st.acc.n
	r.Value, r.Observed = &v, st.t.format(v)
	r.Detail = fmt.Sprintf("back within the SLA (%s) %s after the hook started", st.t.SLA.Text, fmtDuration(time.Duration(v*float64(time.Second))))
	if !rc.violated {
		r.Detail = fmt.Sprintf("never left the SLA (%s)", st.t.SLA.Text)
	}
	r.Status = Fail
	if st.t.passes(v) {
		r.Status = Pass
	}
	partialNote(r, &st.acc)
	st.done = true
	return true
}

// ok reports whether one interval of a class is within the SLA. An interval that owed
// operations and completed none is not (a stalled store answers nothing, so it has no
// latency to judge), nor is one whose backlog alone exceeds the latency bound: the
// operations overdue will complete that late.
func (s *SLA) ok(cs *ClassSecond) bool {
	attempted := float64(cs.Count() + cs.Errors())
	if cs.Expected > 0 && attempted == 0 {
		return false
	}
	if s.Achieved > 0 && cs.Expected > 0 && attempted < s.Achieved*cs.Expected {
		return false
	}
	if s.Errors >= 0 && attempted > 0 && float64(cs.Errors())/attempted > s.Errors {
		return false
	}
	if s.Latency > 0 {
		if float64(cs.Backlog.Microseconds()) > s.Latency {
			return false
		}
		if cs.Response != nil && cs.Response.TotalCount() > 0 {
			v := cs.Response.Mean()
			if s.Quantile >= 0 {
				v = float64(cs.Response.ValueAtQuantile(s.Quantile))
			}
			if v > s.Latency {
				return false
			}
		}
	}
	return true
}

// finish judges a window as it stands. why, when set, is why it ends early.
func (e *Evaluator) finish(st *tstate, why string) {
	if st.done {
		return
	}
	st.done = true
	r := &st.res
	switch {
	case st.rec != nil:
		// Not recovered: the value is unbounded (no number in the JSON).
		r.From, r.Intervals = st.from, st.acc.n
		r.Status, r.Observed, r.Value = Fail, st.t.format(math.Inf(1)), nil
		r.Detail = "did not recover within the window"
		if st.hookEnd.IsZero() {
			r.Detail = "the hook had not ended when the window closed"
		}
		partialNote(r, &st.acc)
	case st.t.Window.Sustained > 0:
		if st.worst != nil {
			*r = *st.worst
			r.Detail = fmt.Sprintf("every %s window held; the worst is shown", st.t.Window.Sustained)
		} else if len(st.ring) > 0 {
			// The window was shorter than the sliding length: judged as a whole.
			*r = st.judgeRing()
			r.Detail = fmt.Sprintf("the window was shorter than %s: judged as a whole", st.t.Window.Sustained)
		} else {
			r.Status, r.Observed, r.Detail = Fail, "no data", "no intervals in the window"
		}
	default:
		if st.acc.n == 0 {
			r.Status, r.Observed, r.Detail = Fail, "no data", "no intervals in the window"
			r.From, r.To = st.from, st.to
			break
		}
		st.judge(r, &st.acc)
	}
	if why == "" && e.cut != "" && (st.to.IsZero() || st.to.After(e.cutAt)) {
		why = "window cut short: " + e.cut
	}
	if why != "" {
		r.Detail = joinDetail(r.Detail, why)
	}
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Close ends the evaluation: open windows are judged as they stand; windows that never
// started stay not evaluated.
func (e *Evaluator) Close() {
	for _, st := range e.states {
		if st.done || !st.known {
			if !st.done && e.cut != "" {
				st.res.Detail = "not reached: " + e.cut
			}
			continue
		}
		e.finish(st, "")
	}
}

// Results returns every threshold's outcome, in file order.
func (e *Evaluator) Results() []Result {
	out := make([]Result, len(e.states))
	for i, st := range e.states {
		out[i] = st.res
	}
	return out
}
