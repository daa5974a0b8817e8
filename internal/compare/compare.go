// Package compare decides whether a candidate run of ndbench differs from a baseline run:
// per series (op class, or operation of a class) it sets the two reports' whole-run
// figures side by side and tests each difference over the runs' per-second intervals
// (Mann–Whitney U), then evaluates fail-on conditions, the promote/reject gate of
// Netflix NDBench's AMI comparisons.
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// Latency kinds: which of the report's latencies the percentiles are taken from.
const (
	// Response is the response time, from each operation's intended start (the default:
	// it includes the queueing a slower store causes).
	Response = "response"
	// Service is the service time, from each operation's actual start.
	Service = "service"
)

// Defaults of Options.
const (
	DefaultAlpha = 0.05
	// DefaultMinIntervals is the fewest per-second intervals each run needs for a test:
	// below it the test is not run and the output says so.
	DefaultMinIntervals = 10
)

// Options say how to compare.
type Options struct {
	// Latency is Response or Service.
	Latency string
	// Alpha is the significance level of each test, in (0, 1).
	Alpha float64
	// MinIntervals is the fewest per-second samples each run needs for a test (≥ 2).
	MinIntervals int
	// Conditions are the parsed fail-on conditions (ParseConditions).
	Conditions []Condition
	// FailInsignificant makes relative and difference conditions trigger on the bound
	// alone, without requiring the change to be significant.
	FailInsignificant bool
	// Force compares runs that are not comparable (Differences), with a warning, instead
	// of refusing them with a *NotComparableError.
	Force bool
}

// Result is a whole comparison, as printed and as encoded by --format json.
type Result struct {
	Baseline  Run `json:"baseline"`
	Candidate Run `json:"candidate"`
	// Latency is the latency kind compared (Response or Service).
	Latency      string  `json:"latency"`
	Alpha        float64 `json:"alpha"`
	MinIntervals int     `json:"minIntervals"`
	// Test names the significance test.
	Test   string   `json:"test"`
	Series []Series `json:"series"`
	// OnlyIn lists series present in one report only (not compared).
	OnlyIn map[string][]string `json:"onlyIn,omitempty"`
	// Conditions are the fail-on conditions with their outcome, in the order given.
	Conditions []Outcome `json:"conditions"`
	// Failed is true when any condition triggered.
	Failed bool `json:"failed"`
	// NotComparable lists how the runs differ in what they offered the store, when they
	// were compared anyway (Options.Force); absent when they are comparable.
	NotComparable []string `json:"notComparable,omitempty"`
	Warnings      []string `json:"warnings"`
}

// Run describes one of the two reports.
type Run struct {
	File    string    `json:"file"`
	Driver  string    `json:"driver"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
}

// Series is the comparison of one op class or operation.
type Series struct {
	Name    string   `json:"name"`
	Metrics []Metric `json:"metrics"`
	// Note says why nothing is tested for the series, when so.
	Note string `json:"note,omitempty"`
}

// Metric is the comparison of one metric of a series. Latencies are in microseconds,
// rates in operations per second, error ratios as fractions (0.001 is 0.1%).
type Metric struct {
	Name      string  `json:"name"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	// Diff is Candidate − Baseline.
	Diff float64 `json:"diff"`
	// DiffPct is the change relative to Baseline in percent; absent when Baseline is 0.
	DiffPct *float64 `json:"diffPct,omitempty"`
	// Samples are how many per-second values of each run the test had (baseline,
	// candidate).
	Samples [2]int `json:"samples"`
	// Tested is false when the test could not run (Note says why).
	Tested bool `json:"tested"`
	// P is the test's p-value (when Tested).
	P *float64 `json:"p,omitempty"`
	// Significant is P < alpha.
	Significant bool   `json:"significant"`
	Note        string `json:"note,omitempty"`
	// NoData is true when a run has nothing to measure the metric by (no operations
	// answered for a latency, none attempted for an error ratio).
	NoData bool `json:"noData,omitempty"`
}

