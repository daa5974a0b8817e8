package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/scenario"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/verdict"
)

type runFlags struct {
	configSources
	duration   time.Duration
	warmup     time.Duration
	backfill   bool
	outputs    outputFlags
	hdrLog     string
	thresholds []string
	fromReport string
	// reportChecks are the thresholds of the report the run is rebuilt from.
	reportChecks []scenario.RunCheck
	otlp         otlpFlags
	record       recordFlags
	// wide prints the live lines and warnings whole, one line each, however wide.
	wide    bool
	threads threadsFlag
}

// configSources are the flags every command that reads configuration takes.
type configSources struct {
	workload string
	file     string
	driver   string
	sets     []string
	// flagSets are a command's own flags that stand for configuration keys (--backfill).
	flagSets []flagSet
	// base is a report's configuration a run is rebuilt from (--from-report).
	base *config.Layer
}

func (c *configSources) bind(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&c.workload, "workload", "w", "", "workload preset: a built-in name (ndbench workloads lists them) or a YAML/.properties file; "+
		"its values rank above the defaults and below --config, env and --set")
	cmd.Flags().StringVarP(&c.file, "config", "c", "", "config file: YAML, or NDBench .properties")
	cmd.Flags().StringVarP(&c.driver, "driver", "d", "", "driver to use (same as --set driver.name=NAME)")
	cmd.Flags().StringArrayVarP(&c.sets, "set", "s", nil, "set a config key, e.g. --set workload.readRate=5000 (repeatable)")
}

// trustedStore is the store of a command that serves no API: what changes it (scenario
// phases, auto-tune steps, through the node's Patch, as serve's API does) comes from the
// command line, so serve's --allow gate does not apply.
func trustedStore(snap *config.Snapshot) *config.Store {
	s := config.NewStore(snap)
	s.SetAllow(config.AllowAll())
	return s
}

func (c *configSources) load(env []string) (*config.Snapshot, error) {
	return c.loadFile(env, false)
}

// loadFile loads the configuration; with runThresholds the config file's thresholds: list
// (the run's, read by fileThresholds) is not taken for a configuration key.
func (c *configSources) loadFile(env []string, runThresholds bool) (*config.Snapshot, error) {
	// The flags' keys come first, so an explicit --set of the same key still wins.
	sets, origins := c.setsWithFlags()
	src := config.Sources{Env: env, Sets: sets, SetOrigins: origins}
	if c.workload != "" {
		l, fes, err := presets.Load(c.workload)
		if err != nil {
			return nil, configError{fmt.Errorf("--workload %s: %w", c.workload, err)}
		}
		src.Preset, src.PresetErrors = &l, fes
	}
	if c.base != nil {
		src.Preset = overlay(src.Preset, *c.base)
	}
	path := c.file
	if runThresholds && path != "" {
		l, fes, err := source.FileLayer(path)
		if err != nil {
			return nil, configError{err}
		}
		l = withoutThresholds(l)
		src.File, src.FileErrors, path = &l, fes, ""
	}
	snap, err := source.Load(path, src)
	if err != nil {
		return nil, configError{err}
	}
	return snap, nil
}

