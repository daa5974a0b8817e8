// Package otlptest is an OTLP metrics receiver for tests: it listens on 127.0.0.1 (HTTP
// or gRPC), decodes every export with the official protobuf types and keeps it, with
// the headers it came with.
package otlptest

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	colpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Export is one request received.
type Export struct {
	Request *colpb.ExportMetricsServiceRequest
	// Header has the HTTP headers or gRPC metadata, keys in lower case.
	Header map[string][]string
}

// Receiver keeps what it receives until the test ends.
type Receiver struct {
	// Endpoint is what to give ndbench: http://127.0.0.1:PORT/v1/metrics or
	// grpc://127.0.0.1:PORT.
	Endpoint string

	mu      sync.Mutex
	exports []Export
	hold    *Held
	reject  int
}

// Reject makes the next n exports fail with a permanent error (HTTP 400, gRPC
// InvalidArgument: the sender does not retry them); they are not kept.
func (r *Receiver) Reject(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reject = n
}

// rejects reports whether to refuse this export (Reject).
func (r *Receiver) rejects() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reject == 0 {
		return false
	}
	r.reject--
	return true
}

// Held is an export the receiver holds back (Hold): the sender waits for its answer.
type Held struct {
	arrived, gaveUp, release chan struct{}
}

// Arrived is closed when the held export has come in (it is being held).
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// GaveUp is closed if the sender gave up on the held export (its request was cancelled)
// before Release: the receiver then drops it, as a collector that had not processed it
// yet would.
func (h *Held) GaveUp() <-chan struct{} { return h.gaveUp }

// Release lets the held export be kept and answered.
func (h *Held) Release() { close(h.release) }

// Hold makes the next export that comes in wait, before it is kept, until Release or
// until its sender gives up on it: a slow collector, driven by the test instead of by a
// delay.
func (r *Receiver) Hold() *Held {
	h := &Held{arrived: make(chan struct{}), gaveUp: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold = h
	return h
}

// wait holds an export that came in if Hold asked for it, and reports whether to keep
// it: false when its sender gave up first (ctx ended).
func (r *Receiver) wait(ctx context.Context) bool {
	r.mu.Lock()
	h := r.hold
	r.hold = nil
	r.mu.Unlock()
	if h == nil {
		return true
	}
	close(h.arrived)
	select {
	case <-h.release:
		return true
	case <-ctx.Done():
		close(h.gaveUp)
		return false
	}
}

func (r *Receiver) add(req *colpb.ExportMetricsServiceRequest, h map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports = append(r.exports, Export{Request: req, Header: h})
}

// Exports returns what was received so far, in order.
func (r *Receiver) Exports() []Export {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Export(nil), r.exports...)
}

// StartHTTP starts an OTLP/HTTP (protobuf) receiver, stopped when t ends.
func StartHTTP(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m colpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.rejects() {
			http.Error(w, "rejected by the test", http.StatusBadRequest)
			return
		}
		if !r.wait(req.Context()) {
			http.Error(w, "the sender gave up", http.StatusServiceUnavailable)
			return
		}
		h := map[string][]string{}
		for k, v := range req.Header {
			h[strings.ToLower(k)] = v
		}
		r.add(&m, h)
		out, _ := proto.Marshal(&colpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.Endpoint = "http://" + ln.Addr().String() + "/v1/metrics"
	return r
}

type grpcService struct {
	colpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s grpcService) Export(ctx context.Context, req *colpb.ExportMetricsServiceRequest) (*colpb.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if s.r.rejects() {
		return nil, status.Error(codes.InvalidArgument, "rejected by the test")
	}
	if !s.r.wait(ctx) {
		return nil, status.Error(codes.Canceled, "the sender gave up")
	}
	s.r.add(req, md)
	return &colpb.ExportMetricsServiceResponse{}, nil
}

// StartGRPC starts an OTLP/gRPC receiver (plain text), stopped when t ends.
func StartGRPC(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	colpb.RegisterMetricsServiceServer(srv, grpcService{r: r})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	r.Endpoint = "grpc://" + ln.Addr().String()
	return r
}

// Metric returns the metric called name in e, nil if absent.
func (e Export) Metric(name string) *metricspb.Metric {
	for _, rm := range e.Request.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == name {
					return m
				}
			}
		}
	}
	return nil
}

