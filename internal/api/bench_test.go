package api

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkStatsEndpoint measures GET /api/v1/stats while the engine runs 100,000 reads/s
// on the memory driver, the way a dashboard polls a busy node. It reports the endpoint's
// p50 and p99 latency; the bar is p99 < 5 ms.
func BenchmarkStatsEndpoint(b *testing.B) {
	e := newEnv(b, "workload.readRate=100000", "workload.writeEnabled=false", "workload.readers=16")
	if st, body := e.call("POST", "/api/v1/driver/init", map[string]any{"driver": "memory"}); st != 200 {
		b.Fatalf("init: %d %s", st, body)
	}
	if st, body := e.call("POST", "/api/v1/load/start", nil); st != 200 {
		b.Fatalf("start: %d %s", st, body)
	}
	time.Sleep(1500 * time.Millisecond) // a full interval and cumulative histograms to read
	client := e.ts.Client()
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	lat := make([]time.Duration, 0, 4096)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	rate := e.stats().Latest.Ops["read"].Rate
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(rate, "engine-reads/s")
}
