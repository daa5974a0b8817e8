// Command benchpeers runs the ndbench binary and the tools users compare it with as whole
// processes, side by side, on local servers, and prints what each process cost: operations
// per client CPU-second from the child's own accounting (user + system time from wait4,
// start-up and exit included, as `time` shows them) and each tool's own latency figures.
// It is what `make bench-drivers` runs; docs/performance.md's headline table comes from it.
//
//	go run ./scripts/benchpeers [-rounds 3] [-duration 8s] [-pairs postgres,redis,memcached,http]
//
// Every pair gets one server of its own on 127.0.0.1 with a free port (internal/testserver,
// stopped by PID at the end, and by the kernel if this program dies). The rounds are
// interleaved: round 1 runs every tool of every pair once, then round 2, so a busy spell
// on a shared machine hits all tools rather than one; the table quotes medians over the
// rounds, and the ratio is the median of each round's ratio. The load average is read
// before and after, and printed, because on a shared machine it moves every figure.
//
// The pairs and their shapes (issues 35, 41 and 42):
//
//	postgres   100k keys of 100 B, 50 connections, 80% point reads / 20% upserts, closed loop:
//	           ndbench (50 readers on poolSize=50 connections, readMix=read:8,write:2) and
//	           pgbench -c 50 -j 1 -M prepared
//	           with the same two statements on the same table
//	postgres-open  the same, open loop at -rate operations per second (ndbench's readRate
//	           with a fixed pool of 50, pgbench -R): both time each operation from its
//	           scheduled start, so their p99s compare at the same throughput
//	redis      the same shape on Redis: ndbench and redis-benchmark (-c 50, a GET run and a
//	           SET run, as it has no mix) and memtier_benchmark (-c 50 -t 1 --ratio=1:4)
//	memcached  the same shape on Memcached: ndbench and memtier_benchmark
//	redis-pipelined  the redis pair's keys, values and mix on 4 connections × 16 in flight:
//	           ndbench (4 readers, workload.pipeline=16), redis-benchmark -c 4 -P 16 and
//	           memtier -c 4 -t 1 --pipeline=16 (redispipe.go)
//	redis-open, memcached-open  the same, open loop at -kv-rate operations per second (by
//	           default half of memtier's closed-loop throughput, measured at set-up):
//	           ndbench's readRate on a fixed pool of 50, memtier --rate-limiting; ndbench's
//	           latency is its service time there, as memtier times from sending
//	http       GET of a 100-byte file from nginx over 50 keep-alive HTTP/1.1 connections:
//	           ndbench's http driver, wrk (-t 1 -c 50) and vegeta (50 workers, no rate)
//	http-conns (not run unless named) ndbench alone at 10,000 and at 50 keep-alive HTTP/1.1
//	           connections, open loop at 1,000 ops/s against the KV service, whose answers
//	           are delayed so that rate × delay is about the connection count (httpconns.go);
//	           the ratio is ops per CPU-second at 10,000 over the same at 50
//
// -busy runs every tool of every round twice, as is and with one core kept busy by a
// loop pinned to it (taskset), and -quota N once more in a cgroup limited to N CPUs
// (busy.go); the tables add each tool's CPU per operation in each condition over the
// same round's idle run, and ndbench's ratio to each peer in each condition (issue 39).
//
// A peer that is not installed (scripts/install-bench-peers.sh installs them) is skipped
// with a note; every run is bounded by -duration plus a grace period and killed after it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// Shape of every comparison (the issues' figures were measured with these).
const (
	numKeys     = 100000
	valueSize   = 100
	connections = 50
)

// result is what one process did in one round.
type result struct {
	ops      float64       // operations completed
	cpu      time.Duration // the child's user + system time (wait4)
	wall     time.Duration // from start to exit
	p50, p99 time.Duration // the tool's own figures
	note     string        // what the latency figures cover, when it is not obvious
	rss      int64         // peak resident memory in bytes, where the tool reports it
	// throttling is what the quota condition's cgroup counted during the run (nil in the
	// other conditions).
	throttling *throttling
}

