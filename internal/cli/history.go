package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/compare"
	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// recordKinds are the kinds of recorded runs: the commands that record them.
var recordKinds = []string{"run", "serve", "scenario", "autotune", "fleet", "import"}

// errRegression is returned by history check when the newest run lies in a regression:
// the command worked, the figure did not pass, and the exit code is 1 like a failed run.
var errRegression = errors.New("regression")

// resultsFlag is --results: where runs are recorded; empty means the default target.
type resultsFlag struct{ target string }

func (r *resultsFlag) bind(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&r.target, "results", "", "results store: a SQLite file path or a postgres:// URL (default $"+history.EnvResults+
		", else history.db in $XDG_DATA_HOME/ndbench or ~/.local/share/ndbench)")
}

// resolve returns the store's target: --results, else the default.
func (r *resultsFlag) resolve(env []string) (string, error) {
	if r.target != "" {
		return r.target, nil
	}
	t, err := history.DefaultTarget(env)
	if err != nil {
		return "", usageError{fmt.Errorf("--results: %w", err)}
	}
	return t, nil
}

func (r *resultsFlag) open(ctx context.Context, env []string) (history.Store, error) {
	t, err := r.resolve(env)
	if err != nil {
		return nil, err
	}
	return history.Open(ctx, t)
}

// recordFlags are run's flags that record its result in the history.
type recordFlags struct {
	resultsFlag
	tags   []string
	parsed map[string]string
}

func (r *recordFlags) bind(cmd *cobra.Command) {
	r.resultsFlag.bind(cmd.Flags())
	cmd.Flags().StringArrayVar(&r.tags, "tag", nil, "record the run in the results history with this tag, e.g. --tag build=1234 (repeatable; see ndbench history)")
}

// check validates the tags before any load, so that a typo costs no run.
func (r *recordFlags) check() error {
	tags, err := history.ParseTags(r.tags)
	if err != nil {
		return usageError{fmt.Errorf("--tag: %w", err)}
	}
	r.parsed = tags
	return nil
}

// on reports whether the run is recorded: when asked for with --results or --tag, or
// when NDBENCH_RESULTS names a store (so a CI job records every run by its environment).
func (r *recordFlags) on(env []string) bool {
	return r.target != "" || len(r.tags) > 0 || envValue(env, history.EnvResults) != ""
}

// filterFlags select runs.
type filterFlags struct {
	tags     []string
	driver   string
	kind     string
	workload string
	since    string
	until    string
	last     int
}

func (f *filterFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.tags, "tag", nil, "only runs with this tag, KEY=VALUE (repeatable: all must match)")
	cmd.Flags().StringVar(&f.driver, "driver", "", "only runs of this driver")
	cmd.Flags().StringVar(&f.kind, "kind", "", "only runs recorded by: run, serve, scenario, autotune, fleet or import")
	cmd.Flags().StringVar(&f.workload, "workload", "", "only runs of this workload (the preset's or the scenario's name)")
	cmd.Flags().StringVar(&f.since, "since", "", "only runs started at or after this: RFC 3339 time, a date (2026-01-31), or an age (72h, 30d)")
	cmd.Flags().StringVar(&f.until, "until", "", "only runs started before this (same forms as --since)")
	cmd.Flags().IntVar(&f.last, "last", 0, "only the newest N of the selected runs (0 = all)")
}

