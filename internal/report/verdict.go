package report

import "github.com/ndbench/ndbench/internal/verdict"

// Verdict is how a run was judged, and the exit code the command ended with (the table
// of package verdict).
type Verdict struct {
	// Status is the verdict in a word: PASSED, FAILED, ABORTED, INVALID.
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	// By says what judged the run: "thresholds" when it was given some, else "default"
	// (it fails when nothing succeeded or most attempted operations failed).
	By string `json:"by"`
	// Reasons say why a run did not pass, one a line.
	Reasons []string `json:"reasons,omitempty"`
}

// Threshold is one threshold's outcome over the run's load phase.
type Threshold struct {
	Name  string `json:"name"`
	Check string `json:"check"`
	// Source is where the threshold was given: "flag --threshold" or "file PATH".
	Source string `json:"source,omitempty"`
	Class  string `json:"class"`
	Metric string `json:"metric"`
	// Status is pass or fail (a threshold with nothing to judge fails: a gate never
	// passes because it could not look).
	Status string `json:"status"`
	// Observed is the value in the bound's unit as text; Value the number in the metric's
	// unit (µs, ratio, count, ops/s) when there was one.
	Observed  string   `json:"observed"`
	Value     *float64 `json:"value,omitempty"`
	Intervals int      `json:"intervals"`
	Detail    string   `json:"detail,omitempty"`
}

// Run records how `ndbench run` was called beyond its configuration (which Config holds,
// each key with its source), so that `ndbench run --from-report` can rebuild the run.
type Run struct {
	// Duration and Warmup are the load's length after the warm-up (0: until interrupted)
	// and the warm-up's, as Go durations ("30s").
	Duration string `json:"duration"`
	Warmup   string `json:"warmup"`
	Backfill bool   `json:"backfill"`
	// Thresholds are the checks as given, the config file's first.
	Thresholds []string `json:"thresholds,omitempty"`
	// Flags are the command-line flags given, in the order of their names, each with its
	// value (secret values redacted; --set values are in Config, with their keys).
	Flags []Flag `json:"flags"`
	// FromReport names the report this run was rebuilt from.
	FromReport string `json:"fromReport,omitempty"`
}

// Flag is one flag given on the command line.
type Flag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NewVerdict is the report's record of a run's verdict (verdict.Judge).
func NewVerdict(res verdict.Result) *Verdict {
	return &Verdict{Status: verdict.Name(res.Code), ExitCode: res.Code, By: res.By, Reasons: res.Reasons}
}
