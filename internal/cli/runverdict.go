package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/scenario"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/verdict"
)

// thresholdsKey is the config file's list of a run's thresholds. It is the run's, not the
// node's: the configuration other commands load from the same file never sees it.
const thresholdsKey = "thresholds"

// fileThresholds reads the thresholds: list of a YAML config file ("" or a .properties
// file: none), each named by its place in the file for errors.
func fileThresholds(path string) ([]scenario.RunCheck, error) {
	if path == "" || strings.EqualFold(filepath.Ext(path), ".properties") {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, configError{fmt.Errorf("read config file %s: %w", path, err)}
	}
	doc, err := yaml.Parser().Unmarshal(data)
	if err != nil {
		return nil, configError{fmt.Errorf("read config file %s: %w", path, source.YAMLError(data, err))}
	}
	raw, found := doc[thresholdsKey]
	if !found {
		return nil, nil
	}
	items, ok := raw.([]any)
	if !ok {
		return nil, configError{&driver.FieldError{Field: thresholdsKey, Source: "file " + path,
			Allowed: "a list of checks, e.g. [\"read.p99 < 5ms\", \"write.errors < 1%\"]"}}
	}
	var out []scenario.RunCheck
	for i, it := range items {
		s, ok := it.(string)
		field := fmt.Sprintf("%s[%d] in %s", thresholdsKey, i, path)
		if !ok {
			return nil, configError{&driver.FieldError{Field: field, Value: fmt.Sprint(it), Allowed: "a check as text, CLASS.METRIC OP VALUE"}}
		}
		out = append(out, scenario.RunCheck{Check: s, Field: field, Source: "file " + path})
	}
	return out, nil
}

// withoutThresholds is the config file's layer without the run's thresholds: list, which
// is not a configuration key.
func withoutThresholds(l config.Layer) config.Layer {
	for k := range l.Values {
		if k == thresholdsKey || strings.HasPrefix(k, thresholdsKey+".") {
			delete(l.Values, k)
		}
	}
	return l
}

// runJudge judges a run's thresholds over its measured span from the collector's
// intervals, with the scenario's evaluator. The collector calls interval from its own
// goroutine.
type runJudge struct {
	mu      sync.Mutex
	ev      *scenario.Evaluator
	classes []string
	checks  []scenario.RunCheck
	started time.Time
}

func newRunJudge(checks []scenario.RunCheck, w config.Workload) (*runJudge, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	var active []string
	for _, c := range w.Classes() {
		if c.Enabled && c.Workers > 0 {
			active = append(active, c.Name)
		}
	}
	ev, judged, err := scenario.NewRunEvaluator(checks, w.ClassNames(), active)
	if err != nil {
		return nil, configError{err}
	}
	return &runJudge{ev: ev, classes: w.ClassNames(), checks: judged}, nil
}

func (j *runJudge) interval(iv *stats.Interval) {
	s := scenario.SecondOf(iv, j.classes)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ev.Add(s)
}

// measure opens the thresholds' window: the intervals from at on are judged.
func (j *runJudge) measure(at time.Time) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.started = at
	j.ev.Event(scenario.EvRunStart, "", at)
}

// results closes the evaluation and returns every threshold's outcome, in order.
func (j *runJudge) results() []report.Threshold {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ev.Close()
	var out []report.Threshold
	for i, r := range j.ev.Results() {
		if r.Status == scenario.NotEvaluated {
			// The window never opened: the run was cut short before its load was measured.
			r.Status, r.Observed = scenario.Fail, "no data"
			r.Detail = strings.TrimSpace("the load was never measured; " + r.Detail)
		}
		out = append(out, report.Threshold{Name: r.Check, Check: r.Check, Source: j.checks[i].Source, Class: r.Class, Metric: r.Metric,
			Status: r.Status, Observed: r.Observed, Value: r.Value, Intervals: r.Intervals, Detail: r.Detail})
	}
	return out
}

// runVerdict judges a run by the one verdict every command shares (verdict.Judge): by its
// thresholds when it has some, else by the default verdict over its load phase; cut short
// by a signal it is aborted; with figures that measure the load generator rather than the
// store (report.GeneratorBound) it is invalid.
func runVerdict(rep *report.Report, interrupted bool) *report.Verdict {
	var j verdict.Judgement
	if len(rep.Thresholds) > 0 {
		j.By = "thresholds"
		for _, t := range rep.Thresholds {
			if t.Status != scenario.Pass {
				j.Failed = append(j.Failed, fmt.Sprintf("threshold %s failed: observed %s", t.Check, t.Observed))
			}
		}
	}
	for name, s := range rep.Ops {
		if name == "backfill" || stats.IsOperationSeries(name) {
			continue // the backfill is judged by its own warning; operations by their class
		}
		j.Classes = append(j.Classes, verdict.Class{Name: name, Attempted: s.Attempted, Succeeded: s.Succeeded})
	}
	if interrupted {
		j.Aborted = "interrupted by a signal before the end of the run"
	} else {
		j.Invalid = report.GeneratorBound(rep)
	}
	return report.NewVerdict(verdict.Judge(j))
}