func newRunCmd(io *streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a workload against a store and report the results",
		Long: `Run a workload against a store: reads and writes at the configured rates, with a
live line per second, a summary at the end, and optionally a JSON report and HDR
histogram log. With --duration 0 it runs until Ctrl-C (or SIGTERM), then reports.

Latency is measured from each operation's intended start time (open loop), so a store
that stalls is charged for every operation it delayed; service time (from the actual
start) is reported alongside.

The run ends in a verdict, printed below the summary and kept in the report: without
thresholds it fails (exit 1) when no operation succeeded, when an op class that sent
operations had none succeed, or when more than half of the attempted operations failed.
Exit codes (README "Exit codes"): 0 passed, 1 failed, 2 bad usage or config, 3 cut short
by a signal (a bounded run, or during the backfill or warm-up; Ctrl-C is how --duration 0
ends, and that run is judged as any other), 4 invalid: the load generator was the
bottleneck (its CPU saturated, or it sent under 80% of an open-loop rate by its own delay
while its workers were mostly out of the store), so the figures do not measure the store.`,
		Example: `  ndbench run --duration 30s
  ndbench run --driver memory --set workload.readRate=100000 --set workload.writeEnabled=false
  ndbench run -c ndbench.properties --driver cassandra --report out.json --hdr-log out.hlog
  ndbench run --driver memory --duration 1m --report-html report.html
  ndbench run --driver redis --workload ycsb-b --set workload.readRate=19000 --set workload.writeRate=1000
  ndbench run --driver memory --duration 5m --otlp-endpoint http://otel-collector:4318`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorkload(cmd.Context(), cmd, f, io)
		},
	}
	f.bind(cmd)
	cmd.Flags().DurationVar(&f.duration, "duration", 0, "how long to run the load (0 = until interrupted), after the warm-up")
	cmd.Flags().DurationVar(&f.warmup, "warmup", 0, "run the load this long before measuring: the time series shows it, the summary and report exclude it (default workload.warmup)")
	cmd.Flags().BoolVar(&f.backfill, "backfill", false, "write every key once before the load (same as --set workload.backfill=true)")
	f.outputs.bind(cmd, outputHelp{
		report:     "write the JSON report to this file",
		reportHTML: "write a self-contained HTML report (tables and charts) to this file",
		junit:      "write JUnit XML (a testcase per threshold, or the default verdict) to this file",
	})
	cmd.Flags().StringVar(&f.hdrLog, "hdr-log", "", "write HdrHistogram interval logs to this file")
	cmd.Flags().StringArrayVar(&f.thresholds, "threshold", nil, "a check the measured load must pass, in the scenario grammar: 'read.p99 < 5ms', 'errors' per class: 'write.errors < 1%' (repeatable; adds to the config file's thresholds:); a failed one exits 1")
	cmd.Flags().StringVar(&f.fromReport, "from-report", "", "rebuild the run a JSON report records: its configuration (each key not a default), duration, warm-up, backfill and thresholds; flags given beside it override")
	cmd.Flags().BoolVar(&f.wide, "wide", false, "print each live second on one line with every percentile, and warnings unwrapped (default: fit 100 columns)")
	f.otlp.bind(cmd)
	f.record.bind(cmd)
	f.threads.bind(cmd)
	return cmd
}

