package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/scenario"
	"github.com/ndbench/ndbench/internal/verdict"
)

// exitError carries a command's own exit code (a scenario's 1, 3 or 4) to Main.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// ExitCode is the process exit code.
func (e exitError) ExitCode() int { return e.code }

type scenarioFlags struct {
	sets    []string
	dryRun  bool
	outputs outputFlags
	fleet   fleetClientFlags
	record  recordFlags
	threads threadsFlag
}

func newScenarioCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Run scenario files: phases of load, fault hooks and thresholds",
	}
	f := &scenarioFlags{}
	run := &cobra.Command{
		Use:   "run FILE.yaml (or --dry-run FILE.yaml...)",
		Short: "Run a scenario and judge its thresholds (docs/scenarios.md)",
		Long: `Run a scenario file: phases of load (constant, ramp, steps, sine) with configuration
changes at their starts, hooks (a command or an HTTP call at a time or a phase boundary,
optionally undone after a while), and thresholds judged over windows of the run (a phase,
during a hook, from a hook on, sustained sliding windows, recovery after a hook).

Every name in the file is checked before anything runs; --dry-run prints the timeline,
and checks several files at once (each named above its timeline or its errors).

Exit codes: 0 every threshold passed, 1 a threshold failed, 2 a config, driver or hook
error, 3 aborted by a threshold or interrupted (SIGINT, SIGTERM), 4 the result is invalid
(the generator was saturated).
The Markdown summary is appended to $GITHUB_STEP_SUMMARY when it is set.

With --peers or --discovery (and the fleet's token) the scenario runs on a fleet of
` + "`ndbench serve`" + ` nodes with this process as the control point: the file's configuration,
phase changes and load shapes go to every node (rates and shapes split by weight), hooks
run here, and thresholds are judged on the merged per-second statistics (docs/fleet.md).`,
		Example: `  ndbench scenario run examples/ami-certification.yaml --dry-run
  ndbench scenario run examples/capacity-steps.yaml --out-dir results/
  ndbench scenario run cert.yaml --junit junit.xml --report report.json --set drivers.redis.addrs=10.0.0.5:6379
  NDBENCH_TOKEN=... ndbench scenario run cert.yaml --peers 10.0.0.11:8080,10.0.0.12:8080 --junit junit.xml`,
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case f.dryRun && len(args) == 0:
				return usageError{errors.New("scenario run --dry-run takes one or more scenario files; got none")}
			case !f.dryRun && len(args) != 1:
				return usageError{fmt.Errorf("scenario run takes one scenario file (several with --dry-run, which checks each); got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return dryRunScenarios(args, f, s)
			}
			return runScenario(cmd.Context(), args[0], f, s)
		},
	}
	run.Flags().StringArrayVarP(&f.sets, "set", "s", nil, "set a config key above the file's config, e.g. --set drivers.redis.addrs=host:6379 (repeatable)")
	run.Flags().BoolVar(&f.dryRun, "dry-run", false, "check the file and print the timeline without running anything")
	f.outputs.bind(run, outputHelp{
		report:     "write the JSON report (with the scenario's outcome) to this file",
		reportHTML: "write the HTML report to this file",
		junit:      "write JUnit XML (a testsuite per phase, a testcase per threshold) to this file",
		markdown:   "write the Markdown summary to this file",
	})
	f.fleet.bind(run)
	f.record.bind(run)
	f.threads.bind(run)
	cmd.AddCommand(run)
	return cmd
}

// dryRunScenarios checks several scenario files, as CI checks a directory of them: each
// file's timeline under its name, or its errors named by the file; every file is checked
// whatever the others found, and the command fails (exit 2) when one did.
func dryRunScenarios(paths []string, f *scenarioFlags, s *streams) error {
	width := 0
	if s.tty {
		width = consoleWidth
	}
	var bad []string
	for i, path := range paths {
		if i > 0 {
			fmt.Fprintln(s.out)
		}
		fmt.Fprintf(s.out, "== %s\n", path)
		sc, err := scenario.Load(path, scenario.Options{Env: s.env, Sets: f.sets})
		if err != nil {
			bad = append(bad, path)
			fmt.Fprintln(s.out, wrapLines("error: ", err.Error(), width))
			continue
		}
		sc.Timeline(s.out)
	}
	if len(bad) > 0 {
		return configError{fmt.Errorf("%d of %d scenario files failed their check: %s", len(bad), len(paths), strings.Join(bad, ", "))}
	}
	return nil
}

