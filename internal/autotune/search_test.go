package autotune

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// sim is a simulated store and generator, measured instantly: the store keeps the SLA
// below capacity, the generator drives at most clientMax; a rising percentile or a failed
// confirmation can be injected.
type sim struct {
	capacity  float64 // above it the store's latency exceeds the SLA
	clientMax float64 // above it operations start late (0: unlimited)
	risingAt  float64 // from this rate on the percentile rises within the bound (0: never)
	// confirmFailAbove fails every confirmation window above this rate (0: never).
	confirmFailAbove float64
	errorsAbove      float64 // above it 5% errors (0: never)
	flakyAt          float64 // the first probe at or above this rate fails (a transient; 0: none)
	probes           []float64
	windows          []time.Duration
}

func (s *sim) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	s.probes = append(s.probes, rate)
	s.windows = append(s.windows, p.Window)
	c := ClassMeasurement{Target: rate, Achieved: rate, Attempted: int64(rate * 10), Response: 1000, FirstHalf: 1000, SecondHalf: 1000,
		Service: 1000, ServiceFirstHalf: 1000, ServiceSecondHalf: 1000, ServiceMean: 500, StartLag: 50, Workers: 10}
	flaky := s.flakyAt > 0 && rate >= s.flakyAt
	if flaky {
		s.flakyAt = 0
	}
	switch {
	case s.clientMax > 0 && rate > s.clientMax:
		c.Achieved = s.clientMax
		c.Attempted = int64(s.clientMax * 10)
		c.StartLag, c.Response, c.FirstHalf, c.SecondHalf = 500_000, 500_000, 100_000, 900_000
		c.Pending = 1000
	case flaky || rate > s.capacity || (s.confirmFailAbove > 0 && p.Window > 5*time.Second && rate > s.confirmFailAbove):
		c.Response, c.FirstHalf, c.SecondHalf = 50_000, 20_000, 80_000
		c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = 49_000, 19_000, 79_000
	case s.risingAt > 0 && rate >= s.risingAt:
		c.Response, c.FirstHalf, c.SecondHalf = 7000, 2000, 8000
		c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = 6900, 1900, 7900
	}
	if s.errorsAbove > 0 && rate > s.errorsAbove {
		c.Errors = c.Attempted / 20
	}
	return Measurement{Seconds: 10, Classes: map[string]ClassMeasurement{"read": c}}, nil
}

func simSettings() Settings {
	return Settings{SLA: SLA{Percentile: 99, Latency: 10 * time.Millisecond, MaxErrors: 0.01, MinAchieved: 0.97}, Start: 1000}
}

