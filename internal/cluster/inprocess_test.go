package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/pacer"

	_ "github.com/ndbench/ndbench/drivers/memory"
)

const inToken = "in-process-fleet-token"

// inNode is one node in the test process: an instance behind its API with an agent. Its
// address outlives the instance: restart puts a new one (a new process, as far as the
// fleet can tell) behind it.
type inNode struct {
	t       *testing.T
	inst    *node.Node
	ts      *httptest.Server
	shapes  *shapeRecorder
	clk     clock.Clock // the agent's; nil is the real clock
	nodeClk clock.Clock // the instance's (its engine's, its collector's); nil is the real clock
	handler atomic.Pointer[http.Handler]
	beats   atomic.Pointer[beatLog] // notes the beats sent to the address, when set (logBeats)
	serving sync.RWMutex            // held shared by each call while an incarnation serves it
	stop    func()                  // ends the current incarnation
}

// shapeRecorder is the agent's node: the instance, with the shapes set on it noted.
type shapeRecorder struct {
	*node.Node
	clk clock.Clock
	mu  sync.Mutex
	set []shapeSet
}

type shapeSet struct {
	class string
	shape pacer.Shape
	at    time.Time
}

func (r *shapeRecorder) SetShape(class string, shape pacer.Shape) error {
	r.mu.Lock()
	r.set = append(r.set, shapeSet{class, shape, r.clk.Now()})
	r.mu.Unlock()
	return r.Node.SetShape(class, shape)
}

func (r *shapeRecorder) sets() []shapeSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]shapeSet(nil), r.set...)
}

// newInNodeOn starts an in-process node whose agent runs on clk and whose instance (its
// engine, pacers and collector) on nodeClk (nil: real time).
func newInNodeOn(t *testing.T, clk, nodeClk clock.Clock) *inNode {
	t.Helper()
	n := &inNode{t: t, clk: clk, nodeClk: nodeClk}
	n.boot()
	n.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.serving.RLock()
		defer n.serving.RUnlock()
		h := *n.handler.Load()
		if b := n.beats.Load(); b != nil {
			b.serve(w, r, h)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { n.ts.Close(); n.stop() })
	return n
}

// boot starts an incarnation of the node: a new instance with its defaults, agent and API.
func (n *inNode) boot() {
	t := n.t
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.NewOn(config.NewStore(snap), nil, clock.Or(n.nodeClk))
	ctx, cancel := context.WithCancel(context.Background())
	rec := &shapeRecorder{Node: inst, clk: clock.Or(n.clk)}
	agent := cluster.NewAgent(rec, cluster.AgentOptions{ID: "n", Version: "test", Clock: n.clk})
	go agent.Run(ctx)
	srv, err := api.New(api.Options{Instance: inst, Token: inToken, Agent: agent, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	n.inst, n.shapes = inst, rec
	n.handler.Store(&h)
	n.stop = func() { cancel(); srv.Close(); _ = inst.Close() }
}

// kill ends the node's incarnation; until boot starts a new one at the same address (a
// node process restarted under the same id), the address answers 503.
func (n *inNode) kill() {
	var dead http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "node down", http.StatusServiceUnavailable)
	})
	n.handler.Store(&dead)
	// The calls the old incarnation is serving end first: closed under a beat, it
	// answered that it ran nothing (its load closed), and its coordinator took that for
	// the classes to resume, none, where a killed process answers nothing.
	n.serving.Lock()
	//lint:ignore SA2001 a barrier: the lock waits for the calls in flight, it guards nothing
	n.serving.Unlock()
	n.stop()
}

func inCall(t *testing.T, method, url string, in, out any) {
	t.Helper()
	if err := callAs(inToken, method, url, in, out); err != nil {
		t.Fatal(err)
	}
}

// callAs sends in as JSON with token and decodes a 2xx answer into out; the fleet tests,
// in process and with processes, talk to nodes with it.
func callAs(token, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode %s: %w", method, url, b, err)
		}
	}
	return nil
}

