// Package report builds the record of a run that users keep and compare: the results per
// operation class, the effective configuration, the time series, what the client machine
// spent, and warnings when the numbers should not be trusted (the load generator itself
// could not keep up).
package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// Version is the report format version; it changes when a field changes meaning.
const Version = 1

// Report is the JSON document `ndbench run --report` writes.
type Report struct {
	FormatVersion int       `json:"formatVersion"`
	Tool          Tool      `json:"tool"`
	Started       time.Time `json:"started"`
	Ended         time.Time `json:"ended"`
	Seconds       float64   `json:"seconds"`
	// WarmupSeconds is how long the load ran before Started: excluded from every figure
	// but the series, which shows it.
	WarmupSeconds float64 `json:"warmupSeconds,omitempty"`
	Driver        Driver  `json:"driver"`
	// Phase names the span the figures cover ("load") when the run had earlier phases.
	Phase string `json:"phase,omitempty"`
	// Phases are the run's phases before that span (a backfill, a warm-up), oldest first,
	// each with its own figures; absent when there were none.
	Phases []Phase `json:"phases,omitempty"`
	// Ops has "read" and "write" always, and "backfill" when one ran.
	Ops      map[string]stats.OpSummary `json:"ops"`
	Backfill *engine.BackfillStatus     `json:"backfill,omitempty"`
	// Errors has, per op class that failed, the latest distinct failure messages (at most
	// stats.MaxErrorMessages per failure class, the most recently seen first), so that a
	// count of failures comes with what the store said.
	Errors map[string][]stats.ErrorMessage `json:"errors"`
	Client Client                          `json:"client"`
	// Warnings say when results should not be trusted as they stand.
	Warnings []string `json:"warnings"`
	// Config is the effective configuration, each value with its source; secrets redacted.
	Config  []config.Entry `json:"config"`
	Notices []string       `json:"notices,omitempty"`
	// Series has one point per second (the most recent hour at most).
	Series []stats.Point `json:"series"`
	// Timeline marks a scenario's phases and hooks, oldest first; absent for a plain run.
	Timeline []Mark `json:"timeline,omitempty"`
	// Autotune is an auto-tune search's result (package autotune's Result, which depends
	// on this package, so it is kept encoded); absent for other runs. The HTML report
	// draws its steps.
	Autotune json.RawMessage `json:"autotune,omitempty"`
	// Verdict is how the run was judged and its exit code; absent from reports of
	// commands that judge runs their own way (a scenario's outcome, an auto-tune result).
	Verdict *Verdict `json:"verdict,omitempty"`
	// Thresholds are the run's thresholds (run --threshold, or thresholds: in the config
	// file), each with its outcome, in the order given.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Run is how `ndbench run` was called (absent for other commands).
	Run *Run `json:"run,omitempty"`
	// Keyspace is the keyspace's size at the end: workload.numKeys and the keys inserts
	// added beyond it (absent when unknown, e.g. a fleet's).
	Keyspace *Keyspace `json:"keyspace,omitempty"`
}

// Keyspace is how many keys a run addressed.
type Keyspace struct {
	// NumKeys is workload.numKeys, the initial keyspace (what a backfill writes).
	NumKeys int64 `json:"numKeys"`
	// Size is NumKeys plus the keys inserts claimed beyond it.
	Size int64 `json:"size"`
	// Inserted is Size - NumKeys.
	Inserted int64 `json:"inserted"`
}

// Tool identifies the build that produced the report.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
}

// Driver describes the store side.
type Driver struct {
	Name string `json:"name"`
	// Info is the driver's ConnectionInfo (mode, server version, endpoints).
	Info map[string]string `json:"info,omitempty"`
	// Stats are the driver's own counters (e.g. per replication zone).
	Stats  map[string]int64 `json:"stats,omitempty"`
	Panics int64            `json:"panics"`
}