func TestSearchSimulated(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sim      sim
		settings func(*Settings)
		status   string
		// capacity is where the search must end (within the tolerance below it), or, for
		// client-bound, the highest rate within SLA it reports.
		want   float64
		slack  float64  // how far below want the capacity may be (default: the tolerance, twice)
		phases []string // phases that must appear
	}{
		{name: "bracket and bisect", sim: sim{capacity: 5000}, status: StatusFound, want: 5000, phases: []string{PhaseBracket, PhaseRecover, PhaseBisect, PhaseConfirm}},
		{name: "a transient violation is run again", sim: sim{capacity: 5000, flakyAt: 2000}, status: StatusFound, want: 5000},
		{name: "capacity below the start", sim: sim{capacity: 300}, status: StatusFound, want: 300, phases: []string{PhaseDown, PhaseBisect}},
		{name: "capacity far up", sim: sim{capacity: 60000}, status: StatusFound, want: 60000},
		{name: "client-bound", sim: sim{capacity: 20000, clientMax: 3000}, status: StatusClientBound, want: 2000},
		{name: "rising percentile", sim: sim{capacity: 8000, risingAt: 4000}, status: StatusFound, want: 4000},
		{name: "errors", sim: sim{capacity: 8000, errorsAbove: 6000}, status: StatusFound, want: 6000},
		{name: "confirmation fails, steps down", sim: sim{capacity: 5000, confirmFailAbove: 4700}, status: StatusFound, want: 4700, slack: 0.06},
		{name: "above the maximum", sim: sim{capacity: 1e9}, settings: func(s *Settings) { s.MaxRate = 50000 }, status: StatusAboveMax, want: 50000},
		{name: "nothing within SLA", sim: sim{capacity: 0.5}, settings: func(s *Settings) { s.MinRate = 10 }, status: StatusNone},
		{name: "confirmation never holds", sim: sim{capacity: 5000, confirmFailAbove: 1}, status: StatusNotConfirmed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := simSettings()
			if tc.settings != nil {
				tc.settings(&s)
			}
			sim := tc.sim
			r := Search(context.Background(), &sim, s)
			if r.Status != tc.status {
				t.Fatalf("status %s (%s), want %s; probes %v", r.Status, r.Message, tc.status, sim.probes)
			}
			switch r.Status {
			case StatusFound:
				low := tc.want / (1 + r.Settings.Tolerance) / (1 + r.Settings.Tolerance)
				if tc.slack > 0 {
					low = tc.want * (1 - tc.slack)
				}
				if r.Capacity > tc.want || r.Capacity < low {
					t.Errorf("capacity %.1f, want within the tolerance below %.0f; probes %v", r.Capacity, tc.want, sim.probes)
				}
				if !(r.Lo <= r.Capacity && r.Capacity < r.Hi) || r.Hi/r.Lo > 1.06 {
					t.Errorf("interval [%.1f, %.1f] around %.1f", r.Lo, r.Hi, r.Capacity)
				}
			case StatusClientBound:
				if r.Capacity != 0 || r.Lo != tc.want {
					t.Errorf("client-bound with capacity %.0f, lo %.0f; want no capacity and lo %.0f", r.Capacity, r.Lo, tc.want)
				}
				if !strings.Contains(r.Message, "client-bound") || !strings.Contains(r.Message, "above") {
					t.Errorf("message %q does not say the store's capacity is above what was measured", r.Message)
				}
				// The client-bound step was retried once before the search ended.
				last := r.Steps[len(r.Steps)-2:]
				if last[0].Verdict != ClientBound || last[1].Verdict != ClientBound || last[0].Rate != last[1].Rate {
					t.Errorf("last steps %+v: want the client-bound step run twice", last)
				}
			case StatusAboveMax:
				if r.Capacity != tc.want {
					t.Errorf("capacity %.0f, want the maximum %.0f", r.Capacity, tc.want)
				}
			}
			for _, ph := range tc.phases {
				found := false
				for _, st := range r.Steps {
					found = found || st.Phase == ph
				}
				if !found {
					t.Errorf("no %s step in %v", ph, sim.probes)
				}
			}
			// Every step says why it ran its rate.
			for _, st := range r.Steps {
				if st.Because == "" {
					t.Errorf("step %d (%s at %.0f) does not say why it ran that rate", st.N, st.Phase, st.Rate)
				}
			}
			// After every store violation the next step recovers at a lower rate (or is a
			// lower rate, going down).
			for i, st := range r.Steps[:len(r.Steps)-1] {
				if next := r.Steps[i+1].Phase; st.Verdict == Fail && st.Phase != PhaseRecover && next != PhaseRecover && next != PhaseDown {
					t.Errorf("step %d failed at %.0f and step %d (%s) did not recover first", st.N, st.Rate, r.Steps[i+1].N, r.Steps[i+1].Phase)
				}
				if st.Verdict == Fail && st.Phase != PhaseRecover && r.Steps[i+1].Rate >= st.Rate {
					t.Errorf("recovery after %.0f at %.0f, not lower", st.Rate, r.Steps[i+1].Rate)
				}
			}
		})
	}
}

func TestConfirmationWindowIsLonger(t *testing.T) {
	s := simSettings()
	sim := &sim{capacity: 5000}
	r := Search(context.Background(), sim, s)
	d := r.Settings
	for i, st := range r.Steps {
		want := d.Window
		switch st.Phase {
		case PhaseConfirm:
			want = d.Confirm
		case PhaseRecover:
			want = time.Second
		}
		if sim.windows[i] != want {
			t.Errorf("step %d (%s) measured over %v, want %v", st.N, st.Phase, sim.windows[i], want)
		}
	}
}

