package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/autotune"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/verdict"
)

type autotuneFlags struct {
	configSources
	// wide prints each step on one line, its why whole (default: fit 100 columns).
	wide        bool
	class       string
	percentile  float64
	latency     time.Duration
	maxErrors   string
	minAchieved string
	slas        []string
	start       float64
	minRate     float64
	maxRate     float64
	tolerance   string
	settle      time.Duration
	window      time.Duration
	maxWindow   time.Duration
	confirm     time.Duration
	recover     time.Duration
	clientLag   time.Duration
	clientCPU   float64
	hold        bool
	duration    time.Duration
	jsonOut     bool
	outputs     outputFlags
	backfill    bool
	fleet       fleetClientFlags
	record      recordFlags
	threads     threadsFlag
}

func newAutotuneCmd(io *streams) *cobra.Command {
	f := &autotuneFlags{}
	cmd := &cobra.Command{
		Use:   "autotune",
		Short: "Find the highest load the store sustains within an SLA (capacity search), or hold it there",
		Long: `Find the store's capacity within an SLA: the rate is doubled from --start until a step
violates the SLA, then bisected in log space until hi/lo is within --tolerance, then
confirmed over a longer window. Every step settles, then measures a window long enough
for the percentile (at least 100/(1-q) operations). The read/write ratio of the
configured rates is kept (every enabled class is scaled by the same factor), or one class
is tuned with --class while the others run at their configured rates.

A step violates the SLA when a class's response-time percentile (from intended start
times) is over --latency or rises across the window, its errors are over --max-errors,
or it achieves less than --min-achieved of its target. When the generator itself is the
limit (operations start late while the store answers within SLA, or the process's CPU
is saturated) the step is client-bound: the search ends there and says the store's
capacity is above what was measured, never that it is the generator's limit.

With --hold the load then stays at the highest rate within SLA and follows drift by
AIMD (additive increase, multiplicative decrease) until --duration or Ctrl-C.
Exit codes (the table every command shares, README "Exit codes"): 0 the capacity was
found (or held), 1 no rate within the SLA or not confirmed, 2 bad usage or a node error,
3 interrupted before the search ended, 4 client-bound (the generator was the limit, so
no capacity of the store was measured).

With --peers or --discovery (and the fleet's token) the search runs on a fleet of
` + "`ndbench serve`" + ` nodes with this process as the control point: every step's rate is split
among the nodes by weight, steps are judged on the merged statistics, and a node that
sends less than its share, or a second lacking a node's data, is the generator's limit,
never the store's (docs/autotune.md).`,
		Example: `  ndbench autotune --driver memory --set drivers.memory.capacity=20000 --set drivers.memory.serviceTime=1ms --set workload.maxReaders=512 --latency 50ms
  ndbench autotune --driver redis --workload ycsb-b --percentile 99 --latency 5ms --start 5000 --json > capacity.json
  ndbench autotune -c ndbench.properties --class write --sla write.latency=20ms --sla write.errors=0.1%
  ndbench autotune --driver cassandra --hold --duration 2h --report hold.json
  NDBENCH_TOKEN=... ndbench autotune --driver cassandra --peers 10.0.0.11:8080,10.0.0.12:8080 --latency 10ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --backfill is workload.backfill: the run sequence reads it there, and the
			// report names the flag as its source.
			if cmd.Flags().Changed("backfill") {
				f.flagSets = append(f.flagSets, flagSet{"backfill", "workload.backfill", fmt.Sprint(f.backfill)})
			}
			return runAutotune(cmd.Context(), cmd, f, io)
		},
	}
	f.bind(cmd)
	d := autotune.DefaultSLA
	fl := cmd.Flags()
	fl.StringVar(&f.class, "class", "", "tune this op class only (the others run at their configured rates); default: every enabled class with a rate, ratio kept")
	fl.Float64Var(&f.percentile, "percentile", d.Percentile, "response-time percentile the SLA bounds (99 = p99)")
	fl.DurationVar(&f.latency, "latency", d.Latency, "bound on that percentile of the response time")
	fl.StringVar(&f.maxErrors, "max-errors", "1%", "bound on failed/attempted operations (ratio or percentage)")
	fl.StringVar(&f.minAchieved, "min-achieved", "97%", "least achieved/target rate (ratio or percentage)")
	fl.StringArrayVar(&f.slas, "sla", nil, "a class's own SLA field: CLASS.FIELD=VALUE with FIELD percentile, latency, errors or achieved, e.g. write.latency=20ms (repeatable)")
	fl.Float64Var(&f.start, "start", 0, "first total rate in ops/s (0: the configured total rate of the tuned classes, at least 1000)")
	fl.Float64Var(&f.minRate, "min-rate", 1, "lowest total rate tried before giving up")
	fl.Float64Var(&f.maxRate, "max-rate", 10e6, "highest total rate tried: every rate up to it within SLA ends the search")
	fl.StringVar(&f.tolerance, "tolerance", "2%", "bisection ends when hi/lo is at most 1 + tolerance")
	fl.DurationVar(&f.settle, "settle", 2*time.Second, "how long each step runs before its window (0: measure from the first instant)")
	fl.DurationVar(&f.window, "window", 5*time.Second, "least length of a step's measuring window (longer while the percentile lacks samples)")
	fl.DurationVar(&f.maxWindow, "max-window", time.Minute, "most length of a step's measuring window")
	fl.DurationVar(&f.confirm, "confirm", 15*time.Second, "least length of the confirmation window at the found rate")
	fl.DurationVar(&f.recover, "recover", 30*time.Second, "most time at a lower rate after a violation for the store to come back within SLA")
	fl.DurationVar(&f.clientLag, "client-lag", 0, "start-lag percentile above which, with the store within SLA, the generator counts as saturated (0: half of --latency)")
	fl.Float64Var(&f.clientCPU, "client-cpu", 0.9, "fraction of the cores (GOMAXPROCS) the process may keep busy before the generator counts as saturated")
	fl.BoolVar(&f.hold, "hold", false, "after the search, hold the highest rate within SLA and track drift (AIMD)")
	fl.DurationVar(&f.duration, "duration", 0, "with --hold: how long to hold (0 = until interrupted)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the result as JSON on stdout (progress goes to stderr)")
	fl.BoolVar(&f.wide, "wide", false, "print each step on one line with its why whole (default: fit 100 columns)")
	f.outputs.bind(cmd, outputHelp{
		report:     "write the JSON run report, with the result under \"autotune\", to this file",
		reportHTML: "write the HTML report, with the search's steps charted, to this file",
		junit:      "write JUnit XML (a testcase for the search's verdict) to this file",
	})
	fl.BoolVar(&f.backfill, "backfill", false, "write every key once before the search (same as --set workload.backfill=true)")
	f.fleet.bind(cmd)
	f.record.bind(cmd)
	f.threads.bind(cmd)
	return cmd
}

// settings turns the flags into search settings; errors name the flag.
func (f *autotuneFlags) settings(cmd *cobra.Command) (autotune.Settings, error) {
	s := autotune.Settings{
		SLA:       autotune.SLA{Percentile: f.percentile, Latency: f.latency},
		Start:     f.start,
		MinRate:   f.minRate,
		MaxRate:   f.maxRate,
		Settle:    f.settle,
		Window:    f.window,
		MaxWindow: f.maxWindow,
		Confirm:   f.confirm,
		Recover:   f.recover,
		Hold:      f.hold,
		HoldFor:   f.duration,
		Generator: autotune.Generator{StartLag: f.clientLag, CPU: f.clientCPU},
	}
	if s.Settle == 0 {
		s.Settle = autotune.NoSettle // --settle 0: the flag's default is 2s, so zero is asked for
	}
	var err error
	if s.SLA.MaxErrors, err = autotune.ParseRatio(f.maxErrors); err != nil {
		return s, fmt.Errorf("--max-errors: invalid value %q; allowed: a ratio from 0 to 1 or a percentage, e.g. 1%%", f.maxErrors)
	}
	if s.SLA.MinAchieved, err = autotune.ParseRatio(f.minAchieved); err != nil {
		return s, fmt.Errorf("--min-achieved: invalid value %q; allowed: a ratio above 0 up to 1 or a percentage, e.g. 97%%", f.minAchieved)
	}
	if s.Tolerance, err = autotune.ParseRatio(f.tolerance); err != nil || s.Tolerance == 0 {
		return s, fmt.Errorf("--tolerance: invalid value %q; allowed: a ratio above 0 up to 1 or a percentage, e.g. 2%%", f.tolerance)
	}
	if err := s.SLA.Validate(); err != nil {
		return s, fmt.Errorf("--%s", err)
	}
	for _, kv := range f.slas {
		key, val, ok := strings.Cut(kv, "=")
		class, field, dotted := strings.Cut(key, ".")
		if !ok || !dotted || class == "" {
			return s, fmt.Errorf("--sla: invalid value %q; allowed: CLASS.FIELD=VALUE, FIELD one of percentile, latency, errors, achieved (e.g. write.latency=20ms)", kv)
		}
		if s.Classes == nil {
			s.Classes = map[string]autotune.SLA{}
		}
		sla, have := s.Classes[class]
		if !have {
			sla = s.SLA
		}
		if err := sla.SetField(field, val); err != nil {
			return s, fmt.Errorf("--sla %s: %w", kv, err)
		}
		s.Classes[class] = sla
	}
	if !f.hold && cmd.Flags().Changed("duration") {
		return s, fmt.Errorf("--duration: only with --hold (the search ends by itself)")
	}
	return s, nil
}

// ndbenchKnobs applies NDBench's auto-tune properties from a .properties config file to
// the flags the user did not give (config.NDBenchAutoTune says what each maps onto).
func (f *autotuneFlags) ndbenchKnobs(cmd *cobra.Command) error {
	if !strings.EqualFold(filepath.Ext(f.file), ".properties") {
		return nil
	}
	l, _, err := source.FileLayer(f.file)
	if err != nil {
		return configError{err}
	}
	knobs := config.NDBenchAutoTune(l.Values)
	bad := func(prop, v, allowed string) error {
		return configError{fmt.Errorf("%s%s in %s: invalid value %q; allowed: %s", config.NDBenchPrefix, prop, f.file, v, allowed)}
	}
	if v, ok := knobs[config.AutoTuneWindow]; ok && !cmd.Flags().Changed("window") {
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil || ms < 1000 {
			return bad("autoTuneIncrementIntervalMillisecs", v, "milliseconds, at least 1000")
		}
		f.window = time.Duration(ms * float64(time.Millisecond))
		f.maxWindow = max(f.maxWindow, f.window)
		f.confirm = max(f.confirm, 3*f.window)
	}
	if v, ok := knobs[config.AutoTuneMaxRate]; ok && !cmd.Flags().Changed("max-rate") {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r > 0) {
			return bad("autoTuneFinalWriteRate", v, "a rate in ops/s above 0")
		}
		f.maxRate = r
	}
	if v, ok := knobs[config.AutoTuneWriteErrors]; ok {
		f.slas = append([]string{"write.errors=" + v}, f.slas...) // a --sla given wins
	}
	return nil
}

func runAutotune(ctx context.Context, cmd *cobra.Command, f *autotuneFlags, io *streams) error {
	if err := f.ndbenchKnobs(cmd); err != nil {
		return err
	}
	s, err := f.settings(cmd)
	if err != nil {
		return usageError{err}
	}
	if err := f.record.check(); err != nil {
		return err
	}
	ins := append(f.inputs(), discoveryInput(f.fleet.discovery))
	outs, err := f.outputs.resolve()
	if err != nil {
		return err
	}
	if err := checkOutputs(io.err, ins, outs...); err != nil {
		return err
	}
	snap, err := f.load(io.env)
	if err != nil {
		return err
	}
	threads, err := applyThreads(io, f.threads, snap.Config.DriverOptions)
	if err != nil {
		return err
	}
	for _, n := range snap.Notices {
		fmt.Fprintln(io.err, "note:", n)
	}
	printNote(io, threads)
	w := snap.Config.Workload
	for c := range s.Classes {
		if _, ok := w.Class(c); !ok {
			return usageError{fmt.Errorf("--sla: unknown op class %q; allowed: %s", c, strings.Join(w.ClassNames(), ", "))}
		}
	}
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var target autotune.Node
	if f.fleet.enabled() {
		// The fleet's nodes are configured as it opens: the prober reads the fleet's
		// configuration (rates as fleet totals).
		fl, err := f.fleet.open(ctx, snap, io.env, io.err, log)
		if err != nil {
			return notRunError(ctx, err)
		}
		defer fl.Close()
		target = fl
	} else {
		inst := node.New(trustedStore(snap), log)
		defer inst.Close()
		target = inst
	}
	// The search's run is the one run sequence (node.Run): connect, backfill, warm-up; the
	// search's steps are the load; then drain, finish and the report.
	seq := &node.Run{Node: target}
	prober, err := autotune.NewNodeProber(target, f.class)
	if err != nil {
		return usageError{err}
	}
	if s.Start == 0 {
		s.Start = 1000
		var total float64
		for c := range prober.Classes() {
			spec, _ := w.Class(c)
			total += spec.Rate
		}
		s.Start = max(s.Start, total)
	}
	if err := s.WithDefaults().Validate(); err != nil {
		return usageError{fmt.Errorf("--%s", err)}
	}
	if err := seq.Connect(ctx); err != nil {
		return notRunError(ctx, err)
	}
	out := io.out
	if f.jsonOut {
		out = io.err
	}
	st, ran, err := seq.BackfillPhase(ctx)
	if err != nil {
		return notRunError(ctx, err)
	}
	if ran {
		fmt.Fprintf(out, "backfill %s: %d of %d keys written\n", st.Phase, st.Written, st.Total)
	}
	seq.Measuring = func(_ time.Time, warmup time.Duration) {
		if warmup > 0 {
			fmt.Fprintf(out, "warm-up of %s done: the search starts\n", warmup)
		}
	}
	if _, err := seq.WarmUp(ctx); err != nil {
		return notRunError(ctx, err)
	}
	full := s.WithDefaults()
	width := consoleWidth
	if f.wide {
		width = 0
	}
	head := []string{"driver " + snap.Config.DriverName + ",", "classes " + classShares(prober.Classes()) + ",", "SLA " + full.SLA.String() + ",",
		fmt.Sprintf("start %.0f ops/s,", full.Start), "tolerance " + f.tolerance}
	if width > 0 {
		fmt.Fprintln(out, strings.Join(pack("ndbench "+toolVersion()+" autotune:", head, " ", width), "\n"))
	} else {
		fmt.Fprintln(out, "ndbench "+toolVersion()+" autotune: "+strings.Join(head, " "))
	}
	autotune.StepHeader(out, slices.Sorted(maps.Keys(prober.Classes())), width)
	s.OnStep = func(st autotune.Step) { autotune.WriteStep(out, st, full, width) }
	prober.Begin()
	res := autotune.Search(ctx, prober, s)
	if err := prober.End(); err != nil {
		fmt.Fprintln(io.err, "warning:", err)
	}
	_ = seq.End()
	fmt.Fprintln(out)
	if res.Status == autotune.StatusStopped && len(res.Steps) > 0 {
		// Interrupted: the table so far again, under the lines the interrupt scrolled
		// away, above what it found.
		fmt.Fprintln(out, "the search so far:")
		autotune.WriteText(out, res, width)
	} else {
		autotune.WriteOutcome(out, res, width)
	}
	if f.jsonOut {
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	if f.outputs.any() || f.record.on(io.env) {
		rep, err := withAutotune(report.Build(seq.ReportInput(toolVersion())), res)
		if err != nil {
			return err
		}
		rep.Verdict = report.NewVerdict(verdict.Judge(autotuneJudgement(res)))
		werr := f.outputs.write(out, contents{report: jsonReport(rep), reportHTML: htmlReport(rep), junit: runJUnit(rep)})
		// The result's capacity is the figure a series of searches trends; it is recorded
		// whatever the files did.
		f.record.recordAs(ctx, &streams{out: out, err: io.err, env: io.env}, "autotune", "", rep, rep, target.Collector())
		if werr != nil {
			return werr
		}
	} else {
		f.record.hint(out)
	}

	if res.Status == autotune.StatusStopped && res.Hold == nil {
		return exitError{verdict.Aborted, interruptedError{"the search", verdict.Aborted}}
	}
	if code := autotuneExit(res); code != verdict.Pass {
		return exitError{code, fmt.Errorf("autotune %s (exit code %d, %s): %s", res.Status, code, verdict.Name(code), res.Message)}
	}
	return nil
}

// autotuneExit is a search's exit code (the table of package verdict).
func autotuneExit(res *autotune.Result) int { return verdict.Judge(autotuneJudgement(res)).Code }

// autotuneJudgement is what the one verdict (verdict.Judge) judges a search from: its
// result's status, by the SLA.
func autotuneJudgement(res *autotune.Result) verdict.Judgement {
	j := verdict.Judgement{By: "sla"}
	why := fmt.Sprintf("search %s", res.Status)
	if res.Message != "" {
		why += ": " + res.Message
	}
	switch res.Status {
	case autotune.StatusFound, autotune.StatusAboveMax:
	case autotune.StatusStopped:
		if res.Hold == nil { // holding until a signal is how --hold without --duration ends
			j.Aborted = "interrupted before the search ended"
		}
	case autotune.StatusClientBound:
		// The generator was the limit: no capacity of the store was measured.
		j.Invalid = []string{why}
	case autotune.StatusError:
		j.Error = why
	default:
		j.Failed = []string{why} // none within SLA, not confirmed
	}
	return j
}

func classShares(shares map[string]float64) string {
	var parts []string
	for _, c := range []string{config.ClassRead, config.ClassWrite} {
		if v, ok := shares[c]; ok {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", c, 100*v))
		}
	}
	for c, v := range shares {
		if c != config.ClassRead && c != config.ClassWrite {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", c, 100*v))
		}
	}
	return strings.Join(parts, ", ")
}

// withAutotune returns the run report with the search's result under "autotune".
func withAutotune(rep *report.Report, res *autotune.Result) (*report.Report, error) {
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode the auto-tune result: %w", err)
	}
	rep.Autotune = raw
	return rep, nil
}