func runWorkload(ctx context.Context, cmd *cobra.Command, f *runFlags, io *streams) error {
	if f.warmup < 0 {
		return usageError{fmt.Errorf("--warmup: invalid value %s; allowed: 0 (none) or a positive duration", f.warmup)}
	}
	if f.duration < 0 {
		return usageError{fmt.Errorf("--duration: invalid value %s; allowed: 0 (until interrupted) or a positive duration", f.duration)}
	}
	ins := append(f.inputs(), input{"the --from-report file", f.fromReport})
	outs, err := f.outputs.resolve()
	if err != nil {
		return err
	}
	if err := checkOutputs(io.err, ins, append(outs, output{"hdr-log", f.hdrLog})...); err != nil {
		return err
	}
	if err := f.record.check(); err != nil {
		return err
	}
	host, _ := os.Hostname()
	otlpCfg, otlpOn, err := f.otlp.config(io.env, fmt.Sprintf("%s/run-%d", host, os.Getpid()))
	if err != nil {
		return err
	}
	var secrets []string
	if f.fromReport != "" {
		r, l, sec, err := fromReport(f.fromReport)
		if err != nil {
			return err
		}
		f.base, secrets = &l, sec
		if err := f.applyReport(cmd, r); err != nil {
			return err
		}
	}
	// These flags are configuration keys: the report names them as the keys' source.
	if cmd.Flags().Changed("backfill") {
		f.flagSets = append(f.flagSets, flagSet{"backfill", "workload.backfill", fmt.Sprint(f.backfill)})
	}
	if cmd.Flags().Changed("warmup") {
		f.flagSets = append(f.flagSets, flagSet{"warmup", "workload.warmup", f.warmup.String()})
	}
	checks, err := fileThresholds(f.file)
	if err != nil {
		return err
	}
	checks = append(checks, f.reportChecks...)
	for _, c := range f.thresholds {
		checks = append(checks, scenario.RunCheck{Check: c, Field: "--threshold", Source: "flag --threshold"})
	}
	snap, err := f.loadFile(io.env, true)
	if err != nil {
		return err
	}
	cfg := snap.Config
	w := cfg.Workload
	judge, err := newRunJudge(checks, w)
	if err != nil {
		return err
	}
	threads, err := applyThreads(io, f.threads, cfg.DriverOptions)
	if err != nil {
		return err
	}
	for _, n := range snap.Notices {
		fmt.Fprintln(io.err, "note:", n)
	}
	printNote(io, threads)
	if soft, hard, ok := fileLimit(); ok {
		def, _ := driver.Lookup(cfg.DriverName)
		need, detail := fdNeed(w, f.backfill || w.Backfill, def.InProcess)
		printNote(io, fdLimitNote(need, detail, soft, hard))
	}
	if len(secrets) > 0 {
		fmt.Fprintf(io.err, "note: --from-report %s: the report redacted %s; give them again (--set or env) if the run needs them\n", f.fromReport, strings.Join(secrets, ", "))
	}
	// The run record says what ran: --warmup and --backfill are workload.warmup and
	// workload.backfill, below a --set of them (the run sequence reads those).
	f.warmup = w.Warmup
	f.backfill = f.backfill || w.Backfill
	log := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn}))

	// The run is the node's one run sequence (node.Run), the one `serve --start`, scenarios
	// and auto-tune drive: this command gives it a duration, signals and a display.
	inst := node.New(trustedStore(snap), log)
	defer inst.Close()
	seq := &node.Run{Node: inst}
	if err := seq.Connect(ctx); err != nil {
		// A store that cannot be reached stopped the run before it had a result: ERROR
		// (2), as for scenario and autotune, never FAILED (1), which judges a result.
		return exitError{code: verdict.Usage, err: err}
	}
	coll := inst.Collector()
	var otlp *otlpExport
	if otlpOn {
		if otlp, err = startOTLP(ctx, otlpCfg, inst, log); err != nil {
			return err
		}
		// On an early return; the end of the run stops it after the last interval.
		defer otlp.stop()
	}

	var hdr *stats.HDRLogWriter
	if f.hdrLog != "" {
		file, err := os.Create(f.hdrLog)
		if err != nil {
			return fmt.Errorf("create HDR log: %w", err)
		}
		defer file.Close()
		if hdr, err = stats.NewHDRLogWriter(file, time.Now()); err != nil {
			return fmt.Errorf("write HDR log %s: %w", f.hdrLog, err)
		}
		defer coll.Subscribe(hdr.Subscriber())()
	}
	view := newLive(io.out, io.tty, f.duration)
	if f.duration > 0 {
		view.duration += f.warmup // the clock runs from the load's start, warm-up included
	}
	if f.wide {
		view.width = 0
	}
	defer coll.Subscribe(view.interval)()
	if judge != nil {
		defer coll.Subscribe(judge.interval)()
	}

	fmt.Fprintln(io.out, runHeader(toolVersion(), cfg, view.width))
	if f.duration == 0 {
		// The default runs for ever: say so, and how to end or bound it.
		fmt.Fprintln(io.out, "no --duration: runs until Ctrl-C or SIGTERM, then prints the summary and writes the report")
	}

	// The load phase is measured on its own; the backfill's figures are kept apart.
	seq.Progress = view.setBackfill
	st, ran, err := seq.BackfillPhase(ctx)
	if err != nil {
		return err
	}
	if ran {
		// Through the display, which has cleared the backfill's progress bar: the line
		// starts on a line of its own.
		line := fmt.Sprintf("backfill %s: %d of %d keys written in %s, %d failed", st.Phase, st.Written, st.Total,
			st.Ended.Sub(st.Started).Round(time.Millisecond), st.Failed)
		if seq.Options().BackfillOptions.Verify {
			line += fmt.Sprintf("; verified %d, missing %d, corrupt %d, wrong key %d, errors %d", st.Verified, st.Missing, st.Corrupt, st.WrongKey, st.VerifyErrors)
		}
		view.note(line)
		view.restart()
	}

	// Interrupted during the backfill: no load phase, but the summary and the report of
	// what was done still follow. A signal before the end of a bounded run, or before an
	// unbounded one's load was measured, cuts it short (exit 3); a signal is how an
	// unbounded run ends normally.
	interrupted := ctx.Err() != nil
	if !interrupted {
		// The store and the client warm up under the real load; what they do meanwhile
		// stays in the time series but not in the figures a user compares.
		seq.Measuring = func(at time.Time, warmup time.Duration) {
			judge.measure(at)
			if warmup > 0 {
				view.note(fmt.Sprintf("warm-up of %s done: measuring from here", warmup))
			}
		}
		measured, err := seq.StartLoad(ctx)
		if err != nil {
			return err
		}
		interrupted = !measured
		var timeout <-chan time.Time
		if f.duration > 0 {
			t := time.NewTimer(f.duration)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ctx.Done():
			interrupted = interrupted || f.duration > 0
		case <-timeout:
		}
	}
	_ = seq.End() // what is still in flight after the op timeout is cut off by Close
	view.finish()

	rep := report.Build(seq.ReportInput(toolVersion()))
	rep.Thresholds = judge.results()
	rep.Run = f.runRecord(cmd, checks)
	rep.Verdict = runVerdict(rep, interrupted)
	printSummary(io.out, rep, view.width)
	printVerdict(io.out, rep, view.width)
	if msg, _ := otlp.stop(); msg != "" {
		fmt.Fprintln(io.out, msg)
	}
	if hdr != nil {
		if err := hdr.Err(); err != nil {
			return fmt.Errorf("write HDR log %s: %w", f.hdrLog, err)
		}
		fmt.Fprintf(io.out, "HDR log written to %s\n", f.hdrLog)
	}
	// A file that cannot be written costs neither the others nor the history record.
	werr := f.outputs.write(io.out, contents{report: jsonReport(rep), reportHTML: htmlReport(rep), junit: runJUnit(rep)})
	f.record.record(ctx, rep, inst.Collector(), io) // after the report files, which a failure here never costs
	if interrupted {
		return exitError{verdict.Aborted, interruptedError{"the run", verdict.Aborted}}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(io.err, "stopped by signal")
	}
	if werr != nil {
		return werr
	}
	if v := rep.Verdict; v.ExitCode != verdict.Pass {
		return exitError{v.ExitCode, fmt.Errorf("run %s (exit code %d): %s", v.Status, v.ExitCode, strings.Join(v.Reasons, "; "))}
	}
	return nil
}

