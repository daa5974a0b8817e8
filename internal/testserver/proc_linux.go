package testserver

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// errPlatform is nil: Linux has everything the harness needs to control a server's processes.
var errPlatform error

// sysProcAttr returns the process attributes of a server (newGroup) or a helper command:
// run as runAs when set, leave the test binary's process group when newGroup (so a kill of
// the group reaches the server's helpers and nothing else), and die with the test binary
// (Pdeathsig) so a crashed or killed test never leaves a server behind.
func sysProcAttr(runAs *account, newGroup bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: newGroup, Pdeathsig: syscall.SIGKILL}
	if runAs != nil {
		a.Credential = &syscall.Credential{Uid: runAs.uid, Gid: runAs.gid}
	}
	return a
}

// signalPID sends sig to pid; a process that is already gone is not an error.
func signalPID(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// killGroup SIGKILLs every process in process group pgid; an empty group is not an error.
func killGroup(pgid int) error { return signalPID(-pgid, syscall.SIGKILL) }

// procs lists the processes on the machine; unreadable entries are skipped.
func procs() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command: state ppid pgrp ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		var ticks int64
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64) // utime
			st, _ := strconv.ParseInt(f[12], 10, 64) // stime
			ticks = ut + st
		}
		out = append(out, procStat{pid: pid, ppid: ppid, pgrp: pgrp, zombie: f[0] == "Z", cpu: time.Duration(ticks) * time.Second / 100})
	}
	return out
}
