package engine

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// countingOps wraps the memory store with two operations of its own and counts them, so a
// test can tell the engine's mix from what reached the driver.
type countingOps struct {
	driver.Driver
	scans, purges atomic.Int64
	lastValue     atomic.Int64 // length of the last value a write-like op was given
}

var countingOpsDecl = []driver.Operation{
	{Name: "scan", Kind: driver.KindRead}, {Name: "purge", Kind: driver.KindOther}, {Name: "put", Kind: driver.KindWrite},
}

func (c *countingOps) Do(ctx context.Context, op int, key string, value []byte) ([]byte, error) {
	switch op {
	case 0:
		c.scans.Add(1)
		return c.Read(ctx, key)
	case 1:
		c.purges.Add(1)
		if value != nil {
			return nil, errors.New("purge was handed a value")
		}
		return nil, nil
	case 2:
		c.lastValue.Store(int64(len(value)))
		return nil, c.Write(ctx, key, value)
	}
	return nil, errors.New("no such operation")
}

func newOpsEngine(t *testing.T, w config.Workload) (*Engine, *countingOps) {
	t.Helper()
	d := &countingOps{Driver: openMemory(t, nil)}
	e, err := New(d, w, Options{Collector: stats.NewCollector(stats.Config{Shards: 4}), Operations: countingOpsDecl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(time.Second) })
	return e, d
}

// TestOpClassMixAndSeries: a class mixing two driver operations runs them by weight and
// records each under "class.operation", counted under the class too; the operations reach the
// driver through Operator.Do with what their kind gets.
func TestOpClassMixAndSeries(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.ReadEnabled, w.WriteEnabled = false, false
		w.Ops = map[string]config.OpClass{"lookup": {Workers: 2, Rate: 0, Enabled: true, Mix: "scan:3,purge:1"}}
	})
	e, d := newOpsEngine(t, w)
	if err := e.Start("lookup"); err != nil {
		t.Fatal(err)
	}
	// 4,000 operations: at a weight of 1 in 4, purges are 1,000 ± 110 (four standard
	// deviations) and scan:purge 2.6 to 3.5. It used to be what 300 ms held, as few as a
	// loaded machine ran.
	s := until(t, e, "4,000 lookups", func(s stats.Summary) bool { return s.Ops["lookup"].Count >= 4000 })
	_ = e.Stop()
	waitIdle(t, e)
	e.Collector().Tick(time.Now())
	cum := e.Collector().Cumulative()
	lk, sc, pu := cum.Ops["lookup"], cum.Ops["lookup.scan"], cum.Ops["lookup.purge"]
	if lk.Count == 0 || lk.Count != sc.Count+pu.Count {
		t.Fatalf("lookup %d ops, scan %d + purge %d", lk.Count, sc.Count, pu.Count)
	}
	if sc.Count != d.scans.Load() || pu.Count != d.purges.Load() {
		t.Errorf("recorded scan %d purge %d, the driver saw %d and %d", sc.Count, pu.Count, d.scans.Load(), d.purges.Load())
	}
	if ratio := float64(sc.Count) / float64(pu.Count); ratio < 2.5 || ratio > 3.5 {
		t.Errorf("scan:purge = %.2f over %d ops, want 3", ratio, lk.Count)
	}
	// Scans of keys never written miss: a read-like operation's ErrNotFound is a miss.
	if sc.Misses == 0 || pu.Misses != 0 {
		t.Errorf("scan misses %d, purge misses %d", sc.Misses, pu.Misses)
	}
	if s.Ops["read"].Count != 0 || s.Ops["write"].Count != 0 {
		t.Errorf("disabled read/write classes ran: %+v", s.Ops)
	}
	if s.Ops["lookup"].Workers != 2 || s.Ops["lookup.scan"].Workers != 0 {
		t.Errorf("gauges: lookup workers %d, lookup.scan %d", s.Ops["lookup"].Workers, s.Ops["lookup.scan"].Workers)
	}
}

// TestOpClassesLive: classes come and go with Apply; a class left out stops, a new one
// starts on request; names are checked.
func TestOpClassesLive(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.Ops = map[string]config.OpClass{"a": {Workers: 1, Enabled: true, Mix: "scan"}}
	})
	e, d := newOpsEngine(t, w)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "class a running", func() bool { return e.Running()["a"] && d.scans.Load() > 0 })

	w2 := w
	w2.Ops = map[string]config.OpClass{"b": {Workers: 1, Enabled: true, Mix: "put"}}
	if err := e.Apply(w2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "class a stopped", func() bool { r := e.Running(); _, hasA := r["a"]; return !hasA })
	if e.Running()["b"] {
		t.Error("a class added by Apply started without Start")
	}
	if err := e.Start("b"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "class b writing values", func() bool { return d.lastValue.Load() == int64(w.DataSize) })
	if err := e.Start("a"); err == nil || !errors.Is(err, ErrUnknownClass) || !strings.Contains(err.Error(), "read, write, b") {
		t.Errorf("starting a class no longer in the workload: %v", err)
	}
	bad := w2
	bad.Ops = map[string]config.OpClass{"c": {Workers: 1, Enabled: true, Mix: "nosuch"}}
	err := e.Apply(bad)
	if fes, ok := driver.AsFieldErrors(err); !ok || fes[0].Field != "workload.ops.c.mix" || !strings.Contains(fes[0].Allowed, "read, write, scan, purge, put") {
		t.Errorf("unknown operation: %v", err)
	}
	if _, ok := e.Workload().Ops["b"]; !ok {
		t.Error("a rejected change altered the workload")
	}
}

// TestValidationWithMixedOperations: with validation on, values written by a write-like
// operation carry the header and are acknowledged, so reads of them validate; read-like
// operations other than Read are not checked.
func TestValidationWithMixedOperations(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.ValidateValues = true
		w.NumKeys = 200
		w.WriteMix = "put"
		w.ReadMix = "read:1,scan:1"
	})
	e, _ := newOpsEngine(t, w)
	_ = e.Start()
	until(t, e, "operations of each series", func(s stats.Summary) bool {
		return s.Ops["read.read"].Count > 0 && s.Ops["read.scan"].Count > 0 && s.Ops["write"].Count > 0
	})
	_ = e.Stop()
	waitIdle(t, e)
	e.Collector().Tick(time.Now())
	cum := e.Collector().Cumulative()
	for _, name := range []string{"read", "read.read", "read.scan", "write"} {
		s := cum.Ops[name]
		if s.Count == 0 {
			t.Errorf("%s: no operations", name)
		}
		for kind, n := range s.Validation {
			if n != 0 {
				t.Errorf("%s: %d %s validation failures", name, n, kind)
			}
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	// A patience, not a bound the code is held to: under -race at a load of 30 a closed
	// loop's first hundred operations may take seconds.
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