// runHeader is the line a run starts with: what it runs against, with what load. At a
// width it is broken between its parts to fit; 0 keeps one line.
func runHeader(version string, cfg config.Config, width int) string {
	w := cfg.Workload
	parts := []string{"driver " + cfg.DriverName, fmt.Sprintf("%d keys", w.NumKeys), sizeText(w) + " values",
		"reads " + mixText(w.ReadMix, config.ClassRead) + loadText(w.ReadEnabled, w.Readers, w.ReadRate),
		"writes " + mixText(w.WriteMix, config.ClassWrite) + loadText(w.WriteEnabled, w.Writers, w.WriteRate)}
	if w.Pipeline > 1 {
		parts = append(parts, fmt.Sprintf("pipeline %d", w.Pipeline))
	}
	prefix := "ndbench " + version + ":"
	if width <= 0 {
		return prefix + " " + strings.Join(parts, ", ")
	}
	for i := range parts[:len(parts)-1] {
		parts[i] += ","
	}
	return strings.Join(pack(prefix, parts, " ", width), "\n")
}

func sizeText(w config.Workload) string {
	if w.VariableDataSize {
		return fmt.Sprintf("%d-%d B", w.DataSizeMin, w.DataSizeMax)
	}
	return fmt.Sprintf("%d B", w.DataSize)
}

