// Package cluster runs a fleet of ndbench nodes from any one of them: the coordinator
// side (membership from discovery, heartbeats, clock offsets, fan-out of commands, the
// split of a fleet-wide rate and keyspace, synchronized starts, and the fleet's
// statistics merged from every node's 1 s interval histograms) and the node side (the
// Agent: answers heartbeats, starts at the common instant, and stops its own load when its
// coordinator goes silent for the lease time).
//
// Nodes talk over their ordinary REST API with the shared token: a node's /api/v1 is the
// peer protocol, plus two routes of its own (/api/v1/cluster/beat and /start) that refuse
// any caller on a node without a token.
package cluster

import (
	"time"

	"github.com/ndbench/ndbench/internal/engine"
)

// BeatRequest is one heartbeat from a coordinator. A beat goes both ways in one exchange:
// the request tells the node its coordinator is alive (renewing the lease), the response
// tells the coordinator the node is, and the four timestamps give an NTP-style clock
// offset sample.
type BeatRequest struct {
	// Coordinator is the coordinating node's id.
	Coordinator string `json:"coordinator"`
	// Run names the fleet run the node takes part in; "" = membership only: the node keeps
	// no lease and its load is not the coordinator's.
	Run string `json:"run,omitempty"`
	// LeaseMs is how long the node keeps its load running without a beat from this
	// coordinator; it stops the load by itself after that (0: no lease).
	LeaseMs int64 `json:"leaseMs,omitempty" minimum:"0"`
	// Sent is the coordinator's clock when it sent the beat (t0).
	Sent time.Time `json:"sent"`
}

// BeatResponse is a node's answer to a beat.
type BeatResponse struct {
	ID      string            `json:"id"`
	Version string            `json:"version"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Boot names the node's process (new at every start): a coordinator that sees it
	// change knows the node restarted and lost what it was told (its share, shapes, run).
	Boot string `json:"boot,omitempty"`
	// Received and Sent are the node's clock when the beat arrived (t1) and when the
	// answer left (t2).
	Received time.Time `json:"received"`
	Sent     time.Time `json:"sent"`
	// Driver is the initialized driver ("" when none).
	Driver string `json:"driver"`
	// Running has every op class of the workload and whether it runs.
	Running map[string]bool `json:"running"`
	// Backfill is the progress of the node's current or last backfill.
	Backfill *engine.BackfillStatus `json:"backfill,omitempty"`
	// FirstOps are the running classes' first operations since they started (node clock).
	FirstOps map[string]time.Time `json:"firstOps,omitempty"`
	// Run is the fleet run the node is part of ("" when none) and Coordinator the node
	// that runs it; Orphaned tells that its last run's coordinator went silent and the
	// node stopped its load by itself.
	Run         string `json:"run,omitempty"`
	Coordinator string `json:"coordinator,omitempty"`
	Orphaned    bool   `json:"orphaned,omitempty"`
	// KeyspaceSize is the node's keyspace (engine.Engine.KeyspaceSize): every key its
	// inserts claimed is below it. Inserted is how many keys they claimed. A coordinator
	// re-splitting the new keys starts the split beyond every node's KeyspaceSize, and
	// sums Inserted into the fleet's keyspace.
	KeyspaceSize int64 `json:"keyspaceSize,omitempty"`
	Inserted     int64 `json:"inserted,omitempty"`
}

// StartRequest starts op classes at an instant of the node's clock: the coordinator
// converts its common instant with the node's measured offset.
type StartRequest struct {
	Coordinator string    `json:"coordinator" minLength:"1"`
	Run         string    `json:"run" minLength:"1"`
	At          time.Time `json:"at"`
	// Ops are the classes to start; empty = every class of the workload.
	Ops     []string `json:"ops,omitempty" maxItems:"16"`
	LeaseMs int64    `json:"leaseMs" minimum:"1" doc:"Stop the load after this long without a beat of the run"`
	// NoWarmup starts the classes as a step of a run the coordinator sequences (a
	// scenario phase, an auto-tune step, the run's own warm-up): the coordinator's run
	// has its one warm-up, so the node adds none of its own. Absent (a user's start over
	// the fleet's API, an older coordinator), the node warms up from idle as a user's
	// start does.
	NoWarmup bool `json:"noWarmup,omitempty" doc:"A step of the coordinator's run: no warm-up of the node's own"`
}

// HeaderCoordinator and HeaderRun name, on every call a coordinator makes to a node, the
// coordinator and its current run ("" when none): a node that another run holds refuses a
// state-changing call that does not come from that run, before anything applies.
const (
	HeaderCoordinator = "Ndbench-Coordinator"
	HeaderRun         = "Ndbench-Run"
)

// ReleaseRequest ends a node's part in a run: its load is the coordinator's no longer,
// so it keeps no lease (sent when the fleet's load is stopped).
type ReleaseRequest struct {
	Coordinator string `json:"coordinator"`
	Run         string `json:"run"`
}

// ShapeRequest sets or clears an op class's load shape on a node, at an instant of the
// node's clock: the coordinator sends every node its share of the fleet's shape with one
// common instant (converted with each node's offset), so the nodes' shapes line up.
type ShapeRequest struct {
	Coordinator string `json:"coordinator" minLength:"1"`
	// Run is the coordinator's current run ("" when none): a node another run holds
	// refuses the shape.
	Run string `json:"run,omitempty"`
	// Class is the op class (read, write, or a class of the workload).
	Class string `json:"class" minLength:"1"`
	// Shape is the node's own shape (rates are its share); absent: back to the
	// configured rate.
	Shape *ShapeSpec `json:"shape,omitempty"`
	// At is when the shape applies (node clock); the call returns then. Zero: now.
	At time.Time `json:"at,omitzero"`
	// DryRun checks the request without applying it: the coordinator asks every node
	// first, so a shape that one node refuses applies on none.
	DryRun bool `json:"dryRun,omitempty"`
}

// MeasureRequest starts the span a node's own figures cover, as its coordinator's fleet
// figures start theirs: the coordinator's run warmed up for WarmupMs (a run's, a scenario's
// or an auto-tune search's one warm-up, which its nodes ran with no warm-up of their own),
// so the node's report leaves it out as the fleet's does.
type MeasureRequest struct {
	Coordinator string `json:"coordinator" minLength:"1"`
	// Run is the coordinator's current run ("" when none: a warm-up that was drained
	// ended the run): a node another run holds refuses.
	Run      string `json:"run,omitempty"`
	WarmupMs int64  `json:"warmupMs" minimum:"0" maximum:"86400000" doc:"How long the load ran before the span, reported as the warm-up"`
}
