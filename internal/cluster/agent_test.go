package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/pacer"
)

// recordingNode is a node that notes what the agent asked of it; what an agent never
// calls is left to the embedded nil interface.
type recordingNode struct {
	control.Node
	mu       sync.Mutex
	startAt  time.Time
	stops    int
	bfStops  int
	running  bool
	stopped  chan struct{}
	stopOnce sync.Once
}

func newRecordingNode() *recordingNode { return &recordingNode{stopped: make(chan struct{})} }

func (n *recordingNode) StartLoadAt(at time.Time, _ ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.startAt, n.running = at, true
	return nil
}

func (n *recordingNode) Stop(...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stops++
	n.running = false
	n.stopOnce.Do(func() { close(n.stopped) })
	return nil
}

func (n *recordingNode) SetShape(string, pacer.Shape) error { return nil }

func (n *recordingNode) StopBackfill() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bfStops++
	return nil
}

func (n *recordingNode) Status() control.Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return control.Status{Driver: "memory", Running: map[string]bool{"read": n.running}}
}

func (n *recordingNode) counts() (startAt time.Time, stops, bfStops int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.startAt, n.stops, n.bfStops
}

// A node whose coordinator goes silent stops its own load after the lease, and says so;
// beats renew the lease; a beat naming no run does not. On a simulated clock the load
// stops at the first instant past the lease after the run's last beat, not before; on
// real time a loaded machine's beats, 100 ms apart, could come later than a 300 ms lease.
func TestAgentStopsLoadWhenTheLeaseLapses(t *testing.T) {
	start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	sim := clock.NewSim(start)
	node := newRecordingNode()
	a := NewAgent(node, AgentOptions{ID: "n1", Version: "v1", Clock: sim})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); a.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	// to steps the clock to at after start; the agent's lease goroutine holds one timer
	// when it waits.
	to := func(at time.Duration) {
		t.Helper()
		if !sim.StepTo(start.Add(at), func() int { return 1 }, 10*time.Second) {
			t.Fatalf("the agent did not wait at %v (%d timers pending)", clock.Since(sim, start), sim.Pending())
		}
	}
	stops := func() int { _, n, _ := node.counts(); return n }

	const lease = 300 * time.Millisecond
	at := start.Add(10 * time.Millisecond)
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: at, LeaseMs: lease.Milliseconds()}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := node.counts(); !got.Equal(at) {
		t.Fatalf("started at %v, want %v", got, at)
	}
	// Renewed for three lease times: still running.
	for i := range 9 {
		to(time.Duration(i+1) * lease / 3)
		if _, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds(), Sent: sim.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if stops() != 0 {
		t.Fatal("load stopped while the coordinator beat")
	}
	// Membership-only beats keep the node answering but do not renew the run's lease:
	// the run's last beat was at 900 ms, so the load runs at 1.2 s and stops just after.
	lastBeat := 900 * time.Millisecond
	for now := lastBeat + lease/4; now <= lastBeat+lease; now += lease / 4 {
		to(now)
		if stops() != 0 {
			t.Fatalf("load stopped %v after the run's last beat, within its lease of %v", now-lastBeat, lease)
		}
		if _, err := a.Beat(BeatRequest{Coordinator: "c1", Sent: sim.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	to(lastBeat + lease + time.Millisecond)
	select {
	case <-node.stopped:
	default:
		t.Fatalf("load still running %v after the run's last beat (lease %v)", lease+time.Millisecond, lease)
	}
	// The backfill is stopped with the load, on the agent's goroutine, which has parked
	// again since.
	resp, err := a.Beat(BeatRequest{Coordinator: "c1", Sent: sim.Now()})
	if _, stops, bf := node.counts(); err != nil || !resp.Orphaned || resp.Run != "" || stops != 1 || bf != 1 {
		t.Fatalf("after the lease lapsed: %+v, %v, load stops %d, backfill stops %d; want orphaned, no run, both stopped once", resp, err, stops, bf)
	}
	if resp.Received.IsZero() || resp.Sent.Before(resp.Received) || resp.ID != "n1" || resp.Version != "v1" {
		t.Errorf("beat answer %+v: want id, version and ordered timestamps", resp)
	}
}

// A beat can be delayed past more than one release: under load, a coordinator that starts
// and stops in quick succession (auto-tune's steps) had a beat of the run before last
// reach the node after the last release, which took the lease again and refused the
// coordinator's next start as "another coordinator's run" (TestStartDuringBeats, with
// CPU-bound processes beside it).
func TestAgentIgnoresLateBeatsOfEarlierReleasedRuns(t *testing.T) {
	a := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"})
	const lease = 10_000
	for _, run := range []string{"r1", "r2", "r3"} {
		if err := a.Start(StartRequest{Coordinator: "c1", Run: run, LeaseMs: lease}); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ReleaseRequest{Coordinator: "c1", Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	for _, run := range []string{"r1", "r2"} {
		resp, err := a.Beat(BeatRequest{Coordinator: "c1", Run: run, LeaseMs: lease})
		if err != nil || resp.Run != "" {
			t.Errorf("a late beat of released run %s: run %q, %v; want a membership answer", run, resp.Run, err)
		}
	}
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r4", LeaseMs: lease}); err != nil {
		t.Fatalf("the coordinator's next run after late beats: %v", err)
	}
}

// One node serves one run: another coordinator is refused while the run's lease holds,
// and may take the node once the run is released or its lease lapsed.
func TestAgentServesOneCoordinatorAtATime(t *testing.T) {
	a := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"})
	lease := int64(200)
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Beat(BeatRequest{Coordinator: "c2", Run: "r9", LeaseMs: lease}); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second coordinator's beat: %v, want ErrClaimed", err)
	}
	if err := a.Start(StartRequest{Coordinator: "c2", Run: "r9", LeaseMs: lease}); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second coordinator's start: %v, want ErrClaimed", err)
	}
	if err := a.Release(ReleaseRequest{Coordinator: "c2", Run: "r9"}); !errors.Is(err, ErrClaimed) {
		t.Fatalf("second coordinator released the first's run: %v", err)
	}
	// A membership beat from anyone is answered.
	if _, err := a.Beat(BeatRequest{Coordinator: "c2"}); err != nil {
		t.Fatalf("membership beat: %v", err)
	}
	if err := a.Release(ReleaseRequest{Coordinator: "c1", Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(StartRequest{Coordinator: "c2", Run: "r9", LeaseMs: lease}); err != nil {
		t.Fatalf("after release: %v", err)
	}
	time.Sleep(time.Duration(lease+50) * time.Millisecond)
	if _, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r2", LeaseMs: lease}); err != nil {
		t.Fatalf("after c2's lease lapsed: %v", err)
	}
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r2"}); err == nil {
		t.Error("a start without a lease was accepted")
	}
}

// The coordinator's beats run beside its commands: a beat that named the run can reach the
// node after the release of that run. It must not take the lease again, or the
// coordinator's next run is refused as "another coordinator's run" until the lease
// lapses (a fleet start right after a stop failed that way, TestStartDuringBeats).
func TestAgentIgnoresABeatOfAReleasedRun(t *testing.T) {
	a := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"})
	const lease = 10_000
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease}); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ReleaseRequest{Coordinator: "c1", Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	resp, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease})
	if err != nil {
		t.Fatalf("a late beat of the released run: %v, want an answer", err)
	}
	if resp.Run != "" {
		t.Errorf("a late beat of the released run took the lease again (run %q)", resp.Run)
	}
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r2", LeaseMs: lease}); err != nil {
		t.Fatalf("the coordinator's next run: %v", err)
	}
	// A client may start a released run again on purpose; its beats then renew it.
	if err := a.Release(ReleaseRequest{Coordinator: "c1", Run: "r2"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r2", LeaseMs: lease}); err != nil {
		t.Fatalf("a start of the released run: %v", err)
	}
	if resp, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r2", LeaseMs: lease}); err != nil || resp.Run != "r2" {
		t.Errorf("a beat of the restarted run: run %q, %v; want it renewed", resp.Run, err)
	}
}