// printVerdict prints the run's thresholds and verdict below its summary, with why it did
// not pass, each wrapped at width (0: one line each).
func printVerdict(out io.Writer, r *report.Report, width int) {
	if len(r.Thresholds) > 0 {
		fmt.Fprintln(out, "thresholds (over the measured load):")
		for _, t := range r.Thresholds {
			detail := ""
			if t.Detail != "" {
				detail = " (" + t.Detail + ")"
			}
			fmt.Fprintln(out, wrapText(fmt.Sprintf("  %-4s ", strings.ToUpper(t.Status)), fmt.Sprintf("%s: observed %s%s", t.Check, t.Observed, detail), width))
		}
	}
	v := r.Verdict
	if v == nil {
		return
	}
	line := fmt.Sprintf("%s (exit %d", v.Status, v.ExitCode)
	if v.ExitCode == verdict.Invalid {
		line += "; the figures measure the load generator, not the store: see why below and the warnings above"
	} else if v.By == "default" {
		line += fmt.Sprintf("; no thresholds given: a run fails when nothing succeeded or more than %.0f%% of attempted operations failed", 100*verdict.MaxFailedShare)
	}
	fmt.Fprintln(out, wrapText("verdict: ", line+")", width))
	for _, why := range v.Reasons {
		fmt.Fprintln(out, wrapText("  ", why, width))
	}
}

// runJUnit is the run's verdict as JUnit XML, with scenario's writer: a testcase per
// threshold, or one for the default verdict (or an auto-tune search's), and one failed
// when the result is invalid.
func runJUnit(rep *report.Report) func(io.Writer) error {
	return func(w io.Writer) error { return writeRunJUnit(w, rep) }
}

func writeRunJUnit(w io.Writer, rep *report.Report) error {
	o := &scenario.Outcome{Scenario: "ndbench run", Started: rep.Started, Ended: rep.Ended, Phases: []string{}}
	for _, t := range rep.Thresholds {
		o.Thresholds = append(o.Thresholds, scenario.Result{Name: t.Name, Check: t.Check, Window: "run", Class: t.Class, Metric: t.Metric,
			Suite: "run", Status: t.Status, Observed: t.Observed, Value: t.Value, Intervals: t.Intervals, Detail: t.Detail})
	}
	if v := rep.Verdict; v != nil && v.ExitCode == verdict.Invalid {
		// A CI reader sees why the run is neither a pass nor the store's failure.
		o.Thresholds = append(o.Thresholds, scenario.Result{Name: "valid measurement", Check: "the load generator was not the bottleneck",
			Window: "run", Suite: "run", Status: scenario.Fail, Observed: "invalid", Intervals: len(rep.Series), Detail: strings.Join(v.Reasons, "; ")})
	}
	if v := rep.Verdict; v != nil && v.By == "default" {
		r := scenario.Result{Name: "default verdict", Check: fmt.Sprintf("operations succeeded, at most %.0f%% failed", 100*verdict.MaxFailedShare),
			Window: "run", Suite: "run", Status: scenario.Pass, Observed: "passed", Intervals: len(rep.Series)}
		if len(v.Reasons) > 0 {
			r.Status, r.Observed, r.Detail = scenario.Fail, "failed", strings.Join(v.Reasons, "; ")
		}
		o.Thresholds = append(o.Thresholds, r)
	}
	if v := rep.Verdict; v != nil && v.By == "sla" {
		// An auto-tune search's own verdict: failed when it found no capacity within SLA,
		// was cut short or stopped by an error (an invalid one has its testcase above).
		r := scenario.Result{Name: "capacity search", Check: "the store's capacity found within the SLA", Window: "run", Suite: "run",
			Status: scenario.Pass, Observed: strings.ToLower(v.Status), Intervals: len(rep.Series)}
		if v.ExitCode != verdict.Pass && v.ExitCode != verdict.Invalid {
			r.Status, r.Detail = scenario.Fail, strings.Join(v.Reasons, "; ")
		}
		o.Thresholds = append(o.Thresholds, r)
	}
	return o.WriteJUnit(w)
}
