package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/autotune"
	"github.com/ndbench/ndbench/internal/clock"
)

// capacityModel is a store that holds any rate up to capacity within a 1 ms p90 and
// queues beyond it (a p90 of 200 ms, rising through the window), measured on clk: a
// step takes its settle and window on the scenario's clock, so a search and the phase
// that bounds it run on one timeline. With saturatedAbove set, the generator falls
// behind above that rate while the store stays fast: a client-bound step.
type capacityModel struct {
	clk            clock.Clock
	capacity       float64
	saturatedAbove float64

	mu        sync.Mutex
	searching bool
	waiting   bool // in a step's wait on clk
	begun     int
	ended     int
	rates     []float64
}

func (m *capacityModel) Begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.searching = true
	m.begun++
}

func (m *capacityModel) End() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.searching = false
	m.ended++
	return nil
}

// timers is how many timers the search holds when it is parked (1 in a step's wait, 0
// when no search runs), or -1 while it runs outside a step's wait: the clock must not
// move then, or the search's own work would take simulated time.
func (m *capacityModel) timers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !m.searching:
		return 0
	case m.waiting:
		return 1
	}
	return -1
}

// wait waits d on clk. It stops counting as waiting in the goroutine that advances the
// clock, as the timer fires, so the clock is not moved again before the search has run.
func (m *capacityModel) wait(ctx context.Context, d time.Duration) error {
	fired := make(chan struct{})
	m.mu.Lock()
	m.waiting = true
	t := m.clk.AfterFunc(d, func() {
		m.mu.Lock()
		m.waiting = false
		m.mu.Unlock()
		close(fired)
	})
	m.mu.Unlock()
	select {
	case <-ctx.Done():
		if t.Stop() {
			m.mu.Lock()
			m.waiting = false
			m.mu.Unlock()
		}
		return ctx.Err()
	case <-fired:
		return nil
	}
}

func (m *capacityModel) Probe(ctx context.Context, rate float64, p autotune.ProbeSpec) (autotune.Measurement, error) {
	sla := p.SLA("read")
	// As NodeProber: the window is as long as the percentile's samples need.
	window := max(p.Window, time.Duration(float64(sla.Samples())/rate*float64(time.Second)))
	if p.MaxWindow > 0 {
		window = min(window, max(p.MaxWindow, p.Window))
	}
	if err := m.wait(ctx, p.Settle+window); err != nil {
		return autotune.Measurement{}, err
	}
	m.mu.Lock()
	m.rates = append(m.rates, rate)
	m.mu.Unlock()
	c := autotune.ClassMeasurement{Target: rate, Achieved: rate, Attempted: int64(rate * window.Seconds()),
		Response: 1000, FirstHalf: 1000, SecondHalf: 1000, StartLag: 20, Workers: 8}
	switch {
	case m.saturatedAbove > 0 && rate > m.saturatedAbove:
		// The generator starts its operations late; the store serves them at once.
		c.StartLag, c.Response, c.FirstHalf, c.SecondHalf = 150_000, 150_000, 100_000, 200_000
		c.Achieved = m.saturatedAbove
	case rate > m.capacity:
		c.Response, c.FirstHalf, c.SecondHalf = 200_000, 100_000, 300_000
		c.Achieved = m.capacity
	}
	if c.StartLag < 1000 {
		c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = c.Response, c.FirstHalf, c.SecondHalf
	} else {
		c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = 1000, 1000, 1000
	}
	c.ServiceMean = c.Service
	return autotune.Measurement{Seconds: window.Seconds(), Classes: map[string]autotune.ClassMeasurement{"read": c}}, nil
}