// describe says which runs the flags select, for a page's subtitle.
func (f *filterFlags) describe() string {
	var parts []string
	parts = append(parts, f.tags...)
	for _, p := range [][2]string{{"driver", f.driver}, {"kind", f.kind}, {"workload", f.workload}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if f.since != "" {
		parts = append(parts, "since "+f.since)
	}
	if f.until != "" {
		parts = append(parts, "until "+f.until)
	}
	if f.last > 0 {
		parts = append(parts, fmt.Sprintf("last %d", f.last))
	}
	return strings.Join(parts, ", ")
}

func (f *filterFlags) filter(now time.Time) (history.Filter, error) {
	tags, err := history.ParseTags(f.tags)
	if err != nil {
		return history.Filter{}, usageError{fmt.Errorf("--tag: %w", err)}
	}
	out := history.Filter{Tags: tags, Driver: f.driver, Kind: f.kind, Workload: f.workload, Limit: f.last}
	if f.kind != "" && !slices.Contains(recordKinds, f.kind) {
		return out, usageError{fmt.Errorf("--kind %q: allowed: %s", f.kind, strings.Join(recordKinds, ", "))}
	}
	if f.last < 0 {
		return out, usageError{fmt.Errorf("--last %d: allowed: 0 (all) or a positive count", f.last)}
	}
	if out.Since, err = parseWhen(f.since, now); err != nil {
		return out, usageError{fmt.Errorf("--since: %w", err)}
	}
	if out.Until, err = parseWhen(f.until, now); err != nil {
		return out, usageError{fmt.Errorf("--until: %w", err)}
	}
	return out, nil
}

// parseWhen parses a time bound: RFC 3339, a date (UTC midnight), or an age before now
// (a Go duration, or whole days as 30d).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("invalid value %q; allowed: an RFC 3339 time (2026-01-31T22:00:00Z), a date (2026-01-31) or an age (72h, 30d)", s)
}

func newHistoryCmd(s *streams) *cobra.Command {
	var results resultsFlag
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Recorded runs: list, show, import, trends and change-point regression checks",
		Long: `The results history keeps every recorded run (ndbench run --tag KEY=VALUE or
--results, or NDBENCH_RESULTS set; or imported report files) with its figures per op class
and operation, its tags, version, machine and the whole report. 'trend' shows one figure
over the runs and 'check' finds change points in it (E-divisive means with a permutation
test), so that a slow drift over many builds, which passes every pairwise compare, is
found. See docs/history.md.

The store is a SQLite file by default, or PostgreSQL with --results postgres://...`,
	}
	results.bind(cmd.PersistentFlags())
	cmd.AddCommand(newHistoryImportCmd(s, &results), newHistoryListCmd(s, &results), newHistoryShowCmd(s, &results),
		newHistoryTrendCmd(s, &results), newHistoryCheckCmd(s, &results))
	return cmd
}

func newHistoryImportCmd(s *streams, results *resultsFlag) *cobra.Command {
	var tags []string
	cmd := &cobra.Command{
		Use:     "import REPORT.json...",
		Short:   "Record report files written by ndbench run --report",
		Example: "  ndbench history import nightly/*.json --tag store=redis-7.2",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New("import takes one or more report files")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			parsed, err := history.ParseTags(tags)
			if err != nil {
				return usageError{fmt.Errorf("--tag: %w", err)}
			}
			// Every file is read before any is recorded: a bad one imports nothing.
			runs := make([]*history.Run, len(args))
			for i, path := range args {
				raw, err := os.ReadFile(path)
				if err != nil {
					return usageError{fmt.Errorf("import %s: %w", path, err)}
				}
				rep, err := compare.Decode(strings.NewReader(string(raw)))
				if err != nil {
					return usageError{fmt.Errorf("import %s: %w", path, err)}
				}
				if runs[i], err = history.FromReport(rep, raw); err != nil {
					return usageError{fmt.Errorf("import %s: %w", path, err)}
				}
				runs[i].Kind, runs[i].Source, runs[i].Tags = "import", path, parsed
				runs[i].Host = history.Host{CPUs: rep.Client.NumCPU} // the report names no machine
			}
			st, err := results.open(cmd.Context(), s.env)
			if err != nil {
				return err
			}
			defer st.Close()
			for i, run := range runs {
				id, err := st.Record(cmd.Context(), run)
				if err != nil {
					return fmt.Errorf("import %s (%d of %d files recorded before it): %w", args[i], i, len(args), err)
				}
				fmt.Fprintf(s.out, "imported %s as run %d\n", args[i], id)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "tag every imported run, KEY=VALUE (repeatable)")
	return cmd
}

func newHistoryListCmd(s *streams, results *resultsFlag) *cobra.Command {
	var ff filterFlags
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List recorded runs, oldest first",
		Example: "  ndbench history list --tag store=redis-7.2 --since 30d",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := ff.filter(time.Now())
			if err != nil {
				return err
			}
			st, err := results.open(cmd.Context(), s.env)
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTARTED (UTC)\tSECONDS\tKIND\tDRIVER\tWORKLOAD\tVERSION\tHOST\tTAGS")
			for _, r := range runs {
				fmt.Fprintf(tw, "%d\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Started.Format(time.DateTime), r.Seconds, r.Kind, orDash(r.Driver),
					orDash(r.Workload), r.Version, orDash(r.Host.Name), history.TagsText(r.Tags))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(runs) == 0 {
				fmt.Fprintln(s.err, "no runs match")
			}
			return nil
		},
	}
	ff.bind(cmd)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newHistoryShowCmd(s *streams, results *resultsFlag) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one recorded run: its figures, tags and machine (--format json: its report)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return usageError{fmt.Errorf("run ID %q: allowed: a positive integer (history list shows them)", args[0])}
			}
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format %q: allowed: text, json", format)}
			}
			st, err := results.open(cmd.Context(), s.env)
			if err != nil {
				return err
			}
			defer st.Close()
			run, err := st.Get(cmd.Context(), id)
			if errors.Is(err, history.ErrNotFound) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if format == "json" {
				_, err := fmt.Fprintf(s.out, "%s\n", run.Report)
				return err
			}
			printRun(s.out, run)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output: text, json (the recorded report)")
	return cmd
}

