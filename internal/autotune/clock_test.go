package autotune

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
)

// clockedNode is a node on a simulated clock whose intervals the test ticks itself: the
// prober sees only what it asks of a node (its configuration, its status, its rates, its
// collector) and the clock it says it runs on. Any other call panics on the nil Node.
type clockedNode struct {
	control.Node
	clk  *clock.Sim
	snap *config.Snapshot
	coll *stats.Collector
	read stats.Op
}

func newClockedNode(t *testing.T, start time.Time) *clockedNode {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.readRate=100", "workload.writeEnabled=false"}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewSim(start)
	coll := stats.NewCollector(stats.Config{Clock: clk})
	read, err := coll.Register(config.ClassRead)
	if err != nil {
		t.Fatal(err)
	}
	return &clockedNode{clk: clk, snap: snap, coll: coll, read: read}
}

func (n *clockedNode) Clock() clock.Clock                 { return n.clk }
func (n *clockedNode) Config() *config.Snapshot           { return n.snap }
func (n *clockedNode) Collector() *stats.Collector        { return n.coll }
func (n *clockedNode) SetShape(string, pacer.Shape) error { return nil }
func (n *clockedNode) Stop(...string) error               { return nil }
func (n *clockedNode) Status() control.Status {
	return control.Status{Running: map[string]bool{config.ClassRead: true}}
}
func (n *clockedNode) SaturatedNodes(start time.Time) []string { return nil }

// second moves the clock on a second and closes the node's interval there, with 100 reads.
func (n *clockedNode) second() {
	n.clk.Advance(time.Second)
	sh := n.coll.Recorder(n.read).Shard(0)
	for range 100 {
		sh.Success(time.Millisecond, time.Millisecond)
	}
	n.coll.Tick(n.clk.Now())
}

// probe starts a step at 100 ops/s in its own goroutine once the prober is waiting for
// intervals (its stall timer pending), and returns its outcome's channel.
type probeOutcome struct {
	m   Measurement
	err error
}

func startProbe(t *testing.T, n *clockedNode, spec ProbeSpec) chan probeOutcome {
	t.Helper()
	p, err := NewNodeProber(n, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Clock != clock.Clock(n.clk) {
		t.Fatalf("the prober's clock is %T; want the node's own", p.Clock)
	}
	p.Begin()
	t.Cleanup(func() { _ = p.End() })
	out := make(chan probeOutcome, 1)
	go func() {
		m, err := p.Probe(context.Background(), 100, spec)
		out <- probeOutcome{m, err}
	}()
	if !n.clk.WaitTimers(1, time.Minute) {
		t.Fatal("the prober set no timer on the node's clock within a minute")
	}
	return out
}

// A step's settle period and its window are seconds of the node's clock: on a node on a
// simulated clock, the step measures exactly the intervals from its start plus the settle
// period, whatever the machine's time. With the step's start read from time.Now, every
// interval of this node (whose clock reads a past day) was settling, none was measured,
// and the step ended on the stall.
func TestProbeSettlesOnTheNodesClock(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	n := newClockedNode(t, start)
	n.coll.Tick(start) // the intervals start on whole seconds of the clock
	out := startProbe(t, n, ProbeSpec{Settle: 2 * time.Second, Window: 2 * time.Second, MaxWindow: 10 * time.Second})
	for range 4 {
		n.second()
	}
	var o probeOutcome
	select {
	case o = <-out:
	case <-time.After(time.Minute):
		t.Fatal("no measurement a minute after the window's intervals")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if want := start.Add(2 * time.Second); !o.m.Start.Equal(want) || !o.m.End.Equal(want.Add(2*time.Second)) || o.m.Seconds != 2 {
		t.Errorf("measured %v to %v (%v s); want the two seconds after the 2 s settle, %v to %v",
			o.m.Start, o.m.End, o.m.Seconds, want, want.Add(2*time.Second))
	}
	if got := o.m.Classes[config.ClassRead].Achieved; got != 100 {
		t.Errorf("achieved %v reads/s; want the 100 of each measured second", got)
	}
}

// A node whose collector stops ticking ends the step with an error once the settle
// period and 5 s have passed on its clock since its last interval, and not before.
func TestProbeStallIsJudgedOnTheNodesClock(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	n := newClockedNode(t, start)
	n.coll.Tick(start)
	out := startProbe(t, n, ProbeSpec{Settle: time.Second, Window: 2 * time.Second, MaxWindow: 10 * time.Second})
	n.second() // settling: the stall counts from here
	// The prober has taken it in once its timer is set again, 6 s from now.
	stallAt := n.clk.Now().Add(6 * time.Second)
	for end := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if at, ok := n.clk.Next(); ok && at.Equal(stallAt) {
			break
		}
		if time.Now().After(end) {
			at, _ := n.clk.Next()
			t.Fatalf("the prober's timer is at %v a minute after the first interval; want %v", at, stallAt)
		}
	}
	n.clk.Advance(6*time.Second - time.Nanosecond)
	if n.clk.Pending() != 1 {
		t.Fatalf("%d timers pending 1 ns before the stall; want the prober's", n.clk.Pending())
	}
	select {
	case o := <-out:
		t.Fatalf("the step ended 1 ns before the stall: %+v", o)
	default:
	}
	n.clk.Advance(time.Nanosecond)
	select {
	case o := <-out:
		if o.err == nil || !strings.Contains(o.err.Error(), "no statistics interval for 6s") {
			t.Errorf("the stalled step ended with %v; want the error naming the 6 s without an interval", o.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the step did not end a minute after the stall's instant")
	}
}
