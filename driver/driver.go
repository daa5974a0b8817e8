// Package driver is the public plugin API of ndbench: the interface a data-store plugin
// implements, its optional capabilities, the typed options schema, the registry and the
// error classes. Third-party drivers import only this package.
//
// A driver is one small Go package that registers itself from init:
//
//	func init() {
//		driver.MustRegister(driver.Definition{
//			Name:       "mystore",
//			Summary:    "MyStore over its native protocol",
//			NewOptions: func() any { return &Options{} },
//			New:        func() driver.Driver { return &Driver{} },
//		})
//	}
//
// The engine owns keys and values, so data validation, key patterns and value sizes work
// the same for every driver; a driver only moves bytes to and from its store.
package driver

import (
	"context"
	"errors"
)

// ErrNotFound is returned by Read when the key does not exist. The engine counts it as a
// miss (a cache miss, an unwritten key), apart from failures.
var ErrNotFound = errors.New("key not found")

// Driver is what every store plugin implements. A Driver must be safe for concurrent use by
// all workers once Init has returned.
type Driver interface {
	// Init connects to the store (and creates schema when the options ask for it). opts is
	// the pointer returned by the Definition's NewOptions, filled from the configuration.
	//
	// Read and Write must honour ctx: it carries the per-operation timeout. The context
	// stays valid after the call returns (its state is final once the operation ended),
	// so a client library that keeps it or derives from it is safe.
	Init(ctx context.Context, opts any) error
	// Read returns the value stored under key, or ErrNotFound. The returned slice belongs to
	// the caller; the engine reads it and never modifies it.
	Read(ctx context.Context, key string) ([]byte, error)
	// Write stores value under key. The driver must not keep value after Write returns (the
	// engine reuses the buffer); a store that keeps it in memory copies it.
	Write(ctx context.Context, key string, value []byte) error
	// Close releases every resource the driver holds. It is called once, after all workers
	// have stopped, and also after a failed Init, so it must cope with a partial Init.
	Close() error
}

// BulkReader is implemented by drivers that can read many keys in one round trip.
type BulkReader interface {
	// ReadBulk returns one value per key, in order; a missing key has a nil value.
	ReadBulk(ctx context.Context, keys []string) ([][]byte, error)
}

// BulkWriter is implemented by drivers that can write many keys in one round trip.
type BulkWriter interface {
	// WriteBulk stores values[i] under keys[i]. The same ownership rule as Write applies.
	WriteBulk(ctx context.Context, keys []string, values [][]byte) error
}

// Reconfigurer is implemented by drivers with options marked `live:"true"`. ndbench only
// ever passes options that differ from the current ones in live fields (changes to other
// options wait for the next Init), so a driver can switch endpoints, consistency levels or
// TTLs without reconnecting everything.
type Reconfigurer interface {
	Reconfigure(ctx context.Context, opts any) error
}

// ConnectionInfoer is implemented by drivers that can describe their connection (cluster
// name, server version, endpoints, client mode). Values must never contain secrets.
type ConnectionInfoer interface {
	ConnectionInfo() map[string]string
}

// Workflower is implemented by drivers that run a multi-step business operation (NDBench's
// runWorkFlow): for example read from a cache, fall back to a database, and fill the cache.
type Workflower interface {
	RunWorkflow(ctx context.Context, key string) error
}

// Warmer is implemented by drivers that connect lazily, on a worker's first operation,
// and can open ahead of the load the connections the workers will use. ndbench calls
// Warm once after Init with the number of workers the configuration starts with, so that
// a run's first seconds measure the store and not the connects (pgbench, memtier and
// latte connect before their clocks start). Warm opens what the driver's own limits allow
// and returns once those connections are open or failed, within the driver's connect
// timeout and ctx. Its error is logged, not fatal: the workers then connect as they would
// have.
type Warmer interface {
	Warm(ctx context.Context, workers int) error
}

// StatsReporter is implemented by drivers that keep counters of their own (for example per
// replication zone). The engine includes them in status and reports.
type StatsReporter interface {
	DriverStats() map[string]int64
}
