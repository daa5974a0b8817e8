package enginerun_test

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest/enginerun"
	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// A run against the in-process store: the backfill writes every key, so validated reads
// never miss, and a span's report counts that span's operations only, not the backfill's
// writes.
func TestMeasureCountsItsSpanOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, _, err := driver.Open(ctx, "memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.ValidateValues = 200, 32, true
	w.Readers, w.Writers, w.ReadRate, w.WriteRate = 2, 0, 0, 0
	w.WriteEnabled = false
	coll := stats.NewCollector(stats.Config{Shards: 2})
	r := enginerun.New(t, d, w, engine.Options{Collector: coll})
	if r.Collector != coll {
		t.Fatal("the run records into another collector than the one given")
	}
	r.Backfill(t, ctx, 2)
	var spans [2]stats.OpSummary
	for i := range spans {
		cum := r.Measure(t, ctx, func() {
			for ctx.Err() == nil {
				if c := r.Collector.CumulativeCounts(stats.OpRead); c.Count() >= 100 {
					return
				}
				time.Sleep(10 * time.Millisecond)
				r.Collector.Tick(time.Now())
			}
		})
		spans[i] = cum.Ops["read"]
		if bf := cum.Ops["backfill"]; bf.Count != 0 {
			t.Errorf("span %d: %d backfill writes counted, want none (they are not the span's)", i, bf.Count)
		}
	}
	for i, rd := range spans {
		if rd.Count < 100 || rd.Misses != 0 || rd.Errors != 0 {
			t.Errorf("span %d: %d reads, %d misses, %d errors; want at least 100, none missed or failed", i, rd.Count, rd.Misses, rd.Errors)
		}
		for k, n := range rd.Validation {
			if n != 0 {
				t.Errorf("span %d: validation %s: %d; want none", i, k, n)
			}
		}
	}
}
