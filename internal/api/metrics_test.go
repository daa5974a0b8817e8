package api

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ndbench/ndbench/internal/stats"
)

// TestClampedLatenciesInMetrics: latencies above the histograms' 1 h ceiling are counted
// in ndbench_latency_clamped_total, so a dashboard can see that the top percentiles
// understate them.
func TestClampedLatenciesInMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := stats.NewCollector(stats.Config{Shards: 1})
	t0 := time.Now()
	c.ResetAt(t0)
	s := c.Recorder(stats.OpWrite).Shard(0)
	s.Success(90*time.Minute, time.Millisecond)
	s.Success(3*time.Hour, 3*time.Hour)
	c.Recorder(stats.OpRead).Shard(0).Drop(2 * time.Second)
	iv := c.Tick(t0.Add(time.Second))
	m.observe(iv, iv.Summary())
	got := map[string]map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		got[mf.GetName()] = map[string]float64{}
		for _, mt := range mf.GetMetric() {
			if len(mt.GetLabel()) == 1 && mt.GetCounter() != nil {
				got[mf.GetName()][mt.GetLabel()[0].GetValue()] = mt.GetCounter().GetValue()
			}
		}
	}
	if c := got["ndbench_latency_clamped_total"]; c["write"] != 2 || c["read"] != 0 {
		t.Errorf("ndbench_latency_clamped_total = %v, want write 2 and read 0", c)
	}
	// An operation dropped under catchUp=drop is counted, never silent.
	if d := got["ndbench_dropped_total"]; d["read"] != 1 || d["write"] != 0 {
		t.Errorf("ndbench_dropped_total = %v, want read 1 and write 0", d)
	}
}
