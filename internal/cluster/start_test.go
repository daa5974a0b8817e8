package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// TestAgentRefusesABadStartWhole: a fleet start (POST /api/v1/cluster/start) that names an
// op class twice, or one the workload does not have, or that reaches a node with no
// driver, is refused naming what was wrong, and leaves the node as it was: not held by
// the run (another coordinator may take it at once), nothing running. Before, the agent
// took the run's lease first and only then asked the node, which refused an unknown class
// after the node was held, and accepted a class named twice (POST /api/v1/load/start
// refuses both).
func TestAgentRefusesABadStartWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   []string
		init  bool
		field string // the field the refusal names; "" when any error will do
	}{
		{name: "a class twice", ops: []string{"read", "read"}, init: true, field: "ops"},
		{name: "a class twice among others", ops: []string{"read", "write", "read"}, init: true, field: "ops"},
		{name: "an unknown class", ops: []string{"reads"}, init: true, field: "ops"},
		{name: "no driver", ops: []string{"read"}, init: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.readRate=100", "workload.writeRate=100"}})
			if err != nil {
				t.Fatal(err)
			}
			n := node.New(config.NewStore(snap), nil)
			t.Cleanup(func() { _ = n.Close() })
			if tc.init {
				if err := n.InitConfigured(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			a := NewAgent(n, AgentOptions{ID: "n1"})
			err = a.Start(StartRequest{Coordinator: "c1", Run: "r1", At: time.Now(), Ops: tc.ops, LeaseMs: 10_000})
			if err == nil {
				t.Fatalf("start of %v accepted", tc.ops)
			}
			if tc.field != "" {
				fes, ok := driver.AsFieldErrors(err)
				if !ok || len(fes) == 0 || fes[0].Field != tc.field {
					t.Errorf("start of %v: %v; want a field error naming %q", tc.ops, err, tc.field)
				}
			}
			if !n.Status().Idle() {
				t.Errorf("start of %v refused, yet the node runs %v", tc.ops, n.Status().Running)
			}
			resp, err := a.Beat(BeatRequest{Coordinator: "c2"})
			if err != nil || resp.Run != "" || resp.Coordinator != "" {
				t.Errorf("after a refused start the node says run %q of %q (%v); want it free", resp.Run, resp.Coordinator, err)
			}
			if err := a.Admit("c2", ""); err != nil {
				t.Errorf("after a refused start another coordinator is refused: %v", err)
			}
		})
	}
}

// TestCoordinatorRefusesAClassTwice: a fleet start, or a start of one node, that names an
// op class twice is refused before the coordinator begins a run or re-splits the rates
// for it (every node would refuse it).
func TestCoordinatorRefusesAClassTwice(t *testing.T) {
	disc, err := discovery.Parse("static:127.0.0.1:1", discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Self: discovery.Member{ID: "c1"}, Discovery: disc, Token: "a-token-long-enough-for-a-fleet", Config: snap})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, start := range map[string]func() error{
		"fleet": func() error { _, err := c.Start(ctx, "read", "read"); return err },
		"node":  func() error { return c.StartNode(ctx, "127.0.0.1:1", "write", "write") },
	} {
		err := start()
		if fes, ok := driver.AsFieldErrors(err); !ok || fes[0].Field != "ops" {
			t.Errorf("%s start naming a class twice: %v; want a field error naming ops", name, err)
		}
		if run := c.RunID(); run != "" {
			t.Errorf("%s start refused, yet the coordinator began run %q", name, run)
		}
	}
}
