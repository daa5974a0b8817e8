package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	// Only the test: the callers of WriteHTML join report and the UI's chart assets.
	"github.com/ndbench/ndbench/internal/web"
)

func htmlReport(t *testing.T) *Report {
	t.Helper()
	start := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	op := func(count, rate, target float64) stats.OpSummary {
		return stats.OpSummary{Count: int64(count), Rate: rate, TargetRate: target, Misses: 7,
			Failures:     map[string]int64{"timeout": 3, "unavailable": 0, "throttled": 0, "rejected": 0, "other": 0},
			Validation:   map[string]int64{"corrupt": 0, "wrongKey": 0, "stale": 0, "lost": 0},
			ResponseTime: stats.Latency{P50: 1234, P99: 56789, Max: 99000}, ServiceTime: stats.Latency{P50: 1000, P99: 4000},
			StartLag: stats.Latency{P50: 17, P99: 2345}}
	}
	var series []stats.Point
	for i := range 5 {
		series = append(series, stats.Point{Time: start.Add(time.Duration(i+1) * time.Second),
			Ops: map[string]stats.OpSummary{"read": op(400, 400, 400), "write": op(100, 100, 100), "backfill": {}}})
	}
	snap := &config.Snapshot{Entries: []config.Entry{
		{Key: "workload.readRate", Value: "400", Source: "--set"},
		{Key: "drivers.redis.password", Value: "<redacted>", Source: "env", Secret: true},
		{Key: "workload.keyPrefix", Value: "</script><script>alert(1)</script>", Source: "file x.yaml"},
	}}
	cum := stats.Summary{Start: start, End: start.Add(5 * time.Second), Seconds: 5,
		Ops: map[string]stats.OpSummary{"read": op(2000, 400, 400), "write": op(500, 100, 100), "backfill": op(1000, 1000, 0)}}
	return Build(Input{ToolVersion: "v9.9.9", Started: start, Ended: start.Add(5 * time.Second), DriverName: "memory",
		DriverInfo: map[string]string{"shards": "64"}, Cumulative: cum, Series: series, Snapshot: snap, Clock: "tsc",
		Backfill: &engine.BackfillStatus{Phase: "done", Total: 1000, Written: 1000}})
}

// urlPattern finds absolute and protocol-relative URLs.
var urlPattern = regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9][a-z0-9.-]*\.[a-z]{2,}[^\s"'<>)]*`)

func TestWriteHTMLIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, htmlReport(t), Charts(web.Charts())); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, u := range urlPattern.FindAllString(page, -1) {
		// uPlot's banner comment names its home page; nothing is fetched from it.
		if u != "https://github.com/leeoniya/uPlot" {
			t.Errorf("external URL in the report: %s", u)
		}
	}
	for _, re := range []string{`<script[^>]+src=`, `<link[^>]+href=`, `@import`, `url\((?:'|")?http`} {
		if regexp.MustCompile(re).MatchString(page) {
			t.Errorf("report loads something from outside (%s)", re)
		}
	}
	// The chart library and chart code are inlined.
	for _, want := range []string{"uPlot", "NDCharts.Grid", ".uplot", `id="charts"`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

func TestWriteHTMLContainsTheData(t *testing.T) {
	r := htmlReport(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, r, Charts(web.Charts())); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// What a reader sees in the tables: op, counts, rates, latencies in ms, errors by
	// class, backfill, driver and configuration with sources.
	for _, want := range []string{"<td>read</td>", "<td>2000</td>", "<td>400</td>", "<td>1.234</td>", "<td>56.789</td>",
		"<td>400</td><td>400</td>", "errors by class: timeout 3", "Backfill done: 1000 of 1000 keys written", "<td>shards</td><td>64</td>",
		"<td>workload.readRate</td><td>400</td><td>--set</td>", "v9.9.9",
		// The generator's own delay and the clock that timed the run, as in the summary.
		"<td>start lag</td>", "<td>0.017</td>", "<td>2.345</td>", "clock tsc"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Values are escaped, so a config value cannot inject markup.
	if strings.Contains(page, "<script>alert(1)") {
		t.Error("config value not escaped")
	}
	// The embedded JSON is the full report, series included.
	m := regexp.MustCompile(`(?s)<script type="application/json" id="ndbench-report">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no embedded report data")
	}
	var got Report
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if len(got.Series) != 5 || got.Ops["read"].Count != 2000 || got.Driver.Name != "memory" {
		t.Errorf("embedded data: %d points, read count %d, driver %q", len(got.Series), got.Ops["read"].Count, got.Driver.Name)
	}
}

// TestWriteHTMLShowsPhases: a run's earlier phases (backfill, warm-up) are in the page, each
// with its classes' figures, not only in the embedded JSON.
func TestWriteHTMLShowsPhases(t *testing.T) {
	r := htmlReport(t)
	t0 := r.Started.Add(-40 * time.Second)
	r.Phase = "load"
	r.Phases = []Phase{
		{Name: "backfill", Started: t0, Ended: t0.Add(10 * time.Second), Seconds: 10,
			Ops: map[string]stats.OpSummary{"backfill": {Count: 5000, Rate: 500, ResponseTime: stats.Latency{P50: 2000, P99: 9000}}}},
		{Name: "warmup", Started: t0.Add(10 * time.Second), Ended: t0.Add(40 * time.Second), Seconds: 30,
			Ops: map[string]stats.OpSummary{"write": {Count: 300, Rate: 10}, "read": {Count: 1200, Rate: 40, Errors: 2}}},
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, Charts(web.Charts())); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"Earlier phases", "The load figures above are the load phase's",
		"<tr><td>backfill</td><td>backfill</td><td>10.00</td><td>5000</td><td>500</td><td>2.000</td><td>9.000</td>",
		"<tr><td>warmup</td><td>read</td><td>30.00</td><td>1200</td><td>40</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// In report order within a phase: read before write.
	if i, j := strings.Index(page, "<td>warmup</td><td>read</td>"), strings.Index(page, "<td>warmup</td><td>write</td>"); i < 0 || j < i {
		t.Errorf("warm-up rows out of order (read at %d, write at %d)", i, j)
	}
	// A run without phases has no such section.
	plain := htmlReport(t)
	b.Reset()
	if err := WriteHTML(&b, plain, Charts(web.Charts())); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Earlier phases") {
		t.Error("phases section in a report without phases")
	}
}
