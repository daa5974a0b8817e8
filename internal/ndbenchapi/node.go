package ndbenchapi

import (
	"context"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/stats"
)

// Node is what NDBench's routes drive: one ndbench node, *node.Node in a process.
// The routes depend on this rather than on the instance itself, so that whatever else
// answers for a node (a fleet view fanning out to peers, a test double) serves them as
// well. Errors are those of package instance (ErrNotInitialized, ...), which the routes
// turn into NDBench's answers.
type Node interface {
	Init(ctx context.Context, name string, opts map[string]string) error
	Shutdown() error
	Start(classes ...string) error
	Stop(classes ...string) error
	StartBackfill(opts engine.BackfillOptions) error
	StopBackfill() error
	Patch(values map[string]string) (node.PatchResult, error)
	Config() *config.Snapshot
	Status() node.Status
	Read(ctx context.Context, key string) ([]byte, error)
	Write(ctx context.Context, key string, value []byte) error
	// Collector is the node's statistics: the latest interval, the cumulative view.
	Collector() *stats.Collector
}

var _ Node = (*node.Node)(nil)
