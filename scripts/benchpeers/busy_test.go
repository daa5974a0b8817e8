package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// res is a round's result of ops operations on cpu seconds of client CPU.
func res(ops, cpu float64) *result {
	return &result{ops: ops, cpu: time.Duration(cpu * float64(time.Second))}
}

func TestConditionRatios(t *testing.T) {
	tests := []struct {
		name        string
		idle, other []*result
		want        []float64
	}{
		// 100k ops on 1 CPU-s idle, 100k on 1.2 CPU-s busy: 1.2× the CPU per operation.
		{"busy costs 20% more per operation", []*result{res(100000, 1)}, []*result{res(100000, 1.2)}, []float64{1.2}},
		// Fewer operations on the same CPU is also more CPU per operation.
		{"fewer operations on the same CPU", []*result{res(100000, 1)}, []*result{res(50000, 1)}, []float64{2}},
		{"a round that failed in one condition is left out", []*result{res(10, 1), nil, res(10, 1)}, []*result{res(10, 1), res(10, 1), nil}, []float64{1}},
		{"no CPU figure is no ratio", []*result{res(10, 0)}, []*result{res(10, 1)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cpuPerOpRatios(tt.idle, tt.other)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if d := got[i] - tt.want[i]; d > 1e-9 || d < -1e-9 {
					t.Errorf("got %v, want %v", got, tt.want)
				}
			}
		})
	}
	// ndbench 60k ops/CPU-s against a peer's 50k: 1.2×.
	if got := peerRatios([]*result{res(60000, 1), nil}, []*result{res(50000, 1), res(1, 1)}); len(got) != 1 || got[0] != 1.2 {
		t.Errorf("peerRatios = %v, want [1.2]", got)
	}
}

// TestConditionTables: the tables a user reads after -busy -quota: each tool's ops per
// CPU-second in each condition, its CPU per op against idle, and ndbench over its peer
// in each condition, all medians of the rounds.
func TestConditionTables(t *testing.T) {
	ps := []*pair{{name: "redis", tools: []tool{{name: "ndbench"}, {name: "redis-benchmark"}}}}
	results := map[string]map[string][][]*result{
		condIdle:  {"redis": {{res(100, 1), res(120, 1), res(110, 1)}, {res(80, 1), res(100, 1), res(90, 1)}}},
		condBusy:  {"redis": {{res(100, 1.1), res(120, 1.2), res(110, 1.3)}, {res(80, 1.5), res(100, 1.5), res(90, 1.5)}}},
		condQuota: {"redis": {{res(100, 1), res(120, 1), nil}, {res(80, 1), res(100, 1), res(90, 1)}}},
	}
	var b bytes.Buffer
	writeConditionTables(&b, ps, []string{condIdle, condBusy, condQuota}, results)
	out := b.String()
	for _, want := range []string{
		"| pair | tool | ops/CPU-s idle | ops/CPU-s busy | ops/CPU-s quota | CPU/op busy ÷ idle (rounds) | CPU/op quota ÷ idle (rounds) |",
		// ndbench busy: 1.1, 1.2, 1.3 the CPU per op; ops/CPU-s 90.9, 100, 84.6: median 91.
		"| redis | ndbench | 110 | 91 | 110 | **1.20×** (1.10, 1.20, 1.30) | **1.00×** (1.00, 1.00) |",
		"| redis | redis-benchmark | 90 | 60 | 90 | **1.50×** (1.50, 1.50, 1.50) | **1.00×** (1.00, 1.00, 1.00) |",
		// Busy: 100/1.1 ÷ 80/1.5 = 1.70; 120/1.2 ÷ 100/1.5 = 1.50; 110/1.3 ÷ 90/1.5 = 1.41.
		"| redis | redis-benchmark | **1.22×** (1.25, 1.20, 1.22) | **1.50×** (1.70, 1.50, 1.41) | **1.23×** (1.25, 1.20) |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the tables lack\n%s\nin\n%s", want, out)
		}
	}
	b.Reset()
	writeConditionTables(&b, ps, []string{condIdle}, results)
	if b.Len() != 0 {
		t.Errorf("one condition: want no condition tables, got\n%s", b.String())
	}
}

