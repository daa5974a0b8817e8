//go:build integration

package cluster_test

import (
	"math"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkFleetStartSkew measures how far each node's first operation is from the common
// start instant, over repeated fleet starts of 5 nodes on one machine (one clock, so the
// skew read from the nodes' own first-op times is the physical one). The bar: p99 ≤ 5 ms.
//
//	go test -tags integration -run '^$' -bench FleetStartSkew -benchtime 20x ./internal/cluster/
func BenchmarkFleetStartSkew(b *testing.B) {
	f := startFleet(b, 5, nil, nil)
	call(b, http.MethodPatch, f.url("/api/v1/fleet/config"), map[string]any{"values": map[string]any{
		"workload.readRate": 5000, "workload.writeEnabled": false, "workload.numKeys": 1000}}, nil)
	call(b, http.MethodPost, f.url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	var skews []float64 // ms, every node of every start
	b.ResetTimer()
	for range b.N {
		call(b, http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
		var fm struct {
			StartAt time.Time `json:"startAt"`
		}
		call(b, http.MethodGet, f.url("/api/v1/fleet/members"), nil, &fm)
		time.Sleep(time.Until(fm.StartAt) + 300*time.Millisecond)
		for _, s := range f.nodes {
			var st struct {
				FirstOps map[string]time.Time `json:"firstOps"`
			}
			call(b, http.MethodGet, nodeURL(s, "/api/v1/status"), nil, &st)
			first, ok := st.FirstOps["read"]
			if !ok {
				b.Fatalf("node %s has no first read 300 ms after the start", s.Addr())
			}
			skews = append(skews, float64(first.Sub(fm.StartAt))/float64(time.Millisecond))
		}
		call(b, http.MethodPost, f.url("/api/v1/load/stop"), nil, nil)
	}
	b.StopTimer()
	abs := make([]float64, len(skews))
	for i, s := range skews {
		abs[i] = math.Abs(s)
	}
	slices.Sort(abs)
	q := func(p float64) float64 { return abs[min(len(abs)-1, int(math.Ceil(p*float64(len(abs))))-1)] }
	b.ReportMetric(q(0.5), "skew-p50-ms")
	b.ReportMetric(q(0.99), "skew-p99-ms")
	b.ReportMetric(abs[len(abs)-1], "skew-max-ms")
	b.ReportMetric(float64(len(abs)), "samples")
}

// BenchmarkFleetRateSplit runs 5 nodes at 20,000 reads/s fleet-wide for 60 s and reports
// the worst node's and the fleet's error against the assigned rate. The bar: ±1%.
//
//	go test -tags integration -run '^$' -bench FleetRateSplit -benchtime 1x -timeout 10m ./internal/cluster/
func BenchmarkFleetRateSplit(b *testing.B) {
	const total, nodes, run = 20000.0, 5, 60 * time.Second
	f := startFleet(b, nodes, nil, nil)
	call(b, http.MethodPatch, f.url("/api/v1/fleet/config"), map[string]any{"values": map[string]any{
		"workload.readRate": total, "workload.readers": 8, "workload.writeEnabled": false, "workload.numKeys": 10000}}, nil)
	call(b, http.MethodPost, f.url("/api/v1/driver/init"), map[string]any{"driver": "memory"}, nil)
	for range b.N {
		call(b, http.MethodPost, f.url("/api/v1/stats/reset"), nil, nil)
		call(b, http.MethodPost, f.url("/api/v1/load/start"), map[string]any{"ops": []string{"read"}}, nil)
		var fm struct {
			StartAt time.Time `json:"startAt"`
		}
		call(b, http.MethodGet, f.url("/api/v1/fleet/members"), nil, &fm)
		time.Sleep(time.Until(fm.StartAt.Add(run)))
		call(b, http.MethodPost, f.url("/api/v1/load/stop"), nil, nil)
		ran := time.Since(fm.StartAt).Seconds()
		var sum, worst float64
		for _, s := range f.nodes {
			var st statsBody
			call(b, http.MethodGet, nodeURL(s, "/api/v1/stats"), nil, &st)
			n := float64(st.Cumulative.Ops["read"].Count)
			sum += n
			worst = max(worst, math.Abs(n/ran-total/nodes)/(total/nodes))
		}
		b.ReportMetric(100*worst, "worst-node-err-%")
		b.ReportMetric(100*math.Abs(sum/ran-total)/total, "fleet-err-%")
		b.ReportMetric(ran, "seconds")
	}
}
