package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// input builds a run of secs seconds whose read class ran at target with n operations.
func input(secs float64, target float64, n int64, series []stats.Point) Input {
	t0 := time.Unix(1_700_000_000, 0)
	end := t0.Add(time.Duration(secs * float64(time.Second)))
	return Input{
		Started: t0, Ended: end, DriverName: "memory",
		Cumulative: stats.Summary{Start: t0, End: end, Seconds: secs, Ops: map[string]stats.OpSummary{
			"read":  {Count: n, TargetRate: 0, Workers: 0},
			"write": {},
		}},
		Series:     series,
		UsageStart: Usage{},
		UsageEnd:   Usage{User: time.Second},
	}
}

func points(targets ...float64) []stats.Point {
	var ps []stats.Point
	for _, t := range targets {
		ps = append(ps, stats.Point{Ops: map[string]stats.OpSummary{"read": {TargetRate: t, Workers: 4}}})
	}
	// The last, partial interval after the pool stopped.
	return append(ps, stats.Point{Ops: map[string]stats.OpSummary{"read": {}}})
}

// TestSessionRatesOverTheTimeAClassRan: a serve session summarized at Ctrl-C a minute
// after a 12 s run at 100/s said "attempted 16 of the 100 ops/s target ... add workers"
// and a rate of 16 (the walkthrough of issue 36): its class ran 12 of the 64 s, and its
// rate and target are judged over those.
func TestSessionRatesOverTheTimeAClassRan(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int64
		want string // a warning's substring; "" for none
		rate float64
	}{
		{"kept its target while it ran", 1200, "", 100},
		{"short of it while it ran", 600, "attempted 50 of the 100 ops/s target", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(64, 100, tc.n, points(100, 100))
			o := in.Cumulative.Ops["read"]
			o.ActiveSeconds = 12
			in.Cumulative.Ops["read"] = o
			r := Build(in)
			got := strings.Join(r.Warnings, "\n")
			if tc.want == "" && strings.Contains(got, "attempted") || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("warnings %q; want %q", got, tc.want)
			}
			if rate := r.Ops["read"].Rate; rate != tc.rate {
				t.Fatalf("rate %.1f/s; want %.0f/s, over the 12 s the class ran", rate, tc.rate)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string // substring of a warning; "" for none
	}{
		{"on target", input(10, 1000, 10000, points(1000, 1000)), ""},
		{"under target", input(10, 1000, 9000, points(1000, 1000)), "attempted 900 of the 1000 ops/s target"},
		{"rate changed", input(10, 1000, 5000, points(1000, 2000)), ""},
		{"closed loop", input(10, 0, 5, points(0, 0)), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.in)
			got := strings.Join(r.Warnings, "\n")
			if tc.want == "" && strings.Contains(got, "attempted") {
				t.Fatalf("unexpected warning: %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("warnings %q lack %q", got, tc.want)
			}
		})
	}
}

func TestClampedLatenciesWarn(t *testing.T) {
	in := input(10, 0, 100, points(0))
	in.Cumulative.Ops["read"] = stats.OpSummary{Count: 100, Clamped: 3}
	r := Build(in)
	if r.Ops["read"].Clamped != 3 {
		t.Errorf("report read clamped = %d, want 3", r.Ops["read"].Clamped)
	}
	if got := strings.Join(r.Warnings, "\n"); !strings.Contains(got, "read: 3 latencies exceeded the histograms' ceiling of 1h0m0s") {
		t.Errorf("warnings %q do not report the clamped latencies", got)
	}
}

func TestElasticPoolAtItsMaximumWarns(t *testing.T) {
	w := config.DefaultWorkload()
	w.Readers, w.MaxReaders = 4, 10
	for _, tc := range []struct {
		peak int
		warn bool
	}{{6, false}, {10, true}} {
		ps := points(1000, 1000)
		ps[1].Ops["read"] = stats.OpSummary{TargetRate: 1000, Workers: tc.peak}
		in := input(10, 1000, 10000, ps)
		in.Snapshot = &config.Snapshot{Config: config.Config{Workload: w}}
		r := Build(in)
		if r.Ops["read"].PeakWorkers != tc.peak {
			t.Errorf("peakWorkers %d, want %d", r.Ops["read"].PeakWorkers, tc.peak)
		}
		warned := strings.Contains(strings.Join(r.Warnings, "\n"), "grew to its maximum of 10 workers")
		if warned != tc.warn {
			t.Errorf("peak %d: warned %v, want %v (%q)", tc.peak, warned, tc.warn, r.Warnings)
		}
	}
}

