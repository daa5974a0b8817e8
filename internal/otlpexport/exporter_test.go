package otlpexport

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ndbench/ndbench/internal/otlpexport/otlptest"
	"github.com/ndbench/ndbench/internal/stats"
)

// spread returns n latencies spread log-uniformly over lo .. hi.
func spread(n int, lo, hi time.Duration, seed uint64) []time.Duration {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(lo) * math.Pow(float64(hi)/float64(lo), r.Float64()))
	}
	return out
}

// record records lat as successful reads (service time half the response time) and
// ticks; the interval is handed to observe.
func record(c *stats.Collector, lat []time.Duration, observe func(*stats.Interval)) {
	s := c.Recorder(stats.OpRead).Shard(0)
	for _, d := range lat {
		s.Success(d, d/2)
	}
	observe(c.Tick(time.Now()))
}

func mustParse(t *testing.T, s Settings) Config {
	t.Helper()
	cfg, ok, err := Parse(s, func(string) string { return "" })
	if err != nil || !ok {
		t.Fatalf("Parse(%+v) = %v, %v", s, ok, err)
	}
	return cfg
}

// syncBuffer is a log destination the exporter's goroutine and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExportReachesReceiver: over both transports, what a receiver decodes has the
// counts and the histogram of what was recorded, the resource, and the headers.
func TestExportReachesReceiver(t *testing.T) {
	for _, tc := range []struct {
		name     string
		start    func(testing.TB) *otlptest.Receiver
		explicit bool
	}{
		{"http exponential", otlptest.StartHTTP, false},
		{"http explicit", otlptest.StartHTTP, true},
		{"grpc exponential", otlptest.StartGRPC, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tc.start(t)
			hist := "exponential"
			if tc.explicit {
				hist = "explicit"
			}
			cfg := mustParse(t, Settings{Endpoint: rcv.Endpoint, Insecure: true, Interval: time.Hour, Histogram: hist,
				Headers: []string{"x-api-key=s3cret-value"}, Attributes: []string{"deployment.environment=test"}, InstanceID: "node-7"})
			exp, err := New(context.Background(), cfg, nil, func() (string, map[string]int64) { return "memory", map[string]int64{"hits": 3} })
			if err != nil {
				t.Fatal(err)
			}
			c := stats.NewCollector(stats.Config{Shards: 1})
			lat := spread(5000, 100*time.Microsecond, 100*time.Millisecond, 1)
			record(c, lat, exp.Observe)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			exp.Shutdown(ctx)
			if r := exp.Result(); r.Exports != 1 || r.Failed != 0 {
				t.Fatalf("result %+v, want 1 export and no failure", r)
			}
			exports := rcv.Exports()
			if len(exports) != 1 {
				t.Fatalf("receiver got %d exports, want 1", len(exports))
			}
			e := exports[0]
			if got := e.Header["x-api-key"]; len(got) != 1 || got[0] != "s3cret-value" {
				t.Errorf("header x-api-key = %q, want the value given", got)
			}
			res := e.Resource()
			for k, v := range map[string]string{"service.name": "ndbench", "service.instance.id": "node-7", "deployment.environment": "test"} {
				if res[k] != v {
					t.Errorf("resource %s = %q, want %q (all: %v)", k, res[k], v, res)
				}
			}
			if n, ok := e.SumValue("ndbench_ops_total", map[string]string{"op": "read", "result": "success"}); !ok || n != int64(len(lat)) {
				t.Errorf("ndbench_ops_total{op=read,result=success} = %d (present %v), want %d", n, ok, len(lat))
			}
			if n, ok := e.SumValue("ndbench_ops_total", map[string]string{"op": "write", "result": "success"}); !ok || n != 0 {
				t.Errorf("ndbench_ops_total{op=write} = %d (present %v), want a zero series", n, ok)
			}
			if m := e.Metric("ndbench_ops_total"); !m.GetSum().IsMonotonic ||
				m.GetSum().AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
				t.Errorf("ndbench_ops_total is not a cumulative monotonic sum: %v", m)
			}
			if m := e.Metric("ndbench_driver_stat"); len(m.GetGauge().GetDataPoints()) != 1 || m.GetGauge().DataPoints[0].GetAsInt() != 3 {
				t.Errorf("ndbench_driver_stat = %v, want hits=3", m)
			}
			want := exactQuantile(lat, 0.99)
			for _, name := range []string{"ndbench_response_seconds", "ndbench_service_seconds"} {
				q := want
				if name == "ndbench_service_seconds" {
					q = want / 2
				}
				m := e.Metric(name)
				if m.GetUnit() != "s" {
					t.Errorf("%s unit %q, want s", name, m.GetUnit())
				}
				count, lo, hi, ok := otlptest.Quantile(m, "read", 0.99)
				if !ok {
					t.Fatalf("%s has no point for read: %v", name, m)
				}
				if count != uint64(len(lat)) {
					t.Errorf("%s count = %d, want %d", name, count, len(lat))
				}
				if !otlptest.WithinOneBucket(q, lo, hi) {
					t.Errorf("%s p99 from buckets in (%.6f, %.6f] s, exact %.6f s: more than one bucket apart", name, lo, hi, q)
				}
			}
		})
	}
}

func exactQuantile(lat []time.Duration, q float64) float64 {
	s := make([]float64, len(lat))
	for i, d := range lat {
		s[i] = d.Seconds()
	}
	sortFloats(s)
	return s[int(math.Ceil(q*float64(len(s))))-1]
}

