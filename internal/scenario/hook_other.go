//go:build !unix && !windows

package scenario

import (
	"os"
	"os/exec"
)

// procGroup is a hook command alone, where the system has no process groups ndbench
// knows how to kill: its children are not reached.
type procGroup struct{ p *os.Process }

func setGroup(*exec.Cmd) {}

func newGroup(p *os.Process) *procGroup { return &procGroup{p: p} }

func (g *procGroup) kill() { _ = g.p.Kill() }

func (g *procGroup) release() {}