func TestTargetComesFromTheRunningIntervals(t *testing.T) {
	r := Build(input(10, 0, 10000, points(1000, 1000)))
	if r.Ops["read"].TargetRate != 1000 {
		t.Fatalf("target %v, want the 1000 in force while reads ran", r.Ops["read"].TargetRate)
	}
}

func TestStartLagAndCPUWarnings(t *testing.T) {
	in := input(10, 1000, 10000, points(1000))
	s := in.Cumulative.Ops["read"]
	s.StartLag.P99 = 25_000
	in.Cumulative.Ops["read"] = s
	in.UsageEnd = Usage{User: 100 * time.Second} // far more CPU than the machine has
	in.Backfill = &engine.BackfillStatus{Failed: 3}
	got := strings.Join(Build(in).Warnings, "\n")
	for _, want := range []string{"started late", "cores busy", "backfill: 3 keys"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
}

func TestWriteFileIsJSONAndAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	r := Build(input(2, 100, 200, points(100)))
	if err := WriteFile(path, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Ops["read"].Count != 200 || back.FormatVersion != Version {
		t.Fatalf("round trip: %v %+v", err, back.Ops)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.json"), r); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestMissesAndAttemptsExplained(t *testing.T) {
	tests := []struct {
		name     string
		reads    stats.OpSummary
		backfill bool
		want     []string // substrings of the warnings; nil for no such warning
	}{
		{name: "most reads miss", reads: stats.OpSummary{Count: 5000, Misses: 4000},
			want: []string{"read: 80% of 5000 reads missed", "--backfill", "workload.backfill=true"}},
		{name: "half miss is not most", reads: stats.OpSummary{Count: 5000, Misses: 2500}},
		{name: "too few reads to judge", reads: stats.OpSummary{Count: 900, Misses: 900}},
		{name: "backfilled store misses for another reason", reads: stats.OpSummary{Count: 5000, Misses: 4000}, backfill: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(10, 0, 0, nil)
			in.Cumulative.Ops["read"] = tt.reads
			if tt.backfill {
				in.Backfill = &engine.BackfillStatus{Phase: "done"}
			}
			got := strings.Join(Build(in).Warnings, "\n")
			if tt.want == nil && strings.Contains(got, "missed") {
				t.Fatalf("unexpected warning: %s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("warnings lack %q:\n%s", w, got)
				}
			}
		})
	}
}

// The offered-vs-target check counts failures as attempts; it must say how many of them
// succeeded, and the report carries attempted and succeeded per op.
func TestUnderTargetSaysAttemptedAndSucceeded(t *testing.T) {
	in := input(10, 1000, 4000, points(1000, 1000))
	s := in.Cumulative.Ops["read"]
	s.Errors = 5000
	in.Cumulative.Ops["read"] = s
	r := Build(in)
	got := strings.Join(r.Warnings, "\n")
	if !strings.Contains(got, "attempted 900 of the 1000 ops/s target") || !strings.Contains(got, "400 ops/s succeeded") {
		t.Errorf("warnings do not tell attempted from succeeded:\n%s", got)
	}
	b, _ := json.Marshal(r.Ops["read"])
	if !strings.Contains(string(b), `"attempted":9000`) || !strings.Contains(string(b), `"succeeded":4000`) {
		t.Errorf("report op lacks attempted/succeeded: %s", b)
	}
}

// Operations workload.catchUp=drop skipped are named in their own warning, and the
// offered-vs-target check does not blame the workers for them.
func TestDroppedOperationsWarnedNotBlamedOnWorkers(t *testing.T) {
	in := input(10, 1000, 4000, points(1000, 1000))
	s := in.Cumulative.Ops["read"]
	s.Count, s.Attempted, s.Succeeded, s.Rate = 8000, 8000, 8000, 800
	s.Dropped, s.DropLateness = 2000, stats.Latency{P50: 1200000, Max: 2000000}
	in.Cumulative.Ops["read"] = s
	got := strings.Join(Build(in).Warnings, "\n")
	if !strings.Contains(got, "2000 operations (20.0% of those due) were dropped") || !strings.Contains(got, "lateness p50 1200.0 ms") {
		t.Errorf("no warning naming the dropped operations:\n%s", got)
	}
	if strings.Contains(got, "attempted 800 of the 1000") {
		t.Errorf("the shortfall of dropped operations is blamed on the workers:\n%s", got)
	}
}

// The start-lag warning names its cause from the measured numbers; the figures are those
// of real runs of the memory store (see the comments).
func TestStartLagWarningNamesTheCause(t *testing.T) {
	lat := func(p99, max, mean float64) stats.Latency { return stats.Latency{P99: p99, Max: max, Mean: mean} }
	pt := func(rate, svcMean float64, workers int) stats.Point {
		return stats.Point{Ops: map[string]stats.OpSummary{"read": {Rate: rate, TargetRate: 1000, Workers: workers,
			ServiceTime: stats.Latency{Mean: svcMean}}}}
	}
	tests := []struct {
		name      string
		sum       stats.OpSummary
		series    []stats.Point
		cpu       time.Duration
		want      []string
		notWanted []string
	}{
		// stallEvery=10s stallFor=1s, 8 readers at 1,000/s: one interval in ten has all 8
		// workers inside the store for the whole second.
		{name: "store stall", sum: stats.OpSummary{Count: 30001, Rate: 1000, ResponseTime: lat(905215, 1018879, 50694),
			ServiceTime: lat(19, 1000447, 779), StartLag: lat(897023, 1007615, 49915)},
			series:    []stats.Point{pt(1000, 4, 8), pt(1009, 7902, 8), pt(1000, 5, 8)},
			want:      []string{"start-lag p99 897.0 ms", "the store stalled", "all 8 workers", "up to 1000 ms", "not the generator's"},
			notWanted: []string{"generator's own", "set workload.readers"}},
		// serviceTime=10ms, 8 readers at 1,000/s: 10 workers' worth of work for 8.
		{name: "too few workers", sum: stats.OpSummary{Count: 7745, Rate: 773, ResponseTime: lat(2244607, 2271231, 1121722),
			ServiceTime: lat(14191, 88511, 10326), StartLag: lat(2244607, 2260991, 1111425)},
			series:    []stats.Point{pt(781, 10111, 8), pt(795, 10063, 8)},
			want:      []string{"every worker was busy", "Little's law", "set workload.readers=13"},
			notWanted: []string{"stalled", "generator's own"}},
		// A fast store with idle workers whose operations still started late.
		{name: "generator", sum: stats.OpSummary{Count: 50000, Rate: 5000, ResponseTime: lat(20000, 40000, 900),
			ServiceTime: lat(30, 500, 10), StartLag: lat(19000, 39000, 890)},
			series:    []stats.Point{pt(5000, 10, 8), pt(5000, 12, 8)},
			want:      []string{"workers were free", "generator's own"},
			notWanted: []string{"stalled", "set workload.readers"}},
		// `make run` (pebble, 4 readers at 4,000/s) on a busy machine: a few service times
		// of 10+ ms, but never more than 4% of the workers in the store in any second.
		{name: "generator on a busy machine, with service-time hiccups", sum: stats.OpSummary{Count: 120000, Rate: 4000,
			ResponseTime: lat(4000, 20000, 200), ServiceTime: lat(139, 13559, 22), StartLag: lat(3951, 19000, 180)},
			series:    []stats.Point{pt(4000, 20, 4), pt(4004, 38, 4), pt(4000, 22, 4)},
			want:      []string{"workers were free", "at most 4% in any second", "generator's own", "brief store stalls may add"},
			notWanted: []string{"the store stalled", "set workload.readers"}},
		// A 200 ms stall each second against an elastic pool that grew to 16: no second
		// shows more than half the workers in the store, but the engine's per-operation
		// split says the lag was spent waiting for workers held in the store.
		{name: "sub-second stall, split", sum: stats.OpSummary{Count: 10000, Rate: 1000, ResponseTime: lat(200000, 230000, 27400),
			ServiceTime: lat(1100, 229000, 2600), StartLag: lat(190000, 220000, 24800), StartLagOwn: 700, StartLagWait: 24100},
			series:    []stats.Point{pt(1000, 2500, 16), pt(1000, 2700, 16), pt(1000, 2600, 16)},
			want:      []string{"the store stalled or slowed", "up to 229 ms", "97% of the lag (24.10 ms of a mean 24.80 ms)", "not the generator's"},
			notWanted: []string{"generator's own", "workers were free", "set workload.readers"}},
		// The same idle pool whose lag came after a worker was free.
		{name: "generator, split", sum: stats.OpSummary{Count: 50000, Rate: 5000, ResponseTime: lat(20000, 40000, 900),
			ServiceTime: lat(30, 500, 10), StartLag: lat(19000, 39000, 890), StartLagOwn: 600, StartLagWait: 290},
			series:    []stats.Point{pt(5000, 10, 8), pt(5000, 12, 8)},
			want:      []string{"67% of the lag (0.60 ms of a mean 0.89 ms) came after a worker was free", "generator's own"},
			notWanted: []string{"stalled", "set workload.readers"}},
		{name: "client CPU", sum: stats.OpSummary{Count: 50000, Rate: 5000, ResponseTime: lat(20000, 40000, 900),
			ServiceTime: lat(30, 500, 10), StartLag: lat(19000, 39000, 890)},
			series: []stats.Point{pt(5000, 10, 8)}, cpu: 1000 * time.Second,
			want: []string{"CPU was saturated"}},
		// Lag that is small next to the response time is not the story.
		{name: "lag small against the response time", sum: stats.OpSummary{Count: 50000, Rate: 5000, ResponseTime: lat(2000000, 3000000, 900000),
			ServiceTime: lat(1990000, 2990000, 890000), StartLag: lat(15000, 20000, 1000)},
			series:    []stats.Point{pt(5000, 10, 8)},
			notWanted: []string{"started late"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := input(10, 1000, tt.sum.Count, tt.series)
			in.Cumulative.Ops["read"] = tt.sum
			if tt.cpu > 0 {
				in.UsageEnd = Usage{User: tt.cpu}
			}
			checkWarnings(t, Build(in).Warnings, tt.want, tt.notWanted)
		})
	}
}

// checkWarnings fails t unless the warnings have every text of want and none of notWanted.
func checkWarnings(t *testing.T, warnings, want, notWanted []string) {
	t.Helper()
	got := strings.Join(warnings, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("warnings lack %q:\n%s", w, got)
		}
	}
	for _, w := range notWanted {
		if strings.Contains(got, w) {
			t.Errorf("warnings have %q:\n%s", w, got)
		}
	}
}

