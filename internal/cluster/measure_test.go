package cluster_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/node"
)

// TestInProcessFleetNodeReportsLeaveTheWarmUpOut: a run on a fleet (node.Run, as `run`,
// a fleet scenario and auto-tune drive it) warms up once, its nodes started as steps with
// no warm-up of their own; when the warm-up ends, each node's own report (GET
// /api/v1/report, which a fleet scenario reads to judge each node's generator) starts
// there too, as the fleet's merged figures do. Before, a node's report counted the
// warm-up's load and said no warm-up ran.
func TestInProcessFleetNodeReportsLeaveTheWarmUpOut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(seq *node.Run) (bool, error)
	}{
		// The load runs on after the warm-up (a run).
		{"load runs on", func(seq *node.Run) (bool, error) { return seq.StartLoad(context.Background()) }},
		// The warm-up is drained, then the first phase starts the load (a scenario).
		{"drained", func(seq *node.Run) (bool, error) {
			measured, err := seq.WarmUp(context.Background())
			if err != nil || !measured {
				return measured, err
			}
			return true, seq.Node.Start()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The whole fleet on a simulated clock moved on only once every node has been
			// beaten (pumpedFleet), so no node is judged lost on a loaded machine; the
			// run's warm-up is timed on it too (node.Run on the fleet's clock), and the
			// measured span is checked against it.
			f := newPumpedFleet(t, 2, nil)
			nodes, coord, url := f.nodes, f.coord, f.url
			inCall(t, http.MethodPatch, url("/api/v1/config"), map[string]any{"values": map[string]any{
				"workload.readRate": 200, "workload.writeEnabled": false, "workload.numKeys": 100, "workload.warmup": "400ms"}}, nil)
			inCall(t, http.MethodPost, url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
			fleet := coord.Fleet()
			seq := &node.Run{Node: fleet}
			before := f.sim.Now()
			if measured, err := tc.start(seq); err != nil || !measured {
				t.Fatalf("warm-up: measured %v, %v", measured, err)
			}
			defer func() { _ = fleet.Stop() }()
			if w := fleet.ReportInput("test").Warmup; w != 400*time.Millisecond {
				t.Errorf("fleet report's warm-up %v, want 400ms", w)
			}
			reps, err := fleet.NodeReports(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != len(nodes) {
				t.Fatalf("%d node reports, want %d", len(reps), len(nodes))
			}
			for id, r := range reps {
				// The measured span starts after the warm-up: at least 400 ms after the
				// run began (the fleet's start instant is later still).
				if r.WarmupSeconds != 0.4 || r.Started.Before(before.Add(400*time.Millisecond)) {
					t.Errorf("node %s's report: warm-up %v s, measured from %s; want 0.4 s, from after the warm-up (began %s)",
						id, r.WarmupSeconds, r.Started.Format("15:04:05.000"), before.Format("15:04:05.000"))
				}
			}
		})
	}
}
