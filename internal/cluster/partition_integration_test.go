//go:build integration

package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/netlab"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// The partition tests run a fleet as it is deployed across machines: the coordinator and
// each node `ndbench serve` on a host of its own (a network namespace of package netlab,
// with its own address), over TLS, every node loading one Redis on the lab's gateway.
// Links are cut while the processes live. Redis's MONITOR logs each GET with the instant
// Redis executed it and the node that sent it: the fleet's load as the store sees it.

// partitionLease is the nodes' lease in these tests unless one says otherwise; the
// coordinator finds a silent node lost after 6 s (its default).
const partitionLease = 2 * time.Second

// fleetTarget is the fleet's read rate: 400 reads/s per node of 3.
const fleetTarget = 1200.0

type netFleet struct {
	t     *testing.T
	lab   *netlab.Lab
	ca    *tlstest.CA
	cert  tlstest.Pair
	hc    *http.Client
	coord *testserver.Server
	nodes []*testserver.Server
	// ids are the nodes' ids in the fleet: their addresses, or where the coordinator
	// reaches them (startNetFleetVia).
	ids []string
	// hosts[0] is the coordinator's, hosts[i+1] node i's; the last one is spare.
	hosts []*netlab.Host
	redis *testserver.Server
	// ops are the GETs Redis executed, each with its time and client.
	ops   *opLog
	lease time.Duration
}

// startNetFleet starts a lab of nodes+2 hosts, nodes nodes and a coordinator that
// redistributes a lost node's share and gives them lease, and Redis; the fleet's driver is
// connected and its rate set to fleetTarget reads/s, with values on top.
func startNetFleet(t *testing.T, nodes int, lease time.Duration, values map[string]any) *netFleet {
	t.Helper()
	return startNetFleetVia(t, nodes, lease, values, nil)
}

