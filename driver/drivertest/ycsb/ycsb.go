// Package ycsb is the driver test kit's case for YCSB's core workloads: a driver's
// integration test opts in with the presets its store serves, and the case runs each as
// `ndbench run --workload ycsb-X` runs it (the built-in preset over the defaults, with
// validation on), through the engine, after a backfill, and checks what YCSB defines: E's
// scans read keys, D's and E's inserts grow the keyspace by one key each, F reports its
// rmw and their read parts, nothing fails and validation finds nothing wrong.
//
// It lives beside package drivertest, not in it, because it runs ndbench's engine:
// drivertest itself imports nothing of ndbench but package driver.
package ycsb

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest/enginerun"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// Case is what a driver's test says about its store.
type Case struct {
	// Driver is the driver's name, for the configuration the preset is built over.
	Driver string
	// Presets are the presets the store serves, e.g. ycsb-d, ycsb-e, ycsb-f.
	Presets []string
	// Open returns the driver on an empty store for preset (a table or index of its own);
	// the test closes it.
	Open func(t *testing.T, preset string) driver.Driver
	// Tune, when set, adjusts the workload: a lower rate for a store in a JVM on a shared
	// machine, a key prefix of the test's.
	Tune func(w *config.Workload)
	// AfterBackfill, when set, runs between the backfill and the load (an index refresh).
	AfterBackfill func(t *testing.T, preset string)
	// After, when set, checks more of a preset's run (a store's own view of the keys).
	After func(t *testing.T, r Result)
	// Load is how long the load runs; 0 means 2 s.
	Load time.Duration
	// MinReads is the fewest operations of the read class (E's scans) a run must make;
	// 0 means 20.
	MinReads int64
	// ScanMisses is the largest fraction of E's scans that may read no key (never all):
	// 0 for a store that scans in byte order (after a backfill every start key has keys
	// after it); more for one that scans in its own order (Cassandra's tokens do not
	// wrap).
	ScanMisses float64
}

// Result is one preset's run.
type Result struct {
	Preset   string
	Workload config.Workload
	// Summary is what the run recorded, backfill excluded.
	Summary stats.Summary
	// KeyspaceSize is the engine's keyspace after the run.
	KeyspaceSize int64
}

// Run runs each of c.Presets in a subtest of its name.
func Run(t *testing.T, c Case) {
	t.Helper()
	for _, name := range c.Presets {
		t.Run(name, func(t *testing.T) { run(t, c, name) })
	}
}

// Workload returns the workload of the built-in preset name as a run of driver with
// --workload name gets it (defaults, then the preset), with validation on and an op
// timeout for a shared machine.
func Workload(t *testing.T, driverName, name string) config.Workload {
	t.Helper()
	p, ok := presets.Lookup(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	l, err := p.Layer()
	if err != nil {
		t.Fatal(err)
	}
	def := config.DefaultsLayer()
	def.Values["driver.name"] = driverName
	snap, err := config.Build([]config.Layer{def, l})
	if err != nil {
		t.Fatalf("preset %s: %v", name, err)
	}
	w := snap.Config.Workload
	w.ValidateValues, w.OpTimeout = true, 10*time.Second
	return w
}

func run(t *testing.T, c Case, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := c.Open(t, name)
	w := Workload(t, c.Driver, name)
	if c.Tune != nil {
		c.Tune(&w)
	}
	run := enginerun.New(t, d, w, engine.Options{})
	run.Backfill(t, ctx, 4)
	if c.AfterBackfill != nil {
		c.AfterBackfill(t, name)
	}
	load := c.Load
	if load == 0 {
		load = 2 * time.Second
	}
	sum := run.Measure(t, ctx, enginerun.Sleep(load))
	r := Result{Preset: name, Workload: w, Summary: sum, KeyspaceSize: run.Engine.KeyspaceSize()}
	check(t, c, r)
	if c.After != nil {
		c.After(t, r)
	}
}

// check checks what a preset's run recorded.
func check(t *testing.T, c Case, r Result) {
	t.Helper()
	cum, name, numKeys, size := r.Summary, r.Preset, r.Workload.NumKeys, r.KeyspaceSize
	rd, wr := cum.Ops["read"], cum.Ops["write"]
	t.Logf("%s: read class %d ops (%d misses), write class %d ops; keyspace %d -> %d", name, rd.Count, rd.Misses, wr.Count, numKeys, size)
	minReads := c.MinReads
	if minReads == 0 {
		minReads = 20
	}
	if rd.Count < minReads || wr.Count < 1 || rd.Errors != 0 || wr.Errors != 0 {
		t.Fatalf("read class %d ops %d errors (%v), write class %d ops %d errors (%v); want at least %d and 1, none failed",
			rd.Count, rd.Errors, rd.Failures, wr.Count, wr.Errors, wr.Failures, minReads)
	}
	switch name {
	case "ycsb-d", "ycsb-e":
		if size != numKeys+wr.Count {
			t.Errorf("keyspace %d after %d inserts into %d keys, want %d", size, wr.Count, numKeys, numKeys+wr.Count)
		}
	case "ycsb-f":
		if p := cum.Ops["write.rmw.read"]; p.Count != wr.Count || p.Count-p.Misses == 0 {
			t.Errorf("%d rmw, %d read parts (%d misses): want one per rmw, finding the backfilled keys", wr.Count, p.Count, p.Misses)
		}
		if size != numKeys {
			t.Errorf("keyspace %d without inserts, want %d", size, numKeys)
		}
	}
	if name == "ycsb-e" && (float64(rd.Misses) > c.ScanMisses*float64(rd.Count) || rd.Misses == rd.Count) {
		t.Errorf("%d of %d scans read no key after a backfill; want at most %g of them, and not all", rd.Misses, rd.Count, c.ScanMisses)
	}
	if name != "ycsb-e" && rd.Count-rd.Misses == 0 {
		t.Errorf("no read found a key")
	}
	for _, op := range []string{"read", "write", "write.rmw.read"} {
		for v, n := range cum.Ops[op].Validation {
			if n != 0 {
				t.Errorf("%s: validation %s = %d, want none", op, v, n)
			}
		}
	}
}