// TestReportJSONKeysAreCamelCase: the report's JSON keys follow the API's convention
// (camelCase), nested ones too: the configuration's entries were written as Key, Value,
// Source, Secret.
func TestReportJSONKeysAreCamelCase(t *testing.T) {
	r := &Report{Config: []config.Entry{{Key: "workload.readRate", Value: "5", Source: "--set"}},
		Verdict: &Verdict{Status: "PASSED", By: "default"}, Thresholds: []Threshold{{Check: "read.p99 < 1ms", Status: "pass"}},
		Run: &Run{Duration: "1s", Flags: []Flag{{Name: "--duration", Value: "1s"}}}}
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				// Op and class names are keys too ("read", "child.primary"): data, not fields.
				if k != "" && unicode.IsUpper(rune(k[0])) {
					t.Errorf("%s.%s: not camelCase", path, k)
				}
				walk(sub, path+"."+k)
			}
		case []any:
			for _, sub := range x {
				walk(sub, path+"[]")
			}
		}
	}
	var doc any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	walk(doc, "report")
}

// TestRunPhasesAreMarked: a run's own phases (backfill, warm-up, then the measured load)
// are marks on its timeline, which every time chart draws; a scenario's marks stay its own.
func TestRunPhasesAreMarked(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 1, 2, 3, 4, s, 0, time.UTC) }
	in := Input{Started: at(20), Ended: at(50), Phase: "load", Phases: []Phase{
		{Name: "backfill", Started: at(0), Ended: at(10)}, {Name: "warmup", Started: at(10), Ended: at(20)}}}
	r := Build(in)
	var got []string
	for _, m := range r.Timeline {
		got = append(got, m.Kind+" "+m.Name+" "+m.Start+" "+m.End)
	}
	want := []string{
		"phase backfill 2026-01-02T03:04:00.000Z 2026-01-02T03:04:10.000Z",
		"phase warmup 2026-01-02T03:04:10.000Z 2026-01-02T03:04:20.000Z",
		"phase load 2026-01-02T03:04:20.000Z 2026-01-02T03:04:50.000Z",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	in.Timeline = []Mark{{Kind: "hook", Name: "kill"}}
	if r := Build(in); len(r.Timeline) != 1 {
		t.Errorf("a scenario's timeline was changed: %+v", r.Timeline)
	}
	if r := Build(Input{Started: at(0), Ended: at(5)}); len(r.Timeline) != 0 {
		t.Errorf("a run without earlier phases has marks: %+v", r.Timeline)
	}
}