// mixText names what a built-in class runs when that is not its own operation (a preset's
// scans, inserts or rmw), so a run of ycsb-e does not read as one of plain reads.
func mixText(mix, class string) string {
	if mix == "" || mix == class {
		return ""
	}
	return "(" + mix + ") "
}

func loadText(enabled bool, workers int, rate float64) string {
	if !enabled || workers == 0 {
		return "off"
	}
	if rate == 0 {
		return fmt.Sprintf("%d workers closed loop", workers)
	}
	return fmt.Sprintf("%d workers at %s/s", workers, count(rate))
}

// printSummary prints the per-class figures, response and service time side by side.
// At a width (the default, consoleWidth) the counts and the latencies are two tables, so
// that each fits it, and every note and warning is wrapped; width 0 (the wide mode) keeps
// one table row per latency with the counts beside it, and each note on one line.
func printSummary(out io.Writer, r *report.Report, width int) {
	// The legend fits the console's 100 columns, as the live lines and warnings do.
	fmt.Fprintf(out, "\nsummary over %.1f s (latency in ms; response time from the intended start,\n"+
		"service time from the actual start, start lag = how late operations started (response minus\n"+
		"service time); attempted = sent to the store, succeeded = answered (misses included),\n"+
		"rate/s = succeeded per second)\n", r.Seconds)
	// Series a driver measures (child.primary, visibility) can be longer than the classes.
	w := 9
	var ops []string
	for _, op := range stats.ReportOrder(r.Ops) {
		if s := r.Ops[op]; s.Count > 0 || s.Errors > 0 {
			ops = append(ops, op)
			w = max(w, runeLen(op))
		}
	}
	if width <= 0 {
		fmt.Fprintf(out, "%-*s %-9s %10s %10s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", w,
			"op", "latency", "attempted", "succeeded", "rate/s", "p50", "p95", "p99", "p99.5", "p99.9", "max", "mean", "errors", "misses")
		for _, op := range ops {
			s := r.Ops[op]
			for i, lat := range latencies(s) {
				name, att, cnt, rate, errs, miss := op, fmt.Sprint(s.Count+s.Errors), fmt.Sprint(s.Count), fmt.Sprintf("%.0f", s.Rate), fmt.Sprint(s.Errors), fmt.Sprint(s.Misses)
				if i > 0 {
					name, att, cnt, rate, errs, miss = "", "", "", "", "", ""
				}
				v := latencyCells(s, lat.l)
				fmt.Fprintf(out, "%-*s %-9s %10s %10s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", w, name, lat.name, att, cnt, rate,
					v[0], v[1], v[2], v[3], v[4], v[5], v[6], errs, miss)
			}
			printOpNotes(out, r, op, width)
		}
	} else {
		fmt.Fprintf(out, "%-*s %10s %10s %10s %8s %8s\n", w, "op", "attempted", "succeeded", "rate/s", "errors", "misses")
		for _, op := range ops {
			s := r.Ops[op]
			fmt.Fprintf(out, "%-*s %10d %10d %10.0f %8d %8d\n", w, op, s.Count+s.Errors, s.Count, s.Rate, s.Errors, s.Misses)
			printOpNotes(out, r, op, width)
		}
		fmt.Fprintf(out, "%-*s %-8s %8s %8s %8s %8s %8s %8s %8s\n", w, "op", "latency", "p50", "p95", "p99", "p99.5", "p99.9", "max", "mean")
		for _, op := range ops {
			s := r.Ops[op]
			for i, lat := range latencies(s) {
				name := op
				if i > 0 {
					name = ""
				}
				v := latencyCells(s, lat.l)
				fmt.Fprintf(out, "%-*s %-8s %8s %8s %8s %8s %8s %8s %8s\n", w, name, lat.name, v[0], v[1], v[2], v[3], v[4], v[5], v[6])
			}
		}
	}
	if len(r.Driver.Stats) > 0 {
		// The driver's own counters: a composition's hit ratio, a zone's fallbacks.
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Driver.Stats)) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, r.Driver.Stats[k]))
		}
		if width <= 0 {
			fmt.Fprintf(out, "driver %s: %s\n", r.Driver.Name, strings.Join(parts, " "))
		} else {
			fmt.Fprintln(out, strings.Join(pack("driver "+r.Driver.Name+":", parts, " ", width), "\n"))
		}
	}
	if k := r.Keyspace; k != nil && k.Inserted > 0 {
		fmt.Fprintf(out, "keyspace: %d keys (numKeys %d + %d inserted)\n", k.Size, k.NumKeys, k.Inserted)
	}
	clock := ""
	if r.Client.Clock != "" {
		clock = ", clock " + r.Client.Clock
	}
	fmt.Fprintln(out, wrapText("client: ", fmt.Sprintf("%.2f cores busy, %.0f ops per CPU-second, peak RSS %.0f MB%s",
		r.Client.CPUCores, r.Client.OpsPerCPUSecond, float64(r.Client.MaxRSSBytes)/(1<<20), clock), width))
	for _, w := range r.Warnings {
		fmt.Fprintln(out, wrapText("WARNING: ", w, width))
	}
}

