package cli

import (
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
			"--workload NAME", "only drivers declaring it offer (in this build: "}},
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
			want: []string{"workload.readRate 950 preset ycsb-b", "workload.pattern scrambled_zipfian preset ycsb-b",
				"workload.writeRate 11 file " + file, "workload.numKeys 44 env NDBENCH_WORKLOAD_NUMKEYS",
				"workload.readers 66 --set", "workload.opTimeout 5s default"}},
		{name: "shorthand", args: []string{"config", "--driver", "memory", "-w", "ndbench-default"},
			want: []string{"workload.zipfExponent 0.5 preset ndbench-default"}},
		{name: "user file", args: []string{"config", "--driver", "memory", "--workload", mine},
			want: []string{"workload.readRate 77 preset file " + mine}},
		{name: "unknown", args: []string{"config", "--workload", "ycsb-z"}, code: 2,
			want: []string{"--workload ycsb-z", "not a built-in preset", "ndbench-default, ycsb-a, ycsb-b"}},
		{name: "missing path", args: []string{"run", "--workload", "./nope.yaml"}, code: 2,
			want: []string{"--workload ./nope.yaml", "does not exist", "a path must name an existing"}},
		{name: "scan on memory", args: []string{"config", "--driver", "memory", "--workload", "ycsb-e"}, code: 2,
			want: []string{`workload.readMix: invalid value "scan" (from preset ycsb-e); allowed: operations of driver memory: read, write`}},
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
