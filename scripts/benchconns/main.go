// Command benchconns measures what a connection costs the ndbench binary: one node, open
// loop at one modest rate against a local Redis, with 50, 1,000 and 10,000 connections
// (redis mode=direct: one connection per worker, readers = maxReaders = connections),
// interleaved rounds, medians. Every run starts with a warm-up long enough for each worker
// of the largest count to have had an operation, so its connection is made, and the
// figures start after it. For each count it prints the client's CPU per operation in the
// measured window (user + system from the report), that figure against 50 connections'
// (issue 35's bar: at most 1.5x), the whole process's CPU per operation (wait4: start-up,
// warm-up with the connects, the close of every connection and exit included; the
// warm-up's operations counted at the run's rate) and its ratio, the CPU spent outside the
// window per connection above the first count's (what a connection costs once: connect,
// worker, close), the peak RSS (bar: 1 GB), RSS per connection above the 50-connection
// run's, the server's CPU per operation, the achieved rate and the response-time p50/p99
// (on a shared machine a busy spell shows there first).
// It is what `make bench-conns` runs; docs/performance.md's "Connection scale" table
// comes from it.
//
//	go run ./scripts/benchconns -ndbench bin/ndbench [-rounds 3] [-duration 20s] [-rate 2000] [-conns 50,1000,10000] [-warmup 0]
//
// Redis is started by internal/testserver on 127.0.0.1 with maxclients raised to the
// largest count plus 100. Each run needs one descriptor per connection in the client and
// in the server, and one ephemeral port per connection towards the one server address
// (net.ipv4.ip_local_port_range, 28,232 ports by default on Linux): the program reads
// RLIMIT_NOFILE and the port range first and refuses a count they cannot hold.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ndbench/ndbench/internal/testserver"
)

const (
	numKeys   = 100000
	valueSize = 100
)

type options struct {
	ndbench  string
	rounds   int
	duration time.Duration
	rate     int
	conns    []int
	out      string
	// warmup runs before every run's figures; 0 takes warmupFor(conns, rate).
	warmup time.Duration
}

// warmupFor is the warm-up that lets every worker of the largest count have its first
// operation, and so its connection, before the figures start: the workers take the
// schedule's slots in turn, so the last one's first comes about connections ÷ rate
// seconds in; 2 s more for a start-up on a busy machine. Without it a 20 s run at
// 2,000 ops/s counted 10,000 connects against 40,000 operations.
func warmupFor(conns []int, rate int) time.Duration {
	most := slices.Max(conns)
	return time.Duration(float64(most)/float64(rate)*float64(time.Second)).Round(time.Second) + 2*time.Second
}

// sample is one ndbench run.
type sample struct {
	ops       float64 // operations that succeeded
	errors    float64
	cpu       float64 // client CPU seconds in the measured window (the report's)
	wholeCPU  float64 // the process's CPU seconds from start to exit (wait4)
	rss       float64 // bytes
	serverCPU time.Duration
	seconds   float64
	p50, p99  float64 // µs
}

