package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/internal/autotune"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/verdict"
)

// Node is what a scenario drives: the one node interface (control.Node), a node or a
// fleet view. Intervals come from Collector's subscription, so a fleet view whose
// collector is fed by its merge (stats.Collector.Ingest) is judged the same way.
type Node = control.Node

// Mark is a phase or a hook on the run's timeline, as reports show them.
type Mark struct {
	Kind  string    `json:"kind"` // "phase" or "hook"
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Detail is a phase's load or a hook's action; Error a hook's failure.
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Outcome is what a scenario run produced.
type Outcome struct {
	Scenario   string    `json:"scenario"`
	File       string    `json:"file"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	Marks      []Mark    `json:"marks"`
	Thresholds []Result  `json:"thresholds"`
	// AbortedBy names the threshold that aborted the run.
	AbortedBy string `json:"abortedBy,omitempty"`
	// Error is a hook or node failure that ended the run (exit code 2).
	Error string `json:"error,omitempty"`
	// Interrupted is set when a signal ended the run (exit code 3, never a pass).
	Interrupted bool `json:"interrupted,omitempty"`
	// Invalid lists why the results cannot be trusted (the generator was saturated).
	Invalid []string `json:"invalid,omitempty"`
	// Phases are the scenario's phases, in order (JUnit's testsuites).
	Phases []string `json:"phases"`
	// Capacity has each auto-tune phase's search, in phase order; its verdict is also a
	// threshold result ("capacity", in the phase's suite).
	Capacity []PhaseCapacity `json:"capacity,omitempty"`
}

// PhaseCapacity is what an auto-tune phase found.
type PhaseCapacity struct {
	Phase       string           `json:"phase"`
	MinCapacity float64          `json:"minCapacity,omitempty"`
	Result      *autotune.Result `json:"result"`
}

// Exit codes of a scenario run: the table every command shares (package verdict).
const (
	ExitPass    = verdict.Pass
	ExitFailed  = verdict.Failed
	ExitError   = verdict.Usage
	ExitAborted = verdict.Aborted
	ExitInvalid = verdict.Invalid
)

// ExitCode is the process exit code for the outcome, by the one verdict every command
// shares (verdict.Judge). An interrupted run exits 3 as an aborted one does, whatever its
// thresholds said so far: the load it was to judge did not all run, and a cancelled CI job
// must not gate green.
func (o *Outcome) ExitCode() int { return verdict.Judge(o.Judgement()).Code }

// Judgement is what the outcome is judged from (verdict.Judge): its error, its abort or
// interruption, why its figures are the generator's, and its failed thresholds.
func (o *Outcome) Judgement() verdict.Judgement {
	j := verdict.Judgement{By: "thresholds", Invalid: o.Invalid, Error: o.Error}
	switch {
	case o.AbortedBy != "":
		j.Aborted = "aborted by threshold " + o.AbortedBy
	case o.Interrupted:
		j.Aborted = "interrupted by a signal before the end of the scenario"
	}
	for _, r := range o.Thresholds {
		if r.Status != Pass {
			j.Failed = append(j.Failed, fmt.Sprintf("threshold %s failed: observed %s", r.Name, r.Observed))
		}
	}
	return j
}

// Verdict is the outcome in a word.
func (o *Outcome) Verdict() string {
	if o.Interrupted && o.ExitCode() == ExitAborted && o.AbortedBy == "" {
		return "INTERRUPTED"
	}
	return verdict.Name(o.ExitCode())
}

// RunOptions tune a run.
type RunOptions struct {
	// Log receives a line per timeline event and threshold verdict (nil: none).
	Log func(string)
	// Env is the environment of hook commands (nil: the process's).
	Env []string
	// Clock times the timeline (phases, hooks, their undos, the run's end); nil is the
	// real clock. Tests pass a clock.Sim to check the timeline exactly.
	Clock clock.Clock
	// NewProber makes the prober an auto-tune phase's search runs its steps on, for the
	// class it tunes ("" for every class with a rate); nil is the node's own
	// (autotune.NewNodeProber). Tests give a model store of known capacity whose steps
	// take their time on Clock, so a phase's verdict is judged exactly rather than by
	// how fast the machine ran the generator.
	NewProber func(class string) (Prober, error)
}

// Prober is what an auto-tune phase's search runs on: autotune.NodeProber by default.
type Prober interface {
	autotune.Prober
	// Begin is called before the search's first step, End after its last (the node's
	// prober gives the tuned classes their configured rates back there).
	Begin()
	End() error
}

// queue hands Seconds from the collector's ticking goroutine to the runner without ever
// blocking the tick.
type queue struct {
	mu     sync.Mutex
	items  []*Second
	notify chan struct{}
}

func (q *queue) push(s *Second) {
	q.mu.Lock()
	q.items = append(q.items, s)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *queue) take() []*Second {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.items
	q.items = nil
	return out
}

type hookDone struct {
	hook int
	undo bool
	end  time.Time
	err  error
}

// runner is one run's state, owned by Run's goroutine.
type runner struct {
	// ctx is the run's: an interrupt cancels the hook actions in flight (not the undos,
	// which must run whatever happens).
	ctx     context.Context
	sc      *Scenario
	node    Node
	opts    RunOptions
	clk     clock.Clock
	ev      *Evaluator
	out     *Outcome
	q       *queue
	done    chan hookDone
	marks   map[string]int // hook name -> index in out.Marks
	undoDue []time.Time    // per hook: when its undo is due (zero: none pending)
	pending int            // actions in flight
	stopped map[string]bool
	// segs are the phases' load shapes from their starts, oldest first: what a class
	// owed in an interval is counted from them (see expected).
	segs []segment
	// search is the auto-tune phase's search in flight (nil: none); capacity has the
	// verdicts of the searches that ended, reported after the thresholds.
	search   *phaseSearch
	capacity []Result
}

// phaseSearch is an auto-tune phase's search running beside the runner's loop.
type phaseSearch struct {
	phase  int
	cancel context.CancelFunc
	done   chan struct{}
	prober Prober
	result *autotune.Result // set before done closes
}

// segment is the shapes in force from an instant on (classes at their configured rate
// have none).
type segment struct {
	from   time.Time
	shapes map[string]pacer.Shape
}

// Run runs sc on node: the load must be initialised (the driver connected) and not yet
// started. It returns when the last phase ends, a threshold with abort fails, a hook
// fails, or ctx ends; the load is then drained and the last interval closed (Finish).
// The error is for a failure to drive the node; everything else is in the Outcome.
func Run(ctx context.Context, node Node, sc *Scenario, opts RunOptions) (*Outcome, error) {
	if opts.Log == nil {
		opts.Log = func(string) {}
	}
	r := &runner{ctx: ctx, sc: sc, node: node, opts: opts, clk: clock.Or(opts.Clock), ev: NewEvaluator(sc),
		out:   &Outcome{Scenario: sc.Name, File: sc.Path, Phases: sc.phaseNames(), Marks: []Mark{}},
		q:     &queue{notify: make(chan struct{}, 1)},
		done:  make(chan hookDone, 2*len(sc.Hooks)+1),
		marks: map[string]int{}, undoDue: make([]time.Time, len(sc.Hooks)), stopped: map[string]bool{}}
	classes := sc.ThresholdClasses()
	cancel := node.Collector().Subscribe(func(iv *stats.Interval) { r.q.push(SecondOf(iv, classes)) })
	defer cancel()

	// Start on a tick, so phase boundaries fall on whole intervals of the node's series.
	// The collector ticks on real time, so this wait for its tick is on real time too.
	select {
	case <-r.q.notify:
	case <-time.After(2 * time.Second):
	case <-ctx.Done():
	}
	r.q.take()
	err := r.loop(ctx)
	r.endSearch()
	r.undoAll()
	r.waitActions()
	if derr := node.Drain(); derr != nil && err == nil && r.out.Error == "" {
		r.out.Error = "drain: " + derr.Error()
	}
	node.Finish()
	r.feed()
	r.ev.Close()
	r.out.Ended = r.clk.Now()
	r.out.Thresholds = append(r.ev.Results(), r.capacity...)
	for _, t := range r.out.Thresholds {
		opts.Log(fmt.Sprintf("threshold %s: %s (observed %s)", t.Name, strings.ToUpper(t.Status), t.Observed))
	}
	return r.out, err
}

// event is one entry of the timeline.
type event struct {
	at    time.Duration
	phase int // index, or -1
	hook  int // index, or -1
}

func (sc *Scenario) timeline() []event {
	var evs []event
	for i, p := range sc.Phases {
		evs = append(evs, event{at: p.Start, phase: i, hook: -1})
	}
	for i, h := range sc.Hooks {
		evs = append(evs, event{at: h.At, phase: -1, hook: i})
	}
	// Phases first at the same instant: a hook at a phase's start runs under its load.
	slices.SortStableFunc(evs, func(a, b event) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return b.phase - a.phase
	})
	return evs
}

func (r *runner) loop(ctx context.Context) error {
	start := r.clk.Now()
	r.out.Started = start
	r.ev.Event(EvRunStart, "", start)
	evs := r.sc.timeline()
	end := r.sc.End()
	cur := -1 // the phase running
	timer := r.clk.NewTimer(0)
	defer timer.Stop()
	for {
		// Due events, in order.
		elapsed := clock.Since(r.clk, start)
		for len(evs) > 0 && evs[0].at <= elapsed {
			e := evs[0]
			evs = evs[1:]
			if e.phase >= 0 {
				at, err := r.startPhase(cur, e.phase)
				if err != nil {
					return err
				}
				if cur < 0 && !at.IsZero() {
					// The run's clock starts with the load: a fleet starts its nodes at a
					// common instant a little ahead, and its first phase lasts as long.
					start = at.Add(-e.at)
				}
				cur = e.phase
			} else {
				r.fireHook(e.hook)
			}
		}
		if end != Forever && elapsed >= end && len(evs) == 0 {
			r.endPhase(cur)
			return nil
		}
		for i, due := range r.undoDue {
			if !due.IsZero() && !r.clk.Now().Before(due) {
				r.undoDue[i] = time.Time{}
				r.runAction(i, true)
			}
		}
		if r.stopping() {
			r.cut()
			r.endPhase(cur)
			return nil
		}
		next := time.Duration(1<<62 - 1)
		if len(evs) > 0 {
			next = evs[0].at - elapsed
		} else if end != Forever {
			next = end - elapsed
		}
		for _, due := range r.undoDue {
			if !due.IsZero() {
				next = min(next, clock.Until(r.clk, due))
			}
		}
		timer.Reset(max(next, 0))
		select {
		case <-ctx.Done():
			r.out.Interrupted = true
			r.cut()
			r.endPhase(cur)
			return nil
		case <-r.q.notify:
			r.feed()
		case d := <-r.done:
			r.hookDone(d)
		case <-timer.C():
		}
		timer.Stop()
	}
}

// cut tells the evaluator why the run ends before its time.
func (r *runner) cut() {
	why := "interrupted"
	switch {
	case r.out.AbortedBy != "":
		why = "aborted by threshold " + r.out.AbortedBy
	case r.out.Error != "":
		why = "ended by an error: " + r.out.Error
	}
	r.ev.Cut(why, r.clk.Now())
}

// stopping reports whether a threshold or a hook ended the run.
func (r *runner) stopping() bool { return r.out.AbortedBy != "" || r.out.Error != "" }

// feed judges the intervals that arrived.
func (r *runner) feed() {
	for _, s := range r.q.take() {
		r.expected(s)
		r.failed(r.ev.Add(s))
	}
}

// expected sets what each class owed in s from the load shapes in force, where it had
// one: the collector's target is the rate at the tick, which over a second of a ramp
// (or a sine) is not what was asked for, and achieved would be judged against the wrong
// count. Operations due are counted from the shape itself (Due), so they are exact.
func (r *runner) expected(s *Second) {
	secs := s.End.Sub(s.Start)
	if secs <= 0 {
		return
	}
	for class, cs := range s.Ops {
		if cs.Expected == 0 {
			continue // stopped, or closed loop: owed nothing
		}
		shaped := false
		for _, g := range r.segs {
			if g.shapes[class] != nil {
				shaped = true
			}
		}
		if !shaped {
			continue
		}
		rate := cs.Expected / secs.Seconds() // the configured rate, for spans without a shape
		total := 0.0
		for i, g := range r.segs {
			end := s.End
			if i+1 < len(r.segs) && r.segs[i+1].from.Before(end) {
				end = r.segs[i+1].from
			}
			from := s.Start
			if g.from.After(from) {
				from = g.from
			}
			if !end.After(from) {
				continue
			}
			if sh := g.shapes[class]; sh != nil {
				total += float64(sh.Due(end.Sub(g.from)) - sh.Due(from.Sub(g.from)))
			} else {
				total += rate * end.Sub(from).Seconds()
			}
		}
		if s.Start.Before(r.segs[0].from) {
			total += rate * r.segs[0].from.Sub(s.Start).Seconds()
		}
		cs.Expected = total
	}
}

func (r *runner) failed(res []Result) {
	for _, f := range res {
		r.opts.Log(fmt.Sprintf("threshold %s failed: observed %s", f.Name, f.Observed))
		if f.Abort && r.out.AbortedBy == "" {
			r.out.AbortedBy = f.Name
		}
	}
}

// startPhase ends phase prev and starts phase i; it returns when phase i's load started
// (zero when a configuration change failed: the run ends with the error).
func (r *runner) startPhase(prev, i int) (time.Time, error) {
	if prev >= 0 {
		r.endPhase(prev)
	}
	p := r.sc.Phases[i]
	if len(p.Set) > 0 {
		if _, err := r.node.Patch(p.Set); err != nil {
			r.out.Error = fmt.Sprintf("phase %s: set: %v", p.Name, err)
			return time.Time{}, nil
		}
	}
	var load []string
	for _, class := range r.node.Config().Config.Workload.ClassNames() {
		shape, has := p.Shapes[class]
		if has && shape == nil {
			if !r.stopped[class] {
				if err := r.node.Stop(class); err != nil {
					return time.Time{}, fmt.Errorf("phase %s: stop %s: %w", p.Name, class, err)
				}
				r.stopped[class] = true
			}
			load = append(load, class+" off")
			continue
		}
		if err := r.node.SetShape(class, shape); err != nil {
			return time.Time{}, fmt.Errorf("phase %s: %s load: %w", p.Name, class, err)
		}
		if prev < 0 || r.stopped[class] {
			if err := r.node.Start(class); err != nil {
				return time.Time{}, fmt.Errorf("phase %s: start %s: %w", p.Name, class, err)
			}
			r.stopped[class] = false
		}
		if has {
			load = append(load, class+" "+p.Load[class])
		}
	}
	// The phase starts when its load does: on a node at once, on a fleet when the nodes'
	// commands returned (a shape or a start applies at a common instant a little ahead).
	now := r.clk.Now()
	if p.Autotune != nil {
		// Every class runs (at its configured rate, as a phase without load); the search
		// then sets the rates of those it tunes, and gives them back when it ends.
		if err := r.startSearch(i); err != nil {
			r.out.Error = fmt.Sprintf("phase %s: %v", p.Name, err)
			return time.Time{}, nil
		}
		load = append(load, p.Load["auto-tune"])
	}
	seg := segment{from: now, shapes: map[string]pacer.Shape{}}
	for class, sh := range p.Shapes {
		if sh != nil {
			seg.shapes[class] = sh
		}
	}
	r.segs = append(r.segs, seg)
	r.out.Marks = append(r.out.Marks, Mark{Kind: "phase", Name: p.Name, Start: now, Detail: strings.Join(load, "; ")})
	r.failed(r.ev.Event(EvPhase, p.Name, now))
	r.opts.Log(fmt.Sprintf("phase %s started, %s", p.Name, durText(p.Duration)))
	return now, nil
}

func (r *runner) endPhase(i int) {
	if i < 0 {
		return
	}
	if r.search != nil && r.search.phase == i {
		r.endSearch()
	}
	for k := len(r.out.Marks) - 1; k >= 0; k-- {
		m := &r.out.Marks[k]
		if m.Kind == "phase" && m.Name == r.sc.Phases[i].Name {
			if !m.End.IsZero() {
				return
			}
			m.End = r.clk.Now()
			r.failed(r.ev.Event(EvPhaseEnd, m.Name, m.End))
			r.opts.Log(fmt.Sprintf("phase %s ended", m.Name))
			return
		}
	}
}

func (r *runner) fireHook(i int) {
	h := r.sc.Hooks[i]
	now := r.clk.Now()
	r.marks[h.Name] = len(r.out.Marks)
	r.out.Marks = append(r.out.Marks, Mark{Kind: "hook", Name: h.Name, Start: now, Detail: h.Action.String()})
	r.failed(r.ev.Event(EvHook, h.Name, now))
	r.opts.Log(fmt.Sprintf("hook %s: %s", h.Name, h.Action))
	r.runAction(i, false)
}

// runAction runs a hook's action (or its undo) in the background.
func (r *runner) runAction(i int, undo bool) {
	h := r.sc.Hooks[i]
	a := h.Action
	if undo {
		a = *h.Undo
		r.opts.Log(fmt.Sprintf("hook %s undo: %s", h.Name, a))
	}
	r.pending++
	ctx := r.ctx
	if undo {
		ctx = context.Background()
	}
	go func() {
		err := a.Do(ctx, r.opts.Env)
		r.done <- hookDone{hook: i, undo: undo, end: r.clk.Now(), err: err}
	}()
}

func (r *runner) hookDone(d hookDone) {
	r.pending--
	h := r.sc.Hooks[d.hook]
	m := &r.out.Marks[r.marks[h.Name]]
	if d.err != nil && r.out.Interrupted && !d.undo && r.ctx.Err() != nil {
		// Cut off by the interrupt: the hook's mark says so; it is not the hook's failure.
		m.Error = joinDetail(m.Error, d.err.Error())
	} else if d.err != nil {
		what := "hook " + h.Name
		if d.undo {
			what += " undo"
		}
		m.Error = joinDetail(m.Error, d.err.Error())
		if r.out.Error == "" {
			r.out.Error = fmt.Sprintf("%s: %v", what, d.err)
		}
		r.opts.Log(fmt.Sprintf("%s failed: %v", what, d.err))
	}
	if !d.undo && h.Undo != nil {
		// The fault lasts For from the hook's start; an action slower than that is undone
		// as soon as it returns.
		r.undoDue[d.hook] = m.Start.Add(h.For)
		r.opts.Log(fmt.Sprintf("hook %s returned; undo due %s after it", h.Name, h.For))
		return
	}
	m.End = d.end
	r.failed(r.ev.Event(EvHookEnd, h.Name, d.end))
	r.opts.Log(fmt.Sprintf("hook %s ended after %s", h.Name, d.end.Sub(m.Start).Round(time.Millisecond)))
}

// undoAll runs the undo of every hook whose fault is still in force, whatever ended the
// run: a scenario must not leave a store paused or a proxy poisoned behind it.
func (r *runner) undoAll() {
	for i, due := range r.undoDue {
		if !due.IsZero() {
			r.undoDue[i] = time.Time{}
			r.runAction(i, true)
		}
	}
}

// waitActions waits for the actions in flight (each is bounded by its timeout), undoing
// the faults of those that finish meanwhile.
func (r *runner) waitActions() {
	for r.pending > 0 {
		r.hookDone(<-r.done)
		r.undoAll()
	}
}

// Do runs the action with its timeout and checks its outcome.
func (a Action) Do(ctx context.Context, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	if a.HTTP != nil {
		return a.doHTTP(ctx)
	}
	return a.runCommand(ctx, env)
}

func (a Action) doHTTP(ctx context.Context) error {
	h := a.HTTP
	req, err := http.NewRequestWithContext(ctx, h.Method, h.URL, strings.NewReader(h.Body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", h.Method, h.URL, err)
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	if h.Body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", h.Method, h.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	ok := resp.StatusCode/100 == 2
	if h.ExpectStatus != 0 {
		ok = resp.StatusCode == h.ExpectStatus
	}
	if !ok {
		want := "2xx"
		if h.ExpectStatus != 0 {
			want = fmt.Sprint(h.ExpectStatus)
		}
		return fmt.Errorf("%s %s: status %d, expected %s: %s", h.Method, h.URL, resp.StatusCode, want, tail(body))
	}
	return nil
}

// tail is the end of a command's output, for an error message.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return s
}

func durText(d time.Duration) string {
	if d == Forever {
		return "until interrupted"
	}
	return "for " + d.String()
}

// startSearch starts phase i's capacity search: the classes it tunes run at the rates
// the search sets, the others at theirs; once it has found the highest rate within the
// SLA it holds there until the phase ends (endSearch).
func (r *runner) startSearch(i int) error {
	p := r.sc.Phases[i]
	st := p.Autotune.Settings
	// The search's instants (its start and end, a timed hold) are the timeline's.
	st.Clock = r.clk
	var prober Prober
	if r.opts.NewProber != nil {
		np, err := r.opts.NewProber(p.Autotune.Class)
		if err != nil {
			return fmt.Errorf("auto-tune: %w", err)
		}
		prober = np
	} else {
		np, err := autotune.NewNodeProber(r.node, p.Autotune.Class)
		if err != nil {
			return fmt.Errorf("auto-tune: %w", err)
		}
		if st.Start == 0 {
			st.Start = autotune.DefaultStart(r.node, np)
		}
		prober = np
	}
	log := r.opts.Log
	st.OnStep = func(s autotune.Step) {
		line := fmt.Sprintf("auto-tune %s: step %d %s at %.0f ops/s: %s", p.Name, s.N, s.Phase, s.Rate, s.Verdict)
		if s.Verdict != autotune.Pass && len(s.Why) > 0 {
			// A step that did not pass says why, so a scenario's log shows what to change.
			line += " (" + strings.Join(s.Why, "; ") + ")"
		}
		log(line)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	ps := &phaseSearch{phase: i, cancel: cancel, done: make(chan struct{}), prober: prober}
	prober.Begin()
	go func() {
		defer close(ps.done)
		ps.result = autotune.Search(ctx, prober, st)
	}()
	r.search = ps
	return nil
}

// endSearch stops the running search (its hold, or the search itself if the phase ended
// first), gives the tuned classes their configured rates back, and records the verdict
// as the phase's "capacity" result.
func (r *runner) endSearch() {
	ps := r.search
	if ps == nil {
		return
	}
	r.search = nil
	ps.cancel()
	<-ps.done
	p := r.sc.Phases[ps.phase]
	if err := ps.prober.End(); err != nil && r.out.Error == "" {
		r.out.Error = fmt.Sprintf("phase %s: end the auto-tune: %v", p.Name, err)
	}
	res := ps.result
	r.out.Capacity = append(r.out.Capacity, PhaseCapacity{Phase: p.Name, MinCapacity: p.Autotune.MinCapacity, Result: res})
	check := "capacity within SLA"
	if p.Autotune.MinCapacity > 0 {
		check = fmt.Sprintf("capacity >= %.0f ops/s", p.Autotune.MinCapacity)
	}
	out := Result{Name: check + " [phase " + p.Name + "]", Check: check, Window: "phase " + p.Name, Metric: "capacity",
		Suite: p.Name, Status: Fail, Observed: res.Status, From: res.Started, To: res.Ended, Detail: res.Message}
	if res.Capacity > 0 {
		v := res.Capacity
		out.Value = &v
		out.Observed = fmt.Sprintf("%.0f ops/s [%.0f, %.0f]", res.Capacity, res.Lo, res.Hi)
	}
	switch {
	case res.Status == autotune.StatusStopped && r.out.Interrupted:
		out.Status, out.Detail = NotEvaluated, joinDetail("the run was interrupted during the search", res.Message)
	case res.Status == autotune.StatusStopped:
		out.Detail = joinDetail("the search did not end within the phase's duration: give the phase more time", res.Message)
	case res.Status == autotune.StatusClientBound:
		// The store's capacity is above what the generator could offer: no verdict on
		// the store, and the result is invalid as a measurement of it.
		r.out.Invalid = append(r.out.Invalid, fmt.Sprintf("phase %s: the generator was the limit at %.0f ops/s (client-bound), below the store's capacity: %s", p.Name, res.Lo, res.Message))
	case res.Status != autotune.StatusFound && res.Status != autotune.StatusAboveMax:
	case res.Capacity < p.Autotune.MinCapacity:
		out.Detail = joinDetail(fmt.Sprintf("below the least capacity of %.0f ops/s", p.Autotune.MinCapacity), res.Message)
	default:
		out.Status, out.Detail = Pass, ""
		if h := res.Hold; h != nil && h.Windows > 0 {
			out.Detail = fmt.Sprintf("then held %.0f..%.0f ops/s (mean %.0f) over %d windows, %d outside the SLA", h.Min, h.Max, h.Mean, h.Windows, h.Failures)
		}
	}
	r.capacity = append(r.capacity, out)
	r.opts.Log(fmt.Sprintf("auto-tune %s: %s (%s)", p.Name, res.Status, out.Observed))
}