func TestJudge(t *testing.T) {
	sla := SLA{Percentile: 99, Latency: 10 * time.Millisecond, MaxErrors: 0.01, MinAchieved: 0.97}
	ok := ClassMeasurement{Target: 1000, Achieved: 1000, Attempted: 10000, Response: 2000, FirstHalf: 2000, SecondHalf: 2000,
		Service: 1900, ServiceFirstHalf: 1900, ServiceSecondHalf: 1900, StartLag: 100}
	for _, tc := range []struct {
		name     string
		change   func(*ClassMeasurement, *Measurement)
		verdict  Verdict
		why      string
		baseline map[string]float64
	}{
		{"within SLA", func(*ClassMeasurement, *Measurement) {}, Pass, "", nil},
		{"store slow", func(c *ClassMeasurement, _ *Measurement) { c.Response, c.Service = 20000, 19000 }, Fail, "p99 20ms > 10ms", nil},
		{"rising", func(c *ClassMeasurement, _ *Measurement) {
			c.FirstHalf, c.SecondHalf, c.ServiceFirstHalf, c.ServiceSecondHalf = 2000, 8000, 1900, 7900
		}, Fail, "rising 2ms → 8ms", nil},
		{"rising a little is noise", func(c *ClassMeasurement, _ *Measurement) { c.FirstHalf, c.SecondHalf = 2000, 3000 }, Pass, "", nil},
		{"errors", func(c *ClassMeasurement, _ *Measurement) { c.Errors = 200 }, Fail, "errors 2% > 1%", nil},
		{"late starts, store fine", func(c *ClassMeasurement, _ *Measurement) { c.Response, c.StartLag = 30000, 28000 }, ClientBound, "start lag", nil},
		{"short of the target, store fine", func(c *ClassMeasurement, _ *Measurement) { c.Achieved, c.Pending = 800, 5000 }, ClientBound, "achieved 80.0%", nil},
		{"short of the target, store slow", func(c *ClassMeasurement, _ *Measurement) { c.Achieved, c.Response, c.Service = 800, 50000, 45000 }, Fail, "achieved 80.0%", nil},
		{"pool exhausted in a queueing store", func(c *ClassMeasurement, _ *Measurement) {
			c.Achieved, c.Response, c.StartLag, c.Service, c.ServiceMean, c.Pending = 600, 900000, 850000, 8000, 7000, 20000
		}, Fail, "achieved 60.0%", map[string]float64{"read": 1000}},
		{"pool exhausted, store at its usual speed", func(c *ClassMeasurement, _ *Measurement) {
			c.Achieved, c.Response, c.StartLag, c.Service, c.ServiceMean, c.Pending = 600, 900000, 850000, 1500, 1100, 20000
		}, ClientBound, "start lag", map[string]float64{"read": 1000}},
		// Little's law: 12 workers would carry 12,000/s at the baseline 1 ms; all of them
		// waited in the store 3 ms each (under the 4× rule), so the shortfall is the
		// store's queue.
		{"a pool that would have sufficed, all in a queueing store", func(c *ClassMeasurement, _ *Measurement) {
			c.Target, c.Achieved, c.Response, c.StartLag, c.Service, c.ServiceMean, c.Pending, c.Workers = 4240, 3880, 9000, 5000, 6000, 3000, 3000, 12
		}, Fail, "achieved 91.5%", map[string]float64{"read": 1000}},
		{"a pool mostly idle while the service time rose", func(c *ClassMeasurement, _ *Measurement) {
			c.Target, c.Achieved, c.Response, c.StartLag, c.Service, c.ServiceMean, c.Pending, c.Workers = 4240, 3880, 9000, 5000, 6000, 3000, 3000, 64
		}, ClientBound, "achieved 91.5%", map[string]float64{"read": 1000}},
		{"a pool too small for the target at the baseline speed", func(c *ClassMeasurement, _ *Measurement) {
			c.Target, c.Achieved, c.Response, c.StartLag, c.Service, c.ServiceMean, c.Pending, c.Workers = 4240, 1900, 9000, 5000, 2500, 2100, 3000, 4
		}, ClientBound, "achieved 44.8%", map[string]float64{"read": 1000}},
		{"CPU saturated", func(c *ClassMeasurement, m *Measurement) {
			c.Response, c.Service = 20000, 19000
			m.CPUCores, m.Cores = 1.95, 2
		}, ClientBound, "CPU 1.95 of 2 cores", nil},
		{"CPU saturated within SLA", func(_ *ClassMeasurement, m *Measurement) { m.CPUCores, m.Cores = 1.95, 2 }, Pass, "within SLA, but generator CPU", nil},
		// On a fleet: a node short of its share while the store answers within SLA is the
		// generator's limit, named; a window of partial seconds is no evidence at all.
		{"fleet node saturated, store fine", func(c *ClassMeasurement, m *Measurement) {
			c.Achieved = 900
			m.SaturatedNodes = []string{"10.0.0.2:8080"}
		}, ClientBound, "fleet node(s) 10.0.0.2:8080 sent less than their share", nil},
		{"fleet node short while the store queues", func(c *ClassMeasurement, m *Measurement) {
			c.Achieved, c.Response, c.Service = 800, 50000, 45000
			m.SaturatedNodes = []string{"10.0.0.2:8080"}
		}, Fail, "achieved 80.0%", nil},
		{"fleet window incomplete", func(c *ClassMeasurement, m *Measurement) {
			c.Response, c.Service = 20000, 19000
			m.Incomplete, m.PartialSeconds = true, 6
		}, ClientBound, "6 merged second(s) lacked a node's data", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			m := Measurement{}
			tc.change(&c, &m)
			m.Classes = map[string]ClassMeasurement{"read": c}
			v, why := Judge(m, nil, sla, Generator{}, tc.baseline)
			if v != tc.verdict || !strings.Contains(strings.Join(why, "; "), tc.why) {
				t.Errorf("verdict %s %q, want %s containing %q", v, why, tc.verdict, tc.why)
			}
		})
	}
}