// TestAutotunePhaseOnAModel: an auto-tune phase searches a store of known capacity on
// the scenario's simulated clock, so what it finds and the verdict on it are exact: the
// capacity bracketed within the search's tolerance, a pass at or above minCapacity and a
// fail below it, the search's maximum held until the phase ends, a client-bound search
// an invalid run with no verdict on the store, a search longer than its phase a fail.
// The prober is begun and ended once, and the result is in the phase's JUnit suite.
func TestAutotunePhaseOnAModel(t *testing.T) {
	for _, tc := range []struct {
		name           string
		duration       string
		capacity       float64
		saturatedAbove float64
		min            float64
		status         string
		exit           int
		search         string
		detail         string
	}{
		{"found", "120s", 800, 0, 750, Pass, ExitPass, autotune.StatusFound, "then held"},
		{"above the search's maximum", "120s", 5000, 0, 750, Pass, ExitPass, autotune.StatusAboveMax, "then held"},
		{"below the least capacity", "120s", 800, 0, 1500, Fail, ExitFailed, autotune.StatusFound, "below the least capacity of 1500"},
		{"client-bound", "120s", 5000, 600, 0, Fail, ExitInvalid, autotune.StatusClientBound, ""},
		{"not ended in time", "3s", 800, 0, 0, Fail, ExitFailed, autotune.StatusStopped, "did not end within the phase's duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, inst := nodeFor(t, `
name: capacity
config:
  driver: {name: memory}
  workload: {readRate: 100, writeEnabled: false, readers: 8, numKeys: 100}
phases:
  - name: find
    duration: `+tc.duration+`
    autotune: {percentile: 90, latency: 50ms, minAchieved: 0.8, start: 500, maxRate: 1000, settle: 0s, window: 1s, confirm: 1s, minCapacity: `+fmt.Sprint(tc.min)+`}
`)
			sim := clock.NewSim(time.Now())
			model := &capacityModel{clk: sim, capacity: tc.capacity, saturatedAbove: tc.saturatedAbove}
			var logMu sync.Mutex
			var lines []string
			opts := RunOptions{
				Clock: sim,
				Log: func(s string) {
					logMu.Lock()
					lines = append(lines, s)
					logMu.Unlock()
				},
				NewProber: func(class string) (Prober, error) {
					if class != "" {
						return nil, fmt.Errorf("class %q, want every class", class)
					}
					return model, nil
				},
			}
			out := runOnSim(t, sim, model, func() (*Outcome, error) { return Run(context.Background(), inst, sc, opts) })
			logMu.Lock()
			t.Logf("log:\n%s", strings.Join(lines, "\n"))
			logMu.Unlock()

			res, verdict := capacityVerdict(t, out)
			t.Logf("search %s %.0f [%.0f, %.0f] after rates %v; verdict %s %q; invalid %q", res.Status, res.Capacity, res.Lo, res.Hi, model.rates, verdict.Status, verdict.Detail, out.Invalid)
			if res.Status != tc.search {
				t.Errorf("search %s, want %s", res.Status, tc.search)
			}
			if verdict.Status != tc.status || out.ExitCode() != tc.exit || !strings.Contains(verdict.Detail, tc.detail) {
				t.Errorf("verdict %s (%s), exit %d; want %s, exit %d, detail with %q", verdict.Status, verdict.Detail, out.ExitCode(), tc.status, tc.exit, tc.detail)
			}
			switch tc.search {
			case autotune.StatusFound:
				// Bracketed: the found rate held within SLA, the next above it did not,
				// within the search's 2% tolerance.
				if res.Lo > tc.capacity || res.Hi <= tc.capacity || res.Hi/res.Lo > 1.02+1e-9 || res.Capacity != res.Lo {
					t.Errorf("found %.1f in [%.1f, %.1f]; want a bracket of at most 2%% around %.0f", res.Capacity, res.Lo, res.Hi, tc.capacity)
				}
			case autotune.StatusAboveMax:
				if res.Capacity != 1000 {
					t.Errorf("capacity %.0f, want the search's maximum, 1000", res.Capacity)
				}
			case autotune.StatusClientBound:
				if len(out.Invalid) != 1 || !strings.Contains(out.Invalid[0], "client-bound") {
					t.Errorf("invalid %q, want the run marked invalid as client-bound", out.Invalid)
				}
			}
			if tc.status == Pass && (res.Hold == nil || res.Hold.Windows == 0) {
				t.Errorf("hold %+v; want the found rate held until the phase ended", res.Hold)
			}
			if model.begun != 1 || model.ended != 1 {
				t.Errorf("prober begun %d and ended %d times, want once each", model.begun, model.ended)
			}
		})
	}
}

// runOnSim runs a scenario on sim, moving it to its next timer each time the runner
// waits on its timer again and the search, while it runs, waits in a step: nothing
// moves the clock while either works.
func runOnSim(t *testing.T, sim *clock.Sim, model *capacityModel, run func() (*Outcome, error)) *Outcome {
	t.Helper()
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run()
		done <- result{out, err}
	}()
	last := time.Now()
	for steps := 0; ; steps++ {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.out
		default:
		}
		if steps > 2000 {
			t.Fatalf("the run did not end after %d steps", steps)
		}
		// The runner holds one timer whenever it waits (phase ends, hooks, its undos),
		// the search one in a step's wait: both must be parked, and still be, before the
		// clock moves.
		n := model.timers()
		if n < 0 || !sim.WaitTimers(1+n, time.Millisecond) || model.timers() != n || sim.Pending() != 1+n {
			if time.Since(last) > time.Minute {
				t.Fatalf("step %d: the runner or the search did not wait again within a minute", steps)
			}
			time.Sleep(100 * time.Microsecond)
			steps--
			continue
		}
		// To the next timer's instant, not by a fixed step: the search then reads the
		// instant its wait ended, exactly, not wherever a step happened to be.
		if next, ok := sim.Next(); ok {
			sim.Set(next)
		}
		last = time.Now()
	}
}
