package report

import (
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/stats"
)

// TestShortfallAdviceOnAFleet: a shortfall's reason suggests what would carry the rate.
// For one node's report, spreading its load over a fleet; for a fleet's merged report
// (its driver info lists its nodes), more nodes: "spread the load over more nodes (a
// fleet)" told a fleet that fell short as a whole to become one.
func TestShortfallAdviceOnAFleet(t *testing.T) {
	// 2 workers at a mean service time of 1 ms carry 2,000 ops/s, and 2 is the most the
	// configuration allows: the reason names what else would carry 10,000.
	s := stats.OpSummary{ServiceTime: stats.Latency{Mean: 1000}}
	for _, tc := range []struct {
		name  string
		info  map[string]string
		want  string
		never string
	}{
		{"one node", nil, "spread the load over more nodes (a fleet)", "add nodes"},
		{"a fleet of three", map[string]string{FleetInfo: "n1, n2, n3"}, "add nodes to the fleet (its 3 could not send more", "(a fleet)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := fleetNodes(tc.info)
			need, ok := workersNeeded("read", s, 10000, 2, room{workers: 2, configured: true, nodes: nodes})
			if !ok {
				t.Fatal("no reason for 2 workers at 10,000 ops/s of 1 ms")
			}
			for what, reason := range map[string]string{"workers": need, "client's CPU": clientBound("read", nodes)} {
				if !strings.Contains(reason, tc.want) || strings.Contains(reason, tc.never) {
					t.Errorf("%s reason %q; want %q in it, not %q", what, reason, tc.want, tc.never)
				}
			}
		})
	}
}
