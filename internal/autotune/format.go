package autotune

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The step table's fixed columns: a row's cells line up under the header whatever their
// values, the way a search prints its steps one by one as they end.
const (
	latencyCell = 14 // "p99.9 999.99ms"
	errorsCell  = 6  // "0.12%"
	verdictCell = 12 // "client-bound"
	// minWhy is the narrowest the why column gets beside the others; narrower, the why
	// goes on lines of its own under the row.
	minWhy = 24
	// whyIndent indents a why on lines of its own.
	whyIndent = 6
)

// StepHeader writes the header of the step table (WriteStep's columns) for a search of
// the op classes given. width is the most columns a row takes (the why wraps to fit); 0
// leaves each row one line.
func StepHeader(w io.Writer, classes []string, width int) {
	fmt.Fprintf(w, "%s %s\n", columns(classColumn(classes), "#", "phase", "rate/s", "achieved", "class", "pX", "errors", "verdict"), "why")
}

// classColumn is the width of the class column: 0 (none) for a search of one class,
// whose figures fit on the step's row; with more, each class has a line of its own.
func classColumn(classes []string) int {
	if len(classes) < 2 {
		return 0
	}
	n := len("class")
	for _, c := range classes {
		n = max(n, utf8.RuneCountInString(c))
	}
	return n
}

// columns lays out the cells before the why column, each at its fixed width.
func columns(classW int, n, phase, rate, achieved, class, lat, errs, verdict string) string {
	c := ""
	if classW > 0 {
		c = fmt.Sprintf("%-*s ", classW, class)
	}
	return fmt.Sprintf("%3s %-8s %8s %8s %s%-*s %-*s %-*s", n, phase, rate, achieved, c, latencyCell, lat, errorsCell, errs, verdictCell, verdict)
}

// WriteStep writes one row of the step table: its percentile and error ratio (with
// several classes, the first's on the row and each other's on a line below), the
// verdict and why, the why wrapped to keep the lines within width columns (0: one line).
//
// A line before the row says why the search ran this rate (Step.Because): a step's
// decision read with the step it led to, such as a bisection that returns to a higher rate
// after recovery steps failed.
func WriteStep(w io.Writer, st Step, s Settings, width int) {
	if st.Because != "" {
		const prefix = "    > "
		if width <= 0 {
			fmt.Fprintln(w, prefix+st.Because)
		} else {
			for i, l := range wrap(st.Because, width-len(prefix)-2) {
				if i == 0 {
					fmt.Fprintln(w, prefix+l)
				} else {
					fmt.Fprintln(w, strings.Repeat(" ", len(prefix)+2)+l)
				}
			}
		}
	}
	classes := slices.Sorted(maps.Keys(st.Classes))
	classW := classColumn(classes)
	cell := func(c string) (string, string) {
		m := st.Classes[c]
		return fmt.Sprintf("%s %s", s.slaOf(c).PercentileName(), us(m.Response)), errorsText(m.ErrorRatio())
	}
	first, lat, errs := "", "", ""
	if len(classes) > 0 {
		first = classes[0]
		lat, errs = cell(first)
	}
	rows := []string{columns(classW, fmt.Sprint(st.N), st.Phase, rateText(st.Rate), rateText(st.Achieved), first, lat, errs, string(st.Verdict))}
	if classW > 0 {
		for _, c := range classes[1:] {
			lat, errs := cell(c)
			rows = append(rows, columns(classW, "", "", "", "", c, lat, errs, ""))
		}
	}
	cells := utf8.RuneCountInString(rows[0]) + 1
	why := strings.Join(st.Why, "; ")
	var lines []string // the why beside the rows, down its own column
	switch {
	case why == "":
	case width <= 0:
		lines = []string{why}
	case width-cells >= minWhy:
		lines = wrap(why, width-cells)
	default:
		for _, l := range wrap(why, width-whyIndent) {
			rows = append(rows, strings.Repeat(" ", whyIndent)+l)
		}
	}
	for i := range max(len(rows), len(lines)) {
		row := strings.Repeat(" ", cells-1)
		if i < len(rows) {
			row = rows[i]
		}
		if i < len(lines) {
			row += " " + lines[i]
		}
		fmt.Fprintln(w, strings.TrimRight(row, " "))
	}
}

// errorsText is an error ratio as a percentage in at most errorsCell columns.
func errorsText(r float64) string {
	switch p := 100 * r; {
	case p == 0:
		return "0%"
	case p < 10:
		return fmt.Sprintf("%.2g%%", p)
	default:
		return fmt.Sprintf("%.0f%%", p)
	}
}

// wrap breaks text at spaces into lines of at most width columns; a word longer than a
// line stays whole on its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// WriteText writes the result as text: the step table and the outcome, at most width
// columns a line (0: each row and sentence on one line).
func WriteText(w io.Writer, r *Result, width int) {
	var classes []string
	if len(r.Steps) > 0 {
		classes = slices.Sorted(maps.Keys(r.Steps[0].Classes))
	}
	StepHeader(w, classes, width)
	for _, st := range r.Steps {
		WriteStep(w, st, r.Settings, width)
	}
	fmt.Fprintln(w)
	WriteOutcome(w, r, width)
}

// WriteOutcome writes the result's outcome lines: status, capacity and interval, split
// by class, and hold mode's rates, each wrapped at width columns (0: one line each).
func WriteOutcome(w io.Writer, r *Result, width int) {
	line := func(prefix, text string) {
		if width <= 0 {
			fmt.Fprintln(w, prefix+text)
			return
		}
		for i, l := range wrap(text, width-utf8.RuneCountInString(prefix)) {
			if i > 0 {
				prefix = strings.Repeat(" ", utf8.RuneCountInString(prefix))
			}
			fmt.Fprintln(w, prefix+l)
		}
	}
	sla := r.Settings.SLA.String()
	for _, c := range slices.Sorted(maps.Keys(r.Settings.Classes)) {
		sla += fmt.Sprintf("; %s: %s", c, r.Settings.Classes[c])
	}
	line("SLA: ", sla)
	fmt.Fprintf(w, "%d steps in %.0f s\n", len(r.Steps), r.Seconds)
	switch r.Status {
	case StatusFound:
		text := fmt.Sprintf("%s ops/s within SLA, interval [%s, %s] ops/s", rateText(r.Capacity), rateText(r.Lo), rateText(r.Hi))
		if len(r.PerClass) > 1 {
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(r.PerClass)) {
				parts = append(parts, fmt.Sprintf("%s %s", c, rateText(r.PerClass[c])))
			}
			text += fmt.Sprintf(" (%s)", strings.Join(parts, ", "))
		}
		line("capacity: ", text)
	default:
		line(strings.ToUpper(r.Status)+": ", r.Message)
	}
	if h := r.Hold; h != nil {
		line("hold: ", fmt.Sprintf("%d windows, rate %s..%s ops/s (mean %s), %d violations, final %s ops/s",
			h.Windows, rateText(h.Min), rateText(h.Max), rateText(h.Mean), h.Failures, rateText(h.Final)))
	}
}
