package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// discardWriter is a ResponseWriter that keeps only the status and the body's length,
// so the benchmarks below count the handler's allocations, not a client's.
type discardWriter struct {
	h      http.Header
	status int
	n      int64
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkSeriesEndpoint serves GET /api/v1/stats/series from a full series (the last
// hour's 3,600 points, what a node holds after a day; filled past its length, so the ring
// has wrapped) the way the web UI asks for it: whole at every page load, and with since
// at every poll (the newest point only). Run it with -benchmem: the allocations per
// request are what a long-lived server's RSS pays for.
func BenchmarkSeriesEndpoint(b *testing.B) {
	e := newEnv(b)
	const n = 3600 + 600
	t0 := fillSeries(b, e, n)
	last := t0.Add((n - 1) * time.Second) // the second newest point's end
	for _, bc := range []struct{ name, query string }{
		{"whole", ""},
		{"since", "?since=" + url.QueryEscape(last.Format(time.RFC3339Nano))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/v1/stats/series"+bc.query, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			h := e.srv.Handler()
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, req) // the first read encodes; the benchmark measures the steady state
			for b.Loop() {
				w.h, w.n = http.Header{}, 0
				h.ServeHTTP(w, req)
				if w.status != 200 {
					b.Fatalf("status %d", w.status)
				}
			}
			b.ReportMetric(float64(w.n), "body-bytes")
		})
	}
}
