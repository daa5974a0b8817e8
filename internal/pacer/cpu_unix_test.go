//go:build unix

package pacer

import (
	"syscall"
	"time"
)

// processCPU returns the process's user+system CPU time so far, for the cores a benchmark
// cost; ok is false where it cannot be read.
func processCPU() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)), true
}
