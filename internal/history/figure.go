package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// Figure names one figure of a run: a series (an op class such as "read", a class's
// operation such as "read.get", or "client") and a metric of it ("p99", "rate").
type Figure struct {
	Series string
	Metric string
}

// String renders f as FIGURE arguments spell it: "read.p99".
func (f Figure) String() string { return f.Series + "." + f.Metric }

// metric is one metric history records.
type metric struct {
	name string
	// worseUp: a higher value is a regression (latency, errors); else a lower one is
	// (throughput, efficiency).
	worseUp bool
	unit    string
	client  bool // a figure of the "client" series
}

// metrics are the metrics recorded, in display order. Latencies are response times
// (from the intended start) in milliseconds, as the run's summary prints them; the names
// are those `ndbench compare` takes, errors too: the error ratio, failed ops per
// attempted op (failed is their count).
var metrics = []metric{
	{name: "rate", unit: "ops/s"},
	{name: "count", unit: "ops"},
	{name: "errors", worseUp: true, unit: "ratio"},
	{name: "failed", worseUp: true, unit: "ops"},
	{name: "p50", worseUp: true, unit: "ms"},
	{name: "p95", worseUp: true, unit: "ms"},
	{name: "p99", worseUp: true, unit: "ms"},
	{name: "p99.5", worseUp: true, unit: "ms"},
	{name: "p99.9", worseUp: true, unit: "ms"},
	{name: "max", worseUp: true, unit: "ms"},
	{name: "mean", worseUp: true, unit: "ms"},
	// An auto-tune search's result: the highest rate confirmed within the SLA, in total
	// (series "autotune") and per tuned class.
	{name: "capacity", unit: "ops/s"},
	{name: "opsPerCPUSecond", unit: "ops per client CPU-s", client: true},
	{name: "cpuCores", worseUp: true, unit: "cores", client: true},
	{name: "maxRSSMB", worseUp: true, unit: "MB", client: true},
}

// metricAliases are other spellings users type.
var metricAliases = map[string]string{
	"throughput": "rate", "p999": "p99.9", "p995": "p99.5", "errorRatio": "errors", "error-ratio": "errors",
	"ops/s per client CPU-s": "opsPerCPUSecond",
}

// ClientSeries is the series of the load generator's own figures.
const ClientSeries = "client"

func lookupMetric(name string) (metric, bool) {
	if a, ok := metricAliases[name]; ok {
		name = a
	}
	for _, m := range metrics {
		if m.name == name {
			return m, true
		}
	}
	return metric{}, false
}

// MetricNames lists the metric names a figure may end with.
func MetricNames() []string {
	out := make([]string, len(metrics))
	for i, m := range metrics {
		out[i] = m.name
	}
	return out
}

// ParseFigure parses SERIES.METRIC ("read.p99", "read.get.p99.9", "client.opsPerCPUSecond",
// or "ops/s per client CPU-s" for the last). The metric is matched as a known suffix,
// since series and metrics both may contain dots.
func ParseFigure(s string) (Figure, error) {
	if a, ok := metricAliases[s]; ok {
		if m, _ := lookupMetric(a); m.client {
			return Figure{Series: ClientSeries, Metric: m.name}, nil
		}
	}
	// Longest metric first, so "p99.9" wins over a series ending in ".p99" and "9".
	names := append(MetricNames(), aliasNames()...)
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		if series, ok := strings.CutSuffix(s, "."+n); ok && series != "" {
			m, _ := lookupMetric(n)
			if m.client != (series == ClientSeries) {
				continue
			}
			return Figure{Series: series, Metric: m.name}, nil
		}
	}
	return Figure{}, fmt.Errorf("figure %q: want SERIES.METRIC, e.g. read.p99; metrics: %s (client.%s for the client's)",
		s, strings.Join(opMetricNames(), ", "), strings.Join(clientMetricNames(), ", client."))
}

func aliasNames() []string {
	out := make([]string, 0, len(metricAliases))
	for a := range metricAliases {
		out = append(out, a)
	}
	return out
}