// Outcome is one fail-on condition after evaluation.
type Outcome struct {
	Condition string `json:"condition"`
	Triggered bool   `json:"triggered"`
	// Reason says what was compared with the bound and why it did or did not trigger.
	Reason string `json:"reason"`
}

// metricDef is one metric compare knows: how to read it from a summary.
type metricDef struct {
	name string
	// latency picks a latency figure; nil for rate and errors.
	latency func(stats.Latency) float64
	// shown: in the table by default (the others only when a condition names them).
	shown bool
}

// metricDefs are the metrics in table order. The percentiles are those the report's
// per-second series keeps (stats.Latency): p90 is not among them.
var metricDefs = []metricDef{
	{name: "rate", shown: true},
	{name: "errors", shown: true},
	{name: "p50", latency: func(l stats.Latency) float64 { return l.P50 }, shown: true},
	{name: "p95", latency: func(l stats.Latency) float64 { return l.P95 }, shown: true},
	{name: "p99", latency: func(l stats.Latency) float64 { return l.P99 }, shown: true},
	{name: "p99.5", latency: func(l stats.Latency) float64 { return l.P995 }},
	{name: "p99.9", latency: func(l stats.Latency) float64 { return l.P999 }, shown: true},
	{name: "max", latency: func(l stats.Latency) float64 { return l.Max }},
	{name: "mean", latency: func(l stats.Latency) float64 { return l.Mean }},
}

// aliases are other spellings of metric names.
var aliases = map[string]string{"p999": "p99.9", "p995": "p99.5", "throughput": "rate", "error": "errors"}

func lookupMetric(name string) (metricDef, bool) {
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, m := range metricDefs {
		if m.name == name {
			return m, true
		}
	}
	return metricDef{}, false
}

// MetricNames returns the metric names conditions accept, in table order.
func MetricNames() []string {
	names := make([]string, len(metricDefs))
	for i, m := range metricDefs {
		names[i] = m.name
	}
	return names
}

// Load reads a JSON report written by `ndbench run --report`.
func Load(path string) (*report.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	r, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Decode reads a JSON report and checks it is one this build understands.
func Decode(rd io.Reader) (*report.Report, error) {
	var r report.Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("not a JSON report: %w", err)
	}
	if r.FormatVersion == 0 {
		return nil, errors.New("not an ndbench report (no formatVersion)")
	}
	if r.FormatVersion != report.Version {
		return nil, fmt.Errorf("report formatVersion %d; this ndbench reads version %d", r.FormatVersion, report.Version)
	}
	if len(r.Ops) == 0 {
		return nil, errors.New("the report has no op classes")
	}
	return &r, nil
}

// CommonSeries returns the series present in both reports, in report order.
func CommonSeries(base, cand *report.Report) []string {
	var names []string
	for _, n := range stats.ReportOrder(base.Ops) {
		if _, ok := cand.Ops[n]; ok {
			names = append(names, n)
		}
	}
	return names
}

