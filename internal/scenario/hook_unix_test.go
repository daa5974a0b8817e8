//go:build unix

package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive tells whether pid is a running process: a zombie (killed, not yet reaped by an
// init that may never reap) counts as gone.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// pid (comm) S ...: the state follows the last parenthesis.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// pidsIn reads the pids the hooks wrote, one a line, into dir's files.
func pidsIn(t *testing.T, dir string) []int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(line)
			if err != nil {
				t.Fatalf("%s: %q", f, line)
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoneSurvive fails for every pid still running 30 s after the hook returned: a
// killed process needs its parent, or init, to notice, which takes a moment, longer on a
// loaded machine, but the processes the hooks start sleep for 1001 s.
func checkNoneSurvive(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("process %d of the hook survived it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestHookProcessesEndWithTheHook: a hook's command runs in a process group of its own,
// killed whole at its timeout, when the run is cancelled, and when the command exits;
// the hook's verdict is its own exit status, whatever its children hold open.
func TestHookProcessesEndWithTheHook(t *testing.T) {
	tests := []struct {
		name    string
		run     string // $D is the test's directory, for the pid files
		timeout time.Duration
		cancel  time.Duration // cancel the run this long after the start (0: never)
		expect  int
		want    string // in the error; "" for none
	}{
		{"sleeps past its timeout", `echo $$ > $D/sh.pid; sleep 1001`, 300 * time.Millisecond, 0, 0, "timed out after 300ms"},
		{"waits on a child past its timeout", `sleep 1001 & echo $! > $D/child.pid; wait`, 400 * time.Millisecond, 0, 0, "timed out after 400ms"},
		{"grandchild past its timeout", `sh -c 'sleep 1001 & echo $! > $D/grandchild.pid; wait' & wait`, 300 * time.Millisecond, 0, 0, "timed out"},
		{"leaves a child and exits 0", `sleep 1001 & echo $! > $D/child.pid; echo started`, 5 * time.Second, 0, 0, ""},
		{"leaves a child that holds stderr and exits 0", `(sleep 1001 >&2) & echo $! > $D/child.pid`, 5 * time.Second, 0, 0, ""},
		{"leaves a child and exits 3", `sleep 1001 & echo $! > $D/child.pid; echo boom >&2; exit 3`, 5 * time.Second, 0, 0, "exited 3, expected 0: boom"},
		{"leaves a child and exits as expected", `sleep 1001 & echo $! > $D/child.pid; exit 7`, 5 * time.Second, 0, 7, ""},
		{"cancelled by the run", `sleep 1001 & echo $! > $D/child.pid; wait`, 30 * time.Second, 300 * time.Millisecond, 0, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.cancel)
				defer cancel()
			}
			a := Action{Run: strings.ReplaceAll(tt.run, "$D", dir), ExpectExit: tt.expect, Timeout: tt.timeout}
			// The processes sleep 1001 s: a hook that waited for them (or for the pipe
			// they hold) would still run after the test's patience of a minute, which
			// is no bound on how soon a loaded machine ends it.
			began := time.Now()
			done := make(chan error, 1)
			go func() { done <- a.Do(ctx, nil) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				t.Errorf("the hook still ran a minute after its start (timeout %v): it waits for the processes it started", tt.timeout)
				checkNoneSurvive(t, pidsIn(t, dir))
				return
			}
			t.Logf("the hook took %v", time.Since(began).Round(time.Millisecond))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
			pids := pidsIn(t, dir)
			if len(pids) == 0 {
				t.Fatal("the hook wrote no pid")
			}
			checkNoneSurvive(t, pids)
		})
	}
}

// TestInterruptKillsHookProcesses: no process of a scenario's hooks, its action's or its
// undo's, outlives the run: an interrupt kills the action in flight with everything it
// started, and an undo that outlasts its timeout is killed whole.
func TestInterruptKillsHookProcesses(t *testing.T) {
	dir := t.TempDir()
	sc, inst := nodeFor(t, `
config:
  driver: {name: memory}
  workload: {readRate: 50, writeEnabled: false, numKeys: 10}
phases:
  - {name: p, duration: 30s}
hooks:
  - {name: fault, at: 0s, run: "sleep 1001 & echo $! > `+dir+`/fault.pid", for: 20s,
     undo: {run: "sleep 1001 & echo $! > `+dir+`/undo.pid; wait", timeout: 500ms}}
  - {name: long, at: 0s, run: "sleep 1001 & echo $! > `+dir+`/long.pid; wait", timeout: 1m}
thresholds:
  - {check: read.p99 < 1s, window: phase p}
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	out, err := Run(ctx, inst, sc, RunOptions{Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Interrupted {
		t.Errorf("not interrupted: %+v", out)
	}
	// The undo ran, and its timeout, not the interrupt, ended it: a failed undo.
	if !strings.Contains(out.Error, "hook fault undo") || !strings.Contains(out.Error, "timed out after 500ms") {
		t.Errorf("error %q, want the undo's timeout", out.Error)
	}
	pids := pidsIn(t, dir)
	if len(pids) != 3 {
		t.Fatalf("pids %v, want the fault's, the undo's and the long hook's", pids)
	}
	checkNoneSurvive(t, pids)
}