func printRun(out io.Writer, r *history.Run) {
	fmt.Fprintf(out, "run %d (%s): started %s UTC, %.1f s, driver %s, ndbench %s\n", r.ID, r.Kind, r.Started.Format(time.DateTime), r.Seconds, r.Driver, r.Version)
	fmt.Fprintf(out, "host %s (%s/%s, %d CPUs); recorded %s UTC\n", orDash(r.Host.Name), orDash(r.Host.OS), orDash(r.Host.Arch), r.Host.CPUs, r.Recorded.Format(time.DateTime))
	if r.Source != "" {
		fmt.Fprintf(out, "imported from %s\n", r.Source)
	}
	fmt.Fprintf(out, "tags: %s\n\n", orDash(history.TagsText(r.Tags)))
	series := map[string]struct{}{}
	for f := range r.Figures {
		if f.Series != history.ClientSeries {
			series[f.Series] = struct{}{}
		}
	}
	order := map[string]stats.OpSummary{}
	for n := range series {
		order[n] = stats.OpSummary{}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	cols := []string{"rate", "count", "failed", "errors", "p50", "p95", "p99", "p99.9", "max", "mean"}
	fmt.Fprintln(tw, "op\t"+strings.Join(cols, "\t")+"\t")
	for _, n := range stats.ReportOrder(order) {
		row := []string{n}
		for _, c := range cols {
			v, ok := r.Figures[history.Figure{Series: n, Metric: c}]
			switch {
			case !ok:
				row = append(row, "-")
			case c == "rate":
				row = append(row, fmt.Sprintf("%.0f", v))
			case c == "count" || c == "failed":
				row = append(row, fmt.Sprintf("%.0f", v))
			case c == "errors":
				row = append(row, fmt.Sprintf("%.3f%%", 100*v))
			default:
				row = append(row, fmt.Sprintf("%.3f", v))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(out, "(rate in ops/s; failed ops and errors as a share of attempted; latencies: response time in ms)")
	var client []string
	for _, f := range slices.Sorted(func(yield func(string) bool) {
		for f := range r.Figures {
			if f.Series == history.ClientSeries && !yield(f.Metric) {
				return
			}
		}
	}) {
		client = append(client, fmt.Sprintf("%s %.2f", f, r.Figures[history.Figure{Series: history.ClientSeries, Metric: f}]))
	}
	if len(client) > 0 {
		fmt.Fprintf(out, "client: %s\n", strings.Join(client, ", "))
	}
}

// cpFlags are check's (and trend's) change-point options.
type cpFlags struct {
	alpha        float64
	permutations int
	minSize      int
}

func (c *cpFlags) bind(cmd *cobra.Command) {
	cmd.Flags().Float64Var(&c.alpha, "alpha", history.DefaultAlpha, "significance level of each change point's permutation test")
	cmd.Flags().IntVar(&c.permutations, "permutations", history.DefaultPermutations, "shuffles per permutation test")
	cmd.Flags().IntVar(&c.minSize, "min-size", history.DefaultMinSize, "fewest runs a segment between change points may have (2 or more)")
}

func (c *cpFlags) options() (history.ChangePointOptions, error) {
	switch {
	case !(c.alpha > 0 && c.alpha < 1):
		return history.ChangePointOptions{}, usageError{fmt.Errorf("--alpha %v: allowed: between 0 and 1 exclusive", c.alpha)}
	case c.permutations < 1:
		return history.ChangePointOptions{}, usageError{fmt.Errorf("--permutations %d: allowed: 1 or more", c.permutations)}
	case c.minSize < 2:
		return history.ChangePointOptions{}, usageError{fmt.Errorf("--min-size %d: allowed: 2 or more", c.minSize)}
	}
	return history.ChangePointOptions{Alpha: c.alpha, Permutations: c.permutations, MinSize: c.minSize}, nil
}

// trendOf reads FIGURE's trend under the filter flags.
func trendOf(ctx context.Context, s *streams, results *resultsFlag, ff *filterFlags, figure string) (history.Figure, []history.Point, error) {
	fig, err := history.ParseFigure(figure)
	if err != nil {
		return fig, nil, usageError{err}
	}
	f, err := ff.filter(time.Now())
	if err != nil {
		return fig, nil, err
	}
	st, err := results.open(ctx, s.env)
	if err != nil {
		return fig, nil, err
	}
	defer st.Close()
	pts, err := st.Trend(ctx, f, fig)
	if err != nil {
		return fig, nil, err
	}
	if len(pts) == 0 {
		return fig, nil, usageError{fmt.Errorf("no recorded run matches and has %s (history list shows the runs; show ID their figures)", fig)}
	}
	return fig, pts, nil
}

func newHistoryTrendCmd(s *streams, results *resultsFlag) *cobra.Command {
	var ff filterFlags
	var cp cpFlags
	var htmlOut string
	cmd := &cobra.Command{
		Use:   "trend FIGURE",
		Short: "Show one figure over the recorded runs, with its change points marked",
		Long: `Show FIGURE (SERIES.METRIC: read.p99, read.rate, write.errors (the error ratio), read.get.p99.9,
client.opsPerCPUSecond) in every selected run, oldest first, and mark where its change
points are (as history check finds them). Metrics: ` + strings.Join(history.MetricNames(), ", ") + `.`,
		Example: `  ndbench history trend read.p99 --tag store=redis-7.2 --last 30
  ndbench history trend read.p99 --tag store=redis-7.2 --html trend.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := cp.options()
			if err != nil {
				return err
			}
			// The page must not replace the results store it is drawn from.
			var ins []input
			if target, err := results.resolve(s.env); err == nil && !strings.Contains(target, "://") {
				ins = append(ins, input{"the --results store", target})
			}
			if err := checkOutputs(s.err, ins, output{"html", htmlOut}); err != nil {
				return err
			}
			fig, pts, err := trendOf(cmd.Context(), s, results, &ff, args[0])
			if err != nil {
				return err
			}
			marks := map[int]history.ChangePoint{}
			var cps []history.ChangePoint
			if len(pts) >= 2*opt.MinSize {
				if cps, err = history.EDivisive(values(pts), opt); err != nil {
					return err
				}
				for _, c := range cps {
					marks[c.Index] = c
				}
			}
			if htmlOut != "" {
				if err := writeTrendHTML(htmlOut, history.TrendPage{Figure: fig, Points: pts, ChangePoints: cps, Filter: ff.describe()}); err != nil {
					return err
				}
				fmt.Fprintf(s.out, "HTML trend written to %s\n", htmlOut)
			}
			tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "RUN\tSTARTED (UTC)\t%s (%s)\tCHANGE\tTAGS\n", fig, fig.Unit())
			for i, p := range pts {
				mark := ""
				if c, ok := marks[i]; ok {
					mark = fmt.Sprintf("%s %+.1f%% (p=%.3f)", changeWord(c, fig), pct(c.Before, c.After), c.P)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", p.RunID, p.Started.Format(time.DateTime), strconv.FormatFloat(p.Value, 'g', 6, 64), mark, history.TagsText(p.Tags))
			}
			return tw.Flush()
		},
	}
	ff.bind(cmd)
	cp.bind(cmd)
	cmd.Flags().StringVar(&htmlOut, "html", "", "also write the trend as a self-contained HTML page (a chart with the change points marked, and the table)")
	return cmd
}

// writeTrendHTML writes the trend page as every other output is written: whole or not
// at all, so a page a dashboard serves is never seen half written or torn by a crash.
func writeTrendHTML(path string, p history.TrendPage) error {
	return report.WriteFileAtomic(path, func(w io.Writer) error { return history.WriteTrendHTML(w, p) })
}

func values(pts []history.Point) []float64 {
	xs := make([]float64, len(pts))
	for i, p := range pts {
		xs[i] = p.Value
	}
	return xs
}

func pct(before, after float64) float64 {
	if before == 0 {
		return 0
	}
	return 100 * (after - before) / before
}

// changeWord says whether a change point made fig worse or better.
func changeWord(c history.ChangePoint, fig history.Figure) string {
	if (c.After > c.Before) == fig.WorseUp() {
		return "regression"
	}
	return "improvement"
}

func newHistoryCheckCmd(s *streams, results *resultsFlag) *cobra.Command {
	var ff filterFlags
	var cp cpFlags
	cmd := &cobra.Command{
		Use:   "check FIGURE",
		Short: "Fail (exit 1) when the newest run of a figure's trend lies in a significant regression",
		Long: `Find the change points of FIGURE over the selected runs with E-divisive means and a
permutation test, and fail when the newest run lies after one that made the figure worse
(p99 up, rate down, errors up) and has not been undone since. The output names the change
point's run and its tags.

A change point needs --min-size runs on either side: a regression is found from the
--min-size-th run that has it. Select the runs of one setup with --tag (and a recent
window with --last or --since, so that an accepted old change is not judged again).

Exit codes: 0 no regression (or too few runs to judge, said so), 1 regression, 2 bad
usage or no run matches.`,
		Example: `  ndbench history check read.p99 --tag store=redis-7.2 --last 30
  ndbench history check read.rate --results postgres://bench@db/ndbench --tag instance=m7i.large`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opt, err := cp.options()
			if err != nil {
				return err
			}
			fig, pts, err := trendOf(cmd.Context(), s, results, &ff, args[0])
			if err != nil {
				return err
			}
			r, err := history.Check(values(pts), fig.WorseUp(), opt)
			if errors.Is(err, history.ErrTooShort) {
				fmt.Fprintf(s.out, "%s: not judged: %v\n", fig, err)
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s over %d runs (%d to %d): %d change point(s)\n", fig, len(pts), pts[0].RunID, pts[len(pts)-1].RunID, len(r.ChangePoints))
			for _, c := range r.ChangePoints {
				p := pts[c.Index]
				fmt.Fprintf(s.out, "  %s at run %d (%s UTC) [%s]: %s -> %s %s (%+.1f%%), p=%.3f\n", changeWord(c, fig), p.RunID,
					p.Started.Format(time.DateTime), orDash(history.TagsText(p.Tags)), num(c.Before), num(c.After), fig.Unit(), pct(c.Before, c.After), c.P)
			}
			if !r.Regressed {
				fmt.Fprintf(s.out, "PASS: the newest run (%d) is in no regression of %s\n", pts[len(pts)-1].RunID, fig)
				return nil
			}
			c := r.ChangePoints[r.Cause]
			p := pts[c.Index]
			fmt.Fprintf(s.out, "FAIL: the newest run (%d) is in a regression of %s that started at run %d [%s]: %s -> %s %s (%+.1f%%)\n",
				pts[len(pts)-1].RunID, fig, p.RunID, orDash(history.TagsText(p.Tags)), num(r.Baseline), num(r.Newest), fig.Unit(), pct(r.Baseline, r.Newest))
			return exitError{code: 1, err: fmt.Errorf("%w of %s from run %d [%s]", errRegression, fig, p.RunID, orDash(history.TagsText(p.Tags)))}
		},
	}
	ff.bind(cmd)
	cp.bind(cmd)
	return cmd
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