// opsPerCPU is the headline figure: operations per client CPU-second.
func (r result) opsPerCPU() float64 {
	if r.cpu <= 0 {
		return 0
	}
	return r.ops / r.cpu.Seconds()
}

// tool is one process of a pair: run starts it, waits for it and reads its figures.
type tool struct {
	name string
	run  func(ctx context.Context, dir string) (result, error)
}

// pair is one server and the tools compared on it; ndbench is tools[0].
type pair struct {
	name  string
	srv   *testserver.Server
	tools []tool
	// settle, when set, brings the server to the same state before every tool's run, so
	// that no tool meets the clean-up of the writes the run before it made.
	settle func(ctx context.Context) error
}

type options struct {
	rounds   int
	duration time.Duration
	pairs    []string
	ndbench  string
	out      string
	// baseline, when set, is a second ndbench binary run in every round beside the first
	// (an earlier build), for before/after figures from the same minutes.
	baseline string
	// env is extra environment for the measured ndbench (not the baseline), KEY=VALUE.
	env []string
	// rate is the open-loop pairs' total operations per second.
	rate int
	// kvRate is the redis-open and memcached-open pairs' total operations per second; 0
	// takes half of memtier's closed-loop throughput, measured at set-up.
	kvRate int
	// busy runs every tool of every round a second time with one core kept busy
	// (busy.go), and the tables compare its CPU per operation with the idle run's.
	busy bool
	// quota, above 0, runs every tool of every round once more in a cgroup limited to
	// that many CPUs.
	quota float64
	// cgroupRoot is where cgroups are mounted (/sys/fs/cgroup; a directory of a test's).
	cgroupRoot string
}

func main() {
	var o options
	var pairs string
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds (the table quotes medians)")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "how long each tool runs in each round")
	flag.StringVar(&pairs, "pairs", "postgres,postgres-open,redis,redis-open,redis-pipelined,memcached,memcached-open,http", "pairs to run, comma-separated: "+strings.Join(knownPairs, ", "))
	flag.IntVar(&o.rate, "rate", 5000, "operations per second of the open-loop pairs (postgres-open: ndbench's readRate, pgbench -R)")
	flag.IntVar(&o.kvRate, "kv-rate", 0, "operations per second of redis-open and memcached-open (ndbench's readRate, memtier --rate-limiting × 50); 0: half of memtier's closed-loop throughput")
	flag.StringVar(&o.ndbench, "ndbench", "bin/ndbench", "the ndbench binary to measure (make build writes bin/ndbench)")
	flag.StringVar(&o.out, "out", "bench-results/peers", "directory for the tools' outputs and logs")
	flag.BoolVar(&o.busy, "busy", false, "run every tool twice a round: as is, and with one core kept busy by a loop pinned to it (taskset); the tables add each tool's CPU per operation busy ÷ idle")
	flag.Float64Var(&o.quota, "quota", 0, "above 0: run every tool once more a round in a cgroup limited to this many CPUs (cgroup v2 cpu.max or v1 cpu.cfs_quota_us; needs root)")
	flag.StringVar(&o.baseline, "baseline", "", "a second ndbench binary (an earlier build) run beside -ndbench in every round, as ndbench-baseline")
	var env string
	flag.StringVar(&env, "ndbench-env", "", "extra environment for the -ndbench runs, KEY=VALUE[,KEY=VALUE...], e.g. GOMAXPROCS=1")
	flag.Parse()
	if env != "" {
		o.env = strings.Split(env, ",")
	}
	o.pairs = strings.Split(pairs, ",")
	o.cgroupRoot = "/sys/fs/cgroup"
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeers:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchpeers:", err)
		os.Exit(1)
	}
}

// knownPairs are the values -pairs accepts.
var knownPairs = []string{"postgres", "postgres-open", "redis", "redis-open", "redis-pipelined", "memcached", "memcached-open", "http", "http-conns"}