// TestInProcessFleetUnderRace drives a fleet of three nodes in this process, so the race
// detector sees the coordinator, the agents, the merge and the fleet's collector at work:
// a start, load, a config change mid-run, a node that goes away, and the stop.
//
// The fleet runs on a simulated clock moved on only once every node still there has been
// beaten (pumpedFleet): on real time, at load 35, the healthy nodes were judged lost
// (LostAfter 1 s) and the fleet had no member alive at its stop.
func TestInProcessFleetUnderRace(t *testing.T) {
	f := newPumpedFleet(t, 3, nil)
	nodes, url := f.nodes, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 600, "workload.writeRate": 300, "workload.numKeys": 500}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), nil, nil)
	f.waitSim(t, 1500*time.Millisecond)
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{"workload.readRate": 900}}, nil)
	for _, n := range nodes {
		if got, _, _ := n.inst.Config().Value("workload.readRate"); got != "300" {
			t.Errorf("node readRate %s after the fleet's 900, want 300", got)
		}
	}
	// The fleet's live stream and Prometheus metrics are served like a node's.
	req, _ := http.NewRequest(http.MethodGet, url("/api/v1/stats/stream"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := io.ReadAtLeast(resp.Body, buf, 64)
	resp.Body.Close()
	if !strings.Contains(string(buf[:n]), "event:") || !strings.Contains(string(buf[:n]), `"read"`) {
		t.Errorf("fleet SSE stream starts with %q; want an event with the read class", buf[:n])
	}
	f.waitSim(t, time.Second)
	for _, m := range f.coord.Members() {
		if m.Health != cluster.Alive {
			t.Errorf("before any node went away, %s is %s; want every node alive", m.ID, m.Health)
		}
	}
	gone := nodeID(nodes[2])
	f.drop(2)
	nodes[2].ts.CloseClientConnections()
	nodes[2].ts.Close() // the node is gone for the coordinator
	// Lost after 1 s; its share moves once its lease (2 s) has lapsed: until then it may
	// still run its share, cut off rather than dead (as here: its agent runs on). When, to
	// the step, is TestInProcessLostNodeKeepsItsShareUntilItsLeaseLapses's.
	lostAt := f.sim.Now()
	waitFor(t, time.Minute, "the gone node lost and its share moved", func() (bool, string) {
		var members struct {
			Members []cluster.MemberStatus `json:"members"`
		}
		inCall(t, http.MethodGet, url("/api/v1/fleet/members"), nil, &members)
		state := ""
		ok := true
		for _, m := range members.Members {
			state += fmt.Sprintf("%s %s; ", m.ID, m.Health)
			if m.ID != gone && m.Health == cluster.Lost {
				t.Fatalf("%v after a node went away, the answering node %s is lost", clock.Since(f.sim, lostAt), m.ID)
			}
			ok = ok && (m.Health == cluster.Lost) == (m.ID == gone)
		}
		for _, n := range nodes[:2] {
			got, _, _ := n.inst.Config().Value("workload.readRate")
			state += "readRate " + got + "; "
			ok = ok && got == "450" // 900 over the 2 left
		}
		return ok, state
	})
	inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)

	var st api.StatsBody
	inCall(t, http.MethodGet, url("/api/v1/stats"), nil, &st)
	if st.Cumulative.Ops["read"].Count == 0 || st.Cumulative.Ops["write"].Count == 0 {
		t.Errorf("fleet counted no load: %+v", st.Cumulative.Ops)
	}
	mreq, _ := http.NewRequest(http.MethodGet, url("/metrics"), nil)
	mresp, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if !strings.Contains(string(metrics), `ndbench_ops_total{op="read"`) {
		t.Errorf("fleet /metrics has no ndbench_ops_total for reads:\n%.2000s", metrics)
	}
}

