//go:build unix

package cli

import "syscall"

// fileLimit returns RLIMIT_NOFILE (Go's syscall package has raised the soft limit to
// the hard one, less one, at start, since Go 1.19); ok is false when it cannot be read.
func fileLimit() (soft, hard uint64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return uint64(rl.Cur), uint64(rl.Max), true
}
