package autotune

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/pacer"
)

// Prober runs load at a total rate and measures it: the search's view of a node (see
// NodeProber) or of a simulated store in tests.
type Prober interface {
	// Probe sets the load to rate (ops/s over all tuned classes), lets it settle for
	// p.Settle, then measures a window of at least p.Window, longer until every class has
	// p.SLA(class).Samples() operations, and at most p.MaxWindow.
	Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error)
}

// Restarter is a Prober that can restart its load, dropping what the schedule owes.
type Restarter interface {
	Restart() error
}

// ProbeSpec is how one step is measured.
type ProbeSpec struct {
	Settle, Window, MaxWindow time.Duration
	// SLA returns class's SLA: its percentile is measured, and the window needs its
	// Samples.
	SLA func(class string) SLA
}

// Settings configure a search. Zero fields take the defaults noted.
type Settings struct {
	// SLA applies to every tuned class without its own entry in Classes.
	SLA     SLA            `json:"sla"`
	Classes map[string]SLA `json:"classes,omitempty"`
	// Generator bounds when the generator counts as saturated.
	Generator Generator `json:"generator"`
	// Start is the first rate tried (total ops/s); default 1000.
	Start float64 `json:"start"`
	// MinRate ends a search whose rates fall below it without one within SLA (default
	// 1 op/s); MaxRate ends the bracket when reached within SLA (default 10M).
	MinRate float64 `json:"minRate"`
	MaxRate float64 `json:"maxRate"`
	// Tolerance ends the bisection at hi/lo ≤ 1+Tolerance; default 0.02.
	Tolerance float64 `json:"tolerance"`
	// Settle is how long each step runs before its window (default 2 s; NoSettle for
	// none); Window the
	// window's least length (default 5 s), MaxWindow its most (default 60 s), whatever
	// the percentile's samples need.
	Settle    time.Duration `json:"settle"`
	Window    time.Duration `json:"window"`
	MaxWindow time.Duration `json:"maxWindow"`
	// Confirm is the least length of the confirmation window at the found rate; default
	// three windows.
	Confirm time.Duration `json:"confirm"`
	// StepDown is how far a failed confirmation steps the rate down before retrying
	// (default: Tolerance, the bisection's resolution: the highest rate that passed a
	// short window is the likeliest to have passed by luck, and the knee lies within a
	// resolution below it; a larger step threw away what the bisection found, 5% where
	// 2% was asked), at most ConfirmRetries times (default 3).
	StepDown       float64 `json:"stepDown"`
	ConfirmRetries int     `json:"confirmRetries"`
	// ClientRetries is how often a client-bound step is run again before the search
	// ends on it (a busy machine's moment is not the generator's limit); default 1, -1
	// for none.
	ClientRetries int `json:"clientRetries"`
	// FailRetries is how often a step that violated the SLA is run again, after
	// recovering, before its rate counts as outside the SLA: a moment's disturbance (a
	// busy machine, a store's compaction) must not set the upper bound. Default 1, -1
	// for none.
	FailRetries int `json:"failRetries"`
	// Recover bounds how long the load runs at a lower rate after a violation, before
	// the next step, for the store to come back within SLA; default 30 s.
	Recover time.Duration `json:"recover"`
	// Hold keeps the load at the highest rate within SLA after the search, tracking
	// drift by AIMD, for HoldFor (0: until the context ends).
	Hold    bool          `json:"hold,omitempty"`
	HoldFor time.Duration `json:"holdFor,omitempty"`
	// Clock times the search (its start and end, the hold's and recovery's deadlines); nil
	// is the real clock. Tests on a model store pass a clock.Sim that the model advances
	// by each window it measures.
	Clock clock.Clock `json:"-"`
	// HoldIncrease is the additive increase per window in hold mode, as a fraction of
	// the found capacity (default 0.01); HoldDecrease the multiplicative factor after a
	// violation (default 0.9).
	HoldIncrease float64 `json:"holdIncrease,omitempty"`
	HoldDecrease float64 `json:"holdDecrease,omitempty"`
	// OnStep, when set, is called after every step (progress).
	OnStep func(Step) `json:"-"`

	// defaulted marks settings WithDefaults has filled, so that filling again keeps a
	// Settle of NoSettle, which the first fill turned into zero, at zero.
	defaulted bool
}

