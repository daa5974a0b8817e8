package scenario

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// Metric kinds, which decide a bound's unit.
const (
	kindLatency  = iota // a response-time percentile, max or mean: a duration
	kindRatio           // errors, misses: a percentage, or a count without %
	kindAchieved        // attempted ops over target ops: a percentage
	kindRate            // succeeded ops per second: a number
	kindRecovery        // time from a hook until back within the SLA: a duration
)

// Metrics lists the metric names a check may use (pNN stands for any percentile).
func Metrics() []string {
	return []string{"pNN (p50, p99, p99.9, ...)", "max", "mean", "errors", "misses", "dropped", "achieved", "rate", "recovery"}
}

// Threshold is one checked threshold.
type Threshold struct {
	Name  string
	Check string
	Class string
	// Metric is as written ("p99", "errors", ...); Quantile is set for percentiles.
	Metric   string
	kind     int
	Quantile float64
	// Op is <, <=, > or >=; Bound is in the metric's unit: µs for latency, seconds for
	// recovery, a ratio (0..1) for percentages, a count, or ops/s.
	Op    string
	Bound float64
	// Percent says the bound of errors or misses is a ratio, not a count.
	Percent   bool
	BoundText string
	Window    Window
	SLA       *SLA // recovery only
	Abort     bool
}

// Window is a threshold's span of the run.
type Window struct {
	Text string
	// Kind is "run", "phase", "during" or "from".
	Kind string
	// Ref is the phase or hook named.
	Ref string
	// Offset is the +D of "from H + D".
	Offset time.Duration
	// For limits the window's length (0: to its natural end).
	For time.Duration
	// Sustained is the length of the sliding windows the check must hold over (0: the
	// window as a whole).
	Sustained time.Duration
}

// SLA is what "within its SLA" means for a class, second by second: the recovery metric's
// yardstick.
type SLA struct {
	// Quantile and Latency bound a response-time percentile (µs); 0 Latency: no bound.
	Quantile float64
	Latency  float64
	// Errors bounds the error ratio (-1: no bound).
	Errors float64
	// Achieved bounds attempted over target ops from below (0: no bound).
	Achieved float64
	// Stable is how long the class must stay within the SLA to count as recovered.
	Stable time.Duration
	Text   string
}

// DefaultStable is how long a class must stay within its SLA to count as recovered.
const DefaultStable = 3 * time.Second

