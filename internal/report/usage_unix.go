//go:build unix

package report

import (
	"runtime"
	"syscall"
	"time"
)

// ReadUsage returns the process's CPU time so far and its peak resident set size.
func ReadUsage() Usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}
	}
	maxRSS := int64(ru.Maxrss)
	// macOS reports ru_maxrss in bytes; Linux and the BSDs in KiB.
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		maxRSS *= 1024
	}
	return Usage{
		User:   time.Duration(ru.Utime.Nano()),
		System: time.Duration(ru.Stime.Nano()),
		MaxRSS: maxRSS,
	}
}
