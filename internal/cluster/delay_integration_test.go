//go:build integration

package cluster_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/netlab"
)

// A node's link to its coordinator is slow, every byte delayed both ways (a userspace
// proxy on the lab's gateway: this kernel has no netem), for delays below the lease: the
// coordinator's beats, start, rate split and statistics pulls all cross it. The fleet
// keeps its schedule: the slow node starts at the common instant, is never found lost,
// keeps its share, the store sees the fleet's target (no second more than 1%
// over it, none short of it), and the fleet's seconds are exactly the union of the nodes'.
func TestPartitionDelayedNodeKeepsItsShare(t *testing.T) {
	// A lease is renewed by the beat that reaches the node; one beat is in flight at a
	// time, so the renewals come a round trip and a beat period apart, which must stay
	// under the lease: 800 ms each way runs with a 5 s lease.
	for _, tc := range []struct{ delay, lease time.Duration }{
		{300 * time.Millisecond, partitionLease},
		{800 * time.Millisecond, 5 * time.Second},
	} {
		delay := tc.delay
		t.Run(delay.String(), func(t *testing.T) {
			// Late operations are dropped past 100 ms (as in the pause within the lease):
			// what this test measures is the link's, and a generator on a shared machine
			// descheduled for longer than lagAllowance would otherwise burst its catch-up
			// (160 ms was seen).
			values := map[string]any{"workload.catchUp": "drop", "workload.maxLateness": "100ms"}
			f := startNetFleetVia(t, 3, tc.lease, values, func(lab *netlab.Lab, i int, addr string) string {
				if i != 2 {
					return addr
				}
				return lab.DelayProxy(t, addr, delay)
			})
			slow := f.ids[2]
			f.call(http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
			begin := time.Now()
			var health, lost []string
			for end := begin.Add(8 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				ms := f.members()
				switch h := ms[slow].Health; h {
				case "alive":
				case "suspect":
					health = append(health, time.Now().Format("05.000")+" "+h)
				default:
					lost = append(lost, time.Now().Format("05.000")+" "+h)
				}
				if a := ms[slow].Assigned["read"]; a != fleetTarget/3 {
					t.Errorf("the slow node's share is %v, want %v", a, fleetTarget/3)
				}
			}
			// A beat unanswered for a second makes the node suspect while it waits on, as
			// before; a loss would move its share.
			t.Logf("the slow node was seen suspect at %v", health)
			if lost != nil {
				t.Errorf("the slow node (%v each way) was found %v; want it never lost", delay, lost)
			}
			ms := f.members()
			t.Logf("slow node: offset %.1f ms, first read %.1f ms after the common instant", ms[slow].OffsetMs, ms[slow].FirstOpSkewMs["read"])
			if skew := ms[slow].FirstOpSkewMs["read"]; skew < -100 || skew > 100 {
				t.Errorf("the slow node's first read came %.1f ms after the common instant; want within 100 ms", skew)
			}
			f.checkNoBurst(begin.Add(time.Second), time.Now())
			f.checkNoShortfall(begin.Add(time.Second), time.Now())
			f.checkTotals(begin)
		})
	}
}

// checkNoShortfall fails the test when the store saw, from from to to, less than the
// fleet's target less 1% (and lagAllowance, for operations of the span's last moment
// started late): a fleet that fell behind its schedule.
func (f *netFleet) checkNoShortfall(from, to time.Time) {
	f.t.Helper()
	f.gets.mu.Lock()
	s := slices.Clone(f.gets.samples)
	f.gets.mu.Unlock()
	var first, last *countSample
	for i := range s {
		if s[i].at.Before(from) || s[i].at.After(to) {
			continue
		}
		if first == nil {
			first = &s[i]
		}
		last = &s[i]
	}
	if first == nil || last == first {
		f.t.Fatalf("no store samples from %s to %s", from.Format("15:04:05.000"), to.Format("15:04:05.000"))
	}
	span := last.at.Sub(first.at)
	n := last.calls - first.calls
	want := fleetTarget * span.Seconds()
	f.t.Logf("store side: %d GETs in %v, %.1f%% of the fleet's target", n, span.Round(time.Millisecond), 100*float64(n)/want)
	if float64(n) < 0.99*want-fleetTarget*lagAllowance.Seconds() {
		f.t.Errorf("the store saw %d GETs in %v: %.1f%% of the fleet's target of %.0f/s; want at least 99%% (less %v of lag)",
			n, span, 100*float64(n)/want, fleetTarget, lagAllowance)
	}
}

// checkTotals stops the load and checks that the fleet's seconds count exactly what the
// nodes' own seconds count, none flagged partial from the start of the load (from) on (a
// second of the setup, before the coordinator's first pull of a node, may be). The nodes are fresh, so their series
// hold this run only. Which fleet second holds a node's second is the merge's (by the
// phase of the node's first interval it merged), which a node's own timestamps cannot
// tell when its ticks sit near the half-second: at 800 ms each way one node's seconds
// were all one fleet second later than checkUnion's rounding put them, with the totals
// equal, so totals are what this test compares.
func (f *netFleet) checkTotals(from time.Time) {
	f.t.Helper()
	f.call(http.MethodPost, f.url("/api/v1/load/stop"), nil, nil)
	time.Sleep(3 * time.Second) // the last seconds reach the coordinator, its merge wait ends
	var nodes, fleet int64
	for _, s := range f.nodes {
		for _, p := range f.series("https://" + s.Addr() + "/api/v1/stats/series") {
			nodes += p.Ops["read"].Attempted
		}
	}
	for _, p := range f.series(f.url("/api/v1/stats/series")) {
		fleet += p.Ops["read"].Attempted
		if p.Partial && p.T.After(from.Add(time.Second)) {
			f.t.Errorf("fleet second ending %s is partial, missing %v", p.T.Format("15:04:05"), p.Missing)
		}
	}
	f.t.Logf("the fleet's seconds count %d reads, the nodes' %d", fleet, nodes)
	if fleet != nodes || fleet == 0 {
		f.t.Errorf("the fleet's seconds count %d reads, its nodes' %d; want them equal", fleet, nodes)
	}
}