// A node that cannot keep up with its share is flagged saturated: its figures are the
// generator's (here: its store's capacity is far below its share, so it does not even
// send its share), and the others are not.
//
// The fleet runs on a simulated clock moved on only once every node has been beaten
// (pumpedFleet). The slow node's store limits it on real time (the memory driver's
// capacity), about 16 reads a second against its share of 200 at the clock's pace, which
// is about 2.5 times real time; the other's store has no limit.
func TestInProcessFleetFlagsASaturatedNode(t *testing.T) {
	f := newPumpedFleet(t, 2, nil)
	nodes, coord, url := f.nodes, f.coord, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 400, "workload.readers": 2, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	slow := strings.TrimPrefix(nodes[1].ts.URL, "http://")
	inCall(t, http.MethodPatch, url("/api/v1/fleet/config"), map[string]any{"scope": "node:" + slow,
		"values": map[string]any{"drivers.memory.capacity": 40}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	waitFor(t, time.Minute, "only the slow node flagged saturated", func() (bool, string) {
		ms := coord.Members()
		var flagged []string
		for _, m := range ms {
			if m.Saturated {
				flagged = append(flagged, m.ID)
			}
		}
		return len(flagged) == 1 && flagged[0] == slow, fmt.Sprintf("flagged %v, want only %s: %+v", flagged, slow, ms)
	})
	inCall(t, http.MethodPost, url("/api/v1/load/stop"), nil, nil)
}

// inFleet starts n in-process nodes and a coordinator of them with short timings, and
// returns the nodes, the coordinator and the URL maker of its fleet view.
func inFleet(t *testing.T, n int) ([]*inNode, *cluster.Coordinator, func(string) string) {
	return inFleetWith(t, n, nil)
}

// inFleetWith is inFleet with the coordinator's options adjusted by tune (when not nil).
// The nodes' agents share the coordinator's clock when tune sets one; their instances
// run on real time.
func inFleetWith(t *testing.T, n int, tune func(*cluster.Options)) ([]*inNode, *cluster.Coordinator, func(string) string) {
	return inFleetOn(t, n, false, tune)
}

// inFleetOn is inFleetWith; with shared set, the nodes' instances run on the
// coordinator's clock too, so that a fleet on a simulated clock runs its load, its leases
// and its judgments of loss all on it.
func inFleetOn(t *testing.T, n int, shared bool, tune func(*cluster.Options)) ([]*inNode, *cluster.Coordinator, func(string) string) {
	t.Helper()
	var tuned cluster.Options
	if tune != nil {
		tune(&tuned)
	}
	var nodeClk clock.Clock
	if shared {
		nodeClk = tuned.Clock
	}
	var nodes []*inNode
	for range n {
		nodes = append(nodes, newInNodeOn(t, tuned.Clock, nodeClk))
	}
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, strings.TrimPrefix(n.ts.URL, "http://"))
	}
	disc, err := discovery.Parse("static:"+strings.Join(addrs, ","), discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := cluster.Options{Self: discovery.Member{ID: addrs[0], Addr: addrs[0]}, Discovery: disc, Token: inToken,
		Config: snap, BeatEvery: 200 * time.Millisecond, SuspectAfter: 600 * time.Millisecond, LostAfter: time.Second,
		Lease: 2 * time.Second, StartDelay: 200 * time.Millisecond, MergeWait: 500 * time.Millisecond, Redistribute: true, Version: "test"}
	if tune != nil {
		tune(&opts)
	}
	coord, err := cluster.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go coord.Run(ctx)
	if err := coord.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	fsrv, err := api.New(api.Options{Instance: coord.Fleet(), Coordinator: coord, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	fts := httptest.NewServer(fsrv.Handler())
	t.Cleanup(func() { fts.Close(); fsrv.Close() })
	url := func(p string) string { return fts.URL + p }
	return nodes, coord, url
}

// Discovery refreshes while commands fan out: a node's address and client change under
// the coordinator's lock while calls in flight use them without it. Under -race this
// failed when refresh rewrote a member's fields (its ID among them) and its client in
// place.
//
// The fleet runs on a simulated clock moved on only once every node has been beaten
// (pumpedFleet): a node judged lost on a loaded machine (LostAfter 1 s on real time)
// would fail the rates checked, which are not the subject.
func TestRefreshDuringCommands(t *testing.T) {
	f := newPumpedFleet(t, 2, func(o *cluster.Options) {
		o.BeatEvery, o.Refresh = 5*time.Millisecond, time.Millisecond
	})
	nodes, coord := f.nodes, f.coord
	ctx := context.Background()
	for i := range 40 {
		if _, err := coord.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeFleet}, map[string]string{"workload.readRate": fmt.Sprint(100 + i)}); err != nil {
			t.Fatal(err)
		}
		_ = coord.Members()
	}
	for _, n := range nodes {
		if got, _, _ := n.inst.Config().Value("workload.readRate"); got != "69.5" {
			t.Errorf("node readRate %s, want 69.5 (139 over 2)", got)
		}
	}
}

// The fleet's SetShape gives every node its share of the shape (by weight) from one
// common instant, and a shape that any node refuses applies on none. The fleet runs on a
// simulated clock: the instant is exact, where on real time a loaded machine's timers
// spread the nodes' applying by tens of milliseconds (it failed at ≤ 30 ms so).
func TestInProcessFleetSetShape(t *testing.T) {
	sim := clock.NewSim(time.Now())
	nodes, coord, url := inFleetWith(t, 2, func(o *cluster.Options) { o.Clock = sim })
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 100, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	fleet := coord.Fleet()
	ramp, err := pacer.NewRamp(200, 600, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	before := sim.Now()
	idle := sim.Pending() // the agents' lease timers
	done := make(chan error, 1)
	go func() { done <- fleet.SetShape("read", ramp) }()
	// Each agent holds the shape until the common instant: the beats measured no round
	// trip on the simulated clock, so it is the least delay, 200 ms ahead.
	if !sim.WaitTimers(idle+2, 30*time.Second) {
		t.Fatalf("the nodes are not waiting for a common instant: %d timers pending", sim.Pending())
	}
	sim.Advance(200*time.Millisecond - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("SetShape returned (%v) before the common instant", err)
	default:
	}
	for i, n := range nodes {
		if got := n.shapes.sets(); len(got) != 0 {
			t.Fatalf("node %d applied %+v before the common instant", i, got)
		}
	}
	sim.Advance(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		got := n.shapes.sets()
		if len(got) != 1 {
			t.Fatalf("node %d: shapes set %+v; want one", i, got)
		}
		want := pacer.Ramp{From: 100, To: 300, Over: 10 * time.Second}
		if got[0].class != "read" || got[0].shape != want {
			t.Errorf("node %d got %s %#v; want read %#v (half of the fleet's ramp)", i, got[0].class, got[0].shape, want)
		}
		if d := got[0].at.Sub(before); d != 200*time.Millisecond {
			t.Errorf("node %d applied the shape %v after the call; want the common instant, 200 ms ahead", i, d)
		}
	}

	// A shape no node can run is refused by the coordinator, naming the field.
	err = fleet.SetShape("read", pacer.Sine{Mean: 100, Amplitude: 150, Period: time.Second})
	if err == nil || !strings.Contains(err.Error(), "shape.amplitude") {
		t.Errorf("a sine that goes below 0: %v; want an error naming shape.amplitude", err)
	}
	// One node refuses (another coordinator's run holds it): the other one is not told.
	if err := callAs(inToken, http.MethodPost, nodes[1].ts.URL+"/api/v1/cluster/beat",
		cluster.BeatRequest{Coordinator: "another", Run: "theirs", LeaseMs: 60000, Sent: time.Now()}, nil); err != nil {
		t.Fatal(err)
	}
	err = fleet.SetShape("read", pacer.Constant(50))
	if err == nil || !strings.Contains(err.Error(), "another coordinator") {
		t.Errorf("a shape while a node is another coordinator's: %v; want the node's refusal", err)
	}
	for i, n := range nodes {
		if got := n.shapes.sets(); len(got) != 1 {
			t.Errorf("node %d: shapes set %+v after refused changes; want only the first", i, got)
		}
	}
}

// With --redistribute, a lost node's share of a fleet's shape goes to the others: they get
// the shape again at their new share, continued where the fleet's is. The fleet runs on a
// simulated clock moved on only once every node still there has been beaten
// (pumpedFleet), so no answering node is judged lost on a loaded machine.
func TestInProcessFleetReshapesAfterALoss(t *testing.T) {
	f := newPumpedFleet(t, 3, nil)
	nodes, coord, url := f.nodes, f.coord, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 90, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	fleet := coord.Fleet()
	ramp := pacer.Ramp{From: 300, To: 600, Over: 20 * time.Second}
	if err := fleet.SetShape("read", ramp); err != nil {
		t.Fatal(err)
	}
	if err := fleet.Start("read"); err != nil {
		t.Fatal(err)
	}
	f.waitSim(t, 500*time.Millisecond)
	f.drop(2)
	nodes[2].ts.CloseClientConnections()
	nodes[2].ts.Close()
	for i, n := range nodes[:2] {
		waitFor(t, time.Minute, "a node's share re-split to a half", func() (bool, string) {
			got := n.shapes.sets()
			last := got[len(got)-1]
			// Half of the fleet's ramp, some seconds into it: above 150, the old third's
			// 100 at its start.
			return len(got) >= 2 && last.class == "read" && last.shape.Rate(0) > 150 && last.shape.Rate(0) < 300,
				fmt.Sprintf("node %d: shapes set %+v", i, got)
		})
		got := n.shapes.sets()
		if r := got[len(got)-1].shape.Rate(time.Hour); r != 300 {
			t.Errorf("re-split ramp ends at %v ops/s on node %d; want 300, half of 600", r, i)
		}
	}
	for _, m := range coord.Members() {
		if m.ID != nodeID(nodes[2]) && m.Health != cluster.Alive {
			t.Errorf("answering node %s is %s after the loss; want alive", m.ID, m.Health)
		}
	}
	// Each live node's own report, for what only it can judge of itself.
	reps, err := fleet.NodeReports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 {
		t.Errorf("%d node reports; want the 2 live nodes'", len(reps))
	}
	for id, r := range reps {
		if r.Ops["read"].Count == 0 || r.Driver.Name != "memory" {
			t.Errorf("node %s's report: driver %q, reads %d; want its own run on memory", id, r.Driver.Name, r.Ops["read"].Count)
		}
	}
	if err := fleet.Stop(); err != nil {
		t.Fatal(err)
	}
}

// POST /fleet/api/v1/autotune runs the search on the fleet: each step's rate is split
// among the nodes as a constant shape, and measured on the merged statistics.
//
// The whole fleet runs on a simulated clock moved on only once every node has been beaten
// (pumpedFleet), so no node is judged lost on a loaded machine; the search times its
// settle periods and windows on the fleet's clock (autotune's NodeProber on
// control.ClockOf), as the merged seconds it judges.
func TestInProcessFleetAutotuneRoute(t *testing.T) {
	f := newPumpedFleet(t, 2, nil)
	nodes, url := f.nodes, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 300, "workload.writeEnabled": false, "workload.numKeys": 100}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/autotune"), map[string]any{"start": 400, "percentile": 90, "latency": "1s",
		"settle": "1s", "window": "1s", "maxRate": 800}, nil)
	defer func() { _ = callAs(inToken, http.MethodPost, url("/api/v1/autotune/stop"), nil, nil) }()
	type status struct {
		Running bool `json:"running"`
		Steps   []struct {
			Rate     float64 `json:"rate"`
			Achieved float64 `json:"achieved"`
			Verdict  string  `json:"verdict"`
		} `json:"steps"`
	}
	end := time.Now().Add(20 * time.Second)
	for {
		var st status
		inCall(t, http.MethodGet, url("/api/v1/autotune"), nil, &st)
		if len(st.Steps) > 0 {
			s := st.Steps[0]
			// Asked 400 of the fleet. What a step achieved is the machine's: a loaded one
			// gave 0 and a client-bound verdict once, 435 (reads caught up from the last
			// window) another time. What the split decides is checked: never the whole 400
			// on each node, and a passing step merged both nodes, more than one's 200.
			if s.Rate != 400 || s.Achieved >= 700 || (s.Verdict == "pass" && s.Achieved <= 210) {
				t.Errorf("first step on the fleet: %+v; want 400 ops/s asked, less than two 400s achieved, more than one node's 200 if it passed", s)
			}
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no step after 20 s: %+v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i, n := range nodes {
		got := n.shapes.sets()
		if len(got) == 0 || got[0].shape != pacer.Constant(200) {
			t.Errorf("node %d: shapes %+v; want the first step's half, constant 200 ops/s", i, got)
		}
	}
}

// Beats update each member's clock offset while a start fans out to the nodes, and each
// node's start time is the common instant shifted by its offset: under -race this failed
// (an auto-tune search on a fleet, restarting its load after each step) while the start
// read the offsets without the coordinator's lock.
//
// The fleet runs on a simulated clock moved on only once every node has been beaten
// (pumpedFleet), so no node is judged lost on a loaded machine and refuses a start.
func TestStartDuringBeats(t *testing.T) {
	f := newPumpedFleet(t, 2, func(o *cluster.Options) {
		o.BeatEvery, o.StartDelay = 2*time.Millisecond, time.Millisecond
	})
	coord, url := f.coord, f.url
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	ctx := context.Background()
	for i := range 30 {
		if _, err := coord.Start(ctx, "read"); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if err := coord.Stop(ctx); err != nil {
			t.Fatalf("stop %d: %v", i, err)
		}
	}
}

// TestInProcessFleetStartWarmsUp: a start of the fleet's load over its API, from idle,
// honours workload.warmup on every node (from the common instant) and in the fleet's
// merged report, as a node's own start does. The fleet runs on a simulated clock moved on
// only once every node has been beaten (pumpedFleet), so the warm-ups end on it and no
// node is judged lost on a loaded machine.
func TestInProcessFleetStartWarmsUp(t *testing.T) {
	f := newPumpedFleet(t, 2, nil)
	nodes, url := f.nodes, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 200, "workload.writeEnabled": false, "workload.numKeys": 100, "workload.warmup": "500ms"}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	inCall(t, http.MethodPost, url("/api/v1/load/start"), nil, nil)
	for i, n := range nodes {
		if n.inst.Status().WarmingUpUntil.IsZero() && n.inst.Session().Warmup == 0 {
			t.Errorf("node %d: no warm-up after the fleet's start", i)
		}
	}
	for i, n := range nodes {
		waitFor(t, time.Minute, "a node's warm-up ends", func() (bool, string) {
			return n.inst.Session().Warmup != 0, fmt.Sprintf("node %d: %+v", i, n.inst.Status())
		})
		if w := n.inst.Session().Warmup; w != 500*time.Millisecond {
			t.Errorf("node warm-up %v, want 500ms", w)
		}
	}
	// The fleet view's own warm-up ends beside the nodes', on the coordinator's clock.
	var rep struct {
		WarmupSeconds float64 `json:"warmupSeconds"`
	}
	waitFor(t, time.Minute, "the fleet's warm-up ends", func() (bool, string) {
		inCall(t, http.MethodGet, url("/api/v1/report"), nil, &rep)
		return rep.WarmupSeconds != 0, fmt.Sprintf("warmupSeconds %v", rep.WarmupSeconds)
	})
	if rep.WarmupSeconds != 0.5 {
		t.Errorf("fleet report's warmupSeconds %v, want 0.5", rep.WarmupSeconds)
	}
}