func TestSLAParsing(t *testing.T) {
	s := DefaultSLA
	for _, f := range [][2]string{{"percentile", "p99.9"}, {"latency", "5ms"}, {"errors", "0.5%"}, {"achieved", "0.95"}} {
		if err := s.SetField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	if s.Percentile != 99.9 || s.Latency != 5*time.Millisecond || s.MaxErrors != 0.005 || s.MinAchieved != 0.95 {
		t.Errorf("parsed %+v", s)
	}
	if n := s.Samples(); n != 100000 {
		t.Errorf("p99.9 needs %d samples, want 100000", n)
	}
	if n := DefaultSLA.Samples(); n != 10000 {
		t.Errorf("p99 needs %d samples, want 10000", n)
	}
	for _, bad := range [][2]string{{"percentile", "100"}, {"latency", "-1ms"}, {"errors", "2"}, {"achieved", "0"}, {"p99", "1ms"}} {
		err := s.SetField(bad[0], bad[1])
		if err == nil || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("SetField(%q, %q) = %v, want an error naming the allowed values", bad[0], bad[1], err)
		}
	}
	if err := (Settings{Start: 5, MinRate: 10}).WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "start") {
		t.Errorf("start below min-rate: %v", err)
	}
}

func TestHoldTracksDrift(t *testing.T) {
	s := simSettings()
	s.Hold, s.HoldIncrease, s.HoldDecrease = true, 0.05, 0.8
	sim := &sim{capacity: 5000}
	ctx, cancel := context.WithCancel(context.Background())
	holds := 0
	s.OnStep = func(st Step) {
		if st.Phase == PhaseHold {
			holds++
			if holds == 3 {
				sim.capacity = 3000 // the store degrades under hold
			}
			if holds == 30 {
				cancel()
			}
		}
	}
	r := Search(ctx, sim, s)
	if r.Status != StatusFound || r.Hold == nil {
		t.Fatalf("status %s, hold %+v", r.Status, r.Hold)
	}
	h := r.Hold
	if h.Failures == 0 || h.Max <= r.Capacity || h.Final > 3000*1.06 || h.Final < 3000*0.7 {
		t.Errorf("hold %+v after capacity %.0f dropped to 3000: want increases above it, then failures and a final rate near 3000", h, r.Capacity)
	}
	if math.IsNaN(h.Mean) || h.Windows < 29 {
		t.Errorf("hold windows %d mean %v", h.Windows, h.Mean)
	}
}

// clockedSim is the simulated store whose every probe takes its settle and window on a
// simulated clock, as a real window takes them on the wall clock.
type clockedSim struct {
	*sim
	clk *clock.Sim
}

func (c clockedSim) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	c.clk.Advance(p.Settle + p.Window)
	return c.sim.Probe(ctx, rate, p)
}

