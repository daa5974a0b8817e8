//go:build linux

package testserver

import (
	"fmt"
	"syscall"
)

// Pause freezes the server and every process it started (SIGSTOP), as a stalled store
// would be: connections stay open and requests get no answer. resume (SIGCONT) thaws them;
// it is safe to call more than once. A stopped server cannot be paused.
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
	return func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}, nil
}
