// Package verdict is how every ndbench command that judges a run ends: one table of exit
// codes shared by run, scenario, autotune and compare, one function that judges a run
// (Judge), and the default verdict of a run that was given no thresholds.
package verdict

import (
	"fmt"
	"slices"
	"strings"
)

// Exit codes of every ndbench command. They are documented in the README ("Exit codes");
// scenarios, CI pipelines and scripts rely on them, so a number never changes meaning.
const (
	// Pass: the command did what it was asked and the result passed.
	Pass = 0
	// Failed: the command ran, and the result failed its thresholds, its fail-on
	// conditions, its SLA search, or the default verdict of a run (see Default).
	Failed = 1
	// Usage: bad usage or configuration (a flag, a file, a key, a driver, unwritable
	// outputs, reports that cannot be compared), or a store or hook error that stopped the
	// command before it had a result to judge.
	Usage = 2
	// Aborted: the run was cut short, by a threshold marked abort or by a signal before
	// its end (a bounded run, or any run still in its backfill or warm-up).
	Aborted = 3
	// Invalid: the run completed, but its figures cannot be trusted (the load generator
	// was saturated).
	Invalid = 4
)

// Name is the code's verdict in a word, as summaries print it.
func Name(code int) string {
	switch code {
	case Pass:
		return "PASSED"
	case Failed:
		return "FAILED"
	case Usage:
		return "ERROR"
	case Aborted:
		return "ABORTED"
	case Invalid:
		return "INVALID"
	}
	return fmt.Sprintf("exit %d", code)
}

// MaxFailedShare is the share of attempted operations that may fail before a run without
// thresholds fails: more than half failing measures the store's errors, not its service.
const MaxFailedShare = 0.5

// Class is one op class's counts over the judged span.
type Class struct {
	Name      string
	Attempted int64 // sent to the store: succeeded plus failed
	Succeeded int64 // answered, misses included
}

// Default judges a run that was given no thresholds: it fails when no operation
// succeeded, when an op class that sent operations had none succeed, or when more than
// MaxFailedShare of all attempted operations failed. It returns why it failed, one
// reason a line; none when it passed. k6 and Gatling fail the process on a failed
// check; a benchmark whose store answered nothing measured nothing and must not read as
// a success in CI.
func Default(classes []Class) []string {
	slices.SortFunc(classes, func(a, b Class) int { return strings.Compare(a.Name, b.Name) })
	var why []string
	var attempted, succeeded int64
	for _, c := range classes {
		attempted += c.Attempted
		succeeded += c.Succeeded
		if c.Attempted > 0 && c.Succeeded == 0 {
			why = append(why, fmt.Sprintf("%s: none of %d attempted operations succeeded", c.Name, c.Attempted))
		}
	}
	switch {
	case attempted == 0:
		why = append(why, "no operation was attempted: nothing was measured")
	case succeeded == 0:
		// Every class that sent operations has said so above.
	case float64(attempted-succeeded) > MaxFailedShare*float64(attempted):
		why = append(why, fmt.Sprintf("%d of %d attempted operations failed (%.1f%%, more than %.0f%%)",
			attempted-succeeded, attempted, 100*float64(attempted-succeeded)/float64(attempted), 100*MaxFailedShare))
	}
	return why
}

// Judgement is what a run is judged from, whichever command ran it.
type Judgement struct {
	// By names what judged the run's result: "thresholds", "sla" (an auto-tune search);
	// "" for the default verdict over Classes.
	By string
	// Failed are the reasons the run's own checks failed (a threshold, the SLA search),
	// one a line; with By "" they are ignored and Classes are judged by Default.
	Failed []string
	// Classes are the counts the default verdict judges.
	Classes []Class
	// Invalid are the reasons the figures measure the load generator rather than the
	// store (its CPU saturated, operations it sent late with workers free, an open-loop
	// target it could not send), one a line.
	Invalid []string
	// Aborted says why the run was cut short ("" when it ran to its end).
	Aborted string
	// Error is the store, hook or node error that stopped the command before it had a
	// result to judge ("" when none).
	Error string
}

// Result is a run's verdict: its exit code (the table above), what judged it, and why it
// did not pass.
type Result struct {
	Code    int
	By      string
	Reasons []string
}

// InvalidPrefix starts every reason of an invalid result, so that a reader who sees one
// line knows what it means.
const InvalidPrefix = "the load generator was the bottleneck, so the figures do not measure the store: "

// Judge is the one verdict of every command that runs load (run, scenario, autotune, on
// one node or a fleet). The order is the exit-code table's: an error that stopped the
// command before it had a result (2), a run cut short (3), figures that measure the
// generator rather than the store (4: a failed check is no evidence then, since the
// latencies and rates it judged are the generator's), failed checks or the default
// verdict (1), else a pass. The reasons below the first line keep what else was found.
func Judge(j Judgement) Result {
	r := Result{Code: Pass, By: j.By}
	failed := j.Failed
	if j.By == "" {
		r.By, failed = "default", Default(j.Classes)
	}
	var invalid []string
	for _, why := range j.Invalid {
		invalid = append(invalid, InvalidPrefix+why)
	}
	switch {
	case j.Error != "":
		r.Code = Usage
		r.Reasons = append([]string{j.Error}, failed...)
	case j.Aborted != "":
		r.Code = Aborted
		r.Reasons = append(append([]string{j.Aborted}, invalid...), failed...)
	case len(invalid) > 0:
		r.Code = Invalid
		r.Reasons = append(invalid, failed...)
	case len(failed) > 0:
		r.Code = Failed
		r.Reasons = failed
	}
	return r
}