// A node held by a run admits the commands of that run only, and of no other run of the
// same coordinator or of another one, until the run is released or its lease lapses;
// calls that name no coordinator (a person at the node's own API) are admitted.
func TestAgentAdmitsOnlyTheRunThatHoldsIt(t *testing.T) {
	a := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"})
	lease := 200 * time.Millisecond
	if err := a.Claim("c1", "r1", lease); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		coordinator, run string
		refused          bool
	}{
		{"c1", "r1", false},
		{"c1", "r2", true},
		{"c1", "", true},
		{"c2", "r1", true},
		{"c2", "", true},
		{"", "", false},
	} {
		err := a.Admit(tc.coordinator, tc.run)
		if got := errors.Is(err, ErrClaimed); got != tc.refused {
			t.Errorf("Admit(%q, %q) while run r1 of c1 holds the node: %v; want refused %v", tc.coordinator, tc.run, err, tc.refused)
		}
	}
	if err := a.Release(ReleaseRequest{Coordinator: "c1", Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Admit("c2", ""); err != nil {
		t.Errorf("Admit of another coordinator after the run's release: %v; want admitted", err)
	}
	if err := a.Claim("c1", "r3", lease); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lease + 50*time.Millisecond)
	if err := a.Admit("c2", ""); err != nil {
		t.Errorf("Admit of another coordinator after the run's lease lapsed: %v; want admitted", err)
	}
}

