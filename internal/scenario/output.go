package scenario

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/report"
)

// Timeline prints what the scenario will do, for --dry-run.
func (sc *Scenario) Timeline(w io.Writer) {
	fmt.Fprintf(w, "scenario %s (%s): driver %s, classes %s\n", sc.Name, sc.Path, sc.Snapshot.Config.DriverName, strings.Join(sc.Classes, ", "))
	if sc.Desc != "" {
		fmt.Fprintf(w, "  %s\n", strings.TrimSpace(sc.Desc))
	}
	if sc.Backfill {
		fmt.Fprintln(w, "  backfill first (not measured)")
	}
	for _, e := range sc.timeline() {
		if e.phase >= 0 {
			p := sc.Phases[e.phase]
			fmt.Fprintf(w, "%9s  phase %s, %s\n", offset(e.at), p.Name, durText(p.Duration))
			for _, k := range sortedKeys(p.Set) {
				fmt.Fprintf(w, "%9s    set %s=%s\n", "", k, p.Set[k])
			}
			for _, k := range sortedKeys(p.Load) {
				fmt.Fprintf(w, "%9s    %s: %s\n", "", k, p.Load[k])
			}
			continue
		}
		h := sc.Hooks[e.hook]
		fmt.Fprintf(w, "%9s  hook %s (%s): %s, timeout %s\n", offset(e.at), h.Name, h.AtText, h.Action, h.Action.Timeout)
		if h.Undo != nil {
			fmt.Fprintf(w, "%9s  hook %s undo: %s\n", offset(e.at+h.For), h.Name, *h.Undo)
		}
	}
	if end := sc.End(); end != Forever {
		fmt.Fprintf(w, "%9s  end\n", offset(end))
	} else {
		fmt.Fprintf(w, "%9s  runs until interrupted\n", "")
	}
	if len(sc.Thresholds) > 0 {
		fmt.Fprintln(w, "thresholds:")
	}
	for _, t := range sc.Thresholds {
		extra := ""
		if t.SLA != nil {
			extra = " (SLA " + t.SLA.Text + ")"
		}
		if t.Abort {
			extra += ", aborts on failure"
		}
		win := t.Window.Text
		if win == "" {
			win = "run"
		}
		fmt.Fprintf(w, "  %s  [%s; suite %s]%s\n", t.Check, win, sc.suiteOf(t.Window), extra)
	}
}

func offset(d time.Duration) string { return "+" + d.String() }

// WriteText prints the verdict and every threshold's outcome.
func (o *Outcome) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\nscenario %s: %s (exit %d)\n", o.Scenario, o.Verdict(), o.ExitCode())
	for _, r := range o.Thresholds {
		fmt.Fprintf(w, "  %-4s  %-40s observed %-10s [%s]", strings.ToUpper(short(r.Status)), r.Check, r.Observed, r.Window)
		if r.Detail != "" {
			fmt.Fprintf(w, "  %s", r.Detail)
		}
		fmt.Fprintln(w)
	}
	for _, m := range o.Marks {
		if m.Kind == "hook" && m.Error != "" {
			fmt.Fprintf(w, "  hook %s failed: %s\n", m.Name, m.Error)
		}
	}
	if o.AbortedBy != "" {
		fmt.Fprintf(w, "  aborted by threshold %s\n", o.AbortedBy)
	}
	if o.Interrupted {
		fmt.Fprintln(w, "  interrupted by a signal: the scenario did not run to its end")
	}
	if o.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", o.Error)
	}
	for _, s := range o.Invalid {
		fmt.Fprintf(w, "  INVALID: %s\n", s)
	}
}

func short(status string) string {
	if status == NotEvaluated {
		return "skip"
	}
	return status
}

