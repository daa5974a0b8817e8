//go:build unix

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// checkLimits refuses a count of connections that RLIMIT_NOFILE (the client's and, as it
// inherits it, Redis's) or the ephemeral ports towards one address cannot hold.
func checkLimits(conns int) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && uint64(rl.Cur) < uint64(conns)+256 {
		return fmt.Errorf("-conns %d: RLIMIT_NOFILE is %d (hard %d), below %d connections plus 256: raise ulimit -n", conns, rl.Cur, rl.Max, conns)
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			lo, _ := strconv.Atoi(f[0])
			hi, _ := strconv.Atoi(f[1])
			if hi-lo+1 < conns {
				return fmt.Errorf("-conns %d: net.ipv4.ip_local_port_range is %d-%d, fewer ephemeral ports than connections to one address", conns, lo, hi)
			}
		}
	}
	return nil
}
