//go:build unix

package http

import (
	"fmt"
	"syscall"
)

// openFilesInfo says how many connections the process may open: Go (1.19 and later)
// raises the soft RLIMIT_NOFILE to the hard limit at start, so the soft limit read here
// is already the most this process can have without an operator raising the hard one.
func openFilesInfo() string {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return ""
	}
	return fmt.Sprintf("%d (RLIMIT_NOFILE, raised to the hard limit at start; each connection takes one)", l.Cur)
}