func runScenario(ctx context.Context, path string, f *scenarioFlags, s *streams) error {
	sc, err := scenario.Load(path, scenario.Options{Env: s.env, Sets: f.sets})
	if err != nil {
		return configError{err}
	}
	if f.dryRun {
		sc.Timeline(s.out)
		return nil
	}
	if err := f.record.check(); err != nil {
		return err
	}
	outs, err := f.outputs.resolve()
	if err != nil {
		return err
	}
	ins := []input{discoveryInput(f.fleet.discovery)}
	for _, in := range sc.Inputs {
		ins = append(ins, input{in.What, in.Path})
	}
	if err := checkOutputs(s.err, ins, outs...); err != nil {
		return err
	}
	// On a fleet the load runs on the nodes (serve --threads there); this process only
	// steers it, so the store's place says nothing about its threads.
	opts := sc.Snapshot.Config.DriverOptions
	if f.fleet.enabled() {
		opts = nil
	}
	threads, err := applyThreads(s, f.threads, opts)
	if err != nil {
		return err
	}
	for _, n := range sc.Snapshot.Notices {
		fmt.Fprintln(s.err, "note:", n)
	}
	printNote(s, threads)
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var (
		target scenario.Node
		// nodeInvalid, on a fleet, judges each node's own report for generator saturation.
		nodeInvalid = func() []string { return nil }
		where       = ""
	)
	if f.fleet.enabled() {
		fl, err := f.fleet.open(ctx, sc.Snapshot, s.env, s.err, log)
		if err != nil {
			var ue usageError
			if errors.As(err, &ue) {
				return err
			}
			return notRunError(ctx, fmt.Errorf("scenario %s: %w", sc.Name, err))
		}
		defer fl.Close()
		target, where = fl, " on a fleet"
		nodeInvalid = func() []string { return nodesGeneratorBound(ctx, fl, s.err) }
	} else {
		inst := node.New(trustedStore(sc.Snapshot), log)
		defer inst.Close()
		target = inst
	}
	// The scenario's run is the one run sequence (node.Run): connect, backfill, warm-up;
	// its phases are the load, and scenario.Run drains and finishes it.
	seq := &node.Run{Node: target, Backfill: sc.Backfill}
	if err := seq.Connect(ctx); err != nil {
		return notRunError(ctx, fmt.Errorf("scenario %s: %w", sc.Name, err))
	}
	total := sc.End()
	if total == scenario.Forever {
		total = 0
	}
	view := newLive(s.out, s.tty, total)
	defer target.Collector().Subscribe(view.interval)()
	fmt.Fprintf(s.out, "ndbench %s: scenario %s%s, driver %s, %d phases, %d hooks, %d thresholds\n",
		toolVersion(), sc.Name, where, sc.Snapshot.Config.DriverName, len(sc.Phases), len(sc.Hooks), len(sc.Thresholds))
	seq.Progress = view.setBackfill
	st, ran, err := seq.BackfillPhase(ctx)
	if err != nil {
		return exitError{scenario.ExitError, err}
	}
	if ran {
		fmt.Fprintf(s.out, "backfill %s: %d of %d keys written, %d failed\n", st.Phase, st.Written, st.Total, st.Failed)
		view.restart()
	}
	seq.Measuring = func(_ time.Time, warmup time.Duration) {
		if warmup > 0 {
			view.note(fmt.Sprintf("warm-up of %s done: the scenario's phases start", warmup))
		}
	}
	if _, err := seq.WarmUp(ctx); err != nil {
		return notRunError(ctx, fmt.Errorf("scenario %s: %w", sc.Name, err))
	}
	out, err := scenario.Run(ctx, target, sc, scenario.RunOptions{Log: view.note, Env: s.env})
	view.finish()
	if err != nil {
		return notRunError(ctx, err)
	}
	in := seq.ReportInput(toolVersion())
	in.Timeline = out.ReportMarks()
	rep := report.Build(in)
	if out.Error == "" && out.AbortedBy == "" && !out.Interrupted {
		out.Invalid = append(report.GeneratorBound(rep), nodeInvalid()...)
	}
	// The report files carry the verdict the exit code gives, as a run's do.
	rep.Verdict = report.NewVerdict(verdict.Judge(out.Judgement()))
	printSummary(s.out, rep, consoleWidth)
	out.WriteText(s.out)
	werr := writeScenarioOutputs(f, s, rep, out)
	// After the report files, which a failure here never costs, and whatever they did;
	// the outcome is kept with the report.
	f.record.recordAs(ctx, s, "scenario", sc.Name, rep, scenario.Report{Report: rep, Scenario: out}, target.Collector())
	if werr != nil {
		return exitError{scenario.ExitError, werr}
	}
	if code := out.ExitCode(); code != scenario.ExitPass {
		return exitError{code, fmt.Errorf("scenario %s %s (exit code %d)", sc.Name, out.Verdict(), code)}
	}
	return nil
}

// notRunError is the exit of a scenario or a search that could not run (a node, a fleet
// or its discovery failed): exit 3 when a signal interrupted it (the error is then likely
// its consequence, and an interrupted command is never a pass, nor a broken
// configuration), exit 2 otherwise; never 1, which says the store failed its
// thresholds or SLA.
func notRunError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return exitError{scenario.ExitAborted, fmt.Errorf("interrupted: %w", err)}
	}
	return exitError{scenario.ExitError, err}
}

// nodesGeneratorBound judges each fleet node's own report for generator saturation (its
// CPU, its start lag while its workers were free): one saturated node among many may not
// show in the merged figures, and it invalidates the run all the same.
func nodesGeneratorBound(ctx context.Context, fl *clientFleet, stderr io.Writer) []string {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reps, err := fl.NodeReports(rctx)
	if err != nil {
		fmt.Fprintln(stderr, "warning: nodes' own reports not read, their saturation not judged:", err)
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(reps)) {
		for _, why := range report.GeneratorBound(reps[id]) {
			out = append(out, "node "+id+": "+why)
		}
	}
	return out
}

func writeScenarioOutputs(f *scenarioFlags, s *streams, rep *report.Report, out *scenario.Outcome) error {
	var md bytes.Buffer
	out.WriteMarkdown(&md)
	err := f.outputs.write(s.out, contents{
		report: func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			if err := enc.Encode(scenario.Report{Report: rep, Scenario: out}); err != nil {
				return fmt.Errorf("encode report: %w", err)
			}
			return nil
		},
		reportHTML: htmlReport(rep),
		junit:      out.WriteJUnit,
		markdown: func(w io.Writer) error {
			_, err := w.Write(md.Bytes())
			return err
		},
	})
	if path := lookupEnv(s.env, "GITHUB_STEP_SUMMARY"); path != "" {
		if aerr := appendFile(path, md.Bytes()); aerr != nil {
			err = errors.Join(err, exitError{scenario.ExitError, fmt.Errorf("GITHUB_STEP_SUMMARY: %w", aerr)})
		}
	}
	return err
}
