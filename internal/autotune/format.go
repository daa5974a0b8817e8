package autotune

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// StepHeader is the header of the step table (WriteStep's columns).
func StepHeader(w io.Writer) {
	fmt.Fprintf(w, "%3s %-8s %10s %10s %-12s %-6s %-12s %s\n", "#", "phase", "rate/s", "achieved", "pX", "errors", "verdict", "why")
}

// WriteStep writes one row of the step table: per class its percentile and error ratio,
// the verdict and why.
func WriteStep(w io.Writer, st Step, s Settings) {
	var lat, errs []string
	for _, c := range slices.Sorted(maps.Keys(st.Classes)) {
		m := st.Classes[c]
		sla := s.slaOf(c)
		lat = append(lat, fmt.Sprintf("%s %s", sla.PercentileName(), us(m.Response)))
		errs = append(errs, fmt.Sprintf("%.2g%%", 100*m.ErrorRatio()))
	}
	prefix := ""
	if len(st.Classes) > 1 {
		prefix = "(" + strings.Join(slices.Sorted(maps.Keys(st.Classes)), "/") + ") "
	}
	fmt.Fprintf(w, "%3d %-8s %10s %10s %-12s %-6s %-12s %s\n", st.N, st.Phase, rateText(st.Rate), rateText(st.Achieved),
		strings.Join(lat, " / "), strings.Join(errs, "/"), st.Verdict, prefix+strings.Join(st.Why, "; "))
}

// WriteText writes the result as text: the step table and the outcome.
func WriteText(w io.Writer, r *Result) {
	StepHeader(w)
	for _, st := range r.Steps {
		WriteStep(w, st, r.Settings)
	}
	fmt.Fprintln(w)
	WriteOutcome(w, r)
}

// WriteOutcome writes the result's outcome lines: status, capacity and interval, split
// by class, and hold mode's rates.
func WriteOutcome(w io.Writer, r *Result) {
	fmt.Fprintf(w, "SLA: %s", r.Settings.SLA)
	for _, c := range slices.Sorted(maps.Keys(r.Settings.Classes)) {
		fmt.Fprintf(w, "; %s: %s", c, r.Settings.Classes[c])
	}
	fmt.Fprintf(w, "\n%d steps in %.0f s\n", len(r.Steps), r.Seconds)
	switch r.Status {
	case StatusFound:
		fmt.Fprintf(w, "capacity: %s ops/s within SLA, interval [%s, %s] ops/s", rateText(r.Capacity), rateText(r.Lo), rateText(r.Hi))
		if len(r.PerClass) > 1 {
			var parts []string
			for _, c := range slices.Sorted(maps.Keys(r.PerClass)) {
				parts = append(parts, fmt.Sprintf("%s %s", c, rateText(r.PerClass[c])))
			}
			fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "%s: %s\n", strings.ToUpper(r.Status), r.Message)
	}
	if h := r.Hold; h != nil {
		fmt.Fprintf(w, "hold: %d windows, rate %s..%s ops/s (mean %s), %d violations, final %s ops/s\n",
			h.Windows, rateText(h.Min), rateText(h.Max), rateText(h.Mean), h.Failures, rateText(h.Final))
	}
}
