package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWorkloadsCommand(t *testing.T) {
	tests := []struct {
		args    []string
		code    int
		want    []string // in stdout (or stderr for errors)
		notWant []string
	}{
		{args: []string{"workloads"}, want: []string{"NAME", "DESCRIPTION",
			"ndbench-default", "NDBench's own defaults", "workload.zipfExponent=0.5",
			"ycsb-a", "YCSB A, update heavy", "workload.readRate=500", "workload.writeRate=500",
			"ycsb-c", "workload.writeEnabled=false",
			"ycsb-d", "workload.pattern=latest",
			"ycsb-e", "needs a driver with a scan operation", "workload.readMix=scan",
			"ycsb-f", "50% read-modify-writes (rmw)", "workload.writeMix=rmw",
			"--workload NAME", "only drivers declaring it offer (in this build: ",
			// The key patterns, with their options and where each is set.
			"PATTERN", "uniform (random)", "scrambled_zipfian (scrambled)",
			"hotspot", "workload.hotKeys=0.2 [0..1]", "workload.hotFraction=0.8 [0..1]",
			"exponential", "workload.expPercentile=95 [0..100]", "workload.expFraction=0.8571428571 [0..1]",
			"latest", "sliding_window_flip", "sequential"}},
		{args: []string{"workloads", "ycsb-a"}, want: []string{"# description: YCSB A", "# Source: YCSB workloads/workloada", "workload:\n", "  readRate: 500\n"},
			notWant: []string{"ycsb-b"}},
		{args: []string{"workloads", "nope"}, code: 2, want: []string{`no built-in preset "nope"`, "ycsb-a"}},
		{args: []string{"workloads", "a", "b"}, code: 2, want: []string{"at most one preset name"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := ndbench(t, nil, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestWorkloadFlag: --workload on config (the effective result with sources) and run;
// the preset ranks under --config, env and --set.
func TestWorkloadFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	mine := filepath.Join(dir, "mine.yaml")
	for p, text := range map[string]string{file: "workload:\n  writeRate: 11\n", mine: "workload:\n  readRate: 77\n"} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"NDBENCH_WORKLOAD_NUMKEYS=44"}
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines of `ndbench config` as fields, or error text
	}{
		{name: "sources", args: []string{"config", "--driver", "memory", "--workload", "ycsb-b", "-c", file, "--set", "workload.readers=66"},
			want: []string{"workload.readRate 950 preset ycsb-b", "workload.pattern ycsb_zipfian preset ycsb-b",
				"workload.writeRate 11 file " + file, "workload.numKeys 44 env NDBENCH_WORKLOAD_NUMKEYS",
				"workload.readers 66 --set", "workload.opTimeout 5s default"}},
		{name: "shorthand", args: []string{"config", "--driver", "memory", "-w", "ndbench-default"},
			want: []string{"workload.zipfExponent 0.5 preset ndbench-default"}},
		{name: "user file", args: []string{"config", "--wide", "--driver", "memory", "--workload", mine},
			want: []string{"workload.readRate 77 preset file " + mine}},
		{name: "unknown", args: []string{"config", "--workload", "ycsb-z"}, code: 2,
			want: []string{"--workload ycsb-z", "not a built-in preset", "ndbench-default, ycsb-a, ycsb-b"}},
		{name: "missing path", args: []string{"run", "--workload", "./nope.yaml"}, code: 2,
			want: []string{"--workload ./nope.yaml", "does not exist", "a path must name an existing"}},
		{name: "scan on memory", args: []string{"config", "--driver", "memory", "--workload", "ycsb-e"},
			want: []string{"workload.readMix scan preset ycsb-e"}},
		{name: "serve", args: []string{"serve", "--workload", "ycsb-z"}, code: 2, want: []string{"--workload ycsb-z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndbench(t, env, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errOut)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				lines = append(lines, strings.Join(strings.Fields(l), " "))
			}
			got := strings.Join(lines, "\n") + errOut
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
}

func TestRunWithPreset(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--workload", "ycsb-c", "--duration", "500ms", "--report", rep)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := readReport(t, rep)
	if r.Backfill == nil || r.Backfill.Written != 1000 {
		t.Errorf("ycsb-c's load phase (backfill) wrote %+v, want 1000 keys", r.Backfill)
	}
	if r.Ops["read"].Count == 0 || r.Ops["write"].Count != 0 {
		t.Errorf("ycsb-c ran %d reads and %d writes, want reads only", r.Ops["read"].Count, r.Ops["write"].Count)
	}
}

// TestRunYCSBDGrowsTheKeyspace: ycsb-d's inserts write new keys, so the keyspace the
// report and the summary give is numKeys plus the inserts made, and its latest reads,
// validated, find no value lost.
func TestRunYCSBDGrowsTheKeyspace(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--workload", "ycsb-d", "--duration", "1s",
		"--set", "workload.validate=true", "--report", rep)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := readReport(t, rep)
	ins := r.Ops["write"].Count
	if ins == 0 || r.Keyspace == nil || r.Keyspace.NumKeys != 1000 || r.Keyspace.Inserted < ins || r.Keyspace.Size != 1000+r.Keyspace.Inserted {
		t.Fatalf("%d inserts measured; keyspace %+v, want 1000 keys plus at least those inserts", ins, r.Keyspace)
	}
	if want := fmt.Sprintf("keyspace: %d keys (numKeys 1000 + %d inserted)", r.Keyspace.Size, r.Keyspace.Inserted); !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
	if n := r.Ops["read"].Validation["lost"]; n != 0 || r.Ops["read"].Count == 0 {
		t.Errorf("reads %d, lost %d; want reads and none lost", r.Ops["read"].Count, n)
	}
}

// TestPatternOptionErrors: the options of the patterns are refused with the key, the
// value and what is allowed, before anything runs.
func TestPatternOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want []string
	}{
		{"percentile 100", []string{"workload.pattern=exponential", "workload.expPercentile=100"},
			[]string{`workload.expPercentile: invalid value "100" (from --set); allowed: a percentage greater than 0 and less than 100`}},
		{"fraction 0", []string{"workload.pattern=exponential", "workload.expFraction=0"},
			[]string{`workload.expFraction: invalid value "0" (from --set); allowed: a fraction greater than 0 and at most 1`}},
		{"hot keys 0", []string{"workload.pattern=hotspot", "workload.hotKeys=0"},
			[]string{`workload.hotKeys: invalid value "0" (from --set)`}},
		{"unknown pattern beside another error", []string{"workload.pattern=gaussian", "workload.readRate=-1"},
			[]string{`workload.pattern: invalid value "gaussian" (from --set); allowed: uniform, random, zipfian`, "workload.readRate"}},
		{"pattern options of a built-in", []string{"workload.pattern=hotspot", "workload.patternOptions=hotKeys=0.5"},
			[]string{`workload.patternOptions: invalid value "hotKeys=0.5" (from --set); allowed: nothing: pattern hotspot has no options of its own (hotKeys is set with workload.hotKeys)`}},
		{"pattern options without a value", []string{"workload.pattern=uniform", "workload.patternOptions=spread"},
			[]string{`workload.patternOptions: invalid value "spread" (from --set); allowed: nothing: pattern uniform has no options of its own`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"config", "--driver", "memory"}
			for _, s := range tc.sets {
				args = append(args, "--set", s)
			}
			code, out, errOut := ndbench(t, nil, args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestRunExponentialWithOptions: YCSB's exponential parameters reach the run.
func TestRunExponentialWithOptions(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--duration", "300ms", "--report", rep,
		"--set", "workload.pattern=exponential", "--set", "workload.expPercentile=50", "--set", "workload.expFraction=0.1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := readReport(t, rep)
	got := map[string]string{}
	for _, e := range r.Config {
		got[e.Key] = e.Value
	}
	if got["workload.expPercentile"] != "50" || got["workload.expFraction"] != "0.1" || r.Ops["read"].Count == 0 {
		t.Errorf("report: expPercentile %q, expFraction %q, %d reads", got["workload.expPercentile"], got["workload.expFraction"], r.Ops["read"].Count)
	}
}