// Client is what the load generator's process spent, so a reader can tell whether the
// client or the store was the bottleneck.
type Client struct {
	UserSeconds   float64 `json:"userSeconds"`
	SystemSeconds float64 `json:"systemSeconds"`
	// CPUCores is the average number of cores busy: CPU seconds per wall second.
	CPUCores   float64 `json:"cpuCores"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	NumCPU     int     `json:"numCPU"`
	// OpsPerCPUSecond is read and write operations per client CPU second: the tool's
	// efficiency.
	OpsPerCPUSecond float64 `json:"opsPerCPUSecond"`
	MaxRSSBytes     int64   `json:"maxRSSBytes"`
	// Clock is what operations were timed with: "tsc" (the CPU's time-stamp counter,
	// steered to the kernel's clock), "kernel", or "kernel (tsc fell back)" (or "kernel
	// (tsc calibrating)" for a run shorter than the clock's 10 ms calibration).
	Clock string `json:"clock,omitempty"`
}

// Usage is a reading of the process's resource usage.
type Usage struct {
	User, System time.Duration
	MaxRSS       int64 // bytes
}

// Input is what a run hands over to build its report.
type Input struct {
	ToolVersion string
	Started     time.Time
	Ended       time.Time
	DriverName  string
	DriverInfo  map[string]string
	DriverStats map[string]int64
	Panics      int64
	// Keyspace is the engine's keyspace size at the end (engine.Engine.KeyspaceSize); 0
	// when unknown.
	Keyspace   int64
	Cumulative stats.Summary
	Series     []stats.Point
	Backfill   *engine.BackfillStatus
	// Errors are the collector's failure messages (stats.Collector.Errors).
	Errors   map[string][]stats.ErrorMessage
	Snapshot *config.Snapshot
	// UsageStart and UsageEnd bracket the measured span.
	UsageStart, UsageEnd Usage
	// Clock is what the engine timed operations with (pacer.Clock.Source); empty where
	// no single engine did (a fleet).
	Clock string
	// Warmup is how long the load ran before the measured span (excluded from the figures,
	// kept in the series).
	Warmup time.Duration
	// Phases are the session's phases that ended before the measured span began (a
	// backfill, a warm-up), oldest first. A phase named after an op class (the backfill)
	// also gives that class's figures in Report.Ops, as they were when the phase ended.
	Phases []Phase
	// Phase names the measured span ("load"); empty when there were no earlier phases.
	Phase string
	// Timeline is a scenario's phases and hooks (Report.Timeline).
	Timeline []Mark
}

// Phase is one named phase of a run that ended before the measured span began: its span
// and what each op class that ran in it measured.
type Phase struct {
	Name    string                          `json:"name"`
	Started time.Time                       `json:"started"`
	Ended   time.Time                       `json:"ended"`
	Seconds float64                         `json:"seconds"`
	Ops     map[string]stats.OpSummary      `json:"ops"`
	Errors  map[string][]stats.ErrorMessage `json:"errors,omitempty"`
}

// Build assembles a report and its warnings.
func Build(in Input) *Report {
	r := &Report{
		FormatVersion: Version,
		Tool:          Tool{Name: "ndbench", Version: in.ToolVersion, GoVersion: runtime.Version()},
		Started:       in.Started,
		Ended:         in.Ended,
		Seconds:       in.Ended.Sub(in.Started).Seconds(),
		WarmupSeconds: in.Warmup.Seconds(),
		Driver:        Driver{Name: in.DriverName, Info: in.DriverInfo, Stats: in.DriverStats, Panics: in.Panics},
		Ops:           map[string]stats.OpSummary{},
		Backfill:      in.Backfill,
		Series:        in.Series,
		Errors:        map[string][]stats.ErrorMessage{},
		Warnings:      []string{},
		Timeline:      in.Timeline,
	}
	if in.Keyspace > 0 && in.Snapshot != nil {
		n := in.Snapshot.Config.Workload.NumKeys
		r.Keyspace = &Keyspace{NumKeys: n, Size: in.Keyspace, Inserted: max(in.Keyspace-n, 0)}
	}
	for op, msgs := range in.Errors {
		r.Errors[op] = msgs
	}
	for _, op := range stats.ReportOrder(in.Cumulative.Ops) {
		s := in.Cumulative.Ops[op]
		if op == "backfill" && in.Backfill == nil {
			continue
		}
		// The gauges at the end of the span describe a stopped pool; the target that
		// mattered is the one in force while the class ran.
		if t, _ := runTarget(in.Series, op); t > 0 {
			s.TargetRate = t
		}
		for _, p := range in.Series {
			s.PeakWorkers = max(s.PeakWorkers, p.Ops[op].Workers)
		}
		// Summaries built elsewhere (merged from nodes, older producers) may lack them.
		s.Attempted, s.Succeeded = s.Count+s.Errors, s.Count
		// A serve session's class runs for part of the span (started, stopped, idle
		// since the connect): its rate is over the time it ran, as the UI shows it, not
		// dragged down by the idle minutes.
		if a := activeSpan(s, in.Cumulative.Seconds); a != in.Cumulative.Seconds {
			s.Rate = float64(s.Count) / a
		}
		r.Ops[op] = s
	}
	if in.Snapshot != nil {
		r.Config = in.Snapshot.Entries
		r.Notices = in.Snapshot.Notices
	}
	user := in.UsageEnd.User - in.UsageStart.User
	sys := in.UsageEnd.System - in.UsageStart.System
	cpu := (user + sys).Seconds()
	r.Client = Client{
		UserSeconds:   user.Seconds(),
		SystemSeconds: sys.Seconds(),
		GOMAXPROCS:    runtime.GOMAXPROCS(0),
		NumCPU:        runtime.NumCPU(),
		MaxRSSBytes:   in.UsageEnd.MaxRSS,
		Clock:         in.Clock,
	}
	if r.Seconds > 0 {
		r.Client.CPUCores = cpu / r.Seconds
	}
	if cpu > 0 {
		r.Client.OpsPerCPUSecond = float64(r.Ops["read"].Count+r.Ops["write"].Count+
			r.Ops["read"].Errors+r.Ops["write"].Errors) / cpu
	}
	r.Warnings = warnings(r, in)
	// After the warnings: they judge the measured span, which an earlier phase is not.
	r.Phase, r.Phases = in.Phase, in.Phases
	if len(r.Timeline) == 0 && len(in.Phases) > 0 {
		// A run's own phases (backfill, warm-up, load) are marked on every time chart,
		// as a scenario's are, so a dip at a boundary reads as the boundary it is.
		for _, p := range in.Phases {
			r.Timeline = append(r.Timeline, Mark{Kind: "phase", Name: p.Name, Start: stamp(p.Started), End: stamp(p.Ended)})
		}
		r.Timeline = append(r.Timeline, Mark{Kind: "phase", Name: cmp.Or(in.Phase, "load"), Start: stamp(in.Started), End: stamp(in.Ended)})
	}
	for _, p := range in.Phases {
		if s, ok := p.Ops[p.Name]; ok {
			r.Ops[p.Name] = s
			if len(p.Errors[p.Name]) > 0 {
				r.Errors[p.Name] = p.Errors[p.Name]
			}
		}
	}
	return r
}

// stamp is a mark's time: RFC 3339 with milliseconds, as the series' times.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// Thresholds of the self-check.
const (
	// underRate flags a class that achieved less than this fraction of its target rate.
	underRate = 0.99
	// busyCores flags a client that kept this fraction of its usable cores busy.
	busyCores = 0.9
	// A start-lag p99 above lagShare of the response-time p99 and above lagFloor is
	// flagged: operations started late against their schedule, so a good part of the
	// response times is waiting before the operation, whose cause the warning names. The
	// share makes it relative (10 ms of lag matters at a 12 ms p99, not at a 2 s one); the
	// floor keeps microseconds of scheduling jitter out.
	lagShare = 0.1
	lagFloor = time.Millisecond
	// busyShare is the fraction of the workers that counts as "all busy in the store"
	// (Little's law: completions per second × mean service time).
	busyShare = 0.8
	// headroom is added to the Little's-law worker count suggested: service times vary,
	// and workers busy 100% of the time leave a backlog at every hiccup.
	headroom = 1.25
	// missWarn flags reads that mostly missed, once more than missJudged answered: a run
	// against an empty store measures misses, which are cheaper than reads of values.
	missWarn   = 0.5
	missJudged = 1000
	// maxShortErrors is the share of failed operations above which a shortfall is not
	// judged the generator's (see generatorShort).
	maxShortErrors = 0.01
	// shortRate is the share of its target below which an open-loop class fell short (see
	// generatorShort): a generator that cannot keep up falls far behind (a few percent of
	// an absurd rate, half of one twice what it can send), while a machine busy with other
	// work for a moment costs a short run a few percent, which the under-target warning
	// (underRate) names without calling the run invalid.
	shortRate = 0.8
	// shortOwnShare is the least share of the start lag, the generator's own, that lets a
	// shortfall be the generator's: a store that holds the workers leaves a few percent
	// (microseconds of bookkeeping against milliseconds in the store); a generator short
	// of CPU, half or more.
	shortOwnShare = 0.25
)

func warnings(r *Report, in Input) []string {
	w := []string{}
	usable := float64(min(r.Client.GOMAXPROCS, r.Client.NumCPU))
	saturated := usable > 0 && r.Client.CPUCores >= busyCores*usable
	if saturated {
		w = append(w, fmt.Sprintf("the client kept %.1f of %.0f cores busy: results may measure ndbench's machine rather than the store", r.Client.CPUCores, usable))
	}
	// generatorBlamed: a warning below says the generator, not the store, was the limit.
	generatorBlamed := saturated
	// Rates are judged over the span the counts cover, not the process's: a service may
	// have been idle, stopped or reset for part of it.
	span := in.Cumulative.Seconds
	names := make([]string, 0, len(r.Ops))
	for name := range r.Ops {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := r.Ops[name]
		// An operation of a mixed class has no target or pool of its own: its class is
		// judged.
		if name == "backfill" || stats.IsOperationSeries(name) {
			continue
		}
		// Only a class that ran at one constant target is judged against it; a run whose
		// rate changed has no single number to compare with.
		if target, constant := runTarget(in.Series, name); target > 0 && constant && span > 0 {
			span := activeSpan(s, span) // a class judged over the time it ran
			attempted := float64(s.Attempted) / span
			// Operations catchUp=drop skipped were due but deliberately not sent: their
			// warning says so, and they are no sign of too few workers.
			if due := float64(s.Attempted+s.Dropped) / span; attempted < underRate*target && due >= underRate*target {
				attempted = target
			}
			if attempted < underRate*target {
				cause := "add workers, or the store is saturated"
				if saturated {
					cause = clientBound(name, fleetNodes(in.DriverInfo))
				} else if why, short := generatorShort(name, s, in.Series, span, opTimeoutOf(in), fleetNodes(in.DriverInfo)); short {
					cause, generatorBlamed = why, true
				} else if need, ok := workersNeeded(name, s, target, runWorkers(in.Series, name, s.Workers), roomOf(in, name)); ok {
					cause = need
				}
				w = append(w, fmt.Sprintf("%s: attempted %.0f of the %.0f ops/s target (%.1f%%), of which %.0f ops/s succeeded: %s; response times include the backlog", name, attempted, target, 100*attempted/target, float64(s.Succeeded)/span, cause))
			}
		}
		if s.Dropped > 0 {
			late := "maxLateness"
			if in.Snapshot != nil {
				late = in.Snapshot.Config.Workload.MaxLateness.String()
			}
			w = append(w, fmt.Sprintf("%s: %d operations (%.1f%% of those due) were dropped, not sent: workload.catchUp=drop skips what is more than %s late when a worker gets to it (lateness p50 %.1f ms, max %.1f ms); the store was offered that much less than the target",
				name, s.Dropped, 100*float64(s.Dropped)/float64(s.Dropped+s.Attempted), late, s.DropLateness.P50/1000, s.DropLateness.Max/1000))
		}
		if most := maxWorkers(in, name); most > 0 && s.PeakWorkers >= most {
			cause := fmt.Sprintf("caused by the store's latency or by the maximum (raise %s)", config.ClassOption(name, "maxWorkers"))
			if saturated {
				cause = "and the client's CPU was saturated, so more workers would not have helped"
			}
			w = append(w, fmt.Sprintf("%s: the pool grew to its maximum of %d workers while behind its schedule: any backlog after that is queueing in the client, %s", name, most, cause))
		}
		if s.Clamped > 0 {
			w = append(w, fmt.Sprintf("%s: %d latencies exceeded the histograms' ceiling of %s and were recorded as %s: the top percentiles and the max understate them", name, s.Clamped, stats.HighestLatency, stats.HighestLatency))
		}
		if lagged(s) {
			if _, short := generatorShort(name, s, in.Series, span, opTimeoutOf(in), fleetNodes(in.DriverInfo)); short && !saturated {
				// The shortfall's warning above says where the workers were: a per-second
				// average of workers in the store, inflated by the generator's own pauses
				// (GC, scheduling) while a call was in flight, must not contradict it.
				w = append(w, fmt.Sprintf("%s: operations started late against their schedule (start-lag p99 %.1f ms of a response p99 of %.1f ms): the class fell short of its target with its workers mostly out of the store, so the delay is the generator's own, not the store's",
					name, s.StartLag.P99/1000, s.ResponseTime.P99/1000))
				generatorBlamed = true
			} else {
				msg := lagWarning(name, s, in.Series, saturated, opTimeoutOf(in), roomOf(in, name))
				w = append(w, msg)
				generatorBlamed = generatorBlamed || strings.Contains(msg, "generator's own") || strings.Contains(msg, "the generator's, not")
			}
		}
	}
	if generatorBlamed && r.Client.GOMAXPROCS > 0 && r.Client.GOMAXPROCS < r.Client.NumCPU {
		// --threads auto leaves half the cores to a store on this machine: where that
		// store is not the one busy, the generator starves on the half it kept.
		w = append(w, fmt.Sprintf("the generator ran on %d of this machine's %d cores (GOMAXPROCS; --threads auto leaves the rest to a store on this machine): as the generator was the limit, run with --threads all to give it every core",
			r.Client.GOMAXPROCS, r.Client.NumCPU))
	}
	if rd, ok := r.Ops["read"]; ok && in.Backfill == nil && rd.Count > missJudged && float64(rd.Misses) > missWarn*float64(rd.Count) {
		w = append(w, fmt.Sprintf("read: %.0f%% of %d reads missed (key not found): the store holds few of the keys read; "+
			"run with --backfill (or workload.backfill=true) to write every key first, or the latencies are those of misses",
			100*float64(rd.Misses)/float64(rd.Count), rd.Count))
	}
	for _, name := range names {
		if s := r.Ops[name]; name != "backfill" && s.Attempted > 0 && s.Succeeded == 0 {
			w = append(w, fmt.Sprintf("%s: none of %d attempted operations succeeded, so it has no latencies (shown as -): the figures measure the store's failures, not its service", name, s.Attempted))
		}
	}
	if r.Driver.Panics > 0 {
		w = append(w, fmt.Sprintf("the driver panicked %d times; those operations count as failures (class other)", r.Driver.Panics))
	}
	if b := in.Backfill; b != nil && b.Failed > 0 {
		w = append(w, fmt.Sprintf("backfill: %d keys could not be written after retries; reads of them will miss", b.Failed))
	}
	return w
}

// room is what the run's configuration lets a warning suggest for an op class's pool.
type room struct {
	// workers is the most workers the class may be given (its workers option): what the
	// configuration accepts with everything else as it was, or without a configuration
	// (a report merged from a fleet's nodes) the option's bound.
	workers int
	// configured says workers comes from the run's configuration.
	configured bool
	// pipelines says the driver pipelines with its options, so workload.pipeline may rise.
	pipelines bool
	// nodes is how many nodes the figures merge: 0 for one node's own (see fleetNodes).
	nodes int
}

// FleetInfo is the Input.DriverInfo key under which a fleet's report lists, comma
// separated, the nodes its merged figures come from (cluster.Fleet.ReportInput).
const FleetInfo = "fleet"

// fleetNodes is how many nodes a report's figures merge, by its driver info: 0 for one
// node's own.
func fleetNodes(info map[string]string) int {
	ids := strings.TrimSpace(info[FleetInfo])
	if ids == "" {
		return 0
	}
	return strings.Count(ids, ",") + 1
}

// moreNodes is what a shortfall's reason suggests beside a lower rate when the generator
// ran out: a node spreads its load over a fleet; a fleet that fell short as a whole needs
// more nodes (suggesting "a fleet" to one was untrue).
func moreNodes(nodes int) string {
	if nodes == 0 {
		return "spread the load over more nodes (a fleet)"
	}
	return fmt.Sprintf("add nodes to the fleet (its %d could not send more; each node's own report says which fell short)", nodes)
}

func roomOf(in Input, op string) room {
	if in.Snapshot == nil {
		return room{workers: config.WorkersBound(op), nodes: fleetNodes(in.DriverInfo)}
	}
	cfg := in.Snapshot.Config
	r := room{workers: cfg.Workload.WorkersAllowed(op), configured: true, nodes: fleetNodes(in.DriverInfo)}
	if def, ok := driver.Lookup(cfg.DriverName); ok && def.Pipelines != nil && cfg.DriverOptions != nil {
		r.pipelines = def.Pipelines(cfg.DriverOptions)
	}
	return r
}

// clientBound is the cause of a shortfall when the client's CPU was saturated: the
// generator, which more workers would only load more.
func clientBound(op string, nodes int) string {
	return fmt.Sprintf("the client's CPU was saturated, so the generator could not send more, and more workers would not help: lower %s, or %s",
		config.ClassOption(op, "rate"), moreNodes(nodes))
}

// maxWorkers returns the elastic maximum of op's pool, or 0 when it cannot grow.
func maxWorkers(in Input, op string) int {
	if in.Snapshot == nil {
		return 0
	}
	w := in.Snapshot.Config.Workload
	if c, ok := w.Class(op); ok {
		if most := c.MostWorkers(c.Rate, w.OpTimeout); most > c.Workers {
			return most
		}
	}
	return 0
}

// lagged reports whether s's start lag is worth a warning (see lagShare).
func lagged(s stats.OpSummary) bool {
	return s.StartLag.P99 > float64(lagFloor.Microseconds()) && s.StartLag.P99 > lagShare*s.ResponseTime.P99
}

// busyWorkers is how many workers were in the store on average over a span with rate
// completions per second of mean service time meanUs (Little's law), plus timeoutRate
// operations per second that each held a worker for the op timeout: failed operations
// have no recorded service time, and a store that times out holds its workers longest.
func busyWorkers(rate, meanUs, timeoutRate float64, opTimeout time.Duration) float64 {
	return rate*meanUs/1e6 + timeoutRate*opTimeout.Seconds()
}

// inStore returns how many of op's workers were in the store on average over the run, and
// the highest share of its workers in the store in any second (the timed-out operations
// counted at the op timeout each).
func inStore(op string, s stats.OpSummary, series []stats.Point, opTimeout time.Duration) (mean, peak float64) {
	timeout := driver.ClassTimeout.String()
	seconds := 0
	for _, p := range series {
		o, ok := p.Ops[op]
		if !ok {
			continue
		}
		seconds++
		if o.Workers > 0 {
			peak = max(peak, busyWorkers(o.Rate, o.ServiceTime.Mean, float64(o.Failures[timeout]), opTimeout)/float64(o.Workers))
		}
	}
	var timeoutRate float64
	if seconds > 0 {
		timeoutRate = float64(s.Failures[timeout]) / float64(seconds)
	}
	return busyWorkers(s.Rate, s.ServiceTime.Mean, timeoutRate, opTimeout), peak
}

// reportOpTimeout reads workload.opTimeout from a report's configuration (0 when absent).
func reportOpTimeout(r *Report) time.Duration {
	for _, e := range r.Config {
		if e.Key == "workload.opTimeout" {
			d, _ := time.ParseDuration(e.Value)
			return d
		}
	}
	return 0
}

// lagWarning names why op's operations started late: the client's CPU, a store that stalled
// or slowed with the workers inside it, too few workers for the rate, or the generator
// itself. The engine splits each operation's lag into the wait for a worker still in the
// store and the generator's own rest (stats.OpSummary.StartLagWait, StartLagOwn), and the
// generator is blamed only when its own part is the larger. Without that split (data of
// an older node) it judges from the per-interval averages of workers in the store: a stall
// holding every worker for L seconds keeps them all busy for L of its interval, so one of
// at least busyShare of an interval shows; a shorter one hides in the interval's average,
// and the warning says it may add.
func lagWarning(op string, s stats.OpSummary, series []stats.Point, saturated bool, opTimeout time.Duration, rm room) string {
	lag := fmt.Sprintf("%s: operations started late against their schedule (start-lag p99 %.1f ms of a response p99 of %.1f ms)",
		op, s.StartLag.P99/1000, s.ResponseTime.P99/1000)
	if saturated {
		return lag + ": the client's CPU was saturated, so the delay is the generator's, not the store's"
	}
	workers := runWorkers(series, op, s.Workers)
	mean, peak := inStore(op, s, series, opTimeout)
	if workers > 0 && mean >= busyShare*float64(workers) {
		if need, ok := workersNeeded(op, s, s.TargetRate, workers, rm); ok {
			return lag + ": every worker was busy in the store; " + need
		}
		return lag + fmt.Sprintf(": every worker was busy in the store (%.1f of %d on average): add workers, or the store is saturated", mean, workers)
	}
	if split := s.StartLagOwn + s.StartLagWait; split > 0 {
		// Measured per operation (stats.Counts.LagOwnUs): exact however short the stalls,
		// where the per-second averages below are not.
		wait := s.StartLagWait / split
		if wait >= 0.5 {
			return lag + fmt.Sprintf(": the store stalled or slowed, holding the workers (operations in flight took up to %.0f ms): %.0f%% of the lag (%.2f ms of a mean %.2f ms) was operations due waiting for a worker still in the store with its previous one; the lag is the store's, not the generator's",
				s.ServiceTime.Max/1000, 100*wait, s.StartLagWait/1000, split/1000)
		}
		return lag + fmt.Sprintf(": %.0f%% of the lag (%.2f ms of a mean %.2f ms) came after a worker was free, so the delay is mostly the generator's own (scheduling, GC, a busy machine)",
			100*(1-wait), s.StartLagOwn/1000, split/1000)
	}
	// A report without the split (an older node's data): judge from the per-second
	// averages of workers in the store.
	if workers > 0 && peak >= busyShare {
		return lag + fmt.Sprintf(": the store stalled, holding all %d workers at once (operations in flight took up to %.0f ms) while the operations due meanwhile queued behind them; the lag is the store's, not the generator's",
			workers, s.ServiceTime.Max/1000)
	}
	msg := lag + fmt.Sprintf(": workers were free (%.1f of %d busy in the store on average, at most %.0f%% in any second), so the delay is mostly the generator's own (scheduling, GC, a busy machine)",
		mean, workers, 100*peak)
	if s.ServiceTime.Max >= s.StartLag.P99/2 {
		// A stall shorter than an interval hides in its average: say what the stats
		// cannot rule out.
		msg += fmt.Sprintf("; service times reached %.1f ms, so brief store stalls may add to it", s.ServiceTime.Max/1000)
	}
	return msg
}

// opTimeoutOf is the run's workload.opTimeout (0 without a configuration).
func opTimeoutOf(in Input) time.Duration {
	if in.Snapshot == nil {
		return 0
	}
	return in.Snapshot.Config.Workload.OpTimeout
}

// generatorShort says why op missed its open-loop target by the generator's own doing:
// the class ran at one constant target, sent (attempted, or dropped by catchUp=drop) less
// than shortRate of it over span seconds, its typical operation started late
// (laggedTypically: a generator behind its schedule is behind for most operations, not a
// moment's tail), at least shortOwnShare of its start lag was the
// generator's own (stats.OpSummary.StartLagOwn: after a worker was free), and by Little's
// law at the store's median service time its workers were mostly out of the store. A
// store too slow for the workers, or one that stalled holding them (the run may end
// before the schedule caught up), makes operations wait for a worker still in the store:
// the lag is then almost all waiting, and the shortfall is the store's (its warning
// suggests more workers). A generator short of CPU spends its time outside the calls, and
// its own pauses (GC, scheduling) that land inside a call in flight inflate the mean
// service time, not the typical call's: hence the median. A class with more than
// maxShortErrors of its operations failed is not judged: a failure has no service time,
// so where its worker was is unknown.
func generatorShort(op string, s stats.OpSummary, series []stats.Point, span float64, opTimeout time.Duration, nodes int) (string, bool) {
	target, constant := runTarget(series, op)
	workers := runWorkers(series, op, s.Workers)
	split := s.StartLagOwn + s.StartLagWait
	if target <= 0 || !constant || span <= 0 || workers <= 0 || s.Succeeded == 0 || split <= 0 ||
		s.StartLagOwn < shortOwnShare*split || float64(s.Errors) > maxShortErrors*float64(s.Attempted) || !laggedTypically(s) {
		return "", false
	}
	attempted, due := float64(s.Attempted)/span, float64(s.Attempted+s.Dropped)/span
	if attempted >= shortRate*target || due >= shortRate*target {
		return "", false
	}
	timeoutRate := float64(s.Failures[driver.ClassTimeout.String()]) / span
	busy := busyWorkers(float64(s.Succeeded)/span, s.ServiceTime.P50, timeoutRate, opTimeout)
	if busy >= busyShare*float64(workers) {
		return "", false
	}
	return fmt.Sprintf("%s: sent %.0f of the %.0f ops/s target (%.1f%%) while its workers were mostly out of the store (%.1f of %d in it on average at the store's median service time of %.3f ms): the generator could not send faster (its CPU, GC, scheduling), and more workers would not help; lower %s, or %s",
		op, attempted, target, 100*attempted/target, busy, workers, s.ServiceTime.P50/1000, config.ClassOption(op, "rate"), moreNodes(nodes)), true
}

// workersNeeded says how many workers op needs for target ops/s by Little's law (target ×
// mean service time, plus headroom), when that is more than it had; ok is false when the
// workers were enough or nothing is known. It suggests no more workers than rm allows:
// when those are too few for the rate at this service time, it says so and names what
// else would carry the rate.
func workersNeeded(op string, s stats.OpSummary, target float64, workers int, rm room) (string, bool) {
	if target <= 0 || s.ServiceTime.Mean <= 0 || workers <= 0 {
		return "", false
	}
	need := busyWorkers(target, s.ServiceTime.Mean, 0, 0)
	if need < busyShare*float64(workers) {
		return "", false
	}
	key := config.ClassOption(op, "workers")
	msg := fmt.Sprintf("%d workers cannot run %.0f ops/s at a mean service time of %.2f ms, which keeps %.1f busy (Little's law: rate × service time)",
		workers, target, s.ServiceTime.Mean/1000, need)
	// In float64 until it is known to fit: a rate of 1e15 needs more workers than an int holds.
	suggest := max(math.Ceil(need*headroom), float64(workers+1))
	if rm.workers <= 0 || suggest <= float64(rm.workers) {
		return fmt.Sprintf("%s; set %s=%d", msg, key, int(suggest)), true
	}
	allows := "this configuration allows"
	if !rm.configured {
		allows = key + " allows"
	}
	// What the most workers allowed carry at this service time, every one of them busy.
	carry := float64(rm.workers) / (s.ServiceTime.Mean / 1e6)
	if rm.workers > workers {
		msg += fmt.Sprintf("; even the most workers %s, %d (set %s=%d), carry at most about %.0f ops/s at this service time", allows, rm.workers, key, rm.workers, carry)
	} else {
		msg += fmt.Sprintf("; that is already the most workers %s (%d), and they carry at most about %.0f ops/s at this service time", allows, rm.workers, carry)
	}
	msg += fmt.Sprintf(": lower %s, %s", config.ClassOption(op, "rate"), moreNodes(rm.nodes))
	if rm.pipelines {
		msg += ", or raise workload.pipeline so that each worker keeps several operations in flight"
	}
	return msg, true
}

// runWorkers returns the most workers op had in any interval of the series, or def when
// it never had any there (the summary's gauge describes the pool after it stopped).
func runWorkers(series []stats.Point, op string, def int) int {
	n := 0
	for _, p := range series {
		n = max(n, p.Ops[op].Workers)
	}
	if n == 0 {
		return def
	}
	return n
}

// runTarget returns the target rate of op over the intervals in which it had workers (the
// last one), and whether it was the same in all of them.
// activeSpan is the part of a cumulative span of span seconds in which s's class ran
// (stats.OpSummary.ActiveSeconds), or span when that is unknown or covers nearly all of
// it: active time counts whole intervals, so a class that ran throughout reads a little
// under the span, and its rate stays count over span, as a run's always was.
func activeSpan(s stats.OpSummary, span float64) float64 {
	if s.ActiveSeconds > 0 && s.ActiveSeconds < activeShare*span {
		return s.ActiveSeconds
	}
	return span
}

// activeShare is the share of a span under which a class's active time replaces the span.
const activeShare = 0.9

func runTarget(series []stats.Point, op string) (target float64, constant bool) {
	constant = true
	for _, p := range series {
		o := p.Ops[op]
		if o.Workers == 0 {
			continue
		}
		if target != 0 && o.TargetRate != target {
			constant = false
		}
		target = o.TargetRate
	}
	return target, constant
}

// Write encodes r as indented JSON.
func Write(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// WriteFile writes r to path as WriteOutputs writes a command's JSON report: atomically
// (a temporary file renamed into place), so a reader never sees half a report.
func WriteFile(path string, r *Report) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return Write(w, r) })
}
