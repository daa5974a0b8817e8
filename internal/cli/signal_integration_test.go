//go:build integration && linux

package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperArgsEnv makes this test binary, run again as a child process, be ndbench: Main
// with the arguments it holds (JSON), so the test sends real signals to a real process.
const helperArgsEnv = "CLI_TEST_MAIN_ARGS" // not NDBENCH_: ndbench reads those as configuration

func TestHelperNdbenchMain(t *testing.T) {
	raw := os.Getenv(helperArgsEnv)
	if raw == "" {
		return // the test binary itself: not a helper
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(Main(args))
}

// TestSecondInterruptKillsHookGroups: a second Ctrl-C during the shutdown ends ndbench at
// once, but not before the hook commands' process groups are killed (issue 36): the
// first interrupt starts the undo of a fault in force, whose command ignores signals and
// would run for minutes; the second must leave nothing of it behind.
func TestSecondInterruptKillsHookGroups(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "undo.pid")
	scen := filepath.Join(dir, "s.yaml")
	// The undo writes its group's id ($$, the shell leading the group) and then waits in a
	// child that ignores INT and TERM, as a slow fault-removal tool might.
	if err := os.WriteFile(scen, []byte(`name: second-interrupt
config:
  driver: {name: memory}
  workload: {readRate: 50, writeRate: 10}
phases:
  - {name: main, duration: 2m}
hooks:
  - name: fault
    at: main + 0s
    run: "true"
    for: 2m
    undo: {run: "trap '' INT TERM; echo $$ > `+pidFile+`.tmp && mv `+pidFile+`.tmp `+pidFile+`; sleep 300", timeout: 10m}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{"scenario", "run", scen})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNdbenchMain$")
	cmd.Env = append(os.Environ(), helperArgsEnv+"="+string(args), "XDG_DATA_HOME="+dir, "HOME="+dir)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if b, err := os.ReadFile(pidFile); err == nil {
			if pgid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pgid > 1 {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	})

	// The load runs once the hook has run: its mark is in the log.
	waitUntil(t, 60*time.Second, "the hook to run", func() bool { return strings.Contains(out.String(), "hook fault") }, exited, &out)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var pgid int
	waitUntil(t, 30*time.Second, "the undo to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pgid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pgid > 0 && groupAlive(pgid)
	}, exited, &out)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("ndbench ended with %v after the second interrupt, want exit 3 (aborted)\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("ndbench still runs 10 s after the second interrupt\n%s", out.String())
	}
	// The kill is sent before the exit; the group's members die an instant later.
	deadline := time.Now().Add(5 * time.Second)
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if groupAlive(pgid) {
		t.Errorf("the undo's process group %d outlived ndbench\n%s", pgid, out.String())
	}
	if !strings.Contains(out.String(), "second interrupt") {
		t.Errorf("ndbench did not say why it exited:\n%s", out.String())
	}
}

// waitUntil polls cond until it holds, failing the test after d or if the process exits.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool, exited <-chan error, out *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		select {
		case err := <-exited:
			t.Fatalf("ndbench exited (%v) while waiting for %s\n%s", err, what, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s\n%s", what, d, out.String())
		}
	}
}

// groupAlive tells whether a live (not zombie) process is in process group pgid: the
// group's shell, once ndbench is gone, is nobody's child, and a container's init may
// never reap it.
func groupAlive(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