// Compare compares cand against base. It returns an error only for options or
// conditions that cannot be used with these reports (a usage error); what the data
// cannot tell is in the result.
func Compare(base, cand *report.Report, opt Options) (*Result, error) {
	if opt.Latency != Response && opt.Latency != Service {
		return nil, fmt.Errorf("latency %q: want %s or %s", opt.Latency, Response, Service)
	}
	if !(opt.Alpha > 0 && opt.Alpha < 1) {
		return nil, fmt.Errorf("alpha %v: want a level between 0 and 1, e.g. 0.05", opt.Alpha)
	}
	if opt.MinIntervals < 2 {
		return nil, fmt.Errorf("min intervals %d: want at least 2", opt.MinIntervals)
	}
	if base.FormatVersion != cand.FormatVersion {
		return nil, fmt.Errorf("the reports have different formatVersions (%d and %d)", base.FormatVersion, cand.FormatVersion)
	}
	common := CommonSeries(base, cand)
	for _, c := range opt.Conditions {
		if err := c.check(common); err != nil {
			return nil, err
		}
	}
	diffs, checked := Differences(base, cand)
	if len(diffs) > 0 && !opt.Force {
		return nil, &NotComparableError{Differences: diffs}
	}
	res := &Result{
		Baseline:     runOf(base),
		Candidate:    runOf(cand),
		Latency:      opt.Latency,
		Alpha:        opt.Alpha,
		MinIntervals: opt.MinIntervals,
		Test:         "Mann-Whitney U, two-sided, normal approximation with tie and continuity corrections, over per-second values",
		Series:       []Series{},
		Conditions:   []Outcome{},
		Warnings:     []string{},
	}
	if len(diffs) > 0 {
		res.NotComparable = diffs
		res.Warnings = append(res.Warnings, "NOT COMPARABLE, compared because of --force: the runs differ in "+strings.Join(diffs, "; "))
	}

	for _, pair := range [][2]*report.Report{{base, cand}, {cand, base}} {
		for _, n := range stats.ReportOrder(pair[0].Ops) {
			if _, ok := pair[1].Ops[n]; !ok {
				if res.OnlyIn == nil {
					res.OnlyIn = map[string][]string{}
				}
				which := "baseline"
				if pair[0] == cand {
					which = "candidate"
				}
				res.OnlyIn[which] = append(res.OnlyIn[which], n)
			}
		}
	}
	wanted := map[string]bool{} // series.metric named by a condition
	for _, c := range opt.Conditions {
		wanted[c.Series+"."+c.Metric] = true
	}
	bs, cs := samplesOf(base), samplesOf(cand)
	for _, name := range common {
		b, c := base.Ops[name], cand.Ops[name]
		if b.Count+b.Errors == 0 && c.Count+c.Errors == 0 && !anyWanted(wanted, name) {
			continue // a class that ran in neither (writes disabled): nothing to compare
		}
		s := Series{Name: name}
		bi, ci := bs.intervals(name), cs.intervals(name)
		switch {
		case isPhase(base, name) || isPhase(cand, name):
			// Its figures are those of an earlier phase (the backfill), while the samples
			// cover the measured span, in which it did not run.
			bi, ci = nil, nil
			s.Note = "figures of an earlier phase, which has no intervals in the measured span: values are compared without significance"
		case len(bi) == 0 || len(ci) == 0:
			s.Note = "a report has no per-second intervals for this series: values are compared without significance"
		case len(bi) < opt.MinIntervals || len(ci) < opt.MinIntervals:
			s.Note = fmt.Sprintf("too few per-second intervals to tell (%d and %d, fewer than %d): values are compared without significance", len(bi), len(ci), opt.MinIntervals)
		}
		for _, def := range metricDefs {
			if !def.shown && !wanted[name+"."+def.name] {
				continue
			}
			s.Metrics = append(s.Metrics, compareMetric(def, b, c, bi, ci, opt))
		}
		res.Series = append(res.Series, s)
		if s.Note != "" {
			res.Warnings = append(res.Warnings, name+": "+s.Note)
		}
	}
	if !checked {
		res.Warnings = append(res.Warnings, "a report has no configuration (a fleet's merged report, or an older one): whether the runs are comparable was not checked")
	}
	for _, c := range opt.Conditions {
		o := c.evaluate(res, opt.FailInsignificant)
		res.Failed = res.Failed || o.Triggered
		res.Conditions = append(res.Conditions, o)
	}
	return res, nil
}

func anyWanted(wanted map[string]bool, series string) bool {
	for k := range wanted {
		if strings.HasPrefix(k, series+".") {
			if _, ok := lookupMetric(k[len(series)+1:]); ok {
				return true
			}
		}
	}
	return false
}

// isPhase reports whether r's figures for name come from a phase before the measured
// span (report.Build puts a phase named after a class, the backfill, in Ops).
func isPhase(r *report.Report, name string) bool {
	for _, p := range r.Phases {
		if p.Name == name {
			return true
		}
	}
	return false
}

