package history

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

func TestParseFigure(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Figure
		wantErr string
	}{
		{in: "read.p99", want: Figure{"read", "p99"}},
		{in: "read.p99.9", want: Figure{"read", "p99.9"}},
		{in: "read.p999", want: Figure{"read", "p99.9"}},
		{in: "write.errors", want: Figure{"write", "errors"}},
		{in: "write.errorRatio", want: Figure{"write", "errors"}},
		{in: "write.failed", want: Figure{"write", "failed"}},
		{in: "read.throughput", want: Figure{"read", "rate"}},
		{in: "read.get.p99.9", want: Figure{"read.get", "p99.9"}},
		{in: "client.opsPerCPUSecond", want: Figure{"client", "opsPerCPUSecond"}},
		{in: "ops/s per client CPU-s", want: Figure{"client", "opsPerCPUSecond"}},
		{in: "read.p98", wantErr: "metrics: rate, count, errors, failed"},
		{in: "p99", wantErr: "want SERIES.METRIC"},
		{in: "read.opsPerCPUSecond", wantErr: "client.opsPerCPUSecond"},
		{in: "client.p99", wantErr: "want SERIES.METRIC"},
	} {
		got, err := ParseFigure(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseFigure(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseFigure(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestDirection(t *testing.T) {
	for fig, worseUp := range map[string]bool{"read.p99": true, "write.errors": true, "write.failed": true, "read.rate": false, "client.opsPerCPUSecond": false, "client.cpuCores": true} {
		f, err := ParseFigure(fig)
		if err != nil {
			t.Fatal(err)
		}
		if f.WorseUp() != worseUp {
			t.Errorf("%s: WorseUp %v, want %v", fig, f.WorseUp(), worseUp)
		}
	}
}

func TestParseTags(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    string
		wantErr string
	}{
		{in: []string{"build=1234", "store=redis-7.2"}, want: "build=1234 store=redis-7.2"},
		{in: []string{"note=a=b"}, want: "note=a=b"},
		{in: []string{"build"}, wantErr: "want KEY=VALUE"},
		{in: []string{"=1"}, wantErr: "allowed: 1-64 letters"},
		{in: []string{"bad key=1"}, wantErr: "allowed: 1-64 letters"},
		{in: []string{"build="}, wantErr: "value: allowed: 1-256 characters"},
		{in: []string{"build=1", "build=2"}, wantErr: `key "build" given twice`},
	} {
		got, err := ParseTags(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseTags(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || TagsText(got) != tc.want {
			t.Errorf("ParseTags(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestDefaultTarget(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h", "NDBENCH_RESULTS=postgres://db/x"}, "postgres://db/x"},
		{[]string{"HOME=/h", "XDG_DATA_HOME=/d"}, "/d/ndbench/history.db"},
		{[]string{"HOME=/h"}, "/h/.local/share/ndbench/history.db"},
	} {
		got, err := DefaultTarget(tc.env)
		if err != nil || got != tc.want {
			t.Errorf("DefaultTarget(%q) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
	if _, err := DefaultTarget(nil); err == nil || !strings.Contains(err.Error(), EnvResults) {
		t.Errorf("DefaultTarget without a home: %v, want an error naming %s", err, EnvResults)
	}
}

func TestFromReport(t *testing.T) {
	started := time.Date(2026, 11, 2, 3, 4, 5, 0, time.UTC)
	rep := &report.Report{
		FormatVersion: report.Version, Tool: report.Tool{Version: "v9"}, Started: started, Ended: started.Add(time.Minute), Seconds: 60,
		Driver: report.Driver{Name: "redis"},
		Ops: map[string]stats.OpSummary{
			"read":     {Count: 990, Errors: 10, Rate: 16.5, ResponseTime: stats.Latency{P50: 500, P99: 2500, P999: 4000, Max: 9000}},
			"write":    {}, // did not run: no figures
			"backfill": {Errors: 4},
		},
		Client: report.Client{OpsPerCPUSecond: 12000, CPUCores: 0.5, MaxRSSBytes: 64 << 20},
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	run, err := FromReport(rep, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"read.p50": 0.5, "read.p99": 2.5, "read.p99.9": 4, "read.max": 9, "read.rate": 16.5, "read.failed": 10, "read.errors": 0.01,
		"read.count": 990, "backfill.failed": 4, "backfill.errors": 1,
		"client.opsPerCPUSecond": 12000, "client.cpuCores": 0.5, "client.maxRSSMB": 64,
	}
	for name, v := range want {
		f, err := ParseFigure(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := run.Figures[f]; !ok || got != v {
			t.Errorf("%s = %v (recorded %v), want %v", name, got, ok, v)
		}
	}
	for f := range run.Figures {
		if f.Series == "write" || (f.Series == "backfill" && f.Metric == "p99") {
			t.Errorf("figure %s recorded for a class with nothing to measure", f)
		}
	}
	if run.Driver != "redis" || run.Version != "v9" || !run.Started.Equal(started) || run.Seconds != 60 {
		t.Errorf("run %+v", run)
	}
	if strings.Contains(string(run.Report), "\n") || !json.Valid(run.Report) {
		t.Errorf("report kept as %q, want compact JSON", run.Report)
	}
}

func TestWorkloadOf(t *testing.T) {
	for _, tc := range []struct {
		sources []string
		want    string
	}{
		{[]string{"default", "--set"}, ""},
		{[]string{"default", "preset ycsb-b", "flag --driver"}, "ycsb-b"},
		{[]string{"preset file examples/presets/hot-keys.yaml"}, "hot-keys"},
		{nil, ""},
	} {
		r := &report.Report{}
		for _, s := range tc.sources {
			r.Config = append(r.Config, config.Entry{Key: "workload.readRate", Source: s})
		}
		if got := WorkloadOf(r); got != tc.want {
			t.Errorf("sources %q: workload %q, want %q", tc.sources, got, tc.want)
		}
	}
}

// TestFromReportCapacity: an auto-tune report's capacity is a figure, in total and per
// class; a search that found none adds no capacity.
func TestFromReportCapacity(t *testing.T) {
	for _, tc := range []struct {
		autotune string
		want     map[string]float64
	}{
		{`{"status":"found","capacity":12000,"perClass":{"read":9600,"write":2400}}`, map[string]float64{"autotune.capacity": 12000, "read.capacity": 9600, "write.capacity": 2400}},
		{`{"status":"none within SLA","capacity":0}`, map[string]float64{}},
		{``, map[string]float64{}},
	} {
		r := &report.Report{FormatVersion: report.Version, Autotune: json.RawMessage(tc.autotune)}
		raw, _ := json.Marshal(r)
		run, err := FromReport(r, raw)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for f, v := range run.Figures {
			if f.Metric == "capacity" {
				got[f.String()] = v
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("autotune %s: capacity figures %v, want %v", tc.autotune, got, tc.want)
		}
	}
	if f, err := ParseFigure("autotune.capacity"); err != nil || f != (Figure{AutotuneSeries, "capacity"}) || f.WorseUp() {
		t.Errorf("autotune.capacity parses as %+v (%v), want a figure where lower is worse", f, err)
	}
}
