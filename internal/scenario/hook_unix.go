//go:build unix

package scenario

import (
	"os"
	"os/exec"
	"syscall"
)

// procGroup is a hook command's process group: the command leads it, and what it starts
// stays in it unless it leaves on purpose (setsid).
type procGroup struct{ pgid int }

func setGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func newGroup(p *os.Process) *procGroup { return &procGroup{pgid: p.Pid} }

// kill kills every process of the group. The group's id cannot be taken by another
// process while any member lives, so once the leader is reaped a kill reaches its
// leftovers or nothing (ESRCH, ignored).
func (g *procGroup) kill() { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }

func (g *procGroup) release() {}
