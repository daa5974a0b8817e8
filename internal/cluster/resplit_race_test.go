package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
)

// patchNode is a node as the coordinator sees it over the peer protocol, reduced to what
// a re-split touches: beats, config patches (which the test can hold in flight), starts.
// Its beats answer on the coordinator's simulated clock, so its offset is 0.
type patchNode struct {
	t    *testing.T
	clk  clock.Clock
	ts   *httptest.Server
	load *patchLoad

	mu       sync.Mutex
	boot     string
	cut      bool              // every call answers 503
	running  bool              // runs its load (the fleet's reads)
	orphaned bool              // its lease lapsed
	values   map[string]string // as patched
	hold     chan struct{}     // while set, a patch waits until it is closed
	held     int               // patches waiting on hold
	inFlight int               // patches received and not yet answered
	patches  int               // patches applied
	starts   int
}

// patchLoad is the fleet the patchNodes make up: after every change of what a node runs
// it notes the sum of the read rates of the nodes that run, so a test sees the highest
// the fleet ever ran at, not only where it settled.
type patchLoad struct {
	mu    sync.Mutex
	nodes []*patchNode
	peak  float64
	when  string
}

func (l *patchLoad) changed(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sum, parts := 0.0, []string{}
	for _, n := range l.nodes {
		n.mu.Lock()
		r, _ := strconv.ParseFloat(n.values["workload.readRate"], 64)
		if n.running {
			sum += r
			parts = append(parts, fmt.Sprint(r))
		}
		n.mu.Unlock()
	}
	if sum > l.peak {
		l.peak, l.when = sum, what+" (running: "+strings.Join(parts, " + ")+")"
	}
}

func newPatchNode(t *testing.T, clk clock.Clock, load *patchLoad) *patchNode {
	n := &patchNode{t: t, clk: clk, load: load, boot: "boot-1", values: map[string]string{}}
	n.ts = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(n.ts.Close)
	load.nodes = append(load.nodes, n)
	return n
}

func (n *patchNode) id() string { return strings.TrimPrefix(n.ts.URL, "http://") }

