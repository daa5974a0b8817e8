package node

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

var simStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simNode is a node on a simulated clock.
type simNode struct {
	*Node
	t   *testing.T
	clk *clock.Sim
}

func newSimInstance(t *testing.T, sets ...string) *simNode {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=memory", "workload.readRate=0", "workload.writeRate=0"}, sets...)})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewSim(simStart)
	i := NewOn(config.NewStore(snap), nil, clk)
	t.Cleanup(func() { _ = i.Close() })
	return &simNode{Node: i, t: t, clk: clk}
}

// parked is how many timers the node holds when all its goroutines wait: the engine's
// (Engine.Waiters), the collector's tick, and a warm-up's end while one is under way.
func (s *simNode) parked() int {
	n := 1
	if e, err := s.engine(); err == nil {
		n += e.Waiters()
	}
	s.mu.Lock()
	if !s.warmUntil.IsZero() {
		n++
	}
	s.mu.Unlock()
	return n
}

// to moves the clock to at after simStart, one instant the node waits for at a time.
func (s *simNode) to(at time.Duration) {
	s.t.Helper()
	if !s.clk.StepTo(simStart.Add(at), s.parked, 10*time.Second) {
		s.t.Fatalf("the node's goroutines did not all wait at %v (%d timers pending, %d expected)",
			clock.Since(s.clk, simStart), s.clk.Pending(), s.parked())
	}
}

// TestWarmUpOnTheClock: a user's start with workload.warmup=2s warms up for exactly 2 s
// of the node's clock: the figures start at 2 s, the warm-up's reads (0 to 1.99 s at
// 100/s: 200) are a phase of their own, and the measured span counts only what came
// after (2 s to 3 s: 101). Stopping before the end cancels a warm-up: nothing is set
// apart at its instant.
func TestWarmUpOnTheClock(t *testing.T) {
	i := newSimInstance(t, "workload.readRate=100", "workload.readers=1", "workload.maxReaders=1", "workload.writeEnabled=false", "workload.warmup=2s")
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := i.StartLoad(); err != nil {
		t.Fatal(err)
	}
	i.to(2*time.Second - time.Nanosecond)
	if sess := i.Session(); sess.Warmup != 0 || len(sess.Phases) != 0 || !sess.Measured.Equal(simStart) {
		t.Fatalf("1 ns before its end the warm-up is over: warm-up %v, phases %d, measured from %v",
			sess.Warmup, len(sess.Phases), sess.Measured.Sub(simStart))
	}
	i.to(2 * time.Second)
	sess := i.Session()
	if sess.Warmup != 2*time.Second || !sess.Measured.Equal(simStart.Add(2*time.Second)) {
		t.Fatalf("at 2 s: warm-up %v, measured from %v; want 2s, from 2s", sess.Warmup, sess.Measured.Sub(simStart))
	}
	i.to(3 * time.Second)
	// The figures end at 3 s, before the load stops: a stop is not what is tested here.
	i.Finish()
	in := i.ReportInput("test")
	if len(in.Phases) != 1 || in.Phase != "load" {
		t.Fatalf("phases %+v, measured phase %q; want the warm-up, then load", in.Phases, in.Phase)
	}
	wu := in.Phases[0]
	if wu.Name != "warmup" || !wu.Started.Equal(simStart) || !wu.Ended.Equal(simStart.Add(2*time.Second)) || wu.Ops["read"].Count != 200 {
		t.Errorf("warm-up phase %q %v..%v with %d reads; want warmup 0s..2s with 200",
			wu.Name, wu.Started.Sub(simStart), wu.Ended.Sub(simStart), wu.Ops["read"].Count)
	}
	r := report.Build(in)
	if n := r.Ops["read"].Count; n != 101 || in.Warmup != 2*time.Second || !in.Started.Equal(simStart.Add(2*time.Second)) {
		t.Errorf("report: %d reads from %v after a %v warm-up; want 101 from 2s after 2s", n, in.Started.Sub(simStart), in.Warmup)
	}

	// A warm-up stopped before its end is cancelled.
	j := newSimInstance(t, "workload.readRate=100", "workload.writeEnabled=false", "workload.warmup=2s")
	if err := j.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := j.StartLoad(); err != nil {
		t.Fatal(err)
	}
	j.to(time.Second)
	if err := j.Stop(); err != nil {
		t.Fatal(err)
	}
	j.clk.Advance(5 * time.Second) // the cancelled warm-up's timer fires and does nothing
	if sess := j.Session(); sess.Warmup != 0 || len(sess.Phases) != 0 {
		t.Errorf("a stopped warm-up still set its figures apart: warm-up %v, phases %+v", sess.Warmup, sess.Phases)
	}
}

// window returns what was recorded over the next d of the node's clock, per op, with
// Rate per simulated second: the operations due after now and up to now+d.
func (s *simNode) window(d time.Duration) stats.Summary {
	s.t.Helper()
	c := s.Collector()
	from := s.clk.Now()
	// What is due at from runs before the window opens: the window is (from, from+d].
	s.to(from.Sub(simStart))
	c.Tick(from)
	before := c.Cumulative()
	s.to(from.Sub(simStart) + d)
	c.Tick(s.clk.Now())
	after := c.Cumulative()
	out := stats.Summary{Ops: map[string]stats.OpSummary{}}
	for op, a := range after.Ops {
		b := before.Ops[op]
		o := stats.OpSummary{Count: a.Count - b.Count, Errors: a.Errors - b.Errors, Workers: a.Workers, Failures: map[string]int64{}}
		for k, v := range a.Failures {
			o.Failures[k] = v - b.Failures[k]
		}
		o.Rate = float64(o.Count) / d.Seconds()
		out.Ops[op] = o
	}
	return out
}