func main() {
	var o options
	var conns string
	flag.StringVar(&o.ndbench, "ndbench", "bin/ndbench", "the ndbench binary")
	flag.IntVar(&o.rounds, "rounds", 3, "interleaved rounds")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "each run's duration")
	flag.IntVar(&o.rate, "rate", 2000, "operations per second of every run (open loop)")
	flag.StringVar(&conns, "conns", "50,1000,10000", "connection counts, comma-separated; the first is the base of the ratios")
	flag.StringVar(&o.out, "out", "bench-results/conns", "directory for reports and logs")
	flag.DurationVar(&o.warmup, "warmup", 0, "warm-up before every run's figures; 0: the largest count ÷ rate + 2 s, so every connection is made before the figures start")
	flag.Parse()
	for _, c := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 10000 {
			fmt.Fprintf(os.Stderr, "benchconns: -conns: %q is not a count from 1 to 10000 (workload.maxReaders' bound)\n", c)
			os.Exit(2)
		}
		o.conns = append(o.conns, n)
	}
	if o.rounds < 1 || o.duration < time.Second || o.rate < 1 || o.warmup < 0 {
		fmt.Fprintln(os.Stderr, "benchconns: -rounds must be at least 1, -duration at least 1s, -rate at least 1, -warmup at least 0")
		os.Exit(2)
	}
	if o.warmup == 0 {
		o.warmup = warmupFor(o.conns, o.rate)
	}
	if err := run(context.Background(), o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchconns:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, w io.Writer) error {
	most := slices.Max(o.conns)
	if err := checkLimits(most); err != nil {
		return err
	}
	bin, err := filepath.Abs(o.ndbench)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	s, err := testserver.Redis(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = s.Stop() }()
	rc := goredis.NewClient(&goredis.Options{Addr: s.Addr()})
	defer func() { _ = rc.Close() }()
	if err := rc.ConfigSet(ctx, "maxclients", strconv.Itoa(most+100)).Err(); err != nil {
		return fmt.Errorf("CONFIG SET maxclients %d: %w", most+100, err)
	}
	if _, err := ndbench(ctx, bin, filepath.Join(o.out, "load"), append(args(s, time.Second, 1, 10), "--backfill", "--set", "workload.backfillWorkers=16")); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	fmt.Fprintf(w, "ndbench %s, Redis %s, %d keys of %d B, read:write 8:2, open loop at %d ops/s, %v measured per run after %v of warm-up, %d rounds, load average %s\n",
		bin, s.Addr(), numKeys, valueSize, o.rate, o.duration, o.warmup, o.rounds, loadAverage())
	got := map[int][]sample{}
	for r := 1; r <= o.rounds; r++ {
		for _, n := range o.conns {
			cpu0 := s.CPU()
			sm, err := ndbench(ctx, bin, filepath.Join(o.out, fmt.Sprintf("c%d-r%d", n, r)), append(args(s, o.duration, n, o.rate), "--warmup", o.warmup.String()))
			if err != nil {
				return fmt.Errorf("%d connections, round %d: %w", n, r, err)
			}
			sm.serverCPU = s.CPU() - cpu0
			got[n] = append(got[n], sm)
			fmt.Fprintf(w, "round %d, %5d connections: %.0f ops, %.2f s client CPU measured, %.2f s in all, RSS %.0f MB, %.0f errors, load %s\n",
				r, n, sm.ops, sm.cpu, sm.wholeCPU, sm.rss/1e6, sm.errors, loadAverage())
		}
	}
	fmt.Fprintf(w, "load average after: %s\n\n", loadAverage())
	base := got[o.conns[0]]
	// The warm-up's operations, at the run's rate, beside the measured ones: the whole
	// process's CPU is spread over both.
	warmOps := o.warmup.Seconds() * float64(o.rate)
	fmt.Fprintln(w, "| connections | client CPU/op | vs first | whole process CPU/op | vs first | CPU outside the window per connection above first | peak RSS | RSS/conn above first | server CPU/op | achieved ops/s | p50 | p99 | errors |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range o.conns {
		ss := got[n]
		cpuOp := med(ss, func(s sample) float64 { return s.cpu / s.ops * 1e6 })
		wholeOp := func(s sample) float64 { return s.wholeCPU / (s.ops + warmOps) }
		var ratios, wholeRatios, oneOff []float64
		for i, s := range ss {
			ratios = append(ratios, (s.cpu/s.ops)/(base[i].cpu/base[i].ops))
			wholeRatios = append(wholeRatios, wholeOp(s)/wholeOp(base[i]))
			if n != o.conns[0] {
				outside := func(s sample) float64 { return s.wholeCPU - s.cpu }
				oneOff = append(oneOff, (outside(s)-outside(base[i]))/float64(n-o.conns[0])*1e6)
			}
		}
		rss := med(ss, func(s sample) float64 { return s.rss })
		perConn, once := "-", "-"
		if n != o.conns[0] {
			perConn = fmt.Sprintf("%.1f KB", (rss-med(base, func(s sample) float64 { return s.rss }))/float64(n-o.conns[0])/1e3)
			once = fmt.Sprintf("%.1f µs (%s)", median(oneOff), list(oneOff))
		}
		fmt.Fprintf(w, "| %d | %.1f µs | %.2fx (%s) | %.1f µs | %.2fx (%s) | %s | %.0f MB | %s | %.1f µs | %.0f | %.2f ms | %.2f ms | %.0f |\n",
			n, cpuOp, median(ratios), list(ratios), med(ss, wholeOp)*1e6, median(wholeRatios), list(wholeRatios), once, rss/1e6, perConn,
			med(ss, func(s sample) float64 { return s.serverCPU.Seconds() / s.ops * 1e6 }),
			med(ss, func(s sample) float64 { return s.ops / s.seconds }),
			med(ss, func(s sample) float64 { return s.p50 / 1e3 }), med(ss, func(s sample) float64 { return s.p99 / 1e3 }),
			med(ss, func(s sample) float64 { return s.errors }))
	}
	return nil
}