// Beats carry the agent's boot id, the same on every beat of one process and another in
// a new one (a restart under the same node id), and who holds the node.
func TestAgentBeatsCarryItsBootAndHolder(t *testing.T) {
	a := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"})
	r1, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Beat(BeatRequest{Coordinator: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Boot == "" || r1.Boot != r2.Boot {
		t.Errorf("boot ids of one agent's beats: %q, %q; want one, not empty", r1.Boot, r2.Boot)
	}
	if r2.Run != "r1" || r2.Coordinator != "c1" {
		t.Errorf("beat says held by run %q of %q; want r1 of c1", r2.Run, r2.Coordinator)
	}
	r3, err := NewAgent(newRecordingNode(), AgentOptions{ID: "n1"}).Beat(BeatRequest{Coordinator: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if r3.Boot == r1.Boot {
		t.Errorf("a new agent under the same id has boot id %q, as the old one; want another", r3.Boot)
	}
}

// TestAgentStartWarmsUp: a fleet's start is a user's start on each node: from idle, the
// node's figures start workload.warmup after the common instant, as the API's start does.
// The agent used to start the load with no warm-up at all.
func TestAgentStartWarmsUp(t *testing.T) {
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.readRate=200",
		"workload.writeEnabled=false", "workload.warmup=400ms"}})
	if err != nil {
		t.Fatal(err)
	}
	n := node.New(config.NewStore(snap), nil)
	t.Cleanup(func() { _ = n.Close() })
	if err := n.InitConfigured(context.Background()); err != nil {
		t.Fatal(err)
	}
	a := NewAgent(n, AgentOptions{ID: "n1"})
	at := time.Now().Add(100 * time.Millisecond)
	if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: at, LeaseMs: 10000}); err != nil {
		t.Fatal(err)
	}
	if got := n.Status().WarmingUpUntil; !got.Equal(at.Add(400 * time.Millisecond)) {
		t.Fatalf("warming up until %v, want the start instant and workload.warmup (%v)", got, at.Add(400*time.Millisecond))
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Session().Warmup == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the warm-up never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	in := n.ReportInput("test")
	if in.Warmup != 400*time.Millisecond || len(in.Phases) != 1 || in.Phases[0].Name != "warmup" || in.Started.Before(at.Add(400*time.Millisecond)) {
		t.Errorf("report input: warm-up %v, phases %+v, measured from %v; want 400ms set apart from %v", in.Warmup, in.Phases, in.Started, at)
	}
}
