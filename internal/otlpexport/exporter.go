// Package otlpexport sends ndbench's metrics to an OpenTelemetry (OTLP) endpoint: the
// latency histograms, operation and error counters and engine gauges that /metrics
// offers to Prometheus, pushed over OTLP/HTTP or OTLP/gRPC at a fixed interval.
//
// Like the Prometheus export, it never records per operation: each 1 s interval's HDR
// histograms and counters are added to the export state once, and each export builds
// its data points from that state, so the cost does not grow
// with the rate.
//
// Exports run on the exporter's own loop, one at a time; at the end (Shutdown) the export
// in flight finishes before the final one, so a collector gets every interval the report
// counts, in order.
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

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/stats"
)

// errorLogEvery is how often, at most, failed exports are logged: a collector that is
// down for an hour gives 60 lines, each with the count since the previous one.
const errorLogEvery = time.Minute

// maxExportTime bounds one export, retries included, whatever the interval.
const maxExportTime = 30 * time.Second

// Exporter pushes the metrics of the intervals it observes to an OTLP endpoint. Create it
// with New, subscribe Observe to the stats collector, and call Shutdown at the end.
//
// It runs its own export loop rather than the SDK's periodic reader, whose Shutdown
// cancels the export in flight: at the end of a run that export's data was then lost
// (delta), or, when the collector had already read the request, could be kept after the
// final one (cumulative), and a failure was reported.
type Exporter struct {
	cfg     Config
	clk     clock.Clock
	state   *state
	res     *resource.Resource
	exp     *countingExporter
	timeout time.Duration // of one periodic export, retries included

	// stopping is closed by Shutdown: no periodic export starts after it. cancel cuts
	// off the periodic export in flight, when Shutdown's context ends first. done is
	// closed when the loop has returned.
	stopping chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
	once     sync.Once

	// shutdownWaits, if set (tests), is called when Shutdown starts waiting for the
	// periodic export in flight.
	shutdownWaits func()
}

// New starts an exporter to cfg.Endpoint. Nothing is sent before the first interval; no
// connection is needed to start (an unreachable endpoint shows as failed exports).
// driverStats, if not nil, reads the connected driver's own counters at each export.
func New(ctx context.Context, cfg Config, log *slog.Logger, driverStats func() (string, map[string]int64)) (*Exporter, error) {
	var (
		inner sdkmetric.Exporter
		err   error
	)
	// Each periodic export gets at most the interval (and never more than 30 s), retries
	// included, so a slow collector cannot queue exports up behind each other; the export
	// loop bounds it with its context. The exporters' own timeout is the 30 s ceiling
	// only: as the interval, it also cut the final export short of Shutdown's context.
	timeout := min(cfg.Interval, maxExportTime)
	if cfg.GRPC {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(cfg.hostPort), otlpmetricgrpc.WithHeaders(cfg.Headers),
			otlpmetricgrpc.WithTimeout(maxExportTime),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: timeout})}
		if cfg.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		inner, err = otlpmetricgrpc.New(ctx, opts...)
	} else {
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(cfg.hostPort), otlpmetrichttp.WithURLPath(cfg.path),
			otlpmetrichttp.WithHeaders(cfg.Headers), otlpmetrichttp.WithTimeout(maxExportTime),
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
	clk := clock.Or(cfg.Clock)
	loopCtx, cancel := context.WithCancel(context.Background())
	e := &Exporter{cfg: cfg, clk: clk, state: newState(cfg.Delta, driverStats, clk.Now()), res: res, timeout: timeout,
		exp:      &countingExporter{Exporter: inner, cfg: &cfg, clk: clk, log: log},
		stopping: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go e.run(loopCtx)
	return e, nil
}

// run exports every interval until Shutdown. The exports are at fixed instants, as a
// ticker's; one that overruns its interval skips the instants it passed.
func (e *Exporter) run(ctx context.Context) {
	defer close(e.done)
	iv := e.cfg.Interval
	next := e.clk.Now().Add(iv)
	t := e.clk.NewTimer(iv)
	defer t.Stop()
	for {
		select {
		case <-e.stopping:
			return
		case <-t.C():
		}
		select {
		case <-e.stopping: // both were ready: the final export is Shutdown's
			return
		default:
		}
		ectx, cancel := context.WithTimeout(ctx, e.timeout)
		_ = e.export(ectx) // counted and logged by e.exp
		cancel()
		now := e.clk.Now()
		if next = next.Add(iv); !next.After(now) {
			next = next.Add((now.Sub(next)/iv + 1) * iv)
		}
		t.Reset(next.Sub(now))
	}
}

// export sends what the state holds now. A delta export that fails gives its data back to
// the state, so that the next export carries it (as the exporter's own retries would
// have): the deltas a collector receives add up to the totals unless the last export
// fails, which Result says. The price is that an export the collector took but did not
// answer in time is counted twice.
func (e *Exporter) export(ctx context.Context) error {
	now := e.clk.Now()
	metrics, snaps := e.state.metrics(now, e.cfg.Exponential)
	rm := &metricdata.ResourceMetrics{Resource: e.res, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: scope, Metrics: metrics}}}
	err := e.exp.Export(ctx, rm)
	if err != nil {
		e.state.restore(snaps)
	}
	return err
}

