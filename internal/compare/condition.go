package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// BoundKind says what a condition's bound is compared with.
type BoundKind int

// Bound kinds, from how the bound is written.
const (
	// Relative: a signed percentage ("+10%", "-5%"), compared with the candidate's change
	// relative to the baseline; triggers only when the change is significant.
	Relative BoundKind = iota
	// Difference: a signed value ("+5ms", "-200"), compared with candidate − baseline;
	// triggers only when the change is significant.
	Difference
	// Absolute: an unsigned value ("20ms", "1000", "0.1%" for errors), compared with the
	// candidate's own figure; no test is involved.
	Absolute
)

// Condition is one parsed fail-on expression: "<series>.<metric> <op> <bound>".
type Condition struct {
	// Text is the expression as given, trimmed.
	Text   string
	Series string
	// Metric is the canonical metric name (aliases resolved).
	Metric string
	// Op is one of >, >=, <, <=.
	Op   string
	Kind BoundKind
	// Bound is a fraction for Relative (0.1 for +10%), else in the metric's unit:
	// microseconds for latencies, operations per second for rate, a fraction for errors.
	Bound float64
}

// ParseConditions parses fail-on expressions; each argument may hold several separated
// by commas. Series names are checked later, against the reports (Compare).
func ParseConditions(args []string) ([]Condition, error) {
	var out []Condition
	for _, a := range args {
		for _, part := range strings.Split(a, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			c, err := parseCondition(part)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func parseCondition(text string) (Condition, error) {
	c := Condition{Text: text}
	i := strings.IndexAny(text, "<>")
	if i < 0 {
		return c, fmt.Errorf("fail-on %q: want <series>.<metric> <op> <bound> with op one of >, >=, <, <= (e.g. read.p99 > +10%%)", text)
	}
	lhs, rest := strings.TrimSpace(text[:i]), text[i:]
	c.Op = rest[:1]
	rest = rest[1:]
	if strings.HasPrefix(rest, "=") {
		c.Op += "="
		rest = rest[1:]
	}
	bound := strings.TrimSpace(rest)
	if bound == "" || strings.ContainsAny(bound, "<>=") {
		return c, fmt.Errorf("fail-on %q: want one bound after %s, e.g. +10%%, 20ms, 0.1%%", text, c.Op)
	}
	series, metric, err := splitName(lhs)
	if err != nil {
		return c, fmt.Errorf("fail-on %q: %w", text, err)
	}
	c.Series, c.Metric = series, metric
	if err := c.parseBound(bound); err != nil {
		return c, fmt.Errorf("fail-on %q: %w", text, err)
	}
	return c, nil
}

// splitName splits "read.p99.9" into the series and the metric: the metric is the
// longest known name the expression ends with, as series names contain dots too
// ("search.byTitle.p99").
func splitName(lhs string) (series, metric string, err error) {
	names := MetricNames()
	for a := range aliases {
		names = append(names, a)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, n := range names {
		if s, ok := strings.CutSuffix(lhs, "."+n); ok && s != "" {
			m, _ := lookupMetric(n)
			return s, m.name, nil
		}
	}
	dot := strings.LastIndex(lhs, ".")
	if dot <= 0 {
		return "", "", fmt.Errorf("%q is not <series>.<metric>; metrics: %s", lhs, strings.Join(MetricNames(), ", "))
	}
	why := ""
	if lhs[dot+1:] == "p90" {
		why = " (reports keep no p90 per second; p95 is the nearest)"
	}
	return "", "", fmt.Errorf("unknown metric %q%s; metrics: %s", lhs[dot+1:], why, strings.Join(MetricNames(), ", "))
}

func (c *Condition) parseBound(b string) error {
	signed := b[0] == '+' || b[0] == '-'
	latency := c.Metric != "rate" && c.Metric != "errors"
	if num, ok := strings.CutSuffix(b, "%"); ok {
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("bound %q: not a percentage", b)
		}
		switch {
		case signed:
			c.Kind, c.Bound = Relative, v/100
		case c.Metric == "errors":
			c.Kind, c.Bound = Absolute, v/100
		default:
			return fmt.Errorf("bound %q: a percentage without a sign is ambiguous for %s: write +%s for a change relative to the baseline", b, c.Metric, b)
		}
		return nil
	}
	c.Kind = Absolute
	if signed {
		c.Kind = Difference
	}
	if latency {
		d, err := time.ParseDuration(b)
		if err != nil {
			return fmt.Errorf("bound %q: %s is a latency: write a duration (20ms, 500us, 1.5s) or a signed percentage (+10%%)", b, c.Metric)
		}
		c.Bound = d.Seconds() * 1e6
		return nil
	}
	num := b
	if c.Metric == "rate" {
		num = strings.TrimSuffix(b, "/s")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		unit := "operations per second (1000) or a signed percentage (-5%)"
		if c.Metric == "errors" {
			unit = "an error ratio (0.1% or 0.001) or a signed percentage (+50%)"
		}
		return fmt.Errorf("bound %q: want %s", b, unit)
	}
	if c.Metric == "errors" && c.Kind == Absolute && v > 1 {
		return fmt.Errorf("bound %q: an error ratio is at most 1 (write 0.1%% or 0.001)", b)
	}
	c.Bound = v
	return nil
}

// check reports a condition naming a series that is not in both reports.
func (c Condition) check(common []string) error {
	for _, n := range common {
		if n == c.Series {
			return nil
		}
	}
	return fmt.Errorf("fail-on %q: no series %q in both reports; series in both: %s", c.Text, c.Series, strings.Join(common, ", "))
}

func (c Condition) holds(v float64) bool {
	switch c.Op {
	case ">":
		return v > c.Bound
	case ">=":
		return v >= c.Bound
	case "<":
		return v < c.Bound
	default:
		return v <= c.Bound
	}
}

// errMissingMetric should not happen: Compare includes every metric a condition names.
var errMissingMetric = errors.New("metric not compared")

func (r *Result) find(series, metric string) (Metric, error) {
	for _, s := range r.Series {
		if s.Name != series {
			continue
		}
		for _, m := range s.Metrics {
			if m.Name == metric {
				return m, nil
			}
		}
	}
	return Metric{}, fmt.Errorf("%s.%s: %w", series, metric, errMissingMetric)
}

// evaluate judges c on a result. A condition that cannot be judged (no data, no
// intervals to test) is never passed silently: it triggers, and the reason says why.
// decisiveSamples is how many per-second values each run needs before a change past a
// bound that the test does not confirm is called run-to-run noise; below it the reason
// says the runs were short.
const decisiveSamples = 30

func (c Condition) evaluate(r *Result, failInsignificant bool) Outcome {
	o := Outcome{Condition: c.Text}
	m, err := r.find(c.Series, c.Metric)
	if err != nil {
		o.Triggered, o.Reason = true, "cannot evaluate: "+err.Error()
		return o
	}
	if m.NoData {
		o.Triggered, o.Reason = true, "cannot evaluate: "+m.Note
		return o
	}
	if c.Kind == Absolute {
		o.Triggered = c.holds(m.Candidate)
		o.Reason = fmt.Sprintf("candidate %s %s", c.Metric, formatValue(c.Metric, m.Candidate))
		return o
	}
	change, shown := m.Diff, signedValue(c.Metric, m.Diff)
	if c.Kind == Relative {
		switch {
		case m.DiffPct != nil:
			change, shown = *m.DiffPct/100, fmt.Sprintf("%+.2f%%", *m.DiffPct)
		case m.Candidate > 0:
			change, shown = math.Inf(1), "from 0"
		default:
			change, shown = 0, "+0%"
		}
	}
	if !c.holds(change) {
		o.Reason = fmt.Sprintf("%s changed %s: within the bound", c.Metric, shown)
		return o
	}
	switch {
	case m.Tested && m.Significant:
		o.Triggered = true
		o.Reason = fmt.Sprintf("%s changed %s, significant (p=%.4g < %g)", c.Metric, shown, *m.P, r.Alpha)
	case m.Tested && failInsignificant:
		o.Triggered = true
		o.Reason = fmt.Sprintf("%s changed %s, not significant (p=%.4g) but failing on insignificant changes too", c.Metric, shown, *m.P)
	case m.Tested && min(m.Samples[0], m.Samples[1]) < decisiveSamples:
		// A gate that lets a large change through reads as broken unless it says why: a
		// few seconds per run cannot tell a change in some of them from chance.
		o.Reason = fmt.Sprintf("%s changed %s, beyond the bound but not significant (p=%.4g ≥ %g) over only %d and %d seconds: a change confined to a few seconds cannot be told from chance in runs this short; longer runs decide (or --fail-on-insignificant)",
			c.Metric, shown, *m.P, r.Alpha, m.Samples[0], m.Samples[1])
	case m.Tested:
		o.Reason = fmt.Sprintf("%s changed %s, beyond the bound but not significant (p=%.4g ≥ %g): within run-to-run noise", c.Metric, shown, *m.P, r.Alpha)
	default:
		o.Triggered = true
		o.Reason = fmt.Sprintf("%s changed %s; significance could not be tested (%s), so the bound alone decides", c.Metric, shown, strings.TrimPrefix(m.Note, "not tested: "))
	}
	return o
}