// startNetFleetVia is startNetFleet with the coordinator reaching node i at via(i, its
// address) (a delaying proxy on the lab's gateway, say), which is then its id in the
// fleet; nil via: at its address.
func startNetFleetVia(t *testing.T, nodes int, lease time.Duration, values map[string]any, via func(lab *netlab.Lab, i int, addr string) string) *netFleet {
	t.Helper()
	lab := netlab.New(t, nodes+2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := &netFleet{t: t, lab: lab, hosts: lab.Hosts(), ca: tlstest.NewCA(t, "fleet"), lease: lease}
	// The gateway too: a node reached through a proxy there has the gateway's address
	// as its id.
	ips := []string{lab.Gateway()}
	for _, h := range f.hosts {
		ips = append(ips, h.Addr)
	}
	f.cert = f.ca.Issue("node", ips...)
	f.hc = tlsClient(f.ca.Pool)
	redis, err := testserver.RedisOn(ctx, lab.Gateway())
	if err != nil {
		t.Fatal(err)
	}
	f.redis = redis
	t.Cleanup(func() { _ = redis.Stop() })
	var addrs []string
	for i := range nodes {
		s := f.serve(ctx, f.hosts[i+1], nil)
		f.nodes = append(f.nodes, s)
		id := s.Addr()
		if via != nil {
			id = via(lab, i, id)
		}
		f.ids = append(f.ids, id)
		addrs = append(addrs, id)
	}
	f.coord = f.startCoordinator(ctx, f.hosts[0], addrs)
	f.waitMembers(20*time.Second, func(ms map[string]memberStatus) bool {
		for _, a := range addrs {
			if ms[a].Health != "alive" {
				return false
			}
		}
		return true
	})
	vals := map[string]any{"workload.readRate": fleetTarget, "workload.readers": 4, "workload.writeEnabled": false,
		"workload.numKeys": 1000, "workload.opTimeout": "500ms", "workload.warmup": "0s"}
	maps.Copy(vals, values)
	f.call(http.MethodPatch, f.url("/api/v1/fleet/config"), map[string]any{"values": vals}, nil)
	f.call(http.MethodPost, f.url("/api/v1/driver/init"), map[string]any{"driver": "redis",
		"options": map[string]any{"addrs": redis.Addr(), "readTimeout": "500ms", "writeTimeout": "500ms"}}, nil)
	f.ops = monitorGets(t, redis.Addr())
	return f
}

// serve starts `ndbench serve` over TLS on host h, with args after the common ones.
func (f *netFleet) serve(ctx context.Context, h *netlab.Host, args func(self string) []string) *testserver.Server {
	f.t.Helper()
	s, err := testserver.NdbenchIn(ctx, ndbenchBin, h.Name, h.Addr, func(self string) []string {
		a := []string{"--token", token, "--log-level", "info", "--tls-cert", f.cert.Cert, "--tls-key", f.cert.Key}
		if args != nil {
			a = append(a, args(self)...)
		}
		return a
	})
	if err != nil {
		f.t.Fatalf("start ndbench on %s: %v", h.Addr, err)
	}
	f.t.Cleanup(func() {
		if f.t.Failed() {
			f.t.Logf("%s log:\n%s", s.Addr(), ownLog(s))
		}
		_ = s.Stop()
	})
	return s
}

// startCoordinator starts a coordinator of the nodes at addrs on host h (not a node of
// its own fleet).
func (f *netFleet) startCoordinator(ctx context.Context, h *netlab.Host, addrs []string) *testserver.Server {
	return f.serve(ctx, h, func(string) []string {
		return []string{"--coordinate", "--redistribute", "--lease", f.lease.String(),
			"--peer-ca", f.ca.File, "--peers", strings.Join(addrs, ",")}
	})
}

func (f *netFleet) url(path string) string { return "https://" + f.coord.Addr() + "/fleet" + path }

// try sends a request with the token over the fleet's TLS and decodes a 2xx answer.
func (f *netFleet) try(method, url string, in, out any) error {
	return callWith(f.hc, method, url, in, out)
}

func (f *netFleet) call(method, url string, in, out any) {
	f.t.Helper()
	if err := f.try(method, url, in, out); err != nil {
		f.t.Fatal(err)
	}
}

func callWith(hc *http.Client, method, url string, in, out any) error {
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
	resp, err := hc.Do(req)
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

func (f *netFleet) members() map[string]memberStatus {
	var body struct {
		Members []memberStatus `json:"members"`
	}
	f.call(http.MethodGet, f.url("/api/v1/fleet/members"), nil, &body)
	out := map[string]memberStatus{}
	for _, m := range body.Members {
		out[m.ID] = m
	}
	return out
}

// waitMembers polls the coordinator's members until ok, and returns when they were.
func (f *netFleet) waitMembers(within time.Duration, ok func(map[string]memberStatus) bool) time.Time {
	f.t.Helper()
	_, seen := f.waitMembersSpan(within, ok)
	return seen
}

// waitMembersSpan is waitMembers with what the polls bound: the change happened after
// notBefore (when the last poll that did not see it was sent; zero if the first saw it)
// and before seen (when the first poll that saw it was answered). A test that judges the
// time between two changes judges these bounds, so that its own polling (50 ms apart, each
// a request that a loaded machine may take a while to answer) is never counted as the
// product's delay.
func (f *netFleet) waitMembersSpan(within time.Duration, ok func(map[string]memberStatus) bool) (notBefore, seen time.Time) {
	f.t.Helper()
	end := time.Now().Add(within)
	for {
		sent := time.Now()
		ms := f.members()
		if ok(ms) {
			return notBefore, time.Now()
		}
		notBefore = sent
		if time.Now().After(end) {
			f.t.Fatalf("fleet members not as wanted after %v: %+v", within, ms)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// running says whether node s runs reads, asked from inside its host (whatever its link).
func (f *netFleet) running(s *testserver.Server, h *netlab.Host) (bool, error) {
	hc := tlsClient(f.ca.Pool)
	hc.Transport.(*http.Transport).DialContext = h.DialContext
	defer hc.CloseIdleConnections()
	var st struct {
		Running map[string]bool `json:"running"`
	}
	err := callWith(hc, http.MethodGet, "https://"+s.Addr()+"/api/v1/status", nil, &st)
	return st.Running["read"], err
}

// waitStopped waits until node s (on h) runs no reads.
// It returns when the node was last seen running (the instant that poll was sent: the
// node stopped after it) and when it was first seen stopped, as waitMembersSpan does.
func (f *netFleet) waitStopped(s *testserver.Server, h *netlab.Host, within time.Duration) (lastRunning, seen time.Time) {
	f.t.Helper()
	end := time.Now().Add(within)
	for {
		sent := time.Now()
		on, err := f.running(s, h)
		if err == nil && !on {
			return lastRunning, time.Now()
		}
		if err == nil {
			lastRunning = sent
		}
		if time.Now().After(end) {
			f.t.Fatalf("node %s (pid %d) still runs reads (%v) %v later", s.Addr(), s.PID(), err, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lagAllowance is how much of the fleet's rate a second may carry beyond the target
// because the generator, on a shared 2-core machine, started some operations due in the
// second before late (open loop: they are sent, late, not dropped): 100 ms of the fleet's
// rate (a full run of this file beside other builds once saw 93 ms with no node paused
// or cut since seconds). A paused or cut-off node that bursts its backlog, or runs its
// share on top of the others', adds seconds of its rate (400 GETs a second). A longer
// stall, of the store or of every node at once, is caught up in the second after it,
// which checkNoBurst credits with what the nodes fell short of in the two seconds before.
const lagAllowance = 100 * time.Millisecond

// checkNoBurst fails the test when the store served, in any second from from to to, more
// than 1% over the fleet's target (beyond lagAllowance and the catch-up of a stall), as
// counted by when Redis executed each GET.
//
// A stall (the store, a node, or every process at once, descheduled for up to a second
// at a load of 15-35 on this 2-core machine) shows at the store as tenths short of the
// rate followed by some over it: the nodes send the operations that fell due meanwhile,
// late (open loop). That catch-up is not load beyond the target, so a second may carry
// what the nodes fell short of in the two seconds before it (stallCredit). A node that runs
// its share on top of the others' (a re-split while the old holder still runs) follows
// no such dip; a paused node's backlog is checked on its own (checkNodeNoBacklog).
func (f *netFleet) checkNoBurst(from, to time.Time) {
	f.t.Helper()
	w := f.ops.worstSecond(fleetTarget, from, to)
	allowed := fleetTarget*0.01 + fleetTarget*lagAllowance.Seconds()
	f.t.Logf("store side: the busiest second (from %s) had %d GETs, %.0f over the fleet's %.0f/s; allowed %.0f and the catch-up of %d held back in the two seconds before",
		w.at.Format("15:04:05.000"), w.n, w.over, fleetTarget, allowed, w.credit)
	if w.over-float64(w.credit) > allowed {
		f.t.Errorf("the store served %d GETs in the second from %s: %.0f over the fleet's target of %.0f/s, more than 1%% (+%v of lag, +%d held back in the two seconds before); per tenth by client:%s",
			w.n, w.at.Format("15:04:05.000"), w.over, fleetTarget, lagAllowance, w.credit, f.ops.perTenth(w.at, 2*time.Second))
	}
}

// firstRead returns when node s (on h) started the first read of its current run (its
// status's firstOps), asked from inside its host.
func (f *netFleet) firstRead(s *testserver.Server, h *netlab.Host) time.Time {
	f.t.Helper()
	hc := tlsClient(f.ca.Pool)
	hc.Transport.(*http.Transport).DialContext = h.DialContext
	defer hc.CloseIdleConnections()
	var st struct {
		FirstOps map[string]time.Time `json:"firstOps"`
	}
	if err := callWith(hc, http.MethodGet, "https://"+s.Addr()+"/api/v1/status", nil, &st); err != nil {
		f.t.Fatalf("status of node %s: %v", s.Addr(), err)
	}
	at, ok := st.FirstOps["read"]
	if !ok {
		f.t.Fatalf("node %s runs reads but its status has no first read: %v", s.Addr(), st.FirstOps)
	}
	return at
}

// checkNodeNoBacklog fails the test when node i, paused at paused and resumed at
// resumed, whose run's first read was at again (firstRead, asked as soon as it ran
// again), sent its backlog or more than its share afterwards, as the store saw it: from
// the pause until again, more than 1% of the fleet's target (what its workers had begun
// before the pause may still arrive); from then to to, at any instant more than its
// share (a third) since again, beyond 1% of the fleet's target and lagAllowance of its
// share. A node resumed with its schedule seconds behind that sent its backlog would
// show seconds of its share at once. A node paused within its lease keeps its run (its
// first read is before the pause): it is held to its share from its resume.
func (f *netFleet) checkNodeNoBacklog(i int, paused, resumed, again, to time.Time) {
	f.t.Helper()
	h := f.hosts[i+1]
	ops := f.ops.of(h.Addr)
	until := "its first read when started again"
	if again.Before(paused) {
		f.t.Logf("the paused node kept its run (its first read at %s, before its pause): held to its share from its resume", again.Format("15:04:05.000"))
		again, until = resumed, "its resume"
	}
	between := count(ops, paused, again)
	f.t.Logf("store side: the paused node %s sent %d GETs from its pause to %s %v later",
		h.Addr, between, until, again.Sub(paused).Round(time.Millisecond))
	if float64(between) > fleetTarget*0.01 {
		f.t.Errorf("the paused node %s sent %d GETs between its pause (%s) and %s (%s); want at most 1%% of the fleet's target: it sent its backlog; per tenth by client:%s",
			h.Addr, between, paused.Format("15:04:05.000"), until, again.Format("15:04:05.000"), f.ops.perTenth(again, 2*time.Second))
	}
	share := fleetTarget / float64(len(f.nodes))
	allowed := fleetTarget*0.01 + share*lagAllowance.Seconds()
	worst, at, n := aheadOfShare(ops, again, to, share)
	f.t.Logf("store side: from %s, the paused node was at most %.0f GETs ahead of its share of %.0f/s (allowed %.0f)", until, worst, share, allowed)
	if worst > allowed {
		f.t.Errorf("the paused node %s sent %d GETs in the %v from %s: %.0f more than its share of %.0f/s; per tenth by client:%s",
			h.Addr, n, at.Sub(again).Round(time.Millisecond), until, worst, share, f.ops.perTenth(at, 2*time.Second))
	}
}

func (f *netFleet) series(url string) []seriesPoint {
	var body struct {
		Points []seriesPoint `json:"points"`
	}
	f.call(http.MethodGet, url, nil, &body)
	return body.Points
}

// checkUnion stops the load and checks that every second the fleet merged counts exactly
// the nodes' own seconds that the merge placed in it (nodePlacements: by the instant each
// tick was due), but for the nodes it names missing (flagged partial), and that no node's
// second with reads is left out unflagged: no second counted twice, none lost silently,
// the first and the last included. It returns how many partial seconds named each node.
//
// A node resumed after it was found lost sends the interval its stall spanned at the
// resume's due instant: its fleet second holds it, or names the node missing when it went
// out before the node resumed (stop 53; before, such a second was short, unflagged: 116
// reads once in two runs beside a busy core, 18 in CI, and a grace span let it pass).
func (f *netFleet) checkUnion() map[string]int {
	f.t.Helper()
	f.call(http.MethodPost, f.url("/api/v1/load/stop"), nil, nil)
	time.Sleep(3 * time.Second) // the last seconds reach the coordinator, its merge wait ends
	// The fleet's seconds first: every node interval they hold is in the nodes' logs read
	// next.
	fleet := f.series(f.url("/api/v1/stats/series"))
	if len(fleet) == 0 {
		f.t.Fatal("the fleet has no seconds")
	}
	members := f.members()
	// Each node's placements, and from which second its log holds all its intervals
	// (those before the coordinator first read it were never encoded).
	placements := map[string][]placement{}
	from := fleet[0].T.Round(time.Second).Unix()
	for i, s := range f.nodes {
		id := f.ids[i]
		var page stats.IntervalsPage
		f.call(http.MethodGet, "https://"+s.Addr()+"/api/v1/stats/intervals?since=0", nil, &page)
		if len(page.Intervals) == 0 {
			f.t.Fatalf("node %s holds no intervals", id)
		}
		offset := time.Duration(members[id].OffsetMs * float64(time.Millisecond))
		if page.Missed > 0 {
			from = max(from, page.Intervals[0].Due.Add(-offset).Round(time.Second).Unix()+1)
		}
		placements[id] = nodePlacements(f.t, page.Intervals, offset)
	}
	ids := slices.Sorted(maps.Keys(placements))
	// check compares the fleet's seconds with one placement of each node's, and returns
	// the differences and how many partial seconds named each node.
	check := func(choice map[string]placement) (diffs []string, partial map[string]int) {
		partial = map[string]int{}
		seen := map[string]map[int64]bool{}
		var fleetSum, nodeSum int64
		for _, p := range fleet {
			sec := p.T.Round(time.Second).Unix()
			if sec < from {
				continue
			}
			var sum int64
			for _, id := range ids {
				if slices.Contains(p.Missing, id) {
					partial[id]++
					continue
				}
				sum += choice[id][sec]
				if seen[id] == nil {
					seen[id] = map[int64]bool{}
				}
				seen[id][sec] = true
			}
			got := p.Ops["read"].Attempted
			fleetSum, nodeSum = fleetSum+got, nodeSum+sum
			if got != sum {
				diffs = append(diffs, fmt.Sprintf("fleet second ending %s counts %d reads, its nodes (missing %v) %d", p.T.Format("15:04:05"), got, p.Missing, sum))
			}
			if len(p.Missing) > 0 && !p.Partial {
				diffs = append(diffs, fmt.Sprintf("fleet second ending %s misses %v but is not flagged partial", p.T.Format("15:04:05"), p.Missing))
			}
		}
		last := fleet[len(fleet)-1].T.Round(time.Second).Unix()
		for _, id := range ids {
			for sec, n := range choice[id] {
				if n == 0 || sec < from || sec > last || seen[id][sec] {
					continue
				}
				missed := false
				for _, p := range fleet {
					if p.T.Round(time.Second).Unix() == sec && slices.Contains(p.Missing, id) {
						missed = true
					}
				}
				if !missed {
					diffs = append(diffs, fmt.Sprintf("node %s's %d reads of the second ending %s are in no fleet second, and none says it misses them",
						id, n, time.Unix(sec, 0).Format("15:04:05")))
				}
			}
		}
		if fleetSum != nodeSum {
			diffs = append(diffs, fmt.Sprintf("the fleet's seconds count %d reads, its nodes' %d", fleetSum, nodeSum))
		}
		return diffs, partial
	}
	// Every combination of the nodes' placements (one each, but for a node whose
	// schedule sits at the half second): the fleet must match one exactly.
	var best []string
	var bestPartial map[string]int
	var try func(i int, choice map[string]placement) bool
	try = func(i int, choice map[string]placement) bool {
		if i == len(ids) {
			diffs, partial := check(choice)
			if best == nil || len(diffs) < len(best) {
				best, bestPartial = diffs, partial
			}
			return len(diffs) == 0
		}
		for _, p := range placements[ids[i]] {
			choice[ids[i]] = p
			if try(i+1, choice) {
				return true
			}
		}
		return false
	}
	if !try(0, map[string]placement{}) {
		f.t.Errorf("the fleet's seconds are not the union of its nodes' (from %s):\n%s",
			time.Unix(from, 0).Format("15:04:05"), strings.Join(best, "\n"))
	}
	return bestPartial
}

// A node's link is cut while its process lives, both ways, then one way only (what it
// sends is dropped: the coordinator's beats reach it, its answers do not): each time the
// node stops its load within its lease, the coordinator finds it lost and gives its share
// to the others, and after the heal the node rejoins and runs its share again; the store
// never sees the fleet more than 1% over its target in any second, and the fleet's seconds
// are the union of the nodes', those without the cut node flagged.
func TestPartitionCutNodeRejoinsWithoutBurst(t *testing.T) {
	f := startNetFleet(t, 3, partitionLease, nil)
	begin := time.Now()
	f.call(http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	time.Sleep(2 * time.Second)
	victim, host := f.nodes[2], f.hosts[3]
	for _, dir := range []netlab.Direction{netlab.Both, netlab.Out} {
		if err := host.Cut(dir); err != nil {
			t.Fatal(err)
		}
		cut := time.Now()
		lastRunning, stopped := f.waitStopped(victim, host, partitionLease+3*time.Second)
		t.Logf("cut %v: the node stopped its load %v after the cut (lease %v)", dir, stopped.Sub(cut).Round(time.Millisecond), partitionLease)
		// Judged on the last poll that found it running: it stopped after that was sent.
		if d := lastRunning.Sub(cut); d > partitionLease+time.Second {
			t.Errorf("cut %v: the node still ran its load %v after the cut, want stopped within its lease %v (+1 s)", dir, d, partitionLease)
		}
		moved := f.waitMembers(15*time.Second, func(ms map[string]memberStatus) bool {
			return ms[victim.Addr()].Health == "lost" && ms[f.nodes[0].Addr()].Assigned["read"] == fleetTarget/2
		})
		t.Logf("cut %v: lost, its share moved %v after the cut", dir, moved.Sub(cut).Round(time.Millisecond))
		time.Sleep(time.Second)
		if err := host.Heal(); err != nil {
			t.Fatal(err)
		}
		healed := time.Now()
		back := f.waitMembers(15*time.Second, func(ms map[string]memberStatus) bool {
			v := ms[victim.Addr()]
			return v.Health == "alive" && v.InRun && v.Assigned["read"] == fleetTarget/3 &&
				ms[f.nodes[0].Addr()].Assigned["read"] == fleetTarget/3
		})
		for end := time.Now().Add(5 * time.Second); ; {
			if on, err := f.running(victim, host); err == nil && on {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("cut %v: the healed node does not run its reads again", dir)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("cut %v: rejoined %v after the heal", dir, back.Sub(healed).Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	f.checkNoBurst(begin.Add(time.Second), time.Now())
	if partial := f.checkUnion(); partial[victim.Addr()] == 0 {
		t.Errorf("no fleet second says it misses the cut-off node: %v", partial)
	}
}

// A node is paused (SIGSTOP) until the coordinator finds it lost, and resumed (SIGCONT)
// with its schedule seconds behind; the store never sees the fleet more than 1% over its
// target in any second, and the node runs its share again when its coordinator starts it.
//   - Past its lease (2 s): it sends none of its backlog (its load is fenced at the
//     lease's end), stops, and waits for its coordinator.
//   - Within its lease (8 s, found lost after 6 s): its share has not moved to the others
//     yet (it moves only once the lease has lapsed), so the node that resumes and runs it
//     does not run it on top of theirs. Late operations are dropped (catchUp=drop), as a
//     pause shorter than the lease is otherwise caught up like any stall of the generator.
func TestPartitionPausedNodeDoesNotBurst(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lease  time.Duration
		values map[string]any
		// lost is what the coordinator shows of the node when it is resumed.
		lost func(f *netFleet, ms map[string]memberStatus) bool
	}{
		{
			name: "past its lease", lease: partitionLease,
			lost: func(f *netFleet, ms map[string]memberStatus) bool {
				return ms[f.nodes[2].Addr()].Health == "lost" && ms[f.nodes[0].Addr()].Assigned["read"] == fleetTarget/2
			},
		},
		{
			name: "within its lease", lease: 8 * time.Second,
			values: map[string]any{"workload.catchUp": "drop", "workload.maxLateness": "100ms"},
			lost: func(f *netFleet, ms map[string]memberStatus) bool {
				return ms[f.nodes[2].Addr()].Health == "lost"
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startNetFleet(t, 3, tc.lease, tc.values)
			begin := time.Now()
			f.call(http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
			time.Sleep(2 * time.Second)
			victim, host := f.nodes[2], f.hosts[3]
			resume, err := victim.Pause()
			if err != nil {
				t.Fatal(err)
			}
			paused := time.Now()
			lostSeen := f.waitMembers(15*time.Second, func(ms map[string]memberStatus) bool { return ms[victim.Addr()].Health == "lost" })
			lost := lostSeen.Sub(paused)
			// Lost 6 s after its last answer, at the first beat after that: exactly so on a
			// simulated clock (TestLossIsJudgedOnTheCoordinatorsClock). On real time a
			// loaded machine delays the beats and the test's own polling (9.1 s at load 30,
			// against the 8 s this test used to require), and a coordinator stalled before
			// the pause makes the last answer older than one beat period, so the instant is
			// logged, not asserted; what follows is judged from it.
			t.Logf("the paused node was found lost %v after the pause", lost.Round(time.Millisecond))
			// Its share moves only once its lease has lapsed after the loss (CI saw the
			// loss at 6.9 s and the share moved at 8.9 s, which the 8 s bound, meant for
			// the loss, had counted).
			// Judged on the polls' bounds: the share moved after movedAfter, the loss was
			// before lostSeen, so at least movedAfter-lostSeen lay between them.
			movedAfter, movedSeen := f.waitMembersSpan(15*time.Second, func(ms map[string]memberStatus) bool { return tc.lost(f, ms) })
			settled := movedSeen.Sub(paused)
			if least := movedAfter.Sub(lostSeen); !movedAfter.IsZero() && least > tc.lease+time.Second {
				t.Errorf("the lost node's share moved %v after the pause, at least %v after its loss; want within its lease (%v) and a beat", settled, least, tc.lease)
			}
			time.Sleep(500 * time.Millisecond)
			resume()
			resumed := time.Now()
			t.Logf("paused for %v (lease %v), resumed at %s", resumed.Sub(paused).Round(time.Millisecond), tc.lease, resumed.Format("15:04:05.000"))
			f.waitMembers(15*time.Second, func(ms map[string]memberStatus) bool {
				v := ms[victim.Addr()]
				return v.Health == "alive" && v.InRun && v.Assigned["read"] == fleetTarget/3 &&
					ms[f.nodes[0].Addr()].Assigned["read"] == fleetTarget/3
			})
			for end := time.Now().Add(5 * time.Second); ; {
				if on, err := f.running(victim, host); err == nil && on {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the resumed node does not run its reads again")
				}
				time.Sleep(50 * time.Millisecond)
			}
			again := f.firstRead(victim, host)
			time.Sleep(2 * time.Second)
			f.checkNoBurst(begin.Add(time.Second), time.Now())
			f.checkNodeNoBacklog(2, paused, resumed, again, time.Now())
			f.checkUnion()
		})
	}
}

// The coordinator is cut off from every node: each node stops its load within its lease
// by itself. Before that, a second coordinator of the same nodes cannot take them from
// the first: its start is refused while the first one's run holds them. After the heal
// the first coordinator's nodes run its load again.
func TestPartitionCoordinatorCutOff(t *testing.T) {
	f := startNetFleet(t, 2, partitionLease, nil)
	f.call(http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
	time.Sleep(time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var addrs []string
	for _, s := range f.nodes {
		addrs = append(addrs, s.Addr())
	}
	spare := f.hosts[len(f.hosts)-1]
	second := f.startCoordinator(ctx, spare, addrs)
	secondURL := "https://" + second.Addr() + "/fleet"
	for end := time.Now().Add(20 * time.Second); ; {
		var body struct {
			Members []memberStatus `json:"members"`
		}
		f.call(http.MethodGet, secondURL+"/api/v1/fleet/members", nil, &body)
		alive := 0
		for _, m := range body.Members {
			if m.Health == "alive" {
				alive++
			}
		}
		if alive == len(addrs) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the second coordinator does not see the nodes: %+v", body.Members)
		}
		time.Sleep(100 * time.Millisecond)
	}
	err := f.try(http.MethodPost, secondURL+"/api/v1/load/start", map[string]any{"ops": []string{"read"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "another coordinator") {
		t.Errorf("the second coordinator's start: %v; want it refused, the nodes held by another coordinator's run", err)
	}
	err = f.try(http.MethodPatch, secondURL+"/api/v1/fleet/config", map[string]any{"values": map[string]any{"workload.readRate": 1}}, nil)
	if err == nil {
		t.Error("the second coordinator changed the held nodes' rate")
	}
	_ = second.Stop()
	for _, s := range f.nodes {
		var st struct {
			Running map[string]bool `json:"running"`
		}
		f.call(http.MethodGet, "https://"+s.Addr()+"/api/v1/status", nil, &st)
		if !st.Running["read"] {
			t.Errorf("node %s stopped its load after the second coordinator's attempt", s.Addr())
		}
	}

	if err := f.hosts[0].Cut(netlab.Both); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	for i, s := range f.nodes {
		lastRunning, stopped := f.waitStopped(s, f.hosts[i+1], partitionLease+3*time.Second)
		t.Logf("node %s stopped its load %v after its coordinator was cut off (lease %v)", s.Addr(), stopped.Sub(cut).Round(time.Millisecond), partitionLease)
		// Judged on the last poll that found it running: it stopped after that was sent.
		if d := lastRunning.Sub(cut); d > partitionLease+time.Second {
			t.Errorf("node %s still ran its load %v after its coordinator was cut off, want stopped within its lease %v (+1 s)", s.Addr(), d, partitionLease)
		}
	}
	if err := f.hosts[0].Heal(); err != nil {
		t.Fatal(err)
	}
	for i, s := range f.nodes {
		for end := time.Now().Add(15 * time.Second); ; {
			if on, err := f.running(s, f.hosts[i+1]); err == nil && on {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("node %s does not run its coordinator's load again after the heal", s.Addr())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	f.call(http.MethodPost, f.url("/api/v1/load/stop"), nil, nil)
}