// Observe adds one interval; subscribe it to the stats collector. It returns quickly
// (no I/O): the export runs on its own goroutine.
func (e *Exporter) Observe(iv *stats.Interval) { e.state.observe(iv) }

// Shutdown sends what was observed since the last export and stops. A periodic export in
// flight is let finish first (cancelling it would lose its data or deliver it after the
// final export); both share ctx, and when ctx ends the one in flight is cut off, its data
// kept for the final export. Shutdown returns when the final export is done or ctx ends;
// a failed export is counted (Result), not returned. Later calls do nothing.
func (e *Exporter) Shutdown(ctx context.Context) {
	e.once.Do(func() {
		close(e.stopping)
		if e.shutdownWaits != nil {
			e.shutdownWaits()
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			e.cancel()
			<-e.done
		}
		e.cancel()
		fctx := ctx
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(ctx, e.timeout)
			defer cancel()
		}
		e.exp.final.Store(e.export(fctx) != nil)
		_ = e.exp.Shutdown(fctx) // closes the connection; nothing is left to send
	})
}

// Result is what an exporter did.
type Result struct {
	// Exports is how many exports were attempted, Failed how many of them failed.
	Exports, Failed int64
	// LastError is the latest failure's message (header values removed), "" if none.
	LastError string
	// FinalFailed is true when Shutdown's final export failed: the collector then lacks
	// what happened since the last export that succeeded. An earlier failure costs nothing
	// once a later export succeeds (cumulative totals, delta carried over).
	FinalFailed bool
}

// Result returns the exports attempted and failed so far.
func (e *Exporter) Result() Result { return e.exp.result() }

// String describes the export without secrets, for a summary line.
func (r Result) String() string {
	s := fmt.Sprintf("%d exports, %d failed", r.Exports, r.Failed)
	if r.FinalFailed {
		s += ", the final one too: the collector lacks the data since the last export that succeeded"
	}
	if r.LastError != "" {
		s += " (last error: " + r.LastError + ")"
	}
	return s
}

// countingExporter counts exports and their failures and logs the failures at most
// once per errorLogEvery.
type countingExporter struct {
	sdkmetric.Exporter
	cfg *Config
	clk clock.Clock
	log *slog.Logger

	exports, failed atomic.Int64
	final           atomic.Bool // the final export failed
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
	if now := c.clk.Now(); c.lastLog.IsZero() || now.Sub(c.lastLog) >= errorLogEvery {
		if c.log != nil {
			c.log.Warn("OTLP export failed", "endpoint", c.cfg.Redacted(), "failures", c.sinceLog,
				"total_failures", c.failed.Load(), "err", msg)
		}
		c.lastLog, c.sinceLog = now, 0
	}
	return err
}

func (c *countingExporter) result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Result{Exports: c.exports.Load(), Failed: c.failed.Load(), LastError: c.lastErr, FinalFailed: c.final.Load()}
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