var checkRE = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(<=|>=|<|>)\s*(\S+)\s*$`)

func parseThreshold(ts ThresholdSpec, field string, sc *Scenario, slas map[string]map[string]string, classAllowed string) (*Threshold, driver.FieldErrors) {
	var errs driver.FieldErrors
	add := func(f, value, allowed string) {
		errs = append(errs, &driver.FieldError{Field: field + "." + f, Value: value, Allowed: allowed})
	}
	t := &Threshold{Check: strings.TrimSpace(ts.Check), Abort: ts.Abort}
	m := checkRE.FindStringSubmatch(ts.Check)
	if m == nil {
		add("check", ts.Check, "CLASS.METRIC OP VALUE, e.g. read.p99 < 20ms, write.errors < 0.1%, read.achieved > 99%, read.recovery < 15s; OP is <, <=, > or >=")
		return nil, errs
	}
	subject := m[1]
	t.Op, t.BoundText = m[2], m[3]
	// The class is the longest class name that prefixes the subject: class names may hold
	// dots, and so does a metric (p99.9).
	classes := slices.Clone(sc.Classes)
	sort.Slice(classes, func(i, j int) bool { return len(classes[i]) > len(classes[j]) })
	for _, c := range classes {
		if strings.HasPrefix(subject, c+".") {
			t.Class, t.Metric = c, subject[len(c)+1:]
			break
		}
	}
	if t.Class == "" {
		class, _, _ := strings.Cut(subject, ".")
		add("check", class, classAllowed+" (as CLASS.METRIC)")
		return nil, errs
	}
	if err := t.setMetric(); err != nil {
		add("check", t.Metric, "metrics "+strings.Join(Metrics(), ", "))
		return nil, errs
	}
	if err := t.setBound(); err != nil {
		add("check", t.BoundText, err.Error())
	}
	w, err := parseWindow(ts.Window, sc)
	if err != nil {
		add("window", ts.Window, err.Error())
	}
	t.Window = w
	if t.kind == kindRecovery {
		if err == nil && (w.Kind != "from" || w.Offset != 0 || w.Sustained != 0) {
			add("window", ts.Window, "for a recovery check, from HOOK (optionally with for D as the horizon): recovery is measured from the hook's start")
		}
		sla := slas[t.Class]
		if ts.SLA != nil {
			sla = ts.SLA
		}
		if sla == nil {
			add("sla", "", fmt.Sprintf("%s.recovery needs an SLA: set the threshold's sla or the scenario's sla.%s (keys %s)", t.Class, t.Class, strings.Join(slaKeys, ", ")))
		} else if s, fes := parseSLA(sla); len(fes) > 0 {
			for _, fe := range fes {
				fe.Field = field + ".sla." + fe.Field
			}
			errs = append(errs, fes...)
		} else {
			t.SLA = s
		}
	} else if ts.SLA != nil {
		add("sla", "", "sla goes with a recovery check only")
	}
	t.Name = ts.Name
	if t.Name == "" {
		t.Name = t.Check
		if w.Text != "" {
			t.Name += " [" + w.Text + "]"
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

func (t *Threshold) setMetric() error {
	switch t.Metric {
	case "max", "mean":
		t.kind = kindLatency
	case "errors", "misses", "dropped":
		t.kind = kindRatio
	case "achieved":
		t.kind = kindAchieved
	case "rate":
		t.kind = kindRate
	case "recovery":
		t.kind = kindRecovery
	default:
		q, err := parseQuantile(t.Metric)
		if err != nil {
			return err
		}
		t.kind, t.Quantile = kindLatency, q
	}
	return nil
}

// parseQuantile reads "p99.9" as 99.9.
func parseQuantile(s string) (float64, error) {
	if !strings.HasPrefix(s, "p") {
		return 0, fmt.Errorf("not a percentile")
	}
	q, err := strconv.ParseFloat(s[1:], 64)
	if err != nil || !(q > 0 && q < 100) || strings.ContainsAny(s[1:], "eE+-") {
		return 0, fmt.Errorf("not a percentile")
	}
	return q, nil
}

func (t *Threshold) setBound() error {
	s := t.BoundText
	switch t.kind {
	case kindLatency, kindRecovery:
		d, err := parseDuration(s)
		if err != nil || d < 0 {
			return fmt.Errorf("a duration for %s, e.g. 20ms, 1.5s, 500us", t.Metric)
		}
		if t.kind == kindLatency {
			t.Bound = float64(d) / float64(time.Microsecond)
		} else {
			t.Bound = d.Seconds()
		}
	case kindRatio, kindAchieved:
		if p, ok := strings.CutSuffix(s, "%"); ok {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) {
				return fmt.Errorf("a percentage, e.g. 0.1%%")
			}
			t.Bound, t.Percent = v/100, true
			return nil
		}
		if t.kind == kindAchieved {
			return fmt.Errorf("a percentage of the target rate, e.g. 99%%")
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("a percentage (0.1%%) or a count of operations (10)")
		}
		t.Bound = float64(v)
	case kindRate:
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "/s"), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return fmt.Errorf("ops per second, e.g. 1000 or 1000/s")
		}
		t.Bound = v
	}
	return nil
}

// parseDuration is time.ParseDuration that also takes µs spelled "us".
func parseDuration(s string) (time.Duration, error) {
	return time.ParseDuration(strings.ReplaceAll(s, "us", "µs"))
}

// parseWindow reads "run", "phase P", "during H", "from H [+ D]", then "for D" and
// "sustained D" in any order.
func parseWindow(text string, sc *Scenario) (Window, error) {
	w := Window{Text: strings.TrimSpace(text), Kind: "run"}
	phases, hooks := sc.phaseNames(), sc.hookNames()
	allowed := fmt.Errorf("run, phase PHASE, during HOOK or from HOOK + DURATION, optionally followed by for DURATION and sustained DURATION; phases: %s; hooks: %s",
		list(phases), list(hooks))
	toks := strings.Fields(strings.ReplaceAll(w.Text, "+", " + "))
	if len(toks) == 0 {
		return w, nil
	}
	i := 0
	switch toks[0] {
	case "run":
		i = 1
	case "phase":
		if len(toks) < 2 {
			return w, allowed
		}
		if !slices.Contains(phases, toks[1]) {
			return w, fmt.Errorf("phase %q is not a phase of the scenario; phases: %s", toks[1], list(phases))
		}
		w.Kind, w.Ref, i = "phase", toks[1], 2
	case "during", "from":
		if len(toks) < 2 {
			return w, allowed
		}
		if !slices.Contains(hooks, toks[1]) {
			return w, fmt.Errorf("hook %q is not a hook of the scenario; hooks: %s", toks[1], list(hooks))
		}
		w.Kind, w.Ref, i = toks[0], toks[1], 2
		if w.Kind == "from" && i+1 < len(toks) && toks[i] == "+" {
			d, err := time.ParseDuration(toks[i+1])
			if err != nil || d < 0 {
				return w, fmt.Errorf("from %s + %s: a duration after +", w.Ref, toks[i+1])
			}
			w.Offset, i = d, i+2
		}
	case "for", "sustained":
	default:
		return w, allowed
	}
	for i < len(toks) {
		if i+1 >= len(toks) || (toks[i] != "for" && toks[i] != "sustained") {
			return w, allowed
		}
		d, err := time.ParseDuration(toks[i+1])
		if err != nil || d <= 0 {
			return w, fmt.Errorf("%s %s: a positive duration", toks[i], toks[i+1])
		}
		if toks[i] == "for" {
			w.For = d
		} else {
			if d < time.Second || d > MaxSustained {
				return w, fmt.Errorf("sustained %s: from 1s to %s (each second of it keeps a histogram)", d, MaxSustained)
			}
			w.Sustained = d
		}
		i += 2
	}
	return w, nil
}

func list(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

func (sc *Scenario) phaseNames() []string {
	out := make([]string, len(sc.Phases))
	for i, p := range sc.Phases {
		out[i] = p.Name
	}
	return out
}

func (sc *Scenario) hookNames() []string {
	out := make([]string, len(sc.Hooks))
	for i, h := range sc.Hooks {
		out[i] = h.Name
	}
	return out
}

var slaKeys = []string{"pNN (p99: 10ms)", "max", "mean", "errors", "achieved", "stable"}

// parseSLA reads an SLA: one latency bound (pNN, max or mean), errors, achieved, stable.
func parseSLA(m map[string]string) (*SLA, driver.FieldErrors) {
	s := &SLA{Errors: -1, Stable: DefaultStable}
	var errs driver.FieldErrors
	var parts []string
	for _, k := range sortedKeys(m) {
		v := strings.TrimSpace(m[k])
		bad := func(allowed string) { errs = append(errs, &driver.FieldError{Field: k, Value: v, Allowed: allowed}) }
		switch k {
		case "errors", "achieved":
			p, ok := strings.CutSuffix(v, "%")
			f, err := strconv.ParseFloat(p, 64)
			if !ok || err != nil || f < 0 || f > 100 {
				bad("a percentage, e.g. 1%")
				continue
			}
			if k == "errors" {
				s.Errors = f / 100
			} else {
				s.Achieved = f / 100
			}
		case "stable":
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				bad("a duration of at least 1s")
				continue
			}
			s.Stable = d
		default:
			q := 100.0
			switch k {
			case "max":
			case "mean":
				q = -1
			default:
				var err error
				if q, err = parseQuantile(k); err != nil {
					errs = append(errs, &driver.FieldError{Field: k, Value: k, Allowed: "SLA keys " + strings.Join(slaKeys, ", ")})
					continue
				}
			}
			if s.Latency != 0 {
				bad("one latency bound per SLA")
				continue
			}
			d, err := parseDuration(v)
			if err != nil || d <= 0 {
				bad("a positive duration, e.g. 10ms")
				continue
			}
			s.Quantile, s.Latency = q, float64(d)/float64(time.Microsecond)
		}
		parts = append(parts, k+" "+v)
	}
	if s.Latency == 0 && s.Errors < 0 && s.Achieved == 0 {
		errs = append(errs, &driver.FieldError{Field: "sla", Allowed: "at least one of a latency bound (p99: 10ms), errors or achieved"})
	}
	if _, ok := m["stable"]; !ok {
		parts = append(parts, "stable "+s.Stable.String())
	}
	s.Text = strings.Join(parts, ", ")
	return s, errs
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunCheck is one threshold of a plain run (ndbench run --threshold, or thresholds: in
// its config file) and where it was given, to name in errors.
type RunCheck struct {
	// Check is CLASS.METRIC OP VALUE, as a scenario threshold's check.
	Check string
	// Field names it in errors: "--threshold" or "thresholds[2] in FILE".
	Field string
	// Source is where it was given, for reports: "flag --threshold", "file FILE".
	Source string
}

// NewRunEvaluator parses a run's checks with the scenario grammar and returns an evaluator
// of them over the run's whole measured span (the window "run": it opens at the
// EvRunStart event, which the run sends when it starts measuring), and the checks it
// judges, in order. classes are the workload's op classes, active those that run: a
// check without a class ("errors < 1%") is one check per active class. Every check is
// parsed before any error returns, each error naming its field.
func NewRunEvaluator(checks []RunCheck, classes, active []string) (*Evaluator, []RunCheck, error) {
	sc := &Scenario{Name: "run", Classes: classes}
	var errs driver.FieldErrors
	var judged []RunCheck
	for _, c := range checks {
		if m := checkRE.FindStringSubmatch(c.Check); m != nil && !slices.Contains(classes, strings.Split(m[1], ".")[0]) {
			if probe := (&Threshold{Metric: m[1]}); probe.setMetric() == nil {
				for _, class := range active {
					judged = append(judged, RunCheck{Check: fmt.Sprintf("%s.%s %s %s", class, m[1], m[2], m[3]), Field: c.Field, Source: c.Source})
				}
				continue
			}
		}
		judged = append(judged, c)
	}
	for _, c := range judged {
		t, fes := parseThreshold(ThresholdSpec{Check: c.Check}, c.Field, sc, nil, "op classes "+list(classes)+", or none for every class that runs")
		for _, fe := range fes {
			// A run's check has no window, sla or name of its own: the field is the flag,
			// with the check when the error names only a part of it.
			fe.Field = c.Field
			if fe.Value != c.Check {
				fe.Field = fmt.Sprintf("%s %q", c.Field, c.Check)
			}
		}
		errs = append(errs, fes...)
		if t != nil {
			sc.Thresholds = append(sc.Thresholds, t)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return NewEvaluator(sc), judged, nil
}

// thresholds checks the thresholds of f and adds them to sc.
func (pa *parsing) thresholds(sc *Scenario, f *File, classAllowed string) {
	for i, ts := range f.Thresholds {
		field := fmt.Sprintf("thresholds[%d]", i)
		t, fes := parseThreshold(ts, field, sc, f.SLA, classAllowed)
		for _, fe := range fes {
			fe.Source = "scenario " + pa.path
		}
		pa.errs = append(pa.errs, fes...)
		if t != nil {
			sc.Thresholds = append(sc.Thresholds, t)
		}
	}
}
