package cli

import (
	"fmt"
	"strings"

	"github.com/ndbench/ndbench/internal/config"
)

// fdReserve is what the process holds beside its workers' connections: the driver's
// connections for calls outside the workers (set-up, probes, backfill's pool), the
// results history, report files, the API's listener and a few for the runtime.
const fdReserve = 64

// fdNeed is the most file descriptors the run may hold at once: every enabled class at
// the most workers its pool may grow to, or backfill's workers while it runs, whichever
// is more (backfill finishes before the load starts), plus fdReserve. Drivers that give
// each worker a connection of its own (redis and memcached in mode=direct, cassandra per
// worker) hold one descriptor per worker; pooled drivers hold fewer, so this is an upper
// bound. A store inside the process (driver.Definition.InProcess) gives its workers no
// connection, so they need nothing of the limit. detail names the settings the count
// comes from, for the note.
func fdNeed(w config.Workload, backfill, inProcess bool) (need int, detail string) {
	if inProcess {
		return fdReserve, "an in-process store: its workers hold no connections"
	}
	load := 0
	var parts []string
	for _, c := range w.Classes() {
		if !c.Enabled {
			continue
		}
		n := c.MostWorkers(c.Rate, w.OpTimeout)
		if n == 0 {
			continue
		}
		load += n
		parts = append(parts, fmt.Sprintf("%s %d", c.Name, n))
	}
	detail = "workers: " + strings.Join(parts, ", ")
	if len(parts) == 0 {
		detail = "no workers"
	}
	if backfill && w.BackfillWorkers > load {
		load = w.BackfillWorkers
		detail = fmt.Sprintf("backfill workers: %d", w.BackfillWorkers)
	}
	return load + fdReserve, detail
}

// fdLimitNote is the note run prints when the process may not open as many files as the
// run may need (soft is RLIMIT_NOFILE's current value, which Go 1.19 and later have
// already raised to just below hard at start), or "" when it may. A note rather than an error: a
// pooled driver needs fewer descriptors than workers, and a run over the limit still
// runs, its connections beyond it failing as unavailable ("too many open files").
func fdLimitNote(need int, detail string, soft, hard uint64) string {
	if uint64(need) <= soft {
		return ""
	}
	return fmt.Sprintf("file descriptors: this run may hold up to %d connections and files (%s, one connection each "+
		"with drivers that give every worker its own, plus %d for the process), but the open-file limit "+
		"(RLIMIT_NOFILE) is %d (hard limit %d; ndbench raises the soft limit to it at start): operations beyond it fail "+
		"as unavailable (too many open files); raise the hard limit (ulimit -Hn, LimitNOFILE= in a systemd unit, "+
		"nofile in /etc/security/limits.conf) or lower the workers", need, detail, fdReserve, soft, hard)
}