func (n *patchNode) serve(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	if n.cut {
		n.mu.Unlock()
		http.Error(w, "cut off", http.StatusServiceUnavailable)
		return
	}
	n.mu.Unlock()
	switch {
	case r.URL.Path == "/api/v1/cluster/beat":
		now := n.clk.Now()
		n.mu.Lock()
		resp := BeatResponse{ID: n.id(), Version: "test", Boot: n.boot, Received: now, Sent: now, Driver: "memory",
			Running: map[string]bool{"read": n.running, "write": false}, Orphaned: n.orphaned}
		n.mu.Unlock()
		_ = json.NewEncoder(w).Encode(resp)
	case r.URL.Path == "/api/v1/config" && r.Method == http.MethodPatch:
		var body struct {
			Values map[string]string `json:"values"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.mu.Lock()
		n.inFlight++
		hold := n.hold
		if hold != nil {
			n.held++
		}
		n.mu.Unlock()
		if hold != nil {
			<-hold
		}
		n.mu.Lock()
		for k, v := range body.Values {
			n.values[k] = v
		}
		n.patches++
		n.inFlight--
		n.mu.Unlock()
		n.load.changed("patch of " + n.id())
		_, _ = w.Write([]byte("{}"))
	case r.URL.Path == "/api/v1/cluster/start":
		n.mu.Lock()
		n.running, n.orphaned = true, false
		n.starts++
		n.mu.Unlock()
		n.load.changed("start of " + n.id())
		_, _ = w.Write([]byte("{}"))
	default:
		_, _ = w.Write([]byte("{}"))
	}
}

func (n *patchNode) state() (rate string, running bool, held, inFlight, patches, starts int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.values["workload.readRate"], n.running, n.held, n.inFlight, n.patches, n.starts
}

// waitState polls cond every millisecond until it holds; the patience only turns a
// coordinator that never gets there into a failure (the calls run on real time, the
// fleet's judgements on the simulated clock).
func waitState(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(30 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within 30 s; last seen: %s", what, state)
		}
		time.Sleep(time.Millisecond)
	}
}

// A node that comes back at the moment its share moves to the others (found lost, its
// lease lapsed: the move's re-split is in flight) starts two re-splits that overlap: the
// move's (the others up from 200 to 300) and its rejoin's (the others back down to 200,
// then it starts). However the two interleave, the fleet ends at its target, the nodes
// at what the coordinator says they are assigned, and at no instant do the nodes that
// run exceed the fleet's rate: the rejoining node starts only once the others are down.
//
// The move's patches are held in flight at the two other nodes until the rejoin has gone
// as far as it goes without their answers, the interleaving that a loaded machine gave 1
// in 6 runs of the in-process fleet with the node down 2.5 s (docs/performance.md, stop
// 52): until it started the node, or logged that it waits for them (the one thing of the
// fix the test knows; a coordinator that does neither fails at the patience). Before the
// fix the rejoin diffed the others against what they had confirmed (200, the move's 300
// not yet answered), sent them nothing and started the node; the move's 300 then stayed,
// and the fleet ran 300 + 300 + 200 of 600 reads/s (3 runs of 3, both cases).
func TestResplitsInFlightEndAtTheLatestSplit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool // comes back as a new process (else: its link comes back, its lease lapsed)
	}{
		{name: "cut off, back"},
		{name: "restarted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := clock.NewSim(time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC))
			load := &patchLoad{}
			events := &logEvents{}
			nodes := []*patchNode{newPatchNode(t, sim, load), newPatchNode(t, sim, load), newPatchNode(t, sim, load)}
			addrs := make([]string, len(nodes))
			for i, n := range nodes {
				addrs[i] = n.id()
			}
			disc, err := discovery.Parse("static:"+strings.Join(addrs, ","), discovery.Options{})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(Options{Self: discovery.Member{ID: "coord"}, Discovery: disc, Token: "a-token-long-enough-for-a-fleet",
				Config: snap, Clock: sim, Version: "test", Redistribute: true, Logger: slog.New(events),
				SuspectAfter: 600 * time.Millisecond, LostAfter: time.Second, Lease: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c.refresh(ctx)
			c.beatAll(ctx)
			if _, err := c.SetConfig(ctx, Scope{Kind: ScopeFleet}, map[string]string{"workload.readRate": "600"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Start(ctx, "read"); err != nil {
				t.Fatal(err)
			}
			for i, n := range nodes {
				if rate, running, _, _, _, _ := n.state(); rate != "200" || !running {
					t.Fatalf("node %d after the start: readRate %s, running %v; want 200, running", i, rate, running)
				}
			}

			// The victim stops answering; it is lost 1 s after its last answer, and its
			// share moves once the lease sent with its last beat while alive (at 1 s) has
			// lapsed, at 3 s. It stopped its load by then.
			victim, others := nodes[2], nodes[:2]
			victim.mu.Lock()
			victim.cut = true
			victim.mu.Unlock()
			sim.Advance(time.Second)
			c.beatAll(ctx)
			sim.Advance(2 * time.Second)
			victim.mu.Lock()
			victim.running = false
			victim.mu.Unlock()
			release := make(chan struct{})
			for _, n := range others {
				n.mu.Lock()
				n.hold = release
				n.mu.Unlock()
			}
			c.beatAll(ctx) // finds the lease lapsed: the move's re-split begins
			waitState(t, "the move's patches in flight at the two other nodes", func() (bool, string) {
				_, _, h0, _, _, _ := others[0].state()
				_, _, h1, _, _, _ := others[1].state()
				return h0 == 1 && h1 == 1, fmt.Sprintf("held %d, %d", h0, h1)
			})

			// It answers again, at the same instant: its rejoin's re-split begins while
			// the move's is in flight.
			victim.mu.Lock()
			victim.cut = false
			if tc.restart {
				victim.boot, victim.values = "boot-2", map[string]string{}
			} else {
				victim.orphaned = true
			}
			victim.mu.Unlock()
			c.beatAll(ctx)
			// The move's patches are answered once the rejoin has gone as far as it goes
			// without them: it started the node (and then only a later re-split could
			// bring the others down), or it waits for them, as the coordinator logs.
			waitState(t, "the rejoin started the node, or waits for the move's patches", func() (bool, string) {
				rate, _, _, _, _, starts := victim.state()
				waits := events.count("re-split waits for the patch in flight to the node")
				return starts >= 2 || waits >= len(others), fmt.Sprintf("victim readRate %s, started %d times; %d waits logged", rate, starts, waits)
			})
			close(release)
			for _, n := range others {
				n.mu.Lock()
				n.hold = nil
				n.mu.Unlock()
			}
			// Settled: the rejoined node started, and no patch is in flight at the others
			// (the move's answered). The rejoin starts the node only after its re-split
			// returned, and the move's ran before it began.
			waitState(t, "the rejoined node started and the others' patches answered", func() (bool, string) {
				_, _, _, _, _, starts := victim.state()
				ok, state := starts >= 2, fmt.Sprintf("victim started %d times", starts)
				for i, n := range others {
					rate, _, _, inFlight, patches, _ := n.state()
					ok = ok && inFlight == 0 && patches >= 2
					state += fmt.Sprintf("; node %d readRate %s, %d patches, %d in flight", i, rate, patches, inFlight)
				}
				return ok, state
			})
			// What a user checks: each node's rate, and the coordinator's account of them.
			assigned := map[string]float64{}
			for _, m := range c.Members() {
				assigned[m.ID] = m.Assigned["read"]
			}
			for i, n := range nodes {
				rate, running, _, _, _, _ := n.state()
				if rate != "200" || !running {
					t.Errorf("node %d after the two re-splits: readRate %s, running %v; want 200 (600 over 3), running", i, rate, running)
				}
				if assigned[n.id()] != 200 {
					t.Errorf("node %d: the coordinator says it is assigned %v reads/s; want 200", i, assigned[n.id()])
				}
			}
			load.mu.Lock()
			defer load.mu.Unlock()
			if load.peak > 600 {
				t.Errorf("the nodes running ran at %v reads/s in all after the %s; want at most the fleet's 600", load.peak, load.when)
			}
		})
	}
}

// logEvents is a coordinator's log as a test reads it: the messages, at every level.
type logEvents struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logEvents) Enabled(context.Context, slog.Level) bool { return true }

func (l *logEvents) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	l.mu.Unlock()
	return nil
}

func (l *logEvents) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logEvents) WithGroup(string) slog.Handler      { return l }

// count returns how many times msg was logged.
func (l *logEvents) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n
}
