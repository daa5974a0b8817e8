package engine

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// failingOps fails every third purge, with a message of its own.
type failingOps struct {
	*countingOps
	n atomic.Int64
}

func (f *failingOps) Do(ctx context.Context, op int, key string, value []byte) ([]byte, error) {
	if op == 1 && f.n.Add(1)%3 == 0 {
		return nil, errors.New("purge refused")
	}
	return f.countingOps.Do(ctx, op, key, value)
}

// TestMixedClassIsItsOperations: an answered operation of a class that mixes several is
// recorded once, in its operation's series, and the class's series is derived from them
// at each tick; a failure is counted once in the class too. The class's figures must be
// the sums of its operations': counts, misses, failures, latencies, and the failure
// messages it keeps.
func TestMixedClassIsItsOperations(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.ReadEnabled, w.WriteEnabled = false, false
		w.Ops = map[string]config.OpClass{"lookup": {Workers: 2, Rate: 0, Enabled: true, Mix: "scan:1,purge:1"}}
	})
	d := &failingOps{countingOps: &countingOps{Driver: openMemory(t, nil)}}
	coll := stats.NewCollector(stats.Config{Shards: 4})
	e, err := New(d, w, Options{Collector: coll, Operations: countingOpsDecl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(time.Second) })
	if err := e.Start("lookup"); err != nil {
		t.Fatal(err)
	}
	until(t, e, "2,000 lookups", func(s stats.Summary) bool { return s.Ops["lookup"].Count >= 2000 })
	_ = e.Stop()
	waitIdle(t, e)
	coll.Tick(time.Now())
	cum := coll.Cumulative()
	lk, sc, pu := cum.Ops["lookup"], cum.Ops["lookup.scan"], cum.Ops["lookup.purge"]
	if lk.Count != sc.Count+pu.Count || lk.Misses != sc.Misses+pu.Misses || lk.Count == 0 || sc.Misses == 0 {
		t.Errorf("lookup %d ops (%d misses), scan %d (%d) + purge %d (%d)", lk.Count, lk.Misses, sc.Count, sc.Misses, pu.Count, pu.Misses)
	}
	if lk.Errors != pu.Errors || sc.Errors != 0 || pu.Errors == 0 {
		t.Errorf("failures: lookup %d, scan %d, purge %d; want lookup = purge > 0", lk.Errors, sc.Errors, pu.Errors)
	}
	if lk.Attempted != sc.Attempted+pu.Attempted {
		t.Errorf("attempted: lookup %d, scan %d + purge %d", lk.Attempted, sc.Attempted, pu.Attempted)
	}
	var hists [3]int64
	for i, name := range []string{"lookup", "lookup.scan", "lookup.purge"} {
		op, _ := coll.Lookup(name)
		resp, svc := coll.CumulativeHistograms(op)
		if resp.TotalCount() != svc.TotalCount() {
			t.Errorf("%s: %d response times, %d service times", name, resp.TotalCount(), svc.TotalCount())
		}
		hists[i] = resp.TotalCount()
	}
	if hists[0] != hists[1]+hists[2] || hists[0] != lk.Count {
		t.Errorf("response times: lookup %d, scan %d + purge %d; lookup counted %d", hists[0], hists[1], hists[2], lk.Count)
	}
	errs := coll.Errors()
	if len(errs["lookup"]) != 1 || errs["lookup"][0].Message != "purge refused" || errs["lookup"][0].Count != pu.Errors {
		t.Errorf("lookup's failure messages %+v, want purge's %d", errs["lookup"], pu.Errors)
	}
}