// Resource returns the resource attributes of e as strings.
func (e Export) Resource() map[string]string {
	out := map[string]string{}
	for _, rm := range e.Request.ResourceMetrics {
		for _, kv := range rm.GetResource().GetAttributes() {
			out[kv.Key] = kv.Value.GetStringValue()
		}
	}
	return out
}

// Has reports whether attrs holds every key=value of want.
func Has(attrs []*commonpb.KeyValue, want map[string]string) bool {
	n := 0
	for _, kv := range attrs {
		if v, ok := want[kv.Key]; ok && kv.Value.GetStringValue() == v {
			n++
		}
	}
	return n == len(want)
}

// SumValue returns the value of the Sum point of name with the attributes want, and
// whether there is one.
func (e Export) SumValue(name string, want map[string]string) (int64, bool) {
	m := e.Metric(name)
	for _, p := range m.GetSum().GetDataPoints() {
		if Has(p.Attributes, want) {
			return p.GetAsInt(), true
		}
	}
	return 0, false
}

// Quantile returns, for op's point of the histogram m (exponential or explicit), its
// count and the bounds of the bucket holding quantile q, at the rank the report's HDR
// histograms take (rank).
func Quantile(m *metricspb.Metric, op string, q float64) (count uint64, lower, upper float64, ok bool) {
	want := map[string]string{"op": op}
	for _, p := range m.GetExponentialHistogram().GetDataPoints() {
		if !Has(p.Attributes, want) {
			continue
		}
		base := math.Pow(2, math.Pow(2, -float64(p.Scale)))
		rank := rank(q, p.Count)
		cum := p.ZeroCount
		if cum >= rank {
			return p.Count, 0, 0, true
		}
		for i, n := range p.Positive.GetBucketCounts() {
			cum += n
			if cum >= rank {
				idx := float64(int(p.Positive.Offset) + i)
				hi := math.Pow(base, idx+1)
				return p.Count, math.Pow(base, idx), hi, true
			}
		}
		return p.Count, math.Inf(1), math.Inf(1), true
	}
	for _, p := range m.GetHistogram().GetDataPoints() {
		if !Has(p.Attributes, want) {
			continue
		}
		rank := rank(q, p.Count)
		var cum uint64
		for i, n := range p.BucketCounts {
			cum += n
			if cum < rank {
				continue
			}
			if i == len(p.ExplicitBounds) {
				return p.Count, p.ExplicitBounds[i-1], math.Inf(1), true
			}
			lo := 0.0
			if i > 0 {
				lo = p.ExplicitBounds[i-1]
			}
			return p.Count, lo, p.ExplicitBounds[i], true
		}
		return p.Count, 0, 0, true
	}
	return 0, 0, 0, false
}

// rank is the sample that quantile q of count falls on as hdrhistogram-go's percentiles
// take it: q × count rounded half up, from 1 to count. Another rounding (ceil) picks the
// next sample where q × count has a fraction under one half, and in a sparse tail that
// sample can be buckets away from the report's.
func rank(q float64, count uint64) uint64 {
	r := uint64(q*float64(count) + 0.5)
	return min(max(r, 1), count)
}

// WithinOneBucket reports whether v is in the bucket (lower, upper] or within one bucket
// width of it: a quantile from the buckets and one from the HDR histogram may differ by
// a bucket when the rank falls at a bucket's edge.
func WithinOneBucket(v, lower, upper float64) bool {
	w := upper - lower
	return v >= lower-w && v <= upper+w
}
