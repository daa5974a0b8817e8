package report

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// stubDriver stands in for a store in the configurations these tests load.
type stubDriver struct{}

func (stubDriver) Init(context.Context, any) error                         { return nil }
func (stubDriver) Read(context.Context, string) ([]byte, error)            { return nil, driver.ErrNotFound }
func (stubDriver) Write(context.Context, string, []byte) error             { return nil }
func (stubDriver) Do(context.Context, int, string, []byte) ([]byte, error) { return nil, nil }
func (stubDriver) Close() error                                            { return nil }

type stubOptions struct {
	Mode string `opt:"mode" default:"direct" enum:"direct,pool" help:"test"`
}

func init() {
	// report-kv sends one operation per round trip; report-pipe pipelines.
	driver.MustRegister(driver.Definition{Name: "report-kv", Summary: "test",
		New: func() driver.Driver { return stubDriver{} }, NewOptions: func() any { return &stubOptions{} },
		Operations: []driver.Operation{{Name: "search", Kind: driver.KindRead}}})
	driver.MustRegister(driver.Definition{Name: "report-pipe", Summary: "test",
		New: func() driver.Driver { return stubDriver{} }, NewOptions: func() any { return &stubOptions{} },
		Pipelines: func(o any) bool { return o.(*stubOptions).Mode == "direct" }})
}

// suggestedSet matches what a warning tells the user to set: "set workload.readers=13".
var suggestedSet = regexp.MustCompile(`set (workload\.[A-Za-z0-9_.]+)=(\d+)`)

// A warning that blames too few workers suggests a worker count the configuration accepts:
// never more than the option allows (the option's bound, all pools together, the memory
// budget), and when even that is too few for the rate at the service time measured, it
// says so and names what else would carry the rate. With the client's CPU saturated, more
// workers are no fix and none are suggested.
func TestWorkerSuggestionIsOneTheConfigAccepts(t *testing.T) {
	tests := []struct {
		name   string
		driver string   // "" = no configuration (a report merged from a fleet's nodes)
		sets   []string // the run's configuration
		class  string
		target float64 // ops/s
		svcMs  float64 // mean service time
		pool   int     // workers in the series
		cpu    time.Duration
		want   []string
		// notWanted: the suggestions the configuration rejected, and advice that does not fit.
		notWanted []string
	}{
		// serviceTime=10ms, 8 readers at 1,000/s.
		{name: "within the bound", driver: "report-kv", class: "read", target: 1000, svcMs: 10.3, pool: 8,
			want: []string{"set workload.readers=13"}, notWanted: []string{"even the"}},
		// The report of the issue: serviceTime=50ms, readRate=250000, writes off.
		{name: "beyond the option's bound", driver: "report-kv", class: "read",
			sets: []string{"workload.readRate=250000", "workload.writeEnabled=false"}, target: 250000, svcMs: 50.09, pool: 64,
			want:      []string{"64 workers cannot run 250000 ops/s", "even the most workers this configuration allows", "set workload.readers=9996", "lower workload.readRate", "more nodes"},
			notWanted: []string{"readers=15653", "workload.pipeline"}},
		{name: "pools together at their bound", driver: "report-kv", class: "read",
			sets: []string{"workload.readRate=250000", "workload.readers=9000", "workload.writers=1000"}, target: 250000, svcMs: 50, pool: 9000,
			want:      []string{"9000 workers cannot run", "the most workers this configuration allows", "lower workload.readRate"},
			notWanted: []string{"set workload.readers"}},
		{name: "absurd rate (the most the configuration takes)", driver: "report-kv", class: "read",
			sets: []string{"workload.readRate=1e9", "workload.writeEnabled=false"}, target: 1e9, svcMs: 50.58, pool: 64,
			want:      []string{"even the most workers this configuration allows", "lower workload.readRate"},
			notWanted: []string{"readers=1398551342", "readers=63221511060041"}},
		{name: "client CPU saturated", driver: "report-kv", class: "read",
			sets: []string{"workload.readRate=1e9", "workload.writeEnabled=false"}, target: 1e9, svcMs: 0.7, pool: 64, cpu: time.Hour,
			want:      []string{"CPU was saturated"},
			notWanted: []string{"set workload.readers", "cannot run", "raise workload.maxReaders"}},
		{name: "an op class beyond its bound", driver: "report-kv", class: "search",
			sets:   []string{"workload.readEnabled=false", "workload.writeEnabled=false", "workload.ops.search.workers=2", "workload.ops.search.rate=500000"},
			target: 500000, svcMs: 50, pool: 64,
			want:      []string{"even the most workers this configuration allows", "workload.ops.search.workers=", "lower workload.ops.search.rate"},
			notWanted: []string{"search.workers=31250"}},
		{name: "a driver that pipelines", driver: "report-pipe", class: "read",
			sets: []string{"workload.readRate=250000", "workload.writeEnabled=false"}, target: 250000, svcMs: 50, pool: 64,
			want: []string{"even the most workers this configuration allows", "workload.pipeline"}},
		{name: "no configuration: the option's bound", class: "read", target: 250000, svcMs: 50, pool: 64,
			want:      []string{"even the most workers", "lower workload.readRate"},
			notWanted: []string{"readers=15625"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1_700_000_000, 0)
			const secs = 10
			rate := float64(tc.pool) / (tc.svcMs / 1000) // every worker busy
			sum := stats.OpSummary{Count: int64(rate * secs), Rate: rate, TargetRate: tc.target, Workers: tc.pool,
				ServiceTime:  stats.Latency{Mean: tc.svcMs * 1000, P99: tc.svcMs * 1200, Max: tc.svcMs * 2000},
				ResponseTime: stats.Latency{P99: 3e6, Max: 3.1e6}, StartLag: stats.Latency{P99: 2.9e6, Max: 3e6}}
			pt := stats.Point{Ops: map[string]stats.OpSummary{tc.class: {Rate: rate, TargetRate: tc.target, Workers: tc.pool,
				ServiceTime: stats.Latency{Mean: tc.svcMs * 1000}}}}
			in := Input{Started: t0, Ended: t0.Add(secs * time.Second), DriverName: tc.driver,
				Cumulative: stats.Summary{Start: t0, End: t0.Add(secs * time.Second), Seconds: secs,
					Ops: map[string]stats.OpSummary{tc.class: sum}},
				Series: []stats.Point{pt, pt}, UsageEnd: Usage{User: tc.cpu}}
			if tc.driver != "" {
				snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=" + tc.driver}, tc.sets...)})
				if err != nil {
					t.Fatalf("the run's configuration: %v", err)
				}
				in.Snapshot = snap
			}
			warnings := Build(in).Warnings
			checkWarnings(t, warnings, tc.want, tc.notWanted)
			got := strings.Join(warnings, "\n")
			// Whatever is suggested, the configuration takes.
			for _, m := range suggestedSet.FindAllStringSubmatch(got, -1) {
				if n, _ := strconv.Atoi(m[2]); tc.driver == "" && n > 10000 {
					t.Errorf("suggested %s=%s, over the option's bound", m[1], m[2])
				}
				if tc.driver == "" {
					continue
				}
				sets := append([]string{"driver.name=" + tc.driver}, tc.sets...)
				if _, err := config.Load(config.Sources{Sets: append(sets, m[1]+"="+m[2])}); err != nil {
					t.Errorf("suggested %s=%s, which the configuration rejects: %v", m[1], m[2], err)
				}
			}
		})
	}
}