func runOf(r *report.Report) Run {
	return Run{Driver: r.Driver.Name, Started: r.Started, Seconds: r.Seconds}
}

// value reads metric def from a summary; ok is false when the summary has nothing to
// measure it by.
func value(def metricDef, s stats.OpSummary, latency string) (v float64, ok bool) {
	switch {
	case def.name == "rate":
		return s.Rate, true
	case def.name == "errors":
		if s.Count+s.Errors == 0 {
			return 0, false
		}
		return float64(s.Errors) / float64(s.Count+s.Errors), true
	case s.Count == 0:
		return 0, false
	case latency == Service:
		return def.latency(s.ServiceTime), true
	default:
		return def.latency(s.ResponseTime), true
	}
}

func compareMetric(def metricDef, b, c stats.OpSummary, bi, ci []stats.OpSummary, opt Options) Metric {
	m := Metric{Name: def.name}
	bv, bok := value(def, b, opt.Latency)
	cv, cok := value(def, c, opt.Latency)
	m.Baseline, m.Candidate, m.Diff = bv, cv, cv-bv
	if !bok || !cok {
		m.NoData = true
		m.Note = "no data in a run (no operations answered or attempted)"
		return m
	}
	if bv != 0 {
		pct := 100 * (cv - bv) / bv
		m.DiffPct = &pct
	}
	if q := quantileOf(def.name); q >= tailFrom {
		judgeTail(&m, q, b, c, bi, ci, opt)
		return m
	}
	var xs, ys []float64
	for _, s := range bi {
		if v, ok := value(def, s, opt.Latency); ok {
			xs = append(xs, v)
		}
	}
	for _, s := range ci {
		if v, ok := value(def, s, opt.Latency); ok {
			ys = append(ys, v)
		}
	}
	m.Samples = [2]int{len(xs), len(ys)}
	if len(xs) < opt.MinIntervals || len(ys) < opt.MinIntervals {
		m.Note = fmt.Sprintf("not tested: %d and %d per-second samples, fewer than %d", len(xs), len(ys), opt.MinIntervals)
		return m
	}
	mw, err := MannWhitneyU(xs, ys)
	if err != nil {
		m.Note = "not tested: " + err.Error()
		return m
	}
	m.Tested, m.P, m.Significant = true, &mw.P, mw.P < opt.Alpha
	return m
}

// samples holds a report's per-second intervals of the measured span, by series.
type samples struct{ points []stats.Point }

// minIntervalSeconds: intervals shorter than this (the partial one a run ends with) are
// left out of the samples: a rate or percentile over a fraction of a second is noisier
// than the others and would weigh as much in the ranks.
const minIntervalSeconds = 0.5

// samplesOf keeps the series points inside the report's measured span (Started, Ended]:
// the series also holds the warm-up and earlier phases, which the figures exclude.
func samplesOf(r *report.Report) samples {
	var s samples
	end := r.Ended.Add(time.Millisecond)
	for _, p := range r.Series {
		if p.Time.After(r.Started) && !p.Time.After(end) {
			s.points = append(s.points, p)
		}
	}
	return s
}

// intervals returns name's per-second summaries, whole intervals only.
func (s samples) intervals(name string) []stats.OpSummary {
	var out []stats.OpSummary
	for i, p := range s.points {
		o, ok := p.Ops[name]
		if !ok {
			continue
		}
		// An interval's length: its count over its rate, exact when it had operations;
		// else the time since the previous point; a first point without operations
		// counts as whole.
		length := 1.0
		switch {
		case o.Count > 0 && o.Rate > 0:
			length = float64(o.Count) / o.Rate
		case i > 0:
			length = p.Time.Sub(s.points[i-1].Time).Seconds()
		}
		if length < minIntervalSeconds {
			continue
		}
		out = append(out, o)
	}
	return out
}
