package config

import "golang.org/x/sys/unix"

// physicalMemory returns the machine's memory on macOS (sysctl hw.memsize), or 0.
func physicalMemory() (int64, string) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil || n == 0 || n > 1<<62 {
		return 0, ""
	}
	return int64(n), "sysctl hw.memsize"
}