// TestHoldLastsHoldFor: a hold of HoldFor ends when that much time has passed on the
// search's clock: on a simulated clock that each window (its settle and its length) moves
// on, the last hold window starts before HoldFor has passed since the hold began and
// ends at or after it; the result's span is the simulated time the search took.
func TestHoldLastsHoldFor(t *testing.T) {
	for _, holdFor := range []time.Duration{time.Second, 10 * time.Second, 25 * time.Second} {
		clk := clock.NewSim(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s := simSettings()
		s.Hold, s.HoldFor, s.Clock = true, holdFor, clk
		var last, holdStart, lastStart, lastEnd time.Time // instants of the steps' ends
		last = clk.Now()
		s.OnStep = func(st Step) {
			now := clk.Now()
			if st.Phase == PhaseHold {
				if holdStart.IsZero() {
					holdStart = last
				}
				lastStart, lastEnd = last, now
			}
			last = now
		}
		r := Search(context.Background(), clockedSim{&sim{capacity: 5000}, clk}, s)
		if r.Status != StatusFound || r.Hold == nil || r.Hold.Windows == 0 {
			t.Fatalf("hold %v: status %s, hold %+v", holdFor, r.Status, r.Hold)
		}
		until := holdStart.Add(holdFor)
		if !lastStart.Before(until) || lastEnd.Before(until) {
			t.Errorf("hold %v from %v: last window %v to %v (%d windows); want it to span the hold's end",
				holdFor, holdStart.Format(time.TimeOnly), lastStart.Format(time.TimeOnly), lastEnd.Format(time.TimeOnly), r.Hold.Windows)
		}
		if got := r.Ended.Sub(r.Started); got != clock.Since(clk, r.Started) || got < holdFor {
			t.Errorf("hold %v: the search took %v on its clock, want the simulated time of its steps", holdFor, got)
		}
	}
}

// stopAfter is a sim whose search is interrupted (its context cancelled, as Ctrl-C does)
// during probe n.
type stopAfter struct {
	sim
	n      int
	cancel context.CancelFunc
}

func (s *stopAfter) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	if len(s.probes)+1 == s.n {
		s.cancel()
	}
	return s.sim.Probe(ctx, rate, p)
}

// TestStoppedSearchSaysWhatItFound: a search interrupted at any step returns what its
// steps measured: Lo the highest rate a step found within SLA, Hi the lowest found outside
// it, both in the message (issue 36: Ctrl-C printed only the rate of the step it cut),
// also after a failed confirmation lowered the search's own bound below what was measured.
func TestStoppedSearchSaysWhatItFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		sim  sim
	}{
		{"bracket and bisect", sim{capacity: 5000}},
		{"confirmation fails", sim{capacity: 5000, confirmFailAbove: 1}},
		{"nothing within SLA", sim{capacity: 10}},
	} {
		for n := 1; n <= 14; n++ {
			ctx, cancel := context.WithCancel(context.Background())
			p := &stopAfter{sim: tc.sim, n: n, cancel: cancel}
			r := Search(ctx, p, simSettings())
			cancel()
			if r.Status != StatusStopped {
				continue // the search ended before step n
			}
			var lo, hi float64
			for _, st := range r.Steps {
				if st.Verdict == Pass {
					lo = max(lo, st.Rate)
				}
				if st.Verdict == Fail && (hi == 0 || st.Rate < hi) {
					hi = st.Rate
				}
			}
			if r.Lo != lo || r.Hi != hi {
				t.Errorf("%s, stopped in step %d: lo %v hi %v, want the steps' %v and %v", tc.name, n, r.Lo, r.Hi, lo, hi)
			}
			want := "no step was within SLA"
			if lo > 0 {
				want = "the highest rate within SLA was " + rateText(lo) + " ops/s"
			}
			if !strings.Contains(r.Message, "stopped during a step at") || !strings.Contains(r.Message, want) ||
				hi > 0 && !strings.Contains(r.Message, "the lowest outside it "+rateText(hi)+" ops/s") {
				t.Errorf("%s, stopped in step %d: message %q, want %q and the lowest rate outside", tc.name, n, r.Message, want)
			}
		}
	}
}

// slowDrain fails the first `left` recovery windows (one second each) as a store still
// draining a backlog would, and is sim otherwise.
type slowDrain struct {
	sim
	left int
}

func (s *slowDrain) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	m, err := s.sim.Probe(ctx, rate, p)
	if err == nil && p.Window == time.Second && s.left > 0 {
		s.left--
		c := m.Classes["read"]
		c.Response, c.FirstHalf, c.SecondHalf = 50_000, 60_000, 40_000
		c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = 49_000, 59_000, 39_000
		m.Classes["read"] = c
	}
	return m, err
}