// NoSettle, as Settings.Settle, asks for steps measured from their first instant:
// Settle's zero value means the default (2 s), so a settle of zero is asked for with this.
const NoSettle time.Duration = -1

// WithDefaults returns s with its zero fields set to the defaults.
func (s Settings) WithDefaults() Settings {
	if s.defaulted {
		return s
	}
	s.defaulted = true
	if s.SLA == (SLA{}) {
		s.SLA = DefaultSLA
	}
	s.Generator = s.Generator.withDefaults()
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&s.Start, 1000)
	def(&s.MinRate, 1)
	def(&s.MaxRate, 10e6)
	def(&s.Tolerance, 0.02)
	switch s.Settle {
	case 0:
		s.Settle = 2 * time.Second
	case NoSettle:
		s.Settle = 0
	}
	defD(&s.Window, 5*time.Second)
	defD(&s.MaxWindow, 60*time.Second)
	defD(&s.Confirm, 3*s.Window)
	def(&s.StepDown, s.Tolerance)
	if s.ConfirmRetries == 0 {
		s.ConfirmRetries = 3
	}
	defD(&s.Recover, 30*time.Second)
	for _, n := range []*int{&s.ClientRetries, &s.FailRetries} {
		switch {
		case *n == 0:
			*n = 1
		case *n < 0:
			*n = 0
		}
	}
	def(&s.HoldIncrease, 0.01)
	def(&s.HoldDecrease, 0.9)
	return s
}

// Validate returns an error naming the setting and its allowed values.
func (s Settings) Validate() error {
	if err := s.SLA.Validate(); err != nil {
		return err
	}
	for c, sla := range s.Classes {
		if err := sla.Validate(); err != nil {
			return fmt.Errorf("SLA of class %s: %w", c, err)
		}
	}
	pos := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: invalid value %v; allowed: a finite number above 0", name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"start", s.Start}, {"min-rate", s.MinRate}, {"max-rate", s.MaxRate}, {"tolerance", s.Tolerance}} {
		if err := pos(c.name, c.v); err != nil {
			return err
		}
	}
	switch {
	case s.MaxRate > pacer.MaxRate:
		// Every rate the search sets is a pacer's: past its highest the shapes refuse it.
		return fmt.Errorf("max-rate: invalid value %v; allowed: a number above 0 up to %v, the highest rate of any workload", s.MaxRate, float64(pacer.MaxRate))
	case s.MinRate > s.Start || s.Start > s.MaxRate:
		return fmt.Errorf("start: invalid value %v; allowed: from min-rate %v to max-rate %v", s.Start, s.MinRate, s.MaxRate)
	case s.Tolerance > 1:
		return fmt.Errorf("tolerance: invalid value %v; allowed: above 0 up to 1 (0.02 = 2%%)", s.Tolerance)
	case s.Settle < 0:
		return fmt.Errorf("settle: invalid value %v; allowed: a duration ≥ 0", s.Settle)
	case s.Window < time.Second:
		return fmt.Errorf("window: invalid value %v; allowed: at least 1s (intervals are 1 s)", s.Window)
	case s.MaxWindow < s.Window:
		return fmt.Errorf("max-window: invalid value %v; allowed: at least the window %v", s.MaxWindow, s.Window)
	case s.Confirm < s.Window:
		return fmt.Errorf("confirm: invalid value %v; allowed: at least the window %v", s.Confirm, s.Window)
	case !(s.StepDown > 0 && s.StepDown < 1):
		return fmt.Errorf("step-down: invalid value %v; allowed: above 0 and below 1", s.StepDown)
	case s.ConfirmRetries < 0:
		return fmt.Errorf("confirm-retries: invalid value %d; allowed: 0 or more", s.ConfirmRetries)
	case s.Recover < time.Second:
		return fmt.Errorf("recover: invalid value %v; allowed: at least 1s", s.Recover)
	case s.HoldFor < 0:
		return fmt.Errorf("duration: invalid value %v; allowed: 0 (until stopped) or a positive duration", s.HoldFor)
	case !(s.HoldIncrease > 0 && s.HoldIncrease < 1):
		return fmt.Errorf("hold-increase: invalid value %v; allowed: above 0 and below 1", s.HoldIncrease)
	case !(s.HoldDecrease > 0 && s.HoldDecrease < 1):
		return fmt.Errorf("hold-decrease: invalid value %v; allowed: above 0 and below 1", s.HoldDecrease)
	case !(s.Generator.CPU > 0 && s.Generator.CPU <= 1):
		return fmt.Errorf("client-cpu: invalid value %v; allowed: above 0 up to 1", s.Generator.CPU)
	case s.Generator.StartLag < 0:
		return fmt.Errorf("client-lag: invalid value %v; allowed: 0 (half the latency bound) or a positive duration", s.Generator.StartLag)
	}
	return nil
}