func TestConditionsAndFlags(t *testing.T) {
	o := options{}
	if got := o.conditions(); len(got) != 1 || got[0] != condIdle {
		t.Errorf("no -busy, no -quota: conditions %v, want [idle]", got)
	}
	o.busy, o.quota = true, 1
	if got := strings.Join(o.conditions(), ","); got != "idle,busy,quota" {
		t.Errorf("-busy -quota 1: conditions %s, want idle,busy,quota", got)
	}
}

// TestQuotaCgroup: the quota condition's cgroup on both cgroup versions' layouts (a
// directory of the test's standing in for /sys/fs/cgroup), and a clear error where
// neither is.
func TestQuotaCgroup(t *testing.T) {
	tests := []struct {
		name    string
		layout  map[string]string // files under the root
		cpus    float64
		files   map[string]string // files of the new cgroup, relative to the root
		wantErr string
	}{
		{"v2", map[string]string{"cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": ""}, 1,
			map[string]string{"cgroup.subtree_control": "+cpu", "{cg}/cpu.max": "100000 100000"}, ""},
		{"v2, half a CPU", map[string]string{"cgroup.controllers": "cpu\n", "cgroup.subtree_control": ""}, 0.5,
			map[string]string{"{cg}/cpu.max": "50000 100000"}, ""},
		{"v1", map[string]string{"cpu/cpu.cfs_quota_us": "-1", "unified/cgroup.controllers": ""}, 1.5,
			map[string]string{"cpu/{cg}/cpu.cfs_period_us": "100000", "cpu/{cg}/cpu.cfs_quota_us": "150000"}, ""},
		{"v2 without the cpu controller, no v1", map[string]string{"cgroup.controllers": "cpuset io memory\n"}, 1, nil,
			"-quota: no cgroup CPU controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for f, v := range tt.layout {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dir, remove, err := quotaCgroup(root, tt.cpus)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cg := filepath.Base(dir)
			for f, want := range tt.files {
				b, err := os.ReadFile(filepath.Join(root, strings.ReplaceAll(f, "{cg}", cg)))
				if err != nil || string(b) != want {
					t.Errorf("%s: %q, %v; want %q", f, b, err, want)
				}
			}
			// A real cgroup's files go with its directory; here they are plain files.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
			remove()
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("after remove: %s still there (%v)", dir, err)
			}
		})
	}
}

// TestIntoCgroup: a process started for the quota condition writes its own PID into the
// cgroup before the tool runs, the tool gets its arguments unchanged, and wait4's CPU is
// the tool's.
func TestIntoCgroup(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("cgroups and sh are Linux's; the quota condition is not offered elsewhere")
	}
	cg := t.TempDir()
	procs := filepath.Join(cg, "cgroup.procs")
	target := filepath.Join(t.TempDir(), "tool wrote this")
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BENCHPEERS_CHILD_WRITE="+target)
	ctx := withCgroup(context.Background(), cg)
	cpu, _, out, err := runProcess(ctx, t.TempDir(), "child", cmd)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, err := os.ReadFile(procs)
	if err != nil {
		t.Fatalf("the child did not join the cgroup: %v", err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || pid != cmd.ProcessState.Pid() {
		t.Errorf("cgroup.procs holds %q, want the tool's own PID %d (exec keeps it)", b, cmd.ProcessState.Pid())
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the tool did not run with its arguments: %v", err)
	}
	if cpu <= 0 {
		t.Errorf("CPU %v, want the tool's user+system time", cpu)
	}
}

// TestReadThrottling: the quota condition's round line says whether the quota bit, from
// either cgroup version's cpu.stat.
func TestReadThrottling(t *testing.T) {
	for _, tt := range []struct {
		name, stat string
		want       throttling
	}{
		{"v1", "nr_periods 80\nnr_throttled 3\nthrottled_time 12000000\nnr_bursts 0\nburst_time 0\n", throttling{80, 3, 12 * time.Millisecond}},
		{"v2", "usage_usec 9\nuser_usec 5\nsystem_usec 4\nnr_periods 41\nnr_throttled 0\nthrottled_usec 0\n", throttling{41, 0, 0}},
		{"v2 throttled", "nr_periods 10\nnr_throttled 10\nthrottled_usec 250000\n", throttling{10, 10, 250 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte(tt.stat), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readThrottling(dir)
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if s := (throttling{80, 3, 12 * time.Millisecond}).String(); s != "throttled 3 of 80 periods, 12ms" {
		t.Errorf("String() = %q", s)
	}
	if _, err := readThrottling(t.TempDir()); err == nil {
		t.Error("no cpu.stat: want an error")
	}
}
