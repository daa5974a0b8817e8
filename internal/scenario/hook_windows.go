//go:build windows

package scenario

import (
	"os"
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGroup is a hook command's processes on Windows: a job object that the command is
// put in as soon as it started, so its children are in it too, and which kills them all
// when closed (also when ndbench dies). Without the job (it could not be made), only the
// command itself is killed.
type procGroup struct {
	p   *os.Process
	job windows.Handle
}

func setGroup(*exec.Cmd) {}

func newGroup(p *os.Process) *procGroup {
	g := &procGroup{p: p}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	g.job = job
	return g
}

func (g *procGroup) kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
	_ = g.p.Kill()
}

func (g *procGroup) release() {
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
		g.job = 0
	}
}
