//go:build linux

package testserver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Pause freezes the server and every process it started (SIGSTOP), as a stalled store
// would be: connections stay open and requests get no answer. It returns once every
// thread is stopped. resume (SIGCONT) thaws them; it is safe to call more than once. A
// stopped server cannot be paused.
func (s *Server) Pause() (resume func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		return nil, fmt.Errorf("pause %s on %s: not running", s.Name, s.Addr())
	}
	pids := append([]int{s.cmd.Process.Pid}, descendants(s.cmd.Process.Pid)...)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	resume = func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	// A process stops only once one of its threads handles the signal; until then its
	// other threads keep answering (a memcached worker served a request after kill
	// returned). Wait, so that the caller's next request meets a stalled store.
	deadline := time.Now().Add(5 * time.Second)
	for !allStopped(pids) {
		if time.Now().After(deadline) {
			resume()
			return nil, fmt.Errorf("pause %s on %s: threads still running 5s after SIGSTOP", s.Name, s.Addr())
		}
		time.Sleep(time.Millisecond)
	}
	return resume, nil
}

// allStopped reports whether every thread of every process in pids is stopped (or gone).
func allStopped(pids []int) bool {
	for _, p := range pids {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", p))
		for _, path := range stats {
			b, err := os.ReadFile(path)
			if err != nil {
				continue // the thread exited
			}
			// The state follows the parenthesised command: "pid (comm) S ...".
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) {
				continue
			}
			if st := b[i+2]; st != 'T' && st != 't' && st != 'Z' && st != 'X' {
				return false
			}
		}
	}
	return true
}