// args is the ndbench command line of one run: n readers with a fixed pool of n (each a
// connection of its own in mode=direct), the mix in one class, open loop at rate.
func args(s *testserver.Server, d time.Duration, n, rate int) []string {
	return []string{"run", "--driver", "redis", "--set", "drivers.redis.addrs=" + s.Addr(), "--duration", d.String(),
		"--set", "workload.numKeys=" + strconv.Itoa(numKeys), "--set", "workload.dataSize=" + strconv.Itoa(valueSize),
		"--set", "workload.readers=" + strconv.Itoa(n), "--set", "workload.maxReaders=" + strconv.Itoa(n),
		"--set", "workload.writers=0", "--set", "workload.readRate=" + strconv.Itoa(rate),
		"--set", "workload.readMix=read:8,write:2"}
}

// report is the part of ndbench's JSON report read here.
type report struct {
	Seconds float64 `json:"seconds"`
	Ops     map[string]struct {
		Succeeded    float64 `json:"succeeded"`
		Errors       float64 `json:"errors"`
		ResponseTime struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
		} `json:"responseTime"`
	} `json:"ops"`
	Client struct {
		User   float64 `json:"userSeconds"`
		System float64 `json:"systemSeconds"`
		MaxRSS float64 `json:"maxRSSBytes"`
	} `json:"client"`
}

func ndbench(ctx context.Context, bin, dir string, a []string) (sample, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sample{}, err
	}
	rp := filepath.Join(dir, "report.json")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(a, "--report", rp)...)
	cmd.Env = append(os.Environ(), "NDBENCH_RESULTS="+filepath.Join(dir, "history.db"))
	out, err := cmd.CombinedOutput()
	_ = os.WriteFile(filepath.Join(dir, "output.txt"), out, 0o644)
	if err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, tail(out))
	}
	whole := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	b, err := os.ReadFile(rp)
	if err != nil {
		return sample{}, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return sample{}, fmt.Errorf("ndbench's report: %w", err)
	}
	rd := r.Ops["read"]
	return sample{ops: rd.Succeeded, errors: rd.Errors, cpu: r.Client.User + r.Client.System, wholeCPU: whole, rss: r.Client.MaxRSS,
		seconds: r.Seconds, p50: rd.ResponseTime.P50, p99: rd.ResponseTime.P99}, nil
}

func med(ss []sample, f func(sample) float64) float64 {
	var vs []float64
	for _, s := range ss {
		vs = append(vs, f(s))
	}
	return median(vs)
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(vs []float64) string {
	var p []string
	for _, v := range vs {
		p = append(p, fmt.Sprintf("%.2f", v))
	}
	return strings.Join(p, ", ")
}

func tail(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
