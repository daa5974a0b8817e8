package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The conditions a round runs each tool in (issue 39: client CPU per operation on a CPU
// shared with another busy process, and under a container-style quota, against the same
// tool on the machine as it is).
const (
	condIdle  = "idle"  // the machine as it is
	condBusy  = "busy"  // a spinning process pinned to the last core while the tool runs
	condQuota = "quota" // the tool's process in a cgroup with a CPU bandwidth limit
)

// conditions are the conditions o asks for, the machine as it is first.
func (o options) conditions() []string {
	c := []string{condIdle}
	if o.busy {
		c = append(c, condBusy)
	}
	if o.quota > 0 {
		c = append(c, condQuota)
	}
	return c
}

// busyCore starts the busy condition's competitor: a shell loop that never sleeps,
// pinned with taskset to the last core (on 2 cores, one core kept busy; the tool and
// the store share what is left with it). stop kills it by PID and reaps it.
func busyCore() (stop func(), err error) {
	cpu := strconv.Itoa(runtime.NumCPU() - 1)
	cmd := exec.Command("taskset", "-c", cpu, "sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the busy core's loop (taskset -c %s sh): %w", cpu, err)
	}
	return func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}, nil
}

// cgroupKey carries, in a round's context, the cgroup every process runProcess starts
// goes into (the quota condition), so the tools' runners need not know the condition.
type cgroupKey struct{}

func withCgroup(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, cgroupKey{}, dir)
}

// intoCgroup makes cmd join the cgroup dir before it executes: a shell writes its own
// PID into the cgroup, then execs the tool, so the tool's runtime (Go's GOMAXPROCS, from
// the quota since Go 1.25) sees the limit from its first instruction, and wait4's CPU
// figures are the tool's. (Moving the process after it started would let it size its
// threads for the whole machine first.)
func intoCgroup(cmd *exec.Cmd, dir string) {
	procs := filepath.Join(dir, "cgroup.procs")
	cmd.Args = append([]string{"sh", "-c", `echo $$ > "$0" && exec "$@"`, procs, cmd.Path}, cmd.Args[1:]...)
	if sh, err := exec.LookPath("sh"); err == nil {
		cmd.Path = sh
	} else {
		cmd.Err = fmt.Errorf("the quota condition needs sh: %w", err)
	}
}

// quotaCgroup creates a cgroup limited to cpus CPUs (cgroup v2's cpu.max, or v1's
// cpu.cfs_quota_us under the cpu controller's mount) for the quota condition, and returns
// its directory and a function that removes it (once its processes have exited). root is
// /sys/fs/cgroup outside tests.
func quotaCgroup(root string, cpus float64) (dir string, remove func(), err error) {
	const period = 100000 // µs, the kernel's default
	quota := int(cpus * period)
	name := fmt.Sprintf("ndbench-benchpeers-%d", os.Getpid())
	var files map[string]string
	if b, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil && slices.Contains(strings.Fields(string(b)), "cpu") {
		// v2: the root must hand the cpu controller to its children.
		_ = os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
		dir = filepath.Join(root, name)
		files = map[string]string{"cpu.max": fmt.Sprintf("%d %d", quota, period)}
	} else if _, err := os.Stat(filepath.Join(root, "cpu", "cpu.cfs_quota_us")); err == nil {
		dir = filepath.Join(root, "cpu", name)
		files = map[string]string{"cpu.cfs_period_us": strconv.Itoa(period), "cpu.cfs_quota_us": strconv.Itoa(quota)}
	} else {
		return "", nil, fmt.Errorf("-quota: no cgroup CPU controller at %s (neither v2's cgroup.controllers listing cpu nor v1's cpu/cpu.cfs_quota_us)", root)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("-quota: create cgroup %s: %w (it needs root, or a delegated cgroup)", dir, err)
	}
	remove = func() {
		// The last tool's process may take a moment to leave after wait4.
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Period before quota: v1 refuses a quota above the period it has.
	for _, f := range []string{"cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.max"} {
		v, ok := files[f]
		if !ok {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			remove()
			return "", nil, fmt.Errorf("-quota: set %s to %s: %w", filepath.Join(dir, f), v, err)
		}
	}
	return dir, remove, nil
}

// throttling is a cgroup's CPU bandwidth counters (cpu.stat): enforcement periods, those
// in which the cgroup ran out of quota, and the time its threads waited for the next.
type throttling struct {
	periods, throttled int64
	wait               time.Duration
}

// readThrottling reads dir/cpu.stat: v1's nr_periods, nr_throttled and throttled_time
// (ns), or v2's the same with throttled_usec. A quota that never throttles is not what
// moved a figure; one that does says by how much.
func readThrottling(dir string) (throttling, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return throttling{}, err
	}
	var t throttling
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			t.periods = n
		case "nr_throttled":
			t.throttled = n
		case "throttled_time":
			t.wait = time.Duration(n)
		case "throttled_usec":
			t.wait = time.Duration(n) * time.Microsecond
		}
	}
	return t, nil
}

