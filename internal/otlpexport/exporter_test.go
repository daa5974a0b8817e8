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

	"github.com/ndbench/ndbench/internal/clock"
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

// patience bounds the real time a test waits for the exporter's goroutine to reach its
// next step: only a stuck exporter takes it, so it judges nothing about speed.
const patience = 30 * time.Second

// simExporter is an exporter on a simulated clock: the test decides when each periodic
// export starts, so no export depends on how fast the machine is.
type simExporter struct {
	*Exporter
	t   *testing.T
	sim *clock.Sim
}

func startSim(t *testing.T, s Settings, log *slog.Logger) *simExporter {
	t.Helper()
	cfg := mustParse(t, s)
	sim := clock.NewSim(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	cfg.Clock = sim
	exp, err := New(context.Background(), cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a test that failed before its Shutdown; a second call does nothing
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		exp.Shutdown(ctx)
	})
	return &simExporter{Exporter: exp, t: t, sim: sim}
}

// begin starts the next periodic export, which runs on the exporter's goroutine.
func (s *simExporter) begin() {
	s.t.Helper()
	if !s.sim.WaitTimers(1, patience) {
		s.t.Fatal("the exporter does not wait for its next export")
	}
	next, _ := s.sim.Next()
	s.sim.Set(next)
}

// tick makes one periodic export and returns when it is done (the exporter waits for the
// next one again).
func (s *simExporter) tick() {
	s.t.Helper()
	s.begin()
	if !s.sim.WaitTimers(1, patience) {
		s.t.Fatal("the periodic export did not end")
	}
}

// shutdown calls Shutdown with a context that ends in 10 s (no export here takes long).
func (s *simExporter) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

var readSuccess = map[string]string{"op": "read", "result": "success"}

// readsExported returns the read successes of each export the receiver kept, in order.
func readsExported(rcv *otlptest.Receiver) []int64 {
	var out []int64
	for _, e := range rcv.Exports() {
		n, _ := e.SumValue("ndbench_ops_total", readSuccess)
		out = append(out, n)
	}
	return out
}

// TestTemporality: cumulative exports the totals since the start at every export; delta
// exports what is new since the previous one, so the exports add up to the total.
func TestTemporality(t *testing.T) {
	for _, temp := range []string{"cumulative", "delta"} {
		t.Run(temp, func(t *testing.T) {
			rcv := otlptest.StartHTTP(t)
			exp := startSim(t, Settings{Endpoint: rcv.Endpoint, Interval: 10 * time.Second, Temporality: temp, Histogram: "exponential"}, nil)
			c := stats.NewCollector(stats.Config{Shards: 1})
			record(c, spread(100, time.Millisecond, 2*time.Millisecond, 2), exp.Observe)
			exp.tick()
			record(c, spread(50, time.Millisecond, 2*time.Millisecond, 3), exp.Observe)
			exp.tick()
			exp.tick() // nothing new
			exp.shutdown()

			wantTemp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
			want := []int64{100, 150, 150, 150}
			if temp == "delta" {
				wantTemp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
				want = []int64{100, 50, 0, 0}
			}
			if got := readsExported(rcv); !slices.Equal(got, want) {
				t.Errorf("reads of the exports %v, want %v", got, want)
			}
			for _, e := range rcv.Exports() {
				if got := e.Metric("ndbench_response_seconds").GetExponentialHistogram().GetAggregationTemporality(); got != wantTemp {
					t.Errorf("histogram temporality %v, want %v", got, wantTemp)
				}
			}
		})
	}
}

// TestInFlightExportFinishesAtShutdown: a periodic export that the collector has not
// answered yet when Shutdown begins is let finish, then the final export sends the rest:
// the collector gets every operation once, in order, and nothing failed. (The SDK's
// periodic reader cancelled it: the delta collector lost its 100 reads, and a failure
// was reported.)
func TestInFlightExportFinishesAtShutdown(t *testing.T) {
	for _, tr := range []struct {
		name  string
		start func(testing.TB) *otlptest.Receiver
	}{{"http", otlptest.StartHTTP}, {"grpc", otlptest.StartGRPC}} {
		for _, temp := range []string{"cumulative", "delta"} {
			t.Run(tr.name+" "+temp, func(t *testing.T) {
				rcv := tr.start(t)
				exp := startSim(t, Settings{Endpoint: rcv.Endpoint, Insecure: tr.name == "grpc", Interval: time.Hour, Temporality: temp}, nil)
				waiting := make(chan struct{})
				exp.shutdownWaits = func() { close(waiting) }
				c := stats.NewCollector(stats.Config{Shards: 1})
				record(c, spread(100, time.Millisecond, 2*time.Millisecond, 2), exp.Observe)
				held := rcv.Hold()
				exp.begin()
				awaitOrFatal(t, held.Arrived(), "the periodic export never reached the collector")
				record(c, spread(50, time.Millisecond, 2*time.Millisecond, 3), exp.Observe)
				done := make(chan struct{})
				go func() {
					defer close(done)
					exp.shutdown()
				}()
				select {
				case <-held.GaveUp():
					t.Errorf("the export in flight was cancelled when Shutdown began")
				case <-waiting:
					held.Release()
				case <-time.After(patience):
					t.Fatal("Shutdown never began")
				}
				awaitOrFatal(t, done, "Shutdown did not return")

				want := []int64{100, 150}
				if temp == "delta" {
					want = []int64{100, 50}
				}
				if got := readsExported(rcv); !slices.Equal(got, want) {
					t.Errorf("reads of the exports the collector kept %v, want %v", got, want)
				}
				if r := exp.Result(); r.Exports != 2 || r.Failed != 0 || r.FinalFailed {
					t.Errorf("result %q, want 2 exports and no failure", r)
				}
			})
		}
	}
}