// bulkNote says how a backfill through bulk writes reads: each key is timed from its slot
// to the end of the bulk write that carried it, so a worker has up to a batch of keys in
// flight, and the rate is keys per second well above what its workers would carry one
// key at a time (issue 36: 723,502 keys/s beside a 0.46 ms mean from 4 workers). ""
// when the driver writes key by key, where rate and latency read as they are.
func bulkNote(r *report.Report, s stats.OpSummary) string {
	def, ok := driver.Lookup(r.Driver.Name)
	if !ok || def.New == nil {
		return ""
	}
	if _, bulk := def.New().(driver.BulkWriter); !bulk {
		return ""
	}
	workers := 0
	for _, e := range r.Config {
		if e.Key == "workload.backfillWorkers" {
			workers, _ = strconv.Atoi(e.Value)
		}
	}
	batch := engine.DefaultBackfillBatch
	note := fmt.Sprintf("bulk writes of up to %d keys a call: %.0f keys in flight on average (rate × mean response)",
		batch, s.Rate*s.ResponseTime.Mean/1e6)
	if workers > 0 {
		note += fmt.Sprintf(", of at most %d (%d workers × %d)", workers*batch, workers, batch)
	}
	return note + "; a key's latency runs from when its batch fell due (its last key's slot) to the end of the bulk write"
}

type namedLatency struct {
	name string
	l    stats.Latency
}

func latencies(s stats.OpSummary) []namedLatency {
	return []namedLatency{{"response", s.ResponseTime}, {"service", s.ServiceTime}, {"startlag", s.StartLag}}
}

// latencyCells are a latency's p50, p95, p99, p99.5, p99.9, max and mean in ms, or "-"
// when nothing answered: there is no latency then, and 0.000 would read as a fast store.
func latencyCells(s stats.OpSummary, l stats.Latency) []string {
	v := []string{ms(l.P50), ms(l.P95), ms(l.P99), ms(l.P995), ms(l.P999), ms(l.Max), ms(l.Mean)}
	if s.Count == 0 {
		for j := range v {
			v[j] = "-"
		}
	}
	return v
}