// TestKeyspaceReported: a run whose inserts grew the keyspace reports its initial size
// (workload.numKeys), its size at the end and the keys inserted; a report without the
// engine's size (a fleet's) has none.
func TestKeyspaceReported(t *testing.T) {
	snap := &config.Snapshot{}
	snap.Config.Workload.NumKeys = 1000
	for _, tc := range []struct {
		name string
		size int64
		want *Keyspace
	}{
		{"grown by inserts", 1250, &Keyspace{NumKeys: 1000, Size: 1250, Inserted: 250}},
		{"no inserts", 1000, &Keyspace{NumKeys: 1000, Size: 1000}},
		{"unknown", 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(10, 100, 1000, nil)
			in.Snapshot, in.Keyspace = snap, tc.size
			got := Build(in).Keyspace
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("Keyspace = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGeneratorOnFewerCoresSuggestsThreadsAll: when a warning blames the generator and
// it ran on fewer cores than the machine has (--threads auto beside a local store), the
// warnings say --threads all gives it every core; with every core, or with the store
// to blame, they do not (the walkthrough of issue 36 met the blame without the remedy).
func TestGeneratorOnFewerCoresSuggestsThreadsAll(t *testing.T) {
	lat := func(p99, max, mean float64) stats.Latency { return stats.Latency{P99: p99, Max: max, Mean: mean} }
	pt := func(rate, svcMean float64, workers int) stats.Point {
		return stats.Point{Ops: map[string]stats.OpSummary{"read": {Rate: rate, TargetRate: 1000, Workers: workers,
			ServiceTime: stats.Latency{Mean: svcMean}}}}
	}
	generator := stats.OpSummary{Count: 50000, Rate: 5000, ResponseTime: lat(20000, 40000, 900),
		ServiceTime: lat(30, 500, 10), StartLag: lat(19000, 39000, 890)}
	stall := stats.OpSummary{Count: 30001, Rate: 1000, ResponseTime: lat(905215, 1018879, 50694),
		ServiceTime: lat(19, 1000447, 779), StartLag: lat(897023, 1007615, 49915)}
	for _, tt := range []struct {
		name         string
		sum          stats.OpSummary
		series       []stats.Point
		procs, cores int
		want         bool
	}{
		{"generator's own lag on 1 of 2 cores", generator, []stats.Point{pt(5000, 10, 8), pt(5000, 12, 8)}, 1, 2, true},
		{"generator's own lag on every core", generator, []stats.Point{pt(5000, 10, 8), pt(5000, 12, 8)}, 2, 2, false},
		{"a store stall on 1 of 2 cores", stall, []stats.Point{pt(1000, 4, 8), pt(1009, 7902, 8), pt(1000, 5, 8)}, 1, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := input(10, 1000, tt.sum.Count, tt.series)
			in.Cumulative.Ops["read"] = tt.sum
			r := Build(in)
			r.Client.GOMAXPROCS, r.Client.NumCPU = tt.procs, tt.cores
			hint := "ran on 1 of this machine's 2 cores (GOMAXPROCS; --threads auto leaves the rest to a store on this machine): as the generator was the limit, run with --threads all"
			if tt.want {
				checkWarnings(t, warnings(r, in), []string{hint}, nil)
			} else {
				checkWarnings(t, warnings(r, in), nil, []string{"--threads all"})
			}
		})
	}
}