// slaOf returns class's SLA.
func (s Settings) slaOf(class string) SLA {
	if sla, ok := s.Classes[class]; ok {
		return sla
	}
	return s.SLA
}

// Phases of a step.
const (
	PhaseBracket = "bracket" // doubling from the start rate
	PhaseDown    = "down"    // halving after the start rate itself failed
	PhaseBisect  = "bisect"  // bisecting [lo, hi] in log space
	PhaseConfirm = "confirm" // the longer window at the found rate
	PhaseRecover = "recover" // a lower rate after a violation, until back within SLA
	PhaseHold    = "hold"    // AIMD at the highest rate within SLA
)

// Step is one rate the search ran and how it was judged.
type Step struct {
	N     int    `json:"n"`
	Phase string `json:"phase"`
	// Rate is the total target rate; Achieved the attempted ops/s over all classes.
	Rate     float64  `json:"rate"`
	Achieved float64  `json:"achieved"`
	Verdict  Verdict  `json:"verdict"`
	Why      []string `json:"why,omitempty"`
	// Because is why the search ran this rate, in one line: the step before it and what
	// the search made of it (double, halve, recover, bisect between which steps, retry,
	// confirm), so a return to a higher rate after a failed one is explained.
	Because string `json:"because,omitempty"`
	Measurement
}

// Statuses of a result.
const (
	// StatusFound: Capacity is the highest rate confirmed within SLA, Hi the lowest that
	// was not.
	StatusFound = "found"
	// StatusClientBound: the generator saturated before the store violated its SLA; the
	// store's capacity is above Lo, the highest rate measured within SLA.
	StatusClientBound = "client-bound"
	// StatusAboveMax: every rate up to the maximum was within SLA.
	StatusAboveMax = "above-max"
	// StatusNone: no rate down to the minimum was within SLA.
	StatusNone = "none-within-sla"
	// StatusNotConfirmed: the confirmation failed at every retry.
	StatusNotConfirmed = "not-confirmed"
	// StatusStopped: the search was stopped (context) before it ended.
	StatusStopped = "stopped"
	// StatusError: the node failed (see Message).
	StatusError = "error"
)

// Result is what a search found.
type Result struct {
	Status string `json:"status"`
	// Capacity is the highest total rate confirmed within SLA (StatusFound, and the
	// maximum for StatusAboveMax); 0 otherwise.
	Capacity float64 `json:"capacity"`
	// Lo is the highest rate measured within SLA, Hi the lowest measured outside it (0
	// when none was): the capacity lies in [Lo, Hi].
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// PerClass splits Capacity over the tuned classes by their share of the load.
	PerClass map[string]float64 `json:"perClass,omitempty"`
	Message  string             `json:"message"`
	Steps    []Step             `json:"steps"`
	Started  time.Time          `json:"started"`
	Ended    time.Time          `json:"ended"`
	Seconds  float64            `json:"seconds"`
	Settings Settings           `json:"settings"`
	// Hold is what hold mode did after the search (nil without --hold).
	Hold *HoldResult `json:"hold,omitempty"`
}