func (o options) validate() error {
	if o.rounds < 1 || o.rounds > 100 {
		return fmt.Errorf("-rounds %d: allowed 1 to 100", o.rounds)
	}
	if o.rate < 1 || o.rate > 1000000 {
		return fmt.Errorf("-rate %d: allowed 1 to 1000000", o.rate)
	}
	if o.kvRate < 0 || o.kvRate > 10000000 {
		return fmt.Errorf("-kv-rate %d: allowed 0 (half of memtier's closed-loop throughput) to 10000000", o.kvRate)
	}
	if o.duration < time.Second || o.duration > 10*time.Minute {
		return fmt.Errorf("-duration %s: allowed 1s to 10m", o.duration)
	}
	for _, p := range o.pairs {
		if !slices.Contains(knownPairs, p) {
			return fmt.Errorf("-pairs: unknown pair %q; allowed: %s", p, strings.Join(knownPairs, ", "))
		}
	}
	if _, err := os.Stat(o.ndbench); err != nil {
		return fmt.Errorf("-ndbench %s: %w (run make build first)", o.ndbench, err)
	}
	if o.baseline != "" {
		if _, err := os.Stat(o.baseline); err != nil {
			return fmt.Errorf("-baseline %s: %w", o.baseline, err)
		}
	}
	if o.busy {
		if _, err := exec.LookPath("taskset"); err != nil {
			return fmt.Errorf("-busy: taskset (util-linux) pins the busy loop to one core: %w", err)
		}
	}
	if o.quota != 0 && (o.quota < 0.1 || o.quota > 1024) {
		return fmt.Errorf("-quota %g: allowed 0 (no quota condition) or 0.1 to 1024 CPUs", o.quota)
	}
	for _, kv := range o.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("-ndbench-env %q: allowed KEY=VALUE pairs separated by commas", kv)
		}
	}
	return nil
}

func run(ctx context.Context, o options, w io.Writer) error {
	bin, err := filepath.Abs(o.ndbench)
	if err != nil {
		return err
	}
	o.ndbench = bin
	// The tools are handed paths under out: absolute, so none depends on a working
	// directory.
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if o.baseline != "" {
		if o.baseline, err = filepath.Abs(o.baseline); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", o.out, err)
	}
	// Everything printed is also kept beside the tools' outputs.
	summary, err := os.Create(filepath.Join(o.out, "summary.txt"))
	if err != nil {
		return err
	}
	defer summary.Close()
	w = io.MultiWriter(w, summary)
	var ps []*pair
	defer func() {
		for _, p := range ps {
			_ = p.srv.Stop()
		}
	}()
	for _, name := range o.pairs {
		p, skipped, err := setUp(ctx, name, o)
		if err != nil {
			return fmt.Errorf("set up %s: %w", name, err)
		}
		for _, s := range skipped {
			fmt.Fprintf(w, "note: %s: %s\n", name, s)
		}
		if p != nil {
			ps = append(ps, p)
		}
	}
	conds := o.conditions()
	var cgroup string
	if o.quota > 0 {
		dir, remove, err := quotaCgroup(o.cgroupRoot, o.quota)
		if err != nil {
			return err
		}
		defer remove()
		cgroup = dir
		fmt.Fprintf(w, "quota condition: cgroup %s limited to %g CPUs\n", dir, o.quota)
	}
	load0 := loadAverage()
	fmt.Fprintf(w, "load average before: %s\n", load0)
	results := map[string]map[string][][]*result{} // condition -> pair -> tool -> round
	for _, c := range conds {
		results[c] = map[string][][]*result{}
		for _, p := range ps {
			results[c][p.name] = make([][]*result, len(p.tools))
			for i := range p.tools {
				results[c][p.name][i] = make([]*result, o.rounds)
			}
		}
	}
	for round := 0; round < o.rounds; round++ {
		for _, p := range ps {
			// The order rotates each round so no tool always runs right after another's
			// load (a server's checkpoint, the page cache), and so does the order of the
			// conditions, so none always follows the busy loop.
			for k := range p.tools {
				i := (k + round) % len(p.tools)
				t := p.tools[i]
				for kc := range conds {
					cond := conds[(kc+round)%len(conds)]
					if err := ctx.Err(); err != nil {
						return err
					}
					name := fmt.Sprintf("%s-%s-%d", p.name, t.name, round+1)
					if len(conds) > 1 {
						name += "-" + cond
					}
					dir := filepath.Join(o.out, name)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						return err
					}
					if p.settle != nil {
						if err := p.settle(ctx); err != nil {
							return fmt.Errorf("settle %s before %s: %w", p.name, name, err)
						}
					}
					r, err := runIn(ctx, cond, cgroup, o.duration, t, dir)
					if err != nil {
						fmt.Fprintf(w, "round %d %s %s %s: failed: %v\n", round+1, p.name, t.name, cond, err)
						continue
					}
					results[cond][p.name][i][round] = &r
					label := t.name
					if len(conds) > 1 {
						label += " " + cond
					}
					var quota string
					if r.throttling != nil {
						quota = "  " + r.throttling.String()
					}
					fmt.Fprintf(w, "round %d %-9s %-22s %9.0f ops %6.2f CPU-s %9.0f ops/CPU-s  p50 %s p99 %s  load %s%s\n",
						round+1, p.name, label, r.ops, r.cpu.Seconds(), r.opsPerCPU(), ms(r.p50), ms(r.p99), loadAverage(), quota)
				}
			}
		}
	}
	fmt.Fprintf(w, "load average after: %s\n\n", loadAverage())
	fmt.Fprintf(w, "%d interleaved rounds of %s each, medians; %s; load average %s before, %s after\n\n",
		o.rounds, o.duration, time.Now().UTC().Format("2006-01-02 15:04 UTC"), load0, loadAverage())
	writeTable(w, ps, results[condIdle])
	writeConditionTables(w, ps, conds, results)
	return nil
}

