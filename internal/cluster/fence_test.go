package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/node"
)

// storeReads is the memory driver noting the instant of every read it is sent on the
// clock the test gives it: what the store sees of a node's load.
const storeReads = "storereads"

var storeLog struct {
	mu  sync.Mutex
	clk clock.Clock
	at  []time.Time
}

type storeReadsDriver struct{ driver.Driver }

func (d storeReadsDriver) Read(ctx context.Context, key string) ([]byte, error) {
	storeLog.mu.Lock()
	storeLog.at = append(storeLog.at, storeLog.clk.Now())
	storeLog.mu.Unlock()
	return d.Driver.Read(ctx, key)
}

func init() {
	mem, ok := driver.Lookup("memory")
	if !ok {
		panic("the memory driver is not registered")
	}
	if err := driver.Register(driver.Definition{Name: storeReads, Summary: "memory, noting each read's instant (cluster tests)",
		NewOptions: mem.NewOptions, New: func() driver.Driver { return storeReadsDriver{mem.New()} }}); err != nil {
		panic(err)
	}
}

// unfenced hides a node's SendUntil from its agent: a node that cannot be fenced.
type unfenced struct{ control.Node }

// A fleet node's process paused past its lease (SIGSTOP, a stalled VM) resumes with its
// schedule 5 s behind, and its workers' waits, due long before the lease's end, end
// first: under catchUp=burst they would send the backlog at once, on top of the share the
// coordinator gave the other nodes meanwhile. The lease's fence (node.Node.SendUntil)
// holds them: the store sees no read from the lease's end until the agent's lease
// goroutine stops the load. The same node with its fence hidden from the agent sends the
// whole backlog in that window, which is what shows that the test exercises the fence:
// on a real machine the pause's resume may run the agent first, and then the fence is
// not what holds the load (an ndbench without it sent 4 reads after a resume there).
//
// Everything runs on a simulated clock: the node's engine, its collector, the agent's
// lease goroutine. The pause is a jump of the clock with none of them running; on the
// resume the waits due meanwhile end one at a time in the order of their instants.
func TestPausedNodeSendsNothingPastItsLease(t *testing.T) {
	const (
		lease   = time.Second
		rate    = 100
		readers = 4
	)
	for _, tc := range []struct {
		name   string
		fenced bool
	}{
		{"fenced", true},
		{"without a fence", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
			sim := clock.NewSim(start)
			storeLog.mu.Lock()
			storeLog.clk, storeLog.at = sim, nil
			storeLog.mu.Unlock()
			snap, err := config.Load(config.Sources{Sets: []string{"driver.name=" + storeReads,
				"workload.readRate=100", "workload.readers=4", "workload.maxReaders=4", "workload.writeEnabled=false",
				"workload.catchUp=burst"}})
			if err != nil {
				t.Fatal(err)
			}
			n := node.NewOn(config.NewStore(snap), nil, sim)
			t.Cleanup(func() { _ = n.Close() })
			if err := n.Init(context.Background(), storeReads, nil); err != nil {
				t.Fatal(err)
			}
			var cn control.Node = n
			if !tc.fenced {
				cn = unfenced{n}
			}
			a := NewAgent(cn, AgentOptions{ID: "n1", Version: "v1", Clock: sim})
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { defer close(ran); a.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-ran })

			// The timers the node and its agent hold when all their goroutines wait: the
			// collector's tick, the engine's three loops, the agent's lease, and one per
			// reader while the load runs (each waits for its slot, or at the fence).
			parked := func() int {
				p := 1 + 3 + 1
				if n.Status().Running["read"] {
					p += readers
				}
				return p
			}
			to := func(at time.Duration) {
				t.Helper()
				if !sim.StepTo(start.Add(at), parked, 10*time.Second) {
					t.Fatalf("the node's goroutines did not all wait at %v (%d timers pending, %d expected)",
						clock.Since(sim, start), sim.Pending(), parked())
				}
			}
			beat := func() {
				t.Helper()
				if _, err := a.Beat(BeatRequest{Coordinator: "c1", Run: "r1", LeaseMs: lease.Milliseconds()}); err != nil {
					t.Fatal(err)
				}
			}
			to(0)
			if err := a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: start.Add(100 * time.Millisecond),
				LeaseMs: lease.Milliseconds(), NoWarmup: true}); err != nil {
				t.Fatal(err)
			}
			to(500 * time.Millisecond)
			beat()
			to(time.Second)
			beat() // the last beat: the lease ends at 2 s
			leaseEnd := start.Add(2 * time.Second)
			to(1500 * time.Millisecond)
			before := reads(time.Time{})
			// Reads due 100 ms to 1.5 s, one each 10 ms.
			if before != 141 {
				t.Fatalf("%d reads before the pause, want the 141 due", before)
			}

			// The pause: 5 s in which nothing of the process runs.
			sim.Jump(5 * time.Second)
			to(6600 * time.Millisecond)
			past := reads(leaseEnd)
			t.Logf("%d reads before the pause, %d sent from the lease's end (%v) to the stop, %d in all", before, past, leaseEnd.Sub(start), reads(time.Time{}))
			if n.Status().Running["read"] {
				t.Fatal("the node's load still runs 100 ms after its resume past its lease")
			}
			// 6.5 s of schedule from 100 ms at 10 ms: 641 reads due by the resume, 500
			// of them past the lease's end.
			if tc.fenced && past != 0 {
				t.Errorf("the paused node sent %d reads past its lease's end before it stopped, want none", past)
			}
			if !tc.fenced && past < 400 {
				t.Errorf("without a fence the node sent %d reads past its lease's end, want its backlog (500): the resume did not run the workers before the lease goroutine, so this test does not exercise the fence", past)
			}
			// Nothing more, whatever the schedule: the node waits for its coordinator.
			to(8 * time.Second)
			if got := reads(leaseEnd); got != past {
				t.Errorf("%d reads past the lease's end after the stop, want the %d before it", got, past)
			}
		})
	}
}

// reads returns how many reads the store saw at or after from.
func reads(from time.Time) int {
	storeLog.mu.Lock()
	defer storeLog.mu.Unlock()
	n := 0
	for _, at := range storeLog.at {
		if !at.Before(from) {
			n++
		}
	}
	return n
}
