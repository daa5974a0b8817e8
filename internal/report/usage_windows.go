package report

import (
	"syscall"
	"time"
)

// ReadUsage returns the process's CPU time so far. The peak resident set size needs the
// process status API, which the standard library does not wrap: it reads 0 on Windows.
func ReadUsage() Usage {
	self, err := syscall.GetCurrentProcess()
	if err != nil {
		return Usage{}
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(self, &creation, &exit, &kernel, &user); err != nil {
		return Usage{}
	}
	return Usage{User: filetime(user), System: filetime(kernel)}
}

// filetime converts a duration in 100 ns ticks, as GetProcessTimes reports it.
func filetime(f syscall.Filetime) time.Duration {
	return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
}