// TestInProcessFleetRunWarmsUpOnce: a fleet scenario or auto-tune drives the fleet through
// the one run sequence (node.Run): its warm-up runs the load for workload.warmup, drains
// it, and the first phase (or step) starts the load again. That start is a step of the
// run, so no node warms up a second time (each node's agent used to start every load from
// idle as a user's start, with a warm-up of its own), and the fleet's report counts the
// run's one warm-up. The fleet runs on a simulated clock moved on only once every node has
// been beaten (pumpedFleet); the run's warm-up is timed on it too (node.Run on the
// fleet's clock).
func TestInProcessFleetRunWarmsUpOnce(t *testing.T) {
	f := newPumpedFleet(t, 2, nil)
	nodes, coord, url := f.nodes, f.coord, f.url
	inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 200, "workload.writeEnabled": false, "workload.numKeys": 100, "workload.warmup": "400ms"}}, nil)
	inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	fleet := coord.Fleet()
	seq := &node.Run{Node: fleet}
	if measured, err := seq.WarmUp(context.Background()); err != nil || !measured {
		t.Fatalf("warm-up: measured %v, %v", measured, err)
	}
	// The first phase starts the load again, from idle.
	if err := fleet.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fleet.Stop() }()
	for i, n := range nodes {
		if until := n.inst.Status().WarmingUpUntil; !until.IsZero() {
			t.Errorf("node %d warms up again at the first phase, until %v: a second warm-up", i, until)
		}
	}
	if w := fleet.ReportInput("test").Warmup; w != 400*time.Millisecond {
		t.Errorf("fleet report's warm-up %v, want the run's one of 400ms", w)
	}
}