// TestStepsSayWhyTheirRate: after a failed step the search recovers at half its rate,
// and when the recovery fails too it still goes back up to bisect: the walkthrough saw
// 1.77k fail twice and then 2.97k run "without a word" (issue 36). Each step says why it
// ran its rate, and the bisection names the steps that bound it and that the recovery
// steps only drain; the console prints that line before the step, within 100 columns.
func TestStepsSayWhyTheirRate(t *testing.T) {
	p := &slowDrain{sim: sim{capacity: 3000}, left: 2}
	r := Search(context.Background(), p, simSettings())
	if r.Status != StatusFound {
		t.Fatalf("status %s (%s); probes %v", r.Status, r.Message, p.probes)
	}
	// 1k, 2k pass; 4k fails; 2k recovers, failing twice before it passes; 4k is run again
	// and fails, 2k recovers at once; then the bisection goes up to 2.83k.
	var bisect *Step
	for i, st := range r.Steps {
		if st.Phase == PhaseBisect {
			bisect = &r.Steps[i]
			if prev := r.Steps[i-1]; prev.Phase != PhaseRecover || i != 8 {
				t.Fatalf("probes %v: want the first bisection as step 9, after a recovery", p.probes)
			}
			break
		}
	}
	if bisect == nil {
		t.Fatalf("no bisection in %v", p.probes)
	}
	for _, want := range []string{"bisect " + rateText(2000) + " (passed, step 2) .. " + rateText(4000) + " (failed, step 7)", "recovery steps only drain"} {
		if !strings.Contains(bisect.Because, want) {
			t.Errorf("bisection at %.0f says %q, want it to say %q", bisect.Rate, bisect.Because, want)
		}
	}
	for _, st := range r.Steps[3:6] {
		if !strings.Contains(st.Because, "recover") || !strings.Contains(st.Because, "step 3") {
			t.Errorf("recovery step %d says %q, want that it recovers from step 3", st.N, st.Because)
		}
	}
	if again := r.Steps[6]; again.Rate != 4000 || !strings.Contains(again.Because, "again") || !strings.Contains(again.Because, "step 3") {
		t.Errorf("step 7 at %.0f says %q, want 4k again after step 3", again.Rate, again.Because)
	}
	var b strings.Builder
	WriteText(&b, r, 100)
	if !strings.Contains(b.String(), "    > "+bisect.Because[:40]) {
		t.Errorf("the console does not print the bisection's reason:\n%s", b.String())
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	// One line each, right before its step's row.
	lines := strings.Split(b.String(), "\n")
	reasons := 0
	for i, line := range lines[:len(lines)-1] {
		if !strings.HasPrefix(line, "    > ") {
			continue
		}
		reasons++
		if f := strings.Fields(lines[i+1]); len(f) == 0 || f[0] != fmt.Sprint(r.Steps[reasons-1].N) {
			t.Errorf("reason %q is followed by %q, not its step's row", line, lines[i+1])
		}
	}
	if reasons != len(r.Steps) {
		t.Errorf("%d reasons for %d steps:\n%s", reasons, len(r.Steps), b.String())
	}
}

// TestClientBoundAdviceFollowsTheWorkers: a client-bound search says to add workers only
// when its workers were busy in the store (Little's law: achieved rate × mean service
// time); with workers mostly free it names the generator's cores or more nodes (issue 36:
// "add workers" was the advice when the steps showed free workers).
func TestClientBoundAdviceFollowsTheWorkers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		serviceMean float64 // µs
		workers     int
		want, not   string
	}{
		{"workers free", 500, 10, "mostly free", "more workers (workload"},         // 3000/s × 0.5 ms = 1.5 of 10 busy
		{"workers busy", 3300, 10, "more workers (workload", "mostly free"},        // 3000/s × 3.3 ms = 9.9 of 10 busy
		{"workers mostly busy", 2700, 10, "more workers (workload", "mostly free"}, // 8.1 of 10
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &serviceSim{sim: sim{capacity: 20000, clientMax: 3000}, serviceMean: tc.serviceMean, workers: tc.workers}
			r := Search(context.Background(), p, simSettings())
			if r.Status != StatusClientBound {
				t.Fatalf("status %s (%s)", r.Status, r.Message)
			}
			if !strings.Contains(r.Message, tc.want) || strings.Contains(r.Message, tc.not) {
				t.Errorf("message %q: want %q, not %q", r.Message, tc.want, tc.not)
			}
		})
	}
}

// serviceSim is sim with a set mean service time and pool size.
type serviceSim struct {
	sim
	serviceMean float64
	workers     int
}

func (s *serviceSim) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	m, err := s.sim.Probe(ctx, rate, p)
	for k, c := range m.Classes {
		c.ServiceMean, c.Workers = s.serviceMean, s.workers
		m.Classes[k] = c
	}
	return m, err
}
