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
// store, by the self-check's own rules (see warnings): the client's CPU was saturated, or
// an open-loop class sent well under its target by the generator's own doing
// (generatorShort: its operations started late, mostly by its own delay, while its
// workers were mostly out of the store). A store that stalled holding the workers, or a
// store too slow for the workers configured, is the store's result and is not listed;
// nor is a start lag alone, which the warnings explain: a generator late for a moment (a
// GC pause, a machine busy with other work) catches up, and one that cannot keep up falls
// short of its target. A run with any reason is invalid (exit code 4, verdict.Judge),
// whichever command ran it.
func GeneratorBound(r *Report) []string {
	usable := float64(min(r.Client.GOMAXPROCS, r.Client.NumCPU))
	if usable > 0 && r.Client.CPUCores >= busyCores*usable {
		// Every class's figures are the saturated client's: one reason says it.
		return []string{fmt.Sprintf("the client kept %.1f of %.0f cores busy", r.Client.CPUCores, usable)}
	}
	var out []string
	opTimeout := reportOpTimeout(r)
	for _, name := range sortedOps(r) {
		if name == "backfill" || stats.IsOperationSeries(name) {
			continue
		}
		if why, short := generatorShort(name, r.Ops[name], r.Series, r.Seconds, opTimeout, fleetNodes(r.Driver.Info)); short {
			out = append(out, why)
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
