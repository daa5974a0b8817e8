//go:build integration && linux

package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveProc is a real `ndbench serve` process (this test binary as ndbench) and its output.
type serveProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

func startServeProc(t *testing.T, dir string, args ...string) *serveProc {
	t.Helper()
	raw, _ := json.Marshal(append([]string{"serve"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNdbenchMain$")
	cmd.Env = append(os.Environ(), helperArgsEnv+"="+string(raw), "XDG_DATA_HOME="+dir, "HOME="+dir)
	p := &serveProc{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitUntil(t, 60*time.Second, "serve to listen", func() bool { return strings.Contains(p.out.String(), "serving on") }, p.exited, p.out)
	return p
}

// stop ends the process by signal (sig, sent to its PID) and waits for it.
func (p *serveProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still runs 30 s after %v\n%s", sig, p.out.String())
	}
}

type previousServeStatus struct {
	PreviousServe *struct {
		PID          int       `json:"pid"`
		LastSeen     time.Time `json:"lastSeen"`
		Driver       string    `json:"driver"`
		SessionSince time.Time `json:"sessionSince"`
		Running      []string  `json:"running"`
		Message      string    `json:"message"`
	} `json:"previousServe"`
}

func serveStatus(t *testing.T, addr string) previousServeStatus {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st previousServeStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A serve killed by SIGKILL while it runs load leaves no report and records nothing; the
// serve started after it on the same address says so, in its log and in GET
// /api/v1/status: the old process's pid, when it was last alive, and the driver session
// it lost. A serve that stopped cleanly leaves nothing to say.
func TestRestartedServeSaysWhatItLost(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--listen", addr}

	first := startServeProc(t, dir, append(args, "--set", "driver.name=memory", "--set", "workload.readRate=50", "--set", "workload.writeRate=10", "--start")...)
	pid := first.cmd.Process.Pid
	// Its state is noted every second: wait for a note with the load running.
	state := filepath.Join(dir, "ndbench", "serve-"+strings.ReplaceAll(addr, ":", "_")+".state.json")
	waitUntil(t, 30*time.Second, "the serve's state with its load", func() bool {
		b, err := os.ReadFile(state)
		return err == nil && strings.Contains(string(b), `"running":["read","write"]`)
	}, first.exited, first.out)
	first.stop(t, syscall.SIGKILL)
	killed := time.Now()

	second := startServeProc(t, dir, args...)
	st := serveStatus(t, addr)
	p := st.PreviousServe
	if p == nil {
		t.Fatalf("the status after a SIGKILL says nothing of the previous serve\n%s", second.out.String())
	}
	if p.PID != pid || p.Driver != "memory" || strings.Join(p.Running, ",") != "read,write" || p.SessionSince.IsZero() {
		t.Errorf("previousServe %+v; want pid %d, driver memory, running read and write, its session's start", *p, pid)
	}
	if gap := killed.Sub(p.LastSeen); gap < 0 || gap > 3*time.Second {
		t.Errorf("the previous serve was last seen %v before it was killed; want within a few seconds (it notes every second)", gap)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", pid), "without a clean stop", "had no report", "not recorded"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("previousServe.message %q does not say %q", p.Message, want)
		}
		if !strings.Contains(second.out.String(), want) {
			t.Errorf("the restarted serve's log does not say %q:\n%s", want, second.out.String())
		}
	}

	// Stopped cleanly (Ctrl-C), the next serve has nothing to report.
	second.stop(t, syscall.SIGINT)
	third := startServeProc(t, dir, args...)
	if st := serveStatus(t, addr); st.PreviousServe != nil {
		t.Errorf("after a clean stop the status says %+v of the previous serve; want nothing", *st.PreviousServe)
	}
	if strings.Contains(third.out.String(), "without a clean stop") {
		t.Errorf("after a clean stop the serve's log says:\n%s", third.out.String())
	}
	third.stop(t, syscall.SIGINT)
}
