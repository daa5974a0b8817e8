package config

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// physicalMemory returns the memory this process may use on Linux: MemTotal of
// /proc/meminfo, or the cgroup's memory limit when it is lower (a container's), and
// where the figure came from; 0 when neither can be read.
func physicalMemory() (int64, string) {
	total, source := memTotal(), "MemTotal of /proc/meminfo"
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) means no limit.
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 && (total <= 0 || n < total) {
			total, source = n, "the memory limit of this cgroup, "+f
		}
		break
	}
	return total, source
}

// memTotal returns MemTotal from /proc/meminfo in bytes, or 0.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest) // "16318480 kB"
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil || kb <= 0 {
			return 0
		}
		return kb << 10
	}
	return 0
}