// TestShutdownCutsOffInFlightExport: a collector that holds the periodic export until
// Shutdown's context ends delays Shutdown no longer than that, and the result says that
// the final export failed (the collector lacks the end).
func TestShutdownCutsOffInFlightExport(t *testing.T) {
	rcv := otlptest.StartHTTP(t)
	exp := startSim(t, Settings{Endpoint: rcv.Endpoint, Interval: time.Hour, Temporality: "delta"}, nil)
	waiting := make(chan struct{})
	exp.shutdownWaits = func() { close(waiting) }
	c := stats.NewCollector(stats.Config{Shards: 1})
	record(c, spread(100, time.Millisecond, 2*time.Millisecond, 2), exp.Observe)
	held := rcv.Hold()
	exp.begin()
	awaitOrFatal(t, held.Arrived(), "the periodic export never reached the collector")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		exp.Shutdown(ctx)
	}()
	awaitOrFatal(t, waiting, "Shutdown never began")
	cancel()
	awaitOrFatal(t, held.GaveUp(), "the export in flight was not cut off when Shutdown's context ended")
	awaitOrFatal(t, done, "Shutdown did not return when its context ended")
	r := exp.Result()
	if r.Exports != 2 || r.Failed != 2 || !r.FinalFailed {
		t.Errorf("result %+v, want both exports failed, the final one included", r)
	}
	if !strings.Contains(r.String(), "the final one too: the collector lacks") {
		t.Errorf("result %q does not say the collector lacks the end", r)
	}
	if n := len(rcv.Exports()); n != 0 {
		t.Errorf("the collector kept %d exports, want none", n)
	}
}

// TestFailedExportCaughtUp: after an export the collector rejects, the next one carries
// its data: for delta too, the exports add up to what was recorded.
func TestFailedExportCaughtUp(t *testing.T) {
	for _, temp := range []string{"cumulative", "delta"} {
		t.Run(temp, func(t *testing.T) {
			rcv := otlptest.StartGRPC(t)
			exp := startSim(t, Settings{Endpoint: rcv.Endpoint, Insecure: true, Interval: 10 * time.Second, Temporality: temp}, nil)
			c := stats.NewCollector(stats.Config{Shards: 1})
			record(c, spread(100, time.Millisecond, 2*time.Millisecond, 2), exp.Observe)
			rcv.Reject(1)
			exp.tick()
			record(c, spread(50, time.Millisecond, 2*time.Millisecond, 3), exp.Observe)
			exp.tick()
			exp.shutdown()
			want := []int64{150, 150}
			if temp == "delta" {
				want = []int64{150, 0}
			}
			if got := readsExported(rcv); !slices.Equal(got, want) {
				t.Errorf("reads of the exports the collector kept %v, want %v", got, want)
			}
			e := rcv.Exports()[0]
			if count, _, _, ok := otlptest.Quantile(e.Metric("ndbench_response_seconds"), "read", 0.5); !ok || count != 150 {
				t.Errorf("the export after the rejected one has a read histogram of %d (present %v), want 150", count, ok)
			}
			if r := exp.Result(); r.Exports != 3 || r.Failed != 1 || r.FinalFailed || strings.Contains(r.String(), "final") {
				t.Errorf("result %q, want 1 of 3 exports failed, not the final one", r)
			}
		})
	}
}

// awaitOrFatal waits for ch to close; patience only catches a stuck exporter.
func awaitOrFatal(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(patience):
		t.Fatal(msg)
	}
}

// TestCollectorDown: failed exports are counted, logged once a minute at most (of the
// exporter's clock) and without the header values, and the result says that the final
// export failed.
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
		// Connections are accepted and never answered: each export ends at its timeout.
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
	exp := startSim(t, Settings{Endpoint: scheme + "://" + addr, Insecure: scheme == "grpc", Interval: 50 * time.Millisecond,
		Headers: []string{"authorization=Bearer top-secret-token"}}, log)
	c := stats.NewCollector(stats.Config{Shards: 1})
	record(c, spread(10, time.Millisecond, 2*time.Millisecond, 4), exp.Observe)
	for range 3 {
		exp.tick()
	}
	if n := strings.Count(logs.String(), "OTLP export failed"); n != 1 {
		t.Errorf("%d log lines for 3 failures in 150 ms, want 1:\n%s", n, logs.String())
	}
	exp.sim.Jump(time.Minute)
	exp.tick()
	if n := strings.Count(logs.String(), "OTLP export failed"); n != 2 {
		t.Errorf("%d log lines after a minute more, want 2:\n%s", n, logs.String())
	}
	// The final export waits for an answer as long as Shutdown's context lasts: here one
	// that never comes, so the context is short.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	exp.Shutdown(ctx)
	r := exp.Result()
	if r.Exports != 5 || r.Failed != r.Exports || !r.FinalFailed {
		t.Errorf("result %+v: want 5 exports (4 periodic, the final), every one failed", r)
	}
	out := logs.String()
	if strings.Contains(out, "top-secret-token") || strings.Contains(r.String(), "top-secret-token") {
		t.Errorf("a header value was printed:\n%s\n%s", out, r)
	}
	if !strings.Contains(r.String(), "5 failed, the final one too") || r.LastError == "" {
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
