//go:build unix

package engine

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) the test process has used so far, or
// 0 if the system cannot tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
