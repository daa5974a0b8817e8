// Package otlpexport sends ndbench's metrics to an OpenTelemetry (OTLP) endpoint: the
// latency histograms, operation and error counters and engine gauges that /metrics
// offers to Prometheus, pushed over OTLP/HTTP or OTLP/gRPC at a fixed interval.
//
// Like the Prometheus export, it never records per operation: each 1 s interval's HDR
// histograms and counters are added to the export state once, and each export builds
// its data points from that state (an sdkmetric.Producer), so the cost does not grow
// with the rate.
package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ndbench/ndbench/internal/stats"
)

// errorLogEvery is how often, at most, failed exports are logged: a collector that is
// down for an hour gives 60 lines, each with the count since the previous one.
const errorLogEvery = time.Minute

// Exporter pushes the metrics of the intervals it observes to an OTLP endpoint. Create it
// with New, subscribe Observe to the stats collector, and call Shutdown at the end.
type Exporter struct {
	cfg      Config
	state    *state
	provider *sdkmetric.MeterProvider
	exp      *countingExporter
}

// New starts an exporter to cfg.Endpoint. Nothing is sent before the first interval; no
// connection is needed to start (an unreachable endpoint shows as failed exports).
// driverStats, if not nil, reads the connected driver's own counters at each export.
func New(ctx context.Context, cfg Config, log *slog.Logger, driverStats func() (string, map[string]int64)) (*Exporter, error) {
	var (
		inner sdkmetric.Exporter
		err   error
	)
	// Each export gets at most the interval (and never more than 30 s), retries included,
	// so a slow collector cannot queue exports up behind each other.
	timeout := min(cfg.Interval, 30*time.Second)
	if cfg.GRPC {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(cfg.hostPort), otlpmetricgrpc.WithHeaders(cfg.Headers),
			otlpmetricgrpc.WithTimeout(timeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: timeout})}
		if cfg.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		inner, err = otlpmetricgrpc.New(ctx, opts...)
	} else {
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(cfg.hostPort), otlpmetrichttp.WithURLPath(cfg.path),
			otlpmetrichttp.WithHeaders(cfg.Headers), otlpmetrichttp.WithTimeout(timeout),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: timeout})}
		if cfg.Insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		inner, err = otlpmetrichttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("start the OTLP exporter to %s: %w", cfg.Redacted(), cfg.redact(err))
	}
	res, err := resource.Merge(resource.Empty(), resource.NewSchemaless(cfg.resourceAttributes()...))
	if err != nil {
		return nil, fmt.Errorf("OTLP resource attributes: %w", err)
	}
	e := &Exporter{cfg: cfg, state: newState(cfg.Delta, driverStats),
		exp: &countingExporter{Exporter: inner, cfg: &cfg, log: log}}
	reader := sdkmetric.NewPeriodicReader(e.exp, sdkmetric.WithInterval(cfg.Interval),
		sdkmetric.WithTimeout(timeout), sdkmetric.WithProducer(producer{e}))
	e.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	return e, nil
}

// Observe adds one interval; subscribe it to the stats collector. It returns quickly
// (no I/O): the export runs on its own goroutine.
func (e *Exporter) Observe(iv *stats.Interval) { e.state.observe(iv) }

// Shutdown sends what was observed since the last export and stops. It returns when
// the last export is done or ctx ends; a failed last export is counted (Result), not
// returned.
func (e *Exporter) Shutdown(ctx context.Context) {
	_ = e.provider.Shutdown(ctx) // export errors are counted by the exporter wrapper
}

// Result is what an exporter did.
type Result struct {
	// Exports is how many exports were attempted, Failed how many of them failed.
	Exports, Failed int64
	// LastError is the latest failure's message (header values removed), "" if none.
	LastError string
}

// Result returns the exports attempted and failed so far.
func (e *Exporter) Result() Result { return e.exp.result() }

// String describes the export without secrets, for a summary line.
func (r Result) String() string {
	s := fmt.Sprintf("%d exports, %d failed", r.Exports, r.Failed)
	if r.LastError != "" {
		s += " (last error: " + r.LastError + ")"
	}
	return s
}

// producer hands the exporter's state to the SDK's periodic reader.
type producer struct{ e *Exporter }

// Produce implements sdkmetric.Producer.
func (p producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	return []metricdata.ScopeMetrics{{Scope: scope, Metrics: p.e.state.metrics(time.Now(), p.e.cfg.Exponential)}}, nil
}

// countingExporter counts exports and their failures and logs the failures at most
// once per errorLogEvery. It returns nil for a failure: the SDK would hand the error to
// the process-wide OpenTelemetry error handler, which logs every one of them.
type countingExporter struct {
	sdkmetric.Exporter
	cfg *Config
	log *slog.Logger

	exports, failed atomic.Int64
	mu              sync.Mutex
	lastErr         string
	lastLog         time.Time
	sinceLog        int64
}

// Export implements sdkmetric.Exporter.
func (c *countingExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	c.exports.Add(1)
	err := c.Exporter.Export(ctx, rm)
	if err == nil {
		return nil
	}
	c.failed.Add(1)
	msg := c.cfg.redact(err).Error()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastErr = msg
	c.sinceLog++
	if now := time.Now(); now.Sub(c.lastLog) >= errorLogEvery {
		if c.log != nil {
			c.log.Warn("OTLP export failed", "endpoint", c.cfg.Redacted(), "failures", c.sinceLog,
				"total_failures", c.failed.Load(), "err", msg)
		}
		c.lastLog, c.sinceLog = now, 0
	}
	return nil
}

func (c *countingExporter) result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Result{Exports: c.exports.Load(), Failed: c.failed.Load(), LastError: c.lastErr}
}

// redact removes every header value from err's message: a header carries a token, and an
// error may quote what was sent.
func (c *Config) redact(err error) error {
	msg := err.Error()
	out := msg
	for _, v := range c.Headers {
		if v != "" {
			out = strings.ReplaceAll(out, v, "REDACTED")
		}
	}
	if out == msg {
		return err
	}
	return errors.New(out)
}