// runIn runs t once in condition cond: with the busy loop beside it for busy, in the
// cgroup for quota.
func runIn(ctx context.Context, cond, cgroup string, d time.Duration, t tool, dir string) (result, error) {
	rctx, cancel := context.WithTimeout(ctx, d+2*time.Minute)
	defer cancel()
	switch cond {
	case condBusy:
		stop, err := busyCore()
		if err != nil {
			return result{}, err
		}
		defer stop()
	case condQuota:
		rctx = withCgroup(rctx, cgroup)
		before, err := readThrottling(cgroup)
		if err != nil {
			return result{}, fmt.Errorf("read the quota cgroup's counters: %w", err)
		}
		r, err := t.run(rctx, dir)
		if after, aerr := readThrottling(cgroup); aerr == nil {
			r.throttling = &throttling{periods: after.periods - before.periods, throttled: after.throttled - before.throttled, wait: after.wait - before.wait}
		}
		return r, err
	}
	return t.run(rctx, dir)
}

// writeTable prints one Markdown row per peer: both tools' medians and the median of the
// rounds' ratios (ndbench over the peer; above 1 ndbench does more per CPU-second).
func writeTable(w io.Writer, ps []*pair, results map[string][][]*result) {
	fmt.Fprintln(w, "| pair | peer | ndbench ops/client-CPU-s | peer ops/client-CPU-s | ratio (rounds) | ndbench ops/s | peer ops/s | ndbench p50 / p99 ms | peer p50 / p99 ms | p99 ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range ps {
		rs := results[p.name]
		nd := rs[0]
		for i := 1; i < len(p.tools); i++ {
			peer := rs[i]
			ratios := peerRatios(nd, peer)
			var p99s []float64
			for r := range nd {
				if nd[r] != nil && peer[r] != nil && peer[r].opsPerCPU() > 0 && peer[r].p99 > 0 {
					p99s = append(p99s, float64(nd[r].p99)/float64(peer[r].p99))
				}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | **%s** (%s) | %s | %s | %s / %s | %s / %s | %s |\n",
				p.name, p.tools[i].name,
				num(median(collect(nd, result.opsPerCPU))), num(median(collect(peer, result.opsPerCPU))),
				ratio(median(ratios)), ratioList(ratios),
				num(median(collect(nd, opsPerSec))), num(median(collect(peer, opsPerSec))),
				msf(median(collect(nd, p50))), msf(median(collect(nd, p99))),
				msf(median(collect(peer, p50))), msf(median(collect(peer, p99))),
				ratio(median(p99s)))
		}
	}
	for _, p := range ps {
		for i, t := range p.tools {
			for _, r := range results[p.name][i] {
				if r != nil && r.note != "" {
					fmt.Fprintf(w, "\n%s %s: %s", p.name, t.name, r.note)
					break
				}
			}
		}
	}
	fmt.Fprintln(w)
}

