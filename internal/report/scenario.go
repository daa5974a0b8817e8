package report

import (
	"fmt"
	"maps"
	"slices"

	"github.com/ndbench/ndbench/internal/stats"
)

// Mark is an event on a run's timeline that a reader lines the series up with: a
// scenario's phase or fault hook. End is zero for a hook still in force when the run
// ended.
type Mark struct {
	Kind   string `json:"kind"` // "phase" or "hook"
	Name   string `json:"name"`
	Start  string `json:"start"` // RFC 3339 with milliseconds, as the series' times
	End    string `json:"end,omitempty"`
	Detail string `json:"detail,omitempty"`
	Error  string `json:"error,omitempty"`
}

// GeneratorBound returns why r's figures measure the load generator rather than the
// store, by the self-check's own rules (see warnings): the client's CPU was saturated; an
// open-loop class sent less than its target while its workers were mostly out of the
// store (generatorShort); or operations of a class started late against their schedule
// by the generator's own doing, as the start-lag warning judges it (lagCause), and the
// typical operation did (laggedTypically: a late tail alone is warned about, not
// invalidating). A store
// that stalled holding the workers, or a store too slow for the workers configured, is
// the store's result and is not listed. A run with any reason is invalid (exit code 4,
// verdict.Judge), whichever command ran it.
func GeneratorBound(r *Report) []string {
	var out []string
	usable := float64(min(r.Client.GOMAXPROCS, r.Client.NumCPU))
	if usable > 0 && r.Client.CPUCores >= busyCores*usable {
		// Every class's figures are the saturated client's: one reason says it.
		return append(out, fmt.Sprintf("the client kept %.1f of %.0f cores busy", r.Client.CPUCores, usable))
	}
	opTimeout := reportOpTimeout(r)
	for _, name := range sortedOps(r) {
		s := r.Ops[name]
		if name == "backfill" || stats.IsOperationSeries(name) {
			continue
		}
		if why, short := generatorShort(name, s, r.Series, r.Seconds, opTimeout); short {
			out = append(out, why)
			continue
		}
		if !lagged(s) || !laggedTypically(s) {
			// A late tail alone (a GC pause, a busy machine for a moment) has its warning;
			// the run's figures are the generator's when its typical operation started late.
			continue
		}
		if _, generator := lagCause(name, s, r.Series, false, opTimeout, room{}); generator {
			out = append(out, fmt.Sprintf("%s: operations started late (start-lag p99 %.1f ms of a response p99 of %.1f ms) while workers were free: the delay is the generator's own",
				name, s.StartLag.P99/1000, s.ResponseTime.P99/1000))
		}
	}
	return out
}

// laggedTypically reports whether s's median operation started late by more than
// lagFloor and lagShare of its median response time: the generator was behind its
// schedule most of the time, not for a moment.
func laggedTypically(s stats.OpSummary) bool {
	return s.StartLag.P50 > float64(lagFloor.Microseconds()) && s.StartLag.P50 > lagShare*s.ResponseTime.P50
}

func sortedOps(r *Report) []string { return slices.Sorted(maps.Keys(r.Ops)) }