func sortFloats(s []float64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestTemporality: cumulative exports the totals since the start at every export; delta
// exports what is new since the previous one, so the exports add up to the total.
func TestTemporality(t *testing.T) {
	for _, temp := range []string{"cumulative", "delta"} {
		t.Run(temp, func(t *testing.T) {
			rcv := otlptest.StartHTTP(t)
			cfg := mustParse(t, Settings{Endpoint: rcv.Endpoint, Interval: 100 * time.Millisecond, Temporality: temp, Histogram: "exponential"})
			exp, err := New(context.Background(), cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := stats.NewCollector(stats.Config{Shards: 1})
			record(c, spread(100, time.Millisecond, 2*time.Millisecond, 2), exp.Observe)
			sel := map[string]string{"op": "read", "result": "success"}
			waitExport(t, rcv, func(e otlptest.Export) bool { n, _ := e.SumValue("ndbench_ops_total", sel); return n == 100 })
			record(c, spread(50, time.Millisecond, 2*time.Millisecond, 3), exp.Observe)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			exp.Shutdown(ctx)

			var values []int64
			var total int64
			for _, e := range rcv.Exports() {
				n, _ := e.SumValue("ndbench_ops_total", sel)
				values = append(values, n)
				total += n
				wantTemp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
				if temp == "delta" {
					wantTemp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
				}
				if got := e.Metric("ndbench_response_seconds").GetExponentialHistogram().GetAggregationTemporality(); got != wantTemp {
					t.Errorf("histogram temporality %v, want %v", got, wantTemp)
				}
			}
			// The 50 may land in a periodic export or in the last one (Shutdown's).
			last := values[len(values)-1]
			switch temp {
			case "cumulative":
				if last != 150 || !slices.IsSorted(values) || !slices.Contains(values, 100) {
					t.Errorf("cumulative exports %v: want them rising, 100 after the first interval, 150 at the end", values)
				}
			case "delta":
				if total != 150 || !slices.Contains(values, 100) || !slices.Contains(values, 50) {
					t.Errorf("delta exports %v: want each interval once (100, then 50 later), adding up to 150", values)
				}
			}
		})
	}
}

// waitExport waits until the receiver has an export for which ok holds.
func waitExport(t *testing.T, rcv *otlptest.Receiver, ok func(otlptest.Export) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.ContainsFunc(rcv.Exports(), ok) {
		if time.Now().After(deadline) {
			t.Fatalf("no such export in 5 s (%d exports)", len(rcv.Exports()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCollectorDown: failed exports are counted, logged once a minute at most and
// without the header values, and the shutdown returns in time.
func TestCollectorDown(t *testing.T) {
	for _, tc := range []struct {
		name, scheme string
		hang         bool
	}{{"http refused", "http", false}, {"grpc refused", "grpc", false}, {"http never answers", "http", true}} {
		t.Run(tc.name, func(t *testing.T) { testCollectorDown(t, tc.scheme, tc.hang) })
	}
}

func testCollectorDown(t *testing.T, scheme string, hang bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if hang {
		// Connections are accepted and never answered.
		t.Cleanup(func() { ln.Close() })
		go func() {
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c)
			}
		}()
	} else {
		ln.Close() // nothing listens there now: connections are refused
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cfg := mustParse(t, Settings{Endpoint: scheme + "://" + addr, Insecure: scheme == "grpc", Interval: 50 * time.Millisecond,
		Headers: []string{"authorization=Bearer top-secret-token"}})
	exp, err := New(context.Background(), cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := stats.NewCollector(stats.Config{Shards: 1})
	record(c, spread(10, time.Millisecond, 2*time.Millisecond, 4), exp.Observe)
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	exp.Shutdown(ctx)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %s with the collector down", d)
	}
	r := exp.Result()
	if r.Failed < 2 || r.Failed != r.Exports {
		t.Errorf("result %+v: want every export (at least 2 in 0.5 s) failed", r)
	}
	out := logs.String()
	if n := strings.Count(out, "OTLP export failed"); n != 1 {
		t.Errorf("%d log lines for %d failures in 0.5 s, want 1:\n%s", n, r.Failed, out)
	}
	if strings.Contains(out, "top-secret-token") || strings.Contains(r.String(), "top-secret-token") {
		t.Errorf("a header value was printed:\n%s\n%s", out, r)
	}
	if !strings.Contains(r.String(), "failed") || r.LastError == "" {
		t.Errorf("result %q does not say why", r)
	}
}

// TestHTTPSWithCertificateFromEnv: an https:// endpoint is TLS, verified against the CA
// in OTEL_EXPORTER_OTLP_CERTIFICATE (read by the SDK, as docs/otlp.md says).
func TestHTTPSWithCertificateFromEnv(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req colpb.ExportMetricsServiceRequest
		if proto.Unmarshal(body, &req) == nil && r.URL.Path == "/v1/metrics" {
			got.Add(1)
		}
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	cfg := mustParse(t, Settings{Endpoint: srv.URL, Interval: time.Hour})
	if cfg.Insecure {
		t.Fatalf("an https:// endpoint parsed as insecure")
	}
	exp, err := New(context.Background(), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp.Shutdown(ctx)
	if r := exp.Result(); r.Failed != 0 || got.Load() != 1 {
		t.Errorf("result %+v, %d exports received; want 1 over TLS", r, got.Load())
	}
}
