package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Output formats.
const (
	Text     = "text"
	JSON     = "json"
	Markdown = "markdown"
)

// Formats lists the output formats Write accepts.
func Formats() []string { return []string{Text, JSON, Markdown} }

// TextWidth is the columns the Text format fits by default: a 100-column terminal or a CI
// log viewer shows every line whole. WriteText with 0 keeps each line whole however long.
const TextWidth = 100

// WriteText prints r as text, its sentences wrapped at width columns (0: one line each).
func WriteText(w io.Writer, r *Result, width int) error {
	if err := writeText(w, r, width); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// Write prints r in format (Text, JSON or Markdown).
func Write(w io.Writer, r *Result, format string) error {
	var err error
	switch format {
	case Text:
		err = writeText(w, r, TextWidth)
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // conditions hold < and >, which people read
		err = enc.Encode(r)
	case Markdown:
		err = writeMarkdown(w, r)
	default:
		return fmt.Errorf("format %q: want one of %s", format, strings.Join(Formats(), ", "))
	}
	if err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// formatValue shows a metric's value in the unit people read it in: milliseconds for
// latencies, percent for error ratios.
func formatValue(metric string, v float64) string {
	switch metric {
	case "rate":
		return fmt.Sprintf("%.1f/s", v)
	case "errors":
		return fmt.Sprintf("%.3f%%", 100*v)
	}
	return fmt.Sprintf("%.3f ms", v/1000)
}

// signedValue shows a difference; error ratios differ in percentage points (pp), so a
// difference is never mistaken for a relative change.
func signedValue(metric string, v float64) string {
	switch metric {
	case "rate":
		return fmt.Sprintf("%+.1f/s", v)
	case "errors":
		return fmt.Sprintf("%+.3f pp", 100*v)
	}
	return fmt.Sprintf("%+.3f ms", v/1000)
}

// row is one metric's cells, shared by the text and Markdown tables.
func row(s Series, m Metric) []string {
	pct, p, sig := "n/a", "-", "not tested"
	if m.DiffPct != nil {
		pct = fmt.Sprintf("%+.2f%%", *m.DiffPct)
	} else if m.Diff == 0 {
		pct = "+0.00%"
	}
	switch {
	case m.NoData:
		sig = "no data"
	case m.Tested && m.Significant:
		sig = "YES"
	case m.Tested:
		sig = "no"
	}
	if m.P != nil {
		p = fmt.Sprintf("%.4f", *m.P)
	}
	name := m.Name
	if name != "rate" && name != "errors" {
		name += " ms"
	}
	return []string{s.Name, name, cell(m.Name, m.Baseline, false), cell(m.Name, m.Candidate, false), cell(m.Name, m.Diff, true), pct, p, sig}
}

// cell is a table's number: the unit is in the metric column (ms) or the number (%, pp).
func cell(metric string, v float64, signed bool) string {
	sign := ""
	if signed {
		sign = "+"
	}
	switch metric {
	case "rate":
		return fmt.Sprintf("%"+sign+".1f", v)
	case "errors":
		if signed {
			return fmt.Sprintf("%+.3f pp", 100*v)
		}
		return fmt.Sprintf("%.3f%%", 100*v)
	}
	return fmt.Sprintf("%"+sign+".3f", v/1000)
}

var header = []string{"series", "metric", "baseline", "candidate", "diff", "diff %", "p-value", "significant"}

func (r *Result) describe() string {
	return fmt.Sprintf("%s latency; significance: Mann-Whitney U over per-second values at alpha %g (at least %d intervals per run)",
		r.Latency, r.Alpha, r.MinIntervals)
}

func runText(run Run) string {
	name := run.File
	if name == "" {
		name = "(report)"
	}
	return fmt.Sprintf("%s (driver %s, %.1f s from %s)", name, run.Driver, run.Seconds, run.Started.Format("2006-01-02 15:04:05"))
}

func verdict(r *Result) string {
	n := 0
	for _, c := range r.Conditions {
		if c.Triggered {
			n++
		}
	}
	switch {
	case len(r.Conditions) == 0:
		return "no fail-on conditions given"
	case r.Failed:
		return fmt.Sprintf("FAIL: %d of %d fail-on conditions triggered", n, len(r.Conditions))
	}
	return fmt.Sprintf("PASS: none of %d fail-on conditions triggered", len(r.Conditions))
}

func writeText(w io.Writer, r *Result, width int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n%s\n\n", wrap("baseline:  ", runText(r.Baseline), width), wrap("candidate: ", runText(r.Candidate), width),
		wrap("", r.describe(), width))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, s := range r.Series {
		for _, m := range s.Metrics {
			fmt.Fprintln(tw, strings.Join(row(s, m), "\t")+"\t")
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, side := range []string{"baseline", "candidate"} {
		if names := r.OnlyIn[side]; len(names) > 0 {
			fmt.Fprintln(&b, wrap("only in the "+side+" (not compared): ", strings.Join(names, ", "), width))
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintln(&b, wrap("WARNING: ", warn, width))
	}
	if len(r.Conditions) > 0 {
		fmt.Fprintln(&b)
	}
	for _, c := range r.Conditions {
		state := "ok  "
		if c.Triggered {
			state = "FAIL"
		}
		fmt.Fprintln(&b, wrap(state+"  ", c.Condition+": "+c.Reason, width))
	}
	fmt.Fprintln(&b, verdict(r))
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks text at spaces into lines of at most width columns, the first after prefix,
// the others indented as deep; width 0 keeps one line. A word longer than a line stays
// whole.
func wrap(prefix, text string, width int) string {
	if width <= 0 {
		return prefix + text
	}
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	var b strings.Builder
	line, fresh := prefix, true
	for _, word := range strings.Fields(text) {
		if !fresh && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			b.WriteString(line + "\n")
			line, fresh = indent, true
		}
		if !fresh {
			line += " "
		}
		line, fresh = line+word, false
	}
	b.WriteString(line)
	return b.String()
}

func writeMarkdown(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### ndbench compare: %s\n\n", verdict(r))
	fmt.Fprintf(&b, "Baseline: %s  \nCandidate: %s  \n%s.\n\n", mdEscape(runText(r.Baseline)), mdEscape(runText(r.Candidate)), r.describe())
	if len(r.Conditions) > 0 {
		b.WriteString("| | condition | outcome |\n|---|---|---|\n")
		for _, c := range r.Conditions {
			state := "✅ ok"
			if c.Triggered {
				state = "❌ FAIL"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", state, c.Condition, mdEscape(c.Reason))
		}
		b.WriteString("\n")
	}
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|" + strings.Repeat("---|", len(header)) + "\n")
	for _, s := range r.Series {
		for _, m := range s.Metrics {
			cells := row(s, m)
			if m.Significant {
				cells[7] = "**YES**"
			}
			for i := range cells {
				cells[i] = mdEscape(cells[i])
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
	}
	for _, side := range []string{"baseline", "candidate"} {
		if names := r.OnlyIn[side]; len(names) > 0 {
			fmt.Fprintf(&b, "\nOnly in the %s (not compared): %s\n", side, mdEscape(strings.Join(names, ", ")))
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
		for _, warn := range r.Warnings {
			fmt.Fprintf(&b, "- ⚠️ %s\n", mdEscape(warn))
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps a cell's text from breaking the table.
func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
