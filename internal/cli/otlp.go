package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/otlpexport"
)

// otlpShutdownTimeout bounds, at the end of a run or service, the periodic export in
// flight and the last export together: a collector that does not answer delays the exit
// by at most this.
const otlpShutdownTimeout = 5 * time.Second

// otlpFlags are the OpenTelemetry export flags of run and serve.
type otlpFlags struct{ s otlpexport.Settings }

func (f *otlpFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.s.Endpoint, "otlp-endpoint", "", "push metrics over OTLP to this URL (default $"+otlpexport.EnvEndpoint+"): "+
		"http://HOST:4318[/PATH] or https://... for OTLP/HTTP (path default /v1/metrics), grpc://HOST:PORT or any URL on port 4317 for OTLP/gRPC")
	fl.DurationVar(&f.s.Interval, "otlp-interval", otlpexport.DefaultInterval, "how often to push metrics over OTLP")
	fl.StringArrayVar(&f.s.Headers, "otlp-header", nil, "header sent with every OTLP export, e.g. x-api-key=KEY (repeatable; default $"+
		otlpexport.EnvHeaders+"); values are never printed")
	fl.StringVar(&f.s.Temporality, "otlp-temporality", "cumulative", "OTLP counters and histograms: cumulative (totals since the start, what Prometheus-style backends need) or delta (change since the previous export)")
	fl.StringVar(&f.s.Histogram, "otlp-histogram", "explicit", "OTLP latency histograms: explicit (the 28 bounds of the classic Prometheus buckets, what the Grafana dashboard queries) or exponential (about ±4.5% buckets, stored by Prometheus as native histograms)")
	fl.BoolVar(&f.s.Insecure, "otlp-insecure", false, "send OTLP/gRPC in plain text (no TLS); http:// endpoints always are")
	fl.StringArrayVar(&f.s.Attributes, "otlp-attribute", nil, "OTLP resource attribute key=value, e.g. deployment.environment=staging (repeatable; adds to $"+
		otlpexport.EnvAttributes+"; service.name defaults to ndbench, service.instance.id to the node)")
}

// config checks the flags (and the OTEL_* variables of env) before anything connects.
// enabled is false when no endpoint is set. instanceID is the default
// service.instance.id.
func (f *otlpFlags) config(env []string, instanceID string) (cfg otlpexport.Config, enabled bool, err error) {
	s := f.s
	if s.Interval <= 0 {
		// The flag defaults to 10s, so 0 here was asked for; otlpexport would take it
		// as "the default".
		return cfg, false, usageError{fmt.Errorf("--otlp-interval: invalid value %s; allowed: a positive duration, e.g. 10s", s.Interval)}
	}
	s.InstanceID, s.Version = instanceID, toolVersion()
	cfg, enabled, err = otlpexport.Parse(s, func(k string) string { return envValue(env, k) })
	if err != nil {
		return cfg, false, usageError{err}
	}
	return cfg, enabled, nil
}

// startOTLP starts the exporter and feeds it inst's intervals.
func startOTLP(ctx context.Context, cfg otlpexport.Config, inst *node.Node, log *slog.Logger) (*otlpExport, error) {
	exp, err := otlpexport.New(ctx, cfg, log, func() (string, map[string]int64) {
		st := inst.Status()
		return st.Driver, st.DriverStats
	})
	if err != nil {
		return nil, err
	}
	unsub := inst.Collector().Subscribe(exp.Observe)
	return &otlpExport{exp: exp, unsub: unsub, endpoint: cfg.Redacted()}, nil
}

// otlpExport is a running exporter.
type otlpExport struct {
	exp      *otlpexport.Exporter
	unsub    func()
	endpoint string
	stopped  bool
}

// stop sends the last data, waiting at most otlpShutdownTimeout, and returns what was
// done, e.g. "OTLP export to http://127.0.0.1:4318/v1/metrics: 7 exports, 0 failed" (which
// says so when the final export failed), and whether any export failed. Call it after the last interval (node.Finish).
// A nil or stopped export returns "".
func (o *otlpExport) stop() (summary string, failed bool) {
	if o == nil || o.stopped {
		return "", false
	}
	o.stopped = true
	o.unsub()
	ctx, cancel := context.WithTimeout(context.Background(), otlpShutdownTimeout)
	defer cancel()
	o.exp.Shutdown(ctx)
	r := o.exp.Result()
	return fmt.Sprintf("OTLP export to %s: %s", o.endpoint, r), r.Failed > 0
}