func opMetricNames() []string {
	var out []string
	for _, m := range metrics {
		if !m.client {
			out = append(out, m.name)
		}
	}
	return out
}

func clientMetricNames() []string {
	var out []string
	for _, m := range metrics {
		if m.client {
			out = append(out, m.name)
		}
	}
	return out
}

// WorseUp reports whether a higher value of f is a regression (latency, errors, client
// cost) rather than a lower one (throughput, efficiency).
func (f Figure) WorseUp() bool {
	m, _ := lookupMetric(f.Metric)
	return m.worseUp
}

// Unit is f's unit ("ms", "ops/s").
func (f Figure) Unit() string {
	m, _ := lookupMetric(f.Metric)
	return m.unit
}

// FromReport builds a run record from a JSON report (its decoded form and its bytes):
// the figures of every op class and operation that ran, the client's figures, and the
// report whole. Host, tags, kind and source are the caller's.
func FromReport(r *report.Report, raw []byte) (*Run, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("record report: not JSON: %w", err)
	}
	run := &Run{
		Started: r.Started.UTC(), Ended: r.Ended.UTC(), Seconds: r.Seconds,
		Driver: r.Driver.Name, Version: r.Tool.Version, Workload: WorkloadOf(r),
		Figures: map[Figure]float64{}, Report: compact.Bytes(),
	}
	for name, s := range r.Ops {
		if s.Count == 0 && s.Errors == 0 {
			continue // a class that did not run has no figures to trend
		}
		addOp(run.Figures, name, s)
	}
	if err := addCapacity(run.Figures, r.Autotune); err != nil {
		return nil, err
	}
	c := r.Client
	run.Figures[Figure{ClientSeries, "opsPerCPUSecond"}] = c.OpsPerCPUSecond
	run.Figures[Figure{ClientSeries, "cpuCores"}] = c.CPUCores
	run.Figures[Figure{ClientSeries, "maxRSSMB"}] = float64(c.MaxRSSBytes) / (1 << 20)
	return run, nil
}

// AutotuneSeries is the series of an auto-tune search's total capacity.
const AutotuneSeries = "autotune"

// addCapacity adds an auto-tune result's capacity (total and per class) when the search
// found one: a search that found none has no capacity to trend (its report says why).
func addCapacity(figs map[Figure]float64, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	var res struct {
		Capacity float64            `json:"capacity"`
		PerClass map[string]float64 `json:"perClass"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("record report: its autotune result: %w", err)
	}
	if res.Capacity <= 0 {
		return nil
	}
	figs[Figure{AutotuneSeries, "capacity"}] = res.Capacity
	for class, v := range res.PerClass {
		figs[Figure{class, "capacity"}] = v
	}
	return nil
}

// WorkloadOf names the workload preset a report's configuration came from: a built-in
// preset's name, or a preset file's base name without extension; "" when every key
// was given on its own.
func WorkloadOf(r *report.Report) string {
	for _, e := range r.Config {
		if name, ok := strings.CutPrefix(e.Source, "preset file "); ok {
			base := filepath.Base(name)
			return strings.TrimSuffix(base, filepath.Ext(base))
		}
		if name, ok := strings.CutPrefix(e.Source, "preset "); ok {
			return name
		}
	}
	return ""
}

func addOp(figs map[Figure]float64, name string, s stats.OpSummary) {
	set := func(m string, v float64) { figs[Figure{name, m}] = v }
	l := s.ResponseTime
	set("rate", s.Rate)
	set("count", float64(s.Count))
	set("failed", float64(s.Errors))
	ratio := 0.0
	if att := s.Count + s.Errors; att > 0 {
		ratio = float64(s.Errors) / float64(att)
	}
	set("errors", ratio)
	if s.Count == 0 {
		return // no latency without an answer
	}
	for _, p := range []struct {
		m string
		v float64
	}{{"p50", l.P50}, {"p95", l.P95}, {"p99", l.P99}, {"p99.5", l.P995}, {"p99.9", l.P999}, {"max", l.Max}, {"mean", l.Mean}} {
		set(p.m, p.v/1000) // µs in the report, ms here
	}
}