// JUnit XML: a testsuite per phase (and "run" for whole-run windows), a testcase per
// threshold with the observed value, failures as <failure>, windows never reached as
// <skipped>. A hook or node error is an <error> in the suite of its phase.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      float64     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string        `xml:"name,attr"`
	Classname  string        `xml:"classname,attr"`
	Time       float64       `xml:"time,attr"`
	Properties *junitProps   `xml:"properties,omitempty"`
	Failure    *junitFailure `xml:"failure,omitempty"`
	Error      *junitFailure `xml:"error,omitempty"`
	Skipped    *junitSkipped `xml:"skipped,omitempty"`
	SystemOut  string        `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the outcome as JUnit XML.
func (o *Outcome) WriteJUnit(w io.Writer) error {
	suites := map[string]*junitSuite{}
	order := append([]string{}, o.Phases...)
	order = append(order, "run")
	for _, name := range order {
		suites[name] = &junitSuite{Name: name}
	}
	for _, m := range o.Marks {
		if m.Kind == "phase" {
			s := suites[m.Name]
			s.Timestamp = m.Start.UTC().Format(time.RFC3339)
			if !m.End.IsZero() {
				s.Time = m.End.Sub(m.Start).Seconds()
			}
		}
	}
	suites["run"].Time = o.Ended.Sub(o.Started).Seconds()
	suites["run"].Timestamp = o.Started.UTC().Format(time.RFC3339)
	for _, r := range o.Thresholds {
		s := suites[r.Suite]
		if s == nil {
			s = suites["run"]
		}
		c := junitCase{Name: r.Name, Classname: o.Scenario + "." + r.Suite,
			Properties: &junitProps{Props: []junitProp{{"check", r.Check}, {"window", r.Window}, {"observed", r.Observed}, {"intervals", fmt.Sprint(r.Intervals)}}},
			SystemOut:  fmt.Sprintf("%s: observed %s over %d intervals [%s]. %s", r.Check, r.Observed, r.Intervals, r.Window, r.Detail)}
		if r.PartialIntervals > 0 {
			c.Properties.Props = append(c.Properties.Props, junitProp{"partialIntervals", fmt.Sprint(r.PartialIntervals)})
		}
		if !r.From.IsZero() && !r.To.IsZero() {
			c.Time = r.To.Sub(r.From).Seconds()
		}
		switch r.Status {
		case Fail:
			s.Failures++
			c.Failure = &junitFailure{Message: fmt.Sprintf("%s: observed %s", r.Check, r.Observed), Type: "threshold", Text: r.Detail}
		case NotEvaluated:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: joinDetail("window not reached", r.Detail)}
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	if o.Error != "" || o.Interrupted || len(o.Invalid) > 0 {
		s := suites["run"]
		msg, typ := o.Error, "error"
		switch {
		case msg != "":
		case o.Interrupted:
			msg, typ = "interrupted by a signal: the scenario did not run to its end", "interrupted"
		default:
			msg, typ = strings.Join(o.Invalid, "; "), "invalid"
		}
		s.Tests++
		s.Errors++
		s.Cases = append(s.Cases, junitCase{Name: "scenario " + typ, Classname: o.Scenario + ".run", Error: &junitFailure{Message: msg, Type: typ}})
	}
	all := junitSuites{Name: o.Scenario, Time: o.Ended.Sub(o.Started).Seconds()}
	for _, name := range order {
		s := suites[name]
		if name == "run" && s.Tests == 0 {
			continue
		}
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
		all.Skipped += s.Skipped
		all.Suites = append(all.Suites, *s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return fmt.Errorf("write JUnit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteMarkdown writes the outcome as Markdown (a GitHub step summary).
func (o *Outcome) WriteMarkdown(w io.Writer) {
	icon := map[string]string{Pass: "✅", Fail: "❌", NotEvaluated: "⏭️"}
	fmt.Fprintf(w, "### Scenario %s: %s\n\n", mdEscape(o.Scenario), o.Verdict())
	fmt.Fprintf(w, "Exit code %d, %s, from %s.\n\n", o.ExitCode(), o.Ended.Sub(o.Started).Round(time.Second), o.Started.UTC().Format(time.RFC3339))
	if len(o.Thresholds) > 0 {
		fmt.Fprintln(w, "| | threshold | window | observed | detail |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, r := range o.Thresholds {
			fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s |\n", icon[r.Status], r.Check, mdEscape(r.Window), mdEscape(r.Observed), mdEscape(r.Detail))
		}
		fmt.Fprintln(w)
	}
	var hooks []Mark
	for _, m := range o.Marks {
		if m.Kind == "hook" {
			hooks = append(hooks, m)
		}
	}
	sort.SliceStable(hooks, func(i, j int) bool { return hooks[i].Start.Before(hooks[j].Start) })
	for _, m := range hooks {
		status := "ok"
		if m.Error != "" {
			status = "failed: " + m.Error
		}
		fmt.Fprintf(w, "- hook **%s** at +%s: %s\n", mdEscape(m.Name), m.Start.Sub(o.Started).Round(time.Second), mdEscape(status))
	}
	if o.AbortedBy != "" {
		fmt.Fprintf(w, "\nAborted by threshold `%s`.\n", o.AbortedBy)
	}
	if o.Interrupted {
		fmt.Fprintln(w, "\nInterrupted by a signal: the scenario did not run to its end.")
	}
	if o.Error != "" {
		fmt.Fprintf(w, "\nError: %s\n", mdEscape(o.Error))
	}
	for _, s := range o.Invalid {
		fmt.Fprintf(w, "\n**Invalid result:** %s\n", mdEscape(s))
	}
	fmt.Fprintln(w)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// Report is the JSON report of a scenario run: the run's report (the format `ndbench run
// --report` writes, so `ndbench compare` reads it) with the scenario's outcome beside it.
type Report struct {
	*report.Report
	Scenario *Outcome `json:"scenario"`
}

// ReportMarks returns the outcome's phases and hooks for the run report's timeline.
func (o *Outcome) ReportMarks() []report.Mark {
	out := make([]report.Mark, 0, len(o.Marks))
	for _, m := range o.Marks {
		rm := report.Mark{Kind: m.Kind, Name: m.Name, Start: stamp(m.Start), Detail: m.Detail, Error: m.Error}
		if !m.End.IsZero() {
			rm.End = stamp(m.End)
		}
		out = append(out, rm)
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
