package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ndbench/ndbench/internal/stats"
)

// Charts are what an HTML report inlines to draw its charts: uPlot's script and
// stylesheet, the UI's chart code (charts.js) and the UI's stylesheet. The web UI owns
// these files (web.Charts returns them, convertible to this type); the caller passes them
// in, so a saved report draws the same charts as the live page while report depends on
// no UI package: the commands and the API, which serve the UI anyway, join the two.
type Charts struct {
	UPlotJS, UPlotCSS, ChartsJS, StyleCSS string
}

//go:embed report.html.tmpl
var htmlTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": func(us float64) string { return fmt.Sprintf("%.3f", us/1000) },
	"f0": func(v float64) string { return fmt.Sprintf("%.0f", v) },
	"f2": func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"mb": func(b int64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) },
}).Parse(htmlTemplate))

type htmlOp struct {
	Name string
	stats.OpSummary
	Failures   string
	Validation string
	// Messages are what the store said for the failures (Report.Errors).
	Messages []stats.ErrorMessage
	// Target is the target rate as the series saw it: the summary's gauge is the last one
	// set, which is 0 once the load has stopped.
	Target string
}

type keyValue struct{ Key, Value string }

// WriteHTML writes r as one self-contained HTML page: summary tables, warnings, the
// per-op charts of the time series (charts' scripts and styles inlined), the driver's
// details and the configuration. It loads nothing from anywhere, so it can be mailed or
// archived as is; the full JSON report is embedded in it (element id "ndbench-report").
func WriteHTML(w io.Writer, r *Report, charts Charts) error {
	data, err := json.Marshal(r) // escapes <, > and &: safe inside a script element
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	ops := []htmlOp{}
	for _, name := range stats.ReportOrder(r.Ops) {
		s := r.Ops[name]
		op := htmlOp{Name: name, OpSummary: s, Target: targetText(s.TargetRate, r.Series, name), Messages: r.Errors[name]}
		var parts []string
		for _, c := range []string{"timeout", "unavailable", "throttled", "rejected", "other"} {
			if n := s.Failures[c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", c, n))
			}
		}
		op.Failures = strings.Join(parts, ", ")
		parts = nil
		for _, v := range stats.Validations {
			if n := s.Validation[v.String()]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", v, n))
			}
		}
		op.Validation = strings.Join(parts, ", ")
		ops = append(ops, op)
	}
	// The phases before the measured span (backfill, warm-up), each with the figures of the
	// classes that ran in it, so the page shows what the JSON report's phases hold.
	type phaseRow struct {
		Phase, Op string
		Seconds   float64
		stats.OpSummary
	}
	var phases []phaseRow
	for _, p := range r.Phases {
		for _, name := range stats.ReportOrder(p.Ops) {
			phases = append(phases, phaseRow{Phase: p.Name, Op: name, Seconds: p.Seconds, OpSummary: p.Ops[name]})
		}
	}
	a := charts
	err = reportTmpl.Execute(w, map[string]any{
		"R":          r,
		"Ops":        ops,
		"Phases":     phases,
		"DriverInfo": sortedKV(r.Driver.Info),
		"DriverStats": func() []keyValue {
			m := map[string]string{}
			for k, v := range r.Driver.Stats {
				m[k] = fmt.Sprint(v)
			}
			return sortedKV(m)
		}(),
		"CSS":      template.CSS(a.UPlotCSS + "\n" + a.StyleCSS),
		"UPlotJS":  template.JS(a.UPlotJS),
		"ChartsJS": template.JS(a.ChartsJS),
		"Data":     template.JS(data),
	})
	if err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

// targetText is the op's target rate: one number, a range when it changed during the
// run, or "–" when no point had one (closed loop, or no load).
func targetText(last float64, series []stats.Point, op string) string {
	lo, hi := last, last
	for _, p := range series {
		if t := p.Ops[op].TargetRate; t > 0 {
			if lo <= 0 || t < lo {
				lo = t
			}
			hi = max(hi, t)
		}
	}
	switch {
	case hi <= 0:
		return "–"
	case lo == hi:
		return fmt.Sprintf("%.0f", hi)
	}
	return fmt.Sprintf("%.0f–%.0f", lo, hi)
}

func sortedKV(m map[string]string) []keyValue {
	out := make([]keyValue, 0, len(m))
	for k, v := range m {
		out = append(out, keyValue{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// CheckWritable tells, before a run, whether a report can be written to path as the run's
// end will write it: a new file in path's directory, renamed over path. A run of hours whose
// report is refused only at its end loses everything it measured, so the commands check
// their output paths first. It leaves nothing behind.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("write report %s: is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ndbench-report-*")
	if err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	name := tmp.Name()
	_ = tmp.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("write report %s: remove the probe %s: %w", path, name, err)
	}
	return nil
}