// printOpNotes prints what the table of op's counts does not show: its failures by class
// and what the store said, operations dropped, validation failures.
func printOpNotes(out io.Writer, r *report.Report, op string, width int) {
	s := r.Ops[op]
	lead := strings.Repeat(" ", 10)
	if s.Errors > 0 {
		var parts []string
		for _, c := range driver.Classes {
			if n := s.Failures[c.String()]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", c, n))
			}
		}
		msgs := r.Errors[op]
		// One message that accounts for every failure says it all: the class count line
		// above it would say the same number twice.
		if len(msgs) == 1 && len(parts) == 1 && msgs[0].Count == s.Errors {
			fmt.Fprintln(out, wrapText(lead+"errors: ", messageLine(msgs[0]), width))
		} else {
			fmt.Fprintln(out, wrapText(lead+"errors by class: ", strings.Join(parts, ", "), width))
			printMessages(out, msgs, width)
		}
	}
	if s.Dropped > 0 {
		fmt.Fprintln(out, wrapText(lead, fmt.Sprintf("dropped %d (workload.catchUp=drop: not sent, more than maxLateness late); lateness p50 %s p99 %s max %s ms",
			s.Dropped, ms(s.DropLateness.P50), ms(s.DropLateness.P99), ms(s.DropLateness.Max)), width))
	}
	if op == "backfill" && s.Count > 0 {
		if note := bulkNote(r, s); note != "" {
			fmt.Fprintln(out, wrapText(lead, note, width))
		}
	}
	if note := mixNote(r, op); note != "" {
		fmt.Fprintln(out, wrapText(lead, note, width))
	}
	var bad []string
	for _, v := range stats.Validations {
		if n := s.Validation[v.String()]; n > 0 {
			bad = append(bad, fmt.Sprintf("%s %d", v, n))
		}
	}
	if len(bad) > 0 {
		fmt.Fprintln(out, wrapText(lead+"VALIDATION FAILURES: ", strings.Join(bad, ", "), width))
	}
}

// mixNote says what an op class ran when that is not the class's own operation (a read
// class running scans, a write class running inserts or rmw), from the run's
// configuration: the series is named by the class, and a user of ycsb-e would otherwise
// see reads and writes where the store served scans and inserts.
func mixNote(r *report.Report, class string) string {
	key := config.ClassOption(class, "mix")
	var mix string
	for _, e := range r.Config {
		if e.Key == key {
			mix = e.Value
		}
	}
	if mix == "" || mix == class {
		return ""
	}
	m, err := config.ParseMix(mix, class)
	if err != nil {
		return ""
	}
	var parts []string
	for _, e := range m {
		text := e.Op
		if len(m) > 1 {
			text = fmt.Sprintf("%s (weight %g)", e.Op, e.Weight)
		}
		switch e.Op {
		case driver.OpScan:
			text += fmt.Sprintf(": each reads 1-%d keys (uniform; fewer at the keyspace's end) in key order from a key of the pattern", engine.ScanLengthMax)
		case driver.OpInsert:
			text += ": each writes a new key beyond the keyspace"
		case driver.OpRMW:
			text += ": each reads a key and writes it, timed as one and as " + class + ".rmw.read and " + class + ".rmw.write"
		}
		parts = append(parts, text)
	}
	return "ran " + strings.Join(parts, "; ")
}

// summaryMessages is how many failure messages per op class the summary prints; the
// reports have all that were kept.
const summaryMessages = 5

// printMessages prints what the store said for an op's failures, most frequent first,
// wrapped at width (0: one line each).
func printMessages(out io.Writer, msgs []stats.ErrorMessage, width int) {
	sorted := slices.Clone(msgs)
	slices.SortStableFunc(sorted, func(a, b stats.ErrorMessage) int { return cmp.Compare(b.Count, a.Count) })
	lead := strings.Repeat(" ", 12)
	for i, m := range sorted {
		if i == summaryMessages {
			fmt.Fprintf(out, "%s... %d more messages in the report\n", lead, len(sorted)-i)
			break
		}
		fmt.Fprintln(out, wrapText(lead, messageLine(m), width))
	}
}

// messageLine is a failure message with its class and count; a message that starts with
// its class name (the driver's error wraps the class, as in "unavailable: ...") does not
// repeat it.
func messageLine(m stats.ErrorMessage) string {
	return fmt.Sprintf("%s ×%d: %s", m.Class, m.Count, strings.TrimPrefix(m.Message, m.Class+": "))
}

func ms(us float64) string { return fmt.Sprintf("%.3f", us/1000) }