// String is the round line's "throttled 3 of 80 periods, 12ms".
func (t throttling) String() string {
	return fmt.Sprintf("throttled %d of %d periods, %s", t.throttled, t.periods, t.wait.Round(time.Millisecond))
}

// cpuPerOpRatios returns, for each round where both ran, the tool's CPU per operation in
// a condition over the same in the idle condition: 1.2 is 20% more CPU for each operation.
func cpuPerOpRatios(idle, cond []*result) []float64 {
	var out []float64
	for r := range idle {
		if r < len(cond) && idle[r] != nil && cond[r] != nil && idle[r].opsPerCPU() > 0 && cond[r].opsPerCPU() > 0 {
			out = append(out, idle[r].opsPerCPU()/cond[r].opsPerCPU())
		}
	}
	return out
}

// peerRatios returns, for each round where both ran, ndbench's operations per client
// CPU-second over the peer's (above 1 ndbench does more per CPU-second).
func peerRatios(nd, peer []*result) []float64 {
	var out []float64
	for r := range nd {
		if r < len(peer) && nd[r] != nil && peer[r] != nil && peer[r].opsPerCPU() > 0 {
			out = append(out, nd[r].opsPerCPU()/peer[r].opsPerCPU())
		}
	}
	return out
}

// writeConditionTables prints, when more than one condition ran, each tool's operations
// per client CPU-second in every condition with its CPU per operation against idle
// (median of the rounds' ratios), then ndbench's ops per CPU-second over each peer's in
// every condition. results is condition → pair → tool → round.
func writeConditionTables(w io.Writer, ps []*pair, conds []string, results map[string]map[string][][]*result) {
	if len(conds) < 2 {
		return
	}
	head := "| pair | tool |"
	rule := "|---|---|"
	for _, c := range conds {
		head += " ops/CPU-s " + c + " |"
		rule += "---|"
	}
	for _, c := range conds[1:] {
		head += " CPU/op " + c + " ÷ idle (rounds) |"
		rule += "---|"
	}
	fmt.Fprintln(w, "\nClient CPU per operation by condition (idle: the machine as it is; busy: one core kept busy by a pinned loop; quota: the tool in a cgroup with a CPU limit):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, p := range ps {
		for i, t := range p.tools {
			row := fmt.Sprintf("| %s | %s |", p.name, t.name)
			for _, c := range conds {
				row += " " + num(median(collect(results[c][p.name][i], result.opsPerCPU))) + " |"
			}
			idle := results[condIdle][p.name][i]
			for _, c := range conds[1:] {
				rs := cpuPerOpRatios(idle, results[c][p.name][i])
				row += fmt.Sprintf(" **%s** (%s) |", ratio(median(rs)), ratioList(rs))
			}
			fmt.Fprintln(w, row)
		}
	}
	head, rule = "| pair | peer |", "|---|---|"
	for _, c := range conds {
		head += " ndbench ÷ peer ops/CPU-s " + c + " (rounds) |"
		rule += "---|"
	}
	fmt.Fprintln(w, "\nndbench's operations per client CPU-second over the peer's, by condition:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	for _, p := range ps {
		for i := 1; i < len(p.tools); i++ {
			row := fmt.Sprintf("| %s | %s |", p.name, p.tools[i].name)
			for _, c := range conds {
				rs := peerRatios(results[c][p.name][0], results[c][p.name][i])
				row += fmt.Sprintf(" **%s** (%s) |", ratio(median(rs)), ratioList(rs))
			}
			fmt.Fprintln(w, row)
		}
	}
}
