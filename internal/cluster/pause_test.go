package cluster

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/node"
)

// The node's fence is what bounds a paused process's load: the agent finds it on the
// node it is given.
var _ fencer = (*node.Node)(nil)

// fenceNode notes, in order, the starts, stops and fences an agent gives it.
type fenceNode struct {
	control.Node
	mu      sync.Mutex
	events  []string
	running bool
}

func (n *fenceNode) note(e string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, e)
}

func (n *fenceNode) StartLoadAt(time.Time, ...string) error {
	n.note("start")
	n.mu.Lock()
	n.running = true
	n.mu.Unlock()
	return nil
}

func (n *fenceNode) Stop(...string) error {
	n.note("stop")
	n.mu.Lock()
	n.running = false
	n.mu.Unlock()
	return nil
}

func (n *fenceNode) StopBackfill() error { return nil }

func (n *fenceNode) SendUntil(until time.Time) {
	if until.IsZero() {
		n.note("unfenced")
		return
	}
	n.note("fence " + until.UTC().Format("15:04:05.000"))
}

func (n *fenceNode) Status() control.Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return control.Status{Driver: "memory", Running: map[string]bool{"read": n.running}}
}

// loads returns the starts and stops so far.
func (n *fenceNode) loads() []string {
	var out []string
	for _, e := range n.log() {
		if e == "start" || e == "stop" {
			out = append(out, e)
		}
	}
	return out
}

// fenceNow returns the last fence given ("" before any).
func (n *fenceNode) fenceNow() string {
	f := ""
	for _, e := range n.log() {
		if e == "unfenced" || strings.HasPrefix(e, "fence ") {
			f = e
		}
	}
	return f
}

func (n *fenceNode) log() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.events)
}

// A node whose process was paused past its lease (SIGSTOP, a stalled VM, a cut link that
// healed) finds the lease lapsed on the first thing it handles after the pause, whether
// its lease goroutine, its coordinator's next beat or the coordinator's start comes
// first: it stops its load, which drops the schedule and the backlog the pause left on
// it, and sends again only once its coordinator starts it, on a fresh schedule. Its load
// is fenced at the lease's end meanwhile, so nothing of the backlog goes out before the
// stop. The agent's goroutine is not run (it is paused with the process); time is the
// simulated clock's.
func TestAgentPausedPastItsLeaseDropsItsSchedule(t *testing.T) {
	const lease = time.Second
	fence := func(t0 time.Time) string { return "fence " + t0.Add(lease).UTC().Format("15:04:05.000") }
	for _, tc := range []struct {
		name string
		// resume is what reaches the node first after the pause.
		resume func(a *Agent) (BeatResponse, error)
		// wantLoad are the node's starts and stops after the pause; wantFence its fence
		// then, given the pause's end.
		wantLoad  []string
		wantFence func(t1 time.Time) string
	}{
		{
			// The beat does not renew the lapsed lease: the node stops, and the beat's
			// answer says it is orphaned.
			name: "the run's beat comes first",
			resume: func(a *Agent) (BeatResponse, error) {
				return a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds()})
			},
			wantLoad:  []string{"stop"},
			wantFence: func(time.Time) string { return "unfenced" },
		},
		{
			// The lapse was noticed first (here by a beat naming no run; the lease
			// goroutine alike): the run's beat that follows does not take the lease
			// without the load either, and says the node is orphaned, so the coordinator
			// starts it (TestPartitionCoordinatorCutOff).
			name: "the lapse is noticed before the run's beat",
			resume: func(a *Agent) (BeatResponse, error) {
				if _, err := a.Beat(BeatRequest{Coordinator: "c1"}); err != nil {
					return BeatResponse{}, err
				}
				return a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds()})
			},
			wantLoad:  []string{"stop"},
			wantFence: func(time.Time) string { return "unfenced" },
		},
		{
			// The old load stops before the new lease's start.
			name: "the coordinator's start comes first",
			resume: func(a *Agent) (BeatResponse, error) {
				err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: a.clk.Now(), LeaseMs: lease.Milliseconds()})
				return BeatResponse{Orphaned: true}, err
			},
			wantLoad:  []string{"stop", "start"},
			wantFence: fence,
		},
		{
			name: "another coordinator's start comes first",
			resume: func(a *Agent) (BeatResponse, error) {
				err := a.Start(StartRequest{Coordinator: "c2", Run: "r9", At: a.clk.Now(), LeaseMs: lease.Milliseconds()})
				return BeatResponse{Orphaned: true}, err
			},
			wantLoad:  []string{"stop", "start"},
			wantFence: fence,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
			n := &fenceNode{}
			a := NewAgent(n, AgentOptions{ID: "n1", Version: "v1", Clock: sim})
			t0 := sim.Now()
			if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: t0, LeaseMs: lease.Milliseconds()}); err != nil {
				t.Fatal(err)
			}
			if got := n.fenceNow(); got != fence(t0) {
				t.Errorf("after the start the node's fence is %q, want %q (the lease's end)", got, fence(t0))
			}
			// A beat within the lease renews it, and moves the fence.
			sim.Advance(lease / 2)
			if _, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds()}); err != nil {
				t.Fatal(err)
			}
			if got, want := n.fenceNow(), fence(sim.Now()); got != want {
				t.Errorf("after a beat within the lease the node's fence is %q, want %q", got, want)
			}
			before := len(n.loads())
			// The pause: 5 leases go by with nothing of the process running.
			sim.Advance(5 * lease)
			t1 := sim.Now()
			resp, err := tc.resume(a)
			if err != nil {
				t.Fatal(err)
			}
			if got := n.loads()[before:]; !slices.Equal(got, tc.wantLoad) {
				t.Errorf("after the pause the node's load got %q, want %q", got, tc.wantLoad)
			}
			if got, want := n.fenceNow(), tc.wantFence(t1); got != want {
				t.Errorf("after the pause the node's fence is %q, want %q", got, want)
			}
			if !resp.Orphaned {
				t.Errorf("the first answer after the pause does not say the node is orphaned: %+v", resp)
			}
			if tc.wantLoad[len(tc.wantLoad)-1] == "stop" && resp.Run != "" {
				t.Errorf("a beat of the run took the lease that lapsed during the pause: %+v", resp)
			}
			if tc.wantLoad[len(tc.wantLoad)-1] == "stop" {
				// A later beat of the run does not start the node either: the
				// coordinator does, when it sees the node orphaned.
				sim.Advance(lease / 4)
				resp, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds()})
				if err != nil {
					t.Fatal(err)
				}
				if n.Status().Running["read"] || !resp.Orphaned || resp.Run != "" {
					t.Errorf("a later beat of the run: the node's load %q, answer %+v; want it stopped and orphaned", n.log(), resp)
				}
			}
		})
	}
}