// HoldResult is what hold mode did: the rates its windows ran at.
type HoldResult struct {
	Final    float64 `json:"final"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Mean     float64 `json:"mean"`
	Windows  int     `json:"windows"`
	Failures int     `json:"failures"`
}

// searcher is one search's state: lo is the highest rate within SLA, hi the lowest
// outside it.
type searcher struct {
	s        Settings
	p        Prober
	clk      clock.Clock
	res      *Result
	lo, hi   float64
	baseline map[string]float64 // mean service time per class at the lowest passing rate
	// loStep and hiStep are the steps that measured lo and hi (0: none).
	loStep, hiStep int
	// because is the next step's Because, set by whatever chose its rate.
	because string
}

// Search finds the highest total rate within SLA through p. It returns the result so far
// with StatusStopped when ctx ends, and StatusError when the node fails.
func Search(ctx context.Context, p Prober, s Settings) *Result {
	s = s.WithDefaults()
	clk := clock.Or(s.Clock)
	res := &Result{Started: clk.Now(), Settings: s, Steps: []Step{}}
	defer func() {
		res.Ended = clk.Now()
		res.Seconds = res.Ended.Sub(res.Started).Seconds()
	}()
	if err := s.Validate(); err != nil {
		res.Status, res.Message = StatusError, err.Error()
		return res
	}
	se := &searcher{s: s, p: p, clk: clk, res: res, hi: math.Inf(1)}
	se.search(ctx)
	res.Lo = se.lo
	if !math.IsInf(se.hi, 1) {
		res.Hi = se.hi
	}
	if res.Status == StatusStopped {
		stoppedSoFar(res)
	}
	if s.Hold && ctx.Err() == nil && (res.Status == StatusFound || res.Status == StatusAboveMax || res.Status == StatusClientBound) && se.lo > 0 {
		res.Hold = se.hold(ctx, se.lo)
	}
	return res
}

// stoppedSoFar gives a search stopped before its end what its steps measured: Lo the
// highest rate a step found within SLA, Hi the lowest a step found outside it (a
// confirmation that failed lowers the search's own bounds below what was measured), and
// says both in the message, so an interrupted search still tells what it learnt.
func stoppedSoFar(res *Result) {
	res.Lo, res.Hi = 0, 0
	var pass, fail Step
	for _, st := range res.Steps {
		switch {
		case st.Verdict == Pass && st.Rate > res.Lo:
			res.Lo, pass = st.Rate, st
		case st.Verdict == Fail && (res.Hi == 0 || st.Rate < res.Hi):
			res.Hi, fail = st.Rate, st
		}
	}
	var so []string
	if res.Lo > 0 {
		so = append(so, fmt.Sprintf("the highest rate within SLA was %s ops/s (step %d, not confirmed)", rateText(res.Lo), pass.N))
	} else {
		so = append(so, "no step was within SLA")
	}
	if res.Hi > 0 {
		so = append(so, fmt.Sprintf("the lowest outside it %s ops/s (step %d)", rateText(res.Hi), fail.N))
	}
	res.Message += "; so far " + strings.Join(so, ", ")
}

// run runs one step and records it; ok is false when the search must end (node error or
// stop), with the result's status set.
func (se *searcher) run(ctx context.Context, phase string, rate float64, window time.Duration, settle time.Duration) (Step, bool) {
	spec := ProbeSpec{Settle: settle, Window: window, MaxWindow: max(se.s.MaxWindow, window),
		SLA: se.s.slaOf}
	m, err := se.p.Probe(ctx, rate, spec)
	if err != nil {
		if ctx.Err() != nil {
			se.res.Status, se.res.Message = StatusStopped, "stopped during a step at "+rateText(rate)+" ops/s"
		} else {
			se.res.Status, se.res.Message = StatusError, fmt.Sprintf("step at %s ops/s: %v", rateText(rate), err)
		}
		return Step{}, false
	}
	v, why := Judge(m, se.s.Classes, se.s.SLA, se.s.Generator, se.baseline)
	if v == Pass && phase != PhaseRecover {
		// The store's mean service time at the lowest rate within SLA (see Judge).
		if se.baseline == nil {
			se.baseline = map[string]float64{}
		}
		for c, cm := range m.Classes {
			if b, ok := se.baseline[c]; !ok || cm.ServiceMean < b {
				se.baseline[c] = cm.ServiceMean
			}
		}
	}
	st := Step{N: len(se.res.Steps) + 1, Phase: phase, Rate: rate, Verdict: v, Why: why, Because: se.because, Measurement: m}
	se.because = ""
	for _, c := range m.Classes {
		st.Achieved += c.Achieved
	}
	se.res.Steps = append(se.res.Steps, st)
	if se.s.OnStep != nil {
		se.s.OnStep(st)
	}
	return st, true
}

func (se *searcher) probe(ctx context.Context, phase string, rate float64) (Step, bool) {
	return se.retried(ctx, phase, rate, se.s.Window)
}

// retried runs a step, again while it is client-bound, up to ClientRetries times, and
// again after a violation, up to FailRetries times, recovering first at half the rate and
// settling longer.
func (se *searcher) retried(ctx context.Context, phase string, rate float64, window time.Duration) (Step, bool) {
	clientTries, failTries := 0, 0
	for {
		// A repeat settles twice as long: a transient of the rate change itself (pools
		// growing, a cache or connection warming) must not fail the rate twice.
		st, ok := se.run(ctx, phase, rate, window, se.s.Settle*time.Duration(1+failTries))
		if !ok {
			return st, ok
		}
		switch {
		case st.Verdict == ClientBound && clientTries < se.s.ClientRetries:
			clientTries++
			se.because = fmt.Sprintf("again: %s was client-bound at step %d (retry %d of %d)", rateText(rate), st.N, clientTries, se.s.ClientRetries)
		case st.Verdict == Fail && failTries < se.s.FailRetries:
			failTries++
			if !se.recover(ctx, rate/2, st) {
				return st, false
			}
			se.because = fmt.Sprintf("again, settling %dx longer: %s failed at step %d, maybe a transient (retry %d of %d)",
				1+failTries, rateText(rate), st.N, failTries, se.s.FailRetries)
		default:
			return st, true
		}
	}
}

// clientBound ends the search at a client-bound step.
func (se *searcher) clientBound(st Step) {
	se.res.Status = StatusClientBound
	low := "no rate was measured within SLA before it"
	if se.lo > 0 {
		low = fmt.Sprintf("the store's capacity is above %s ops/s, the highest rate measured within SLA", rateText(se.lo))
	}
	se.res.Message = fmt.Sprintf("client-bound at %s ops/s (achieved %s): the load generator saturated before the store left its SLA, so %s; %s",
		rateText(st.Rate), rateText(st.Achieved), low, clientAdvice(st))
}

// clientAdvice says what would lift a client-bound step's limit. By Little's law (achieved
// rate × mean service time) the workers were mostly in the store, or mostly free: only
// when busy do more workers help; free workers that still started operations late point
// at the generator's CPU (issue 36: the advice said "add workers" when the steps showed
// free workers).
func clientAdvice(st Step) string {
	busy, workers := 0.0, 0
	for _, c := range st.Classes {
		busy += c.Achieved * c.ServiceMean / 1e6
		workers += c.Workers
	}
	if workers > 0 && busy < 0.8*float64(workers) {
		return fmt.Sprintf("its %d workers were mostly free (%.1f in the store on average), so more workers will not help: "+
			"give it more cores (a less loaded machine) or more nodes", workers, busy)
	}
	return "give the generator more workers (workload.readers/maxReaders, writers/maxWriters), cores or nodes"
}

// recover runs at rate, half the violating one, in one-second windows without settle,
// until a window is within SLA, so the backlog a violation left in the store does not
// count against the next step.
// It gives up after Recover (in windows of a second) and goes on. A prober that can
// restart its load (Restarter) does so first, dropping the operations the violating step
// still owed: they were charged to it, and replaying them would charge the next steps.
func (se *searcher) recover(ctx context.Context, rate float64, failed Step) bool {
	if r, ok := se.p.(Restarter); ok {
		if err := r.Restart(); err != nil {
			se.res.Status, se.res.Message = StatusError, fmt.Sprintf("restart the load to recover: %v", err)
			return false
		}
	}
	deadline := se.clk.Now().Add(se.s.Recover)
	se.because = fmt.Sprintf("recover at half of %s (failed, step %d): drains the store's backlog; not a candidate", rateText(failed.Rate), failed.N)
	for n := 1; ; n++ {
		st, ok := se.run(ctx, PhaseRecover, rate, time.Second, 0)
		if !ok {
			return false
		}
		if st.Verdict != Fail || !se.clk.Now().Before(deadline) || n >= int(se.s.Recover/time.Second) {
			return true // a client-bound recovery is not the store's backlog; go on
		}
		se.because = fmt.Sprintf("recover again: step %d still outside SLA, step %d's backlog draining", st.N, failed.N)
	}
}

func (se *searcher) search(ctx context.Context) {
	s := se.s
	r := s.Start
	// Bracket: double until the first violation; when the start itself fails, halve
	// until a rate passes.
	phase := PhaseBracket
	se.because = "the start rate (--start)"
	for {
		st, ok := se.probe(ctx, phase, r)
		if !ok {
			return
		}
		switch st.Verdict {
		case ClientBound:
			se.clientBound(st)
			return
		case Pass:
			se.lo, se.loStep = r, st.N
			if !math.IsInf(se.hi, 1) {
				goto bisect
			}
			if r >= s.MaxRate {
				se.res.Status, se.res.Capacity = StatusAboveMax, r
				se.res.Message = fmt.Sprintf("every rate up to the maximum %s ops/s was within SLA; raise --max-rate", rateText(s.MaxRate))
				se.perClass(r)
				return
			}
			r = min(2*r, s.MaxRate)
			se.because = fmt.Sprintf("double: %s was within SLA at step %d", rateText(st.Rate), st.N)
		case Fail:
			se.hi, se.hiStep = r, st.N
			if se.lo > 0 {
				if !se.recover(ctx, r/2, st) {
					return
				}
				goto bisect
			}
			phase = PhaseDown
			r /= 2
			se.because = fmt.Sprintf("halve: %s failed at step %d and no rate has passed yet", rateText(st.Rate), st.N)
			if r < s.MinRate {
				se.res.Status = StatusNone
				se.res.Message = fmt.Sprintf("no rate down to the minimum %s ops/s was within SLA", rateText(s.MinRate))
				return
			}
			// The next step is the lower rate: its settle period is the recovery.
		}
	}
bisect:
	for se.hi/se.lo > 1+s.Tolerance {
		r := math.Sqrt(se.lo * se.hi)
		se.because = se.between("bisect")
		st, ok := se.probe(ctx, PhaseBisect, r)
		if !ok {
			return
		}
		switch st.Verdict {
		case ClientBound:
			se.clientBound(st)
			return
		case Pass:
			se.lo, se.loStep = r, st.N
		case Fail:
			se.hi, se.hiStep = r, st.N
			if !se.recover(ctx, r/2, st) {
				return
			}
		}
	}
	// Confirm the found rate over a longer window; step down and retry when it fails.
	se.because = se.between("confirm over " + s.Confirm.String() + " the lower of")
	for try := 0; ; try++ {
		st, ok := se.retried(ctx, PhaseConfirm, se.lo, s.Confirm)
		if !ok {
			return
		}
		switch st.Verdict {
		case ClientBound:
			se.clientBound(st)
			return
		case Pass:
			se.res.Status, se.res.Capacity = StatusFound, se.lo
			se.res.Message = fmt.Sprintf("capacity %s ops/s within SLA (interval [%s, %s] ops/s)", rateText(se.lo), rateText(se.lo), rateText(se.hi))
			se.perClass(se.lo)
			return
		}
		if try >= s.ConfirmRetries {
			se.res.Status = StatusNotConfirmed
			se.res.Message = fmt.Sprintf("the confirmation failed %d times, down to %s ops/s: the store does not hold a steady rate within SLA", try+1, rateText(se.lo))
			return
		}
		se.hi, se.hiStep = se.lo, st.N
		se.lo *= 1 - s.StepDown
		if se.lo < s.MinRate {
			se.res.Status = StatusNone
			se.res.Message = fmt.Sprintf("no rate down to the minimum %s ops/s held within SLA", rateText(s.MinRate))
			return
		}
		if !se.recover(ctx, se.hi/2, st) {
			return
		}
		se.because = fmt.Sprintf("confirm %s: %.0f%% below %s, whose confirmation failed at step %d", rateText(se.lo), 100*s.StepDown, rateText(se.hi), st.N)
	}
}

// between says which steps bound the search's interval, for a step that the interval
// decides: the highest rate within SLA and the lowest outside it. Named with their steps,
// a return to a higher rate after failed recovery steps reads as what it is.
func (se *searcher) between(what string) string {
	text := fmt.Sprintf("%s %s (passed, step %d) .. %s (failed, step %d)", what, rateText(se.lo), se.loStep, rateText(se.hi), se.hiStep)
	if n := len(se.res.Steps); n > 0 && se.res.Steps[n-1].Phase == PhaseRecover {
		text += "; recovery steps only drain"
	}
	return text
}

// perClass splits rate over the classes of the last step by their targets' shares.
func (se *searcher) perClass(rate float64) {
	if len(se.res.Steps) == 0 {
		return
	}
	last := se.res.Steps[len(se.res.Steps)-1]
	var total float64
	for _, c := range last.Classes {
		total += c.Target
	}
	if total == 0 {
		return
	}
	se.res.PerClass = map[string]float64{}
	for name, c := range last.Classes {
		se.res.PerClass[name] = rate * c.Target / total
	}
}

// hold runs AIMD from rate: each window within SLA adds HoldIncrease of base, each
// violation multiplies by HoldDecrease; a client-bound window keeps the rate. It runs
// until ctx ends or HoldFor has passed.
func (se *searcher) hold(ctx context.Context, base float64) *HoldResult {
	s := se.s
	h := &HoldResult{Min: base, Max: base}
	var until time.Time
	if s.HoldFor > 0 {
		until = se.clk.Now().Add(s.HoldFor)
	}
	status := se.res.Status
	defer func() { se.res.Status = status }() // hold's stop is not the search's
	r, settle, sum := base, s.Settle, 0.0
	se.because = "hold: start at the highest rate within SLA"
	for ctx.Err() == nil && (until.IsZero() || se.clk.Now().Before(until)) {
		st, ok := se.run(ctx, PhaseHold, r, s.Window, settle)
		if !ok {
			break
		}
		h.Windows++
		sum += r
		h.Min, h.Max = min(h.Min, r), max(h.Max, r)
		settle = 0
		switch st.Verdict {
		case Pass:
			r += s.HoldIncrease * base
			settle = s.Settle
			se.because = fmt.Sprintf("hold: up by %s ops/s after step %d within SLA", rateText(s.HoldIncrease*base), st.N)
		case Fail:
			h.Failures++
			r = max(r*s.HoldDecrease, s.MinRate)
			settle = s.Settle
			se.because = fmt.Sprintf("hold: down to %.0f%% after step %d outside SLA", 100*s.HoldDecrease, st.N)
		default:
			se.because = fmt.Sprintf("hold: same rate, step %d was client-bound", st.N)
		}
	}
	h.Final = r
	if h.Windows > 0 {
		h.Mean = sum / float64(h.Windows)
	}
	return h
}

// ErrNoClasses is returned when there is no op class to tune.
var ErrNoClasses = errors.New("no op class to tune: enable a class with a rate above 0 (e.g. workload.readRate), or name one with --class")
