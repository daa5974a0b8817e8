package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/compare"
	"github.com/ndbench/ndbench/internal/verdict"
)

type compareFlags struct {
	latency           string
	alpha             float64
	minIntervals      int
	failOn            []string
	failInsignificant bool
	force             bool
	format            string
	wide              bool
}

// errGateFailed is returned when a fail-on condition triggered: the command worked, the
// candidate did not pass, and the exit code is 1 like a failed run.
var errGateFailed = errors.New("fail-on condition triggered")

func newCompareCmd(s *streams) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare BASELINE.json CANDIDATE.json",
		Short: "Compare two run reports and decide whether the candidate passes",
		Long: `Compare two reports written by 'ndbench run --report': for every op class and
operation present in both, the throughput (rate, ops/s), the error ratio and the latency
percentiles of the baseline and the candidate, their difference, and whether the
difference is significant.

Significance: a two-sided Mann-Whitney U test over the per-second intervals of each run
(each second's rate, error ratio or percentile is one sample), at --alpha. The reported
values are the whole-run figures (percentiles of the merged histograms). A run with fewer
than --min-intervals whole seconds is not tested, and the output says so. Tails (p99.5,
p99.9) are judged from the merged distributions instead, by a bootstrap over the runs'
intervals; with fewer than 10 operations beyond the quantile in a run the output says
the sample is too small to judge.

--fail-on conditions (repeatable, or comma-separated) gate the candidate:
  read.p99 > +10%      relative change: triggers when beyond the bound AND significant
  write.p99.9 > +2ms   difference (signed value): the same, in the metric's unit
  read.rate < -5%      throughput drop
  read.p99 > 20ms      absolute (unsigned): the candidate's own figure, no test
  write.errors > 0.1%  the candidate's error ratio
Metrics: ` + strings.Join(compare.MetricNames(), ", ") + `. Series are the op classes and
class.operation names of the reports. A name that is not in both reports is an error. A
condition that cannot be tested (too few intervals, no intervals) is judged on its bound
alone, and one with no data triggers: a gate never passes because it could not look.

Runs that offered the store different things are not comparable: a different driver,
workload preset, pattern, keyspace, value size, op mix (classes enabled, mixes) or rate.
compare refuses them (exit 2, naming each difference) unless --force, which compares them
with a warning.

Exit codes (the table every command shares, README "Exit codes"): 0 no condition
triggered, 1 a condition triggered, 2 bad usage, an unreadable report, reports of
different format versions, or runs that are not comparable (without --force). With --format markdown and
GITHUB_STEP_SUMMARY set, the Markdown is also appended to that file.`,
		Example: `  ndbench compare base.json cand.json
  ndbench compare base.json cand.json --fail-on 'read.p99 > +10%' --fail-on 'write.errors > 0.1%'
  ndbench compare base.json cand.json --latency service --format markdown --fail-on 'read.rate < -5%,read.p99.9 > +20%'`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageError{fmt.Errorf("compare takes two reports, BASELINE.json and CANDIDATE.json; got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runCompare(args[0], args[1], f, s)
		},
	}
	cmd.Flags().StringVar(&f.latency, "latency", compare.Response, "latency compared: response (from the intended start) or service (from the actual start)")
	cmd.Flags().Float64Var(&f.alpha, "alpha", compare.DefaultAlpha, "significance level of each test")
	cmd.Flags().IntVar(&f.minIntervals, "min-intervals", compare.DefaultMinIntervals, "fewest whole per-second intervals each run needs for a significance test")
	cmd.Flags().StringArrayVar(&f.failOn, "fail-on", nil, "a condition that fails the comparison (exit 1), e.g. 'read.p99 > +10%' (repeatable, or comma-separated)")
	cmd.Flags().BoolVar(&f.failInsignificant, "fail-on-insignificant", false, "let relative and difference conditions trigger on the bound alone, significant or not")
	cmd.Flags().BoolVar(&f.force, "force", false, "compare runs that are not comparable (different driver, workload, op mix or rates), with a warning, instead of refusing them")
	cmd.Flags().StringVar(&f.format, "format", compare.Text, "output: "+strings.Join(compare.Formats(), ", "))
	cmd.Flags().BoolVar(&f.wide, "wide", false, "print the text's sentences and warnings unwrapped (default: fit 100 columns)")
	return cmd
}

func runCompare(basePath, candPath string, f *compareFlags, s *streams) error {
	if !slices.Contains(compare.Formats(), f.format) {
		return usageError{fmt.Errorf("--format %q: want one of %s", f.format, strings.Join(compare.Formats(), ", "))}
	}
	conds, err := compare.ParseConditions(f.failOn)
	if err != nil {
		return usageError{err}
	}
	base, err := compare.Load(basePath)
	if err != nil {
		return usageError{fmt.Errorf("baseline: %w", err)}
	}
	cand, err := compare.Load(candPath)
	if err != nil {
		return usageError{fmt.Errorf("candidate: %w", err)}
	}
	res, err := compare.Compare(base, cand, compare.Options{
		Latency: f.latency, Alpha: f.alpha, MinIntervals: f.minIntervals,
		Conditions: conds, FailInsignificant: f.failInsignificant, Force: f.force,
	})
	if err != nil {
		return usageError{err}
	}
	res.Baseline.File, res.Candidate.File = basePath, candPath
	var out bytes.Buffer
	if f.wide && f.format == compare.Text {
		err = compare.WriteText(&out, res, 0)
	} else {
		err = compare.Write(&out, res, f.format)
	}
	if err != nil {
		return err
	}
	if _, err := s.out.Write(out.Bytes()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	if path := lookupEnv(s.env, "GITHUB_STEP_SUMMARY"); path != "" && f.format == compare.Markdown {
		if err := appendFile(path, out.Bytes()); err != nil {
			return fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err)
		}
	}
	if res.Failed {
		var names []string
		for _, c := range res.Conditions {
			if c.Triggered {
				names = append(names, c.Condition)
			}
		}
		return exitError{verdict.Failed, fmt.Errorf("%w: %s", errGateFailed, strings.Join(names, "; "))}
	}
	return nil
}

// lookupEnv finds key in env (KEY=value entries; the last one wins, as in os/exec).
func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// appendFile appends b to path, creating it, as GitHub's step summary file expects.
func appendFile(path string, b []byte) error {
	file, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	if _, err := file.Write(b); err != nil {
		file.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