func opsPerSec(r result) float64 {
	if r.wall <= 0 {
		return 0
	}
	return r.ops / r.wall.Seconds()
}

func p50(r result) float64 { return float64(r.p50) }
func p99(r result) float64 { return float64(r.p99) }

// collect applies f to the rounds that ran.
func collect(rs []*result, f func(result) float64) []float64 {
	var out []float64
	for _, r := range rs {
		if r != nil {
			out = append(out, f(*r))
		}
	}
	return out
}

// median returns the median of vs (the mean of the middle two for an even count), or
// NaN-free 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func num(v float64) string {
	if v == 0 {
		return "—"
	}
	s := fmt.Sprintf("%.0f", v)
	// Thousands separators, as docs/performance.md writes its figures.
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ratio(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

func ratioList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string {
	if d <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fms", float64(d)/1e6)
}

func msf(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", v/1e6)
}

// loadAverage returns the 1, 5 and 15 minute load averages, or "unknown" where the
// system does not publish them in /proc.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// runProcess runs cmd to its end (or kills it when ctx ends) and returns its CPU time from
// wait4 and its wall time. Its output goes to dir/NAME.out.
func runProcess(ctx context.Context, dir, name string, cmd *exec.Cmd) (cpu, wall time.Duration, out []byte, err error) {
	outPath := filepath.Join(dir, name+".out")
	f, err := os.Create(outPath)
	if err != nil {
		return 0, 0, nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if dir, ok := ctx.Value(cgroupKey{}).(string); ok && dir != "" {
		intoCgroup(cmd, dir)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, nil, fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// By PID, the process this program started, and nothing else.
		_ = cmd.Process.Kill()
		<-done
		err = fmt.Errorf("%s did not finish in time: killed (%w)", name, ctx.Err())
	}
	wall = time.Since(t0)
	out, _ = os.ReadFile(outPath)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return cpu, wall, out, fmt.Errorf("%s: %w: %s", name, err, tail(out, 800))
	}
	return cpu, wall, out, nil
}

// tail returns the last n bytes of b, for error messages.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// unwrapped is the binary a peer's path stands for. Debian's /usr/bin/pgbench is a Perl
// script (pg_wrapper) that picks a PostgreSQL version and execs that version's pgbench in
// the same process, so the process's CPU account, which is what the tables compare, would
// include Perl's start-up (35-60 ms a run, ~2% of an 8 s pgbench run's CPU, to the peer's
// cost and ndbench's credit). For a script in place of pgbench, the newest
// /usr/lib/postgresql/N/bin/pgbench, the layout the wrapper itself execs from, is used;
// anything else is returned as it is.
func unwrapped(path string) string { return unwrapIn(path, "/usr/lib/postgresql") }

// unwrapIn is unwrapped with the versions' directory given (tests make their own).
func unwrapIn(path, versions string) string {
	if filepath.Base(path) != "pgbench" || !isScript(path) {
		return path
	}
	best, bestV := "", -1
	matches, _ := filepath.Glob(filepath.Join(versions, "*", "bin", "pgbench"))
	for _, m := range matches {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m)))); err == nil && v > bestV && !isScript(m) {
			best, bestV = m, v
		}
	}
	if best == "" {
		return path
	}
	return best
}

// isScript reports whether the file at path starts with "#!".
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	return n == 2 && string(head) == "#!"
}

// lookTool finds a peer's binary on PATH or in the install script's cache.
func lookTool(name string) (string, error) {
	if env := toolEnv[name]; env != "" && os.Getenv(env) != "" {
		p := os.Getenv(env)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return unwrapped(p), nil
	}
	p := filepath.Join(testserver.CacheDir(), "peers", "bin", name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	hint := "scripts/install-bench-peers.sh"
	if env := toolEnv[name]; env != "" {
		hint += ", or " + env + "=path"
	}
	return "", errors.New(name + " not installed (" + hint + ")")
}
