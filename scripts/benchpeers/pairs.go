package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/verdict"
)

// setUp starts the pair's server, loads the keys every tool reads, and returns the pair
// with the tools that are installed; skipped says which were not. A pair whose only peer
// is missing is not started at all (nil pair).
func setUp(ctx context.Context, name string, o options) (p *pair, skipped []string, err error) {
	if name == "http-conns" {
		p, err := setUpHTTPConns(ctx, o)
		return p, nil, err
	}
	var peers []tool
	var start func(context.Context) (*testserver.Server, error)
	switch name {
	case "postgres", "postgres-open":
		start = testserver.Postgres
	case "redis", "redis-open", "redis-pipelined":
		start = testserver.Redis
	case "memcached", "memcached-open":
		start = testserver.Memcached
	case "http":
		start = testserver.Nginx
	}
	// The peers first: a pair with none installed needs no server.
	// The runners read the server once it is started, below.
	var server *testserver.Server
	srv := func() *testserver.Server { return server }
	var kvRate int // the open-loop key-value pairs' rate, set once the server is up
	addPeer := func(bin, name string, run func(ctx context.Context, dir, bin string) (result, error)) {
		path, err := lookTool(bin)
		if err != nil {
			skipped = append(skipped, err.Error())
			return
		}
		peers = append(peers, tool{name: name, run: func(ctx context.Context, dir string) (result, error) {
			return run(ctx, dir, path)
		}})
	}
	d := o.duration
	switch name {
	case "postgres":
		addPeer("pgbench", "pgbench", func(ctx context.Context, dir, bin string) (result, error) {
			return runPgbench(ctx, dir, bin, srv(), d, 0)
		})
	case "postgres-open":
		addPeer("pgbench", "pgbench -R", func(ctx context.Context, dir, bin string) (result, error) {
			return runPgbench(ctx, dir, bin, srv(), d, o.rate)
		})
	case "redis":
		addPeer("redis-benchmark", "redis-benchmark", func(ctx context.Context, dir, bin string) (result, error) {
			return runRedisBenchmark(ctx, dir, bin, srv(), d)
		})
		addPeer("memtier_benchmark", "memtier", func(ctx context.Context, dir, bin string) (result, error) {
			return runMemtier(ctx, dir, bin, srv(), "redis", d, 0)
		})
	case "redis-pipelined":
		addPeer("redis-benchmark", "redis-benchmark -P 16", func(ctx context.Context, dir, bin string) (result, error) {
			return runRedisBenchmarkShape(ctx, dir, bin, srv(), pipelinedShape, d)
		})
		addPeer("memtier_benchmark", "memtier --pipeline=16", func(ctx context.Context, dir, bin string) (result, error) {
			return runMemtierShape(ctx, dir, bin, srv(), "redis", pipelinedShape, d, 0)
		})
	case "memcached":
		addPeer("memtier_benchmark", "memtier", func(ctx context.Context, dir, bin string) (result, error) {
			return runMemtier(ctx, dir, bin, srv(), "memcache_text", d, 0)
		})
	case "redis-open", "memcached-open":
		addPeer("memtier_benchmark", "memtier --rate-limiting", func(ctx context.Context, dir, bin string) (result, error) {
			return runMemtier(ctx, dir, bin, srv(), memtierProtocol(name), d, kvRate)
		})
	case "http":
		addPeer("wrk", "wrk", func(ctx context.Context, dir, bin string) (result, error) {
			return runWrk(ctx, dir, bin, httpURL(srv()), d)
		})
		addPeer("vegeta", "vegeta", func(ctx context.Context, dir, bin string) (result, error) {
			return runVegeta(ctx, dir, bin, httpURL(srv()), d)
		})
	}
	if len(peers) == 0 {
		return nil, append(skipped, "no peer installed: pair skipped"), nil
	}
	s, err := start(ctx)
	if err != nil {
		return nil, skipped, err
	}
	server = s
	nd := tool{name: "ndbench", run: func(ctx context.Context, dir string) (result, error) {
		return runNdbench(ctx, dir, o.ndbench, o.env, ndbenchArgs(name, s, d, o.rate))
	}}
	if o.baseline != "" {
		peers = append([]tool{{name: "ndbench-baseline", run: func(ctx context.Context, dir string) (result, error) {
			return runNdbench(ctx, dir, o.baseline, nil, ndbenchArgs(name, s, d, o.rate))
		}}}, peers...)
	}
	if err := load(ctx, name, s, o); err != nil {
		_ = s.Stop()
		return nil, skipped, err
	}
	if isKVOpen(name) {
		if kvRate, err = kvOpenRate(ctx, name, s, o); err != nil {
			_ = s.Stop()
			return nil, skipped, err
		}
		skipped = append(skipped, fmt.Sprintf("open loop at %d ops/s", kvRate))
		nd.run = func(ctx context.Context, dir string) (result, error) {
			return runNdbenchService(ctx, dir, o.ndbench, o.env, kvOpenArgs(name, s, d, kvRate))
		}
		if o.baseline != "" {
			peers[0].run = func(ctx context.Context, dir string) (result, error) {
				return runNdbenchService(ctx, dir, o.baseline, nil, kvOpenArgs(name, s, d, kvRate))
			}
		}
	}
	p = &pair{name: name, srv: s, tools: append([]tool{nd}, peers...)}
	if name == "postgres" || name == "postgres-open" {
		p.settle = func(ctx context.Context) error { return settlePostgres(ctx, s.DSN()) }
	}
	return p, skipped, nil
}

// settlePostgres vacuums the table and checkpoints, outside every tool's accounting, so
// that each tool's run starts from the same server state. A round's 20% upserts leave
// ~25,000 dead rows, past autovacuum's threshold for 100k rows (50 + 20%), and dirty
// pages: without it the autovacuum and checkpoint that one tool's writes called for ran
// during the next tool's run. pgbench vacuums before a run itself unless -n, which
// benchpeers passes so that it does not vacuum on its own turn only.
func settlePostgres(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{"VACUUM (ANALYZE) ndbench", "CHECKPOINT"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func httpURL(s *testserver.Server) string { return "http://" + s.Addr() + "/kv/bench" }

// ndbenchArgs is the ndbench command line of each pair's shape: closed loop, 50 readers
// (each with a connection of its own) choosing read or write 8:2, 100 B values, 100k keys.
func ndbenchArgs(name string, s *testserver.Server, d time.Duration, rate int) []string {
	args := []string{"run", "--duration", d.String(),
		"--set", "workload.readers=" + strconv.Itoa(connections), "--set", "workload.writers=0",
		"--set", "workload.readRate=0", "--set", "workload.dataSize=" + strconv.Itoa(valueSize)}
	mix := []string{"--set", "workload.numKeys=" + strconv.Itoa(numKeys), "--set", "workload.readMix=read:8,write:2"}
	// 50 connections as pgbench's -c 50, fixed: the driver's poolSize (once 32 by default) caps the
	// workers' connections, and 18 workers queueing for one each readied a parked
	// goroutine on every reply (1.3-1.8 context switches per operation against 0.3-0.5).
	pg := []string{"--driver", "postgres", "--set", "drivers.postgres.dsn=" + s.DSN(),
		"--set", "drivers.postgres.poolSize=" + strconv.Itoa(connections)}
	switch name {
	case "postgres":
		return append(append(args, mix...), pg...)
	case "postgres-open":
		// A fixed pool of 50, as pgbench's 50 connections: the later --set wins. The
		// workers connect on their first operation, which pgbench does before its clock
		// starts, so 2 s of warm-up stay out of ndbench's percentiles (its operations
		// count, as its CPU does: parseNdbenchReport).
		return append(append(append(args, mix...), pg...),
			"--set", "workload.readRate="+strconv.Itoa(rate), "--set", "workload.maxReaders="+strconv.Itoa(connections),
			"--warmup", "2s")
	case "redis":
		return append(append(args, mix...), "--driver", "redis", "--set", "drivers.redis.addrs="+s.Addr())
	case "memcached":
		return append(append(args, mix...), "--driver", "memcached", "--set", "drivers.memcached.servers="+s.Addr())
	case "redis-open", "memcached-open":
		return kvOpenArgs(name, s, d, rate)
	case "redis-pipelined":
		return pipelinedArgs(s, d)
	case "http":
		// wrk's and vegeta's shape: one URL, GET only, the body not checked.
		return append(args, "--driver", "http", "--set", "workload.numKeys=1",
			"--set", "drivers.http.url=http://"+s.Addr(), "--set", "drivers.http.protocol=http1",
			"--set", "drivers.http.read=GET /kv/bench", "--set", "drivers.http.readCheck=none")
	}
	return nil
}

// load writes the keys the tools read, so that no tool measures misses: ndbench's T0..
// T99999 (its backfill, which pgbench's scripts read too), redis-benchmark's
// key:000000000000.. and memtier's memtier-0.. on Redis and Memcached, and the one file
// the HTTP tools GET.
func load(ctx context.Context, name string, s *testserver.Server, o options) error {
	lctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if name == "http" {
		dir := filepath.Join(testserver.NginxRoot(s), "kv")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "bench"), []byte(strings.Repeat("x", valueSize)), 0o644)
	}
	args := append(ndbenchArgs(name, s, time.Second, o.rate), "--backfill", "--set", "workload.backfillWorkers=16")
	// The load's own run is short and gentle; only its backfill matters.
	args = append(args, "--set", "workload.readers=1", "--set", "workload.readRate=10")
	dir := filepath.Join(o.out, name+"-load")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, _, _, err := runProcess(lctx, dir, "ndbench-backfill", ndbenchCmd(lctx, o.ndbench, dir, args)); err != nil {
		return err
	}
	if name == "redis" || name == "redis-open" || name == "redis-pipelined" {
		// Exact key names, all of them: redis-benchmark -r draws key:%012d, memtier
		// memtier-%d (its default prefix, from 1), so a random preload would leave holes.
		script := fmt.Sprintf(`for i=0,%d do redis.call('SET', string.format('key:%%012d', i), ARGV[1]); redis.call('SET', 'memtier-' .. (i + 1), ARGV[1]) end return 1`, numKeys-1)
		cmd := exec.CommandContext(lctx, "redis-cli", "-h", s.Host, "-p", strconv.Itoa(s.Port), "EVAL", script, "0", strings.Repeat("x", valueSize))
		if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1" {
			return fmt.Errorf("preload redis-benchmark's keys: %v: %s", err, out)
		}
	}
	if name == "memcached" || name == "memcached-open" {
		return preloadMemtierKeys(lctx, dir, s)
	}
	return nil
}

// ndbenchCmd is ndbench with its results history kept in dir, not the user's.
func ndbenchCmd(ctx context.Context, bin, dir string, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "NDBENCH_RESULTS="+filepath.Join(dir, "history.db"))
	return cmd
}

// ndbenchReport is the part of ndbench's JSON report read here.
type ndbenchReport struct {
	Ops map[string]ndbenchOp `json:"ops"`
	// Phases holds the warm-up's operations (the open pairs run 2 s of it), which the
	// report's ops leave out.
	Phases []struct {
		Name string               `json:"name"`
		Ops  map[string]ndbenchOp `json:"ops"`
	} `json:"phases"`
	Client struct {
		MaxRSSBytes int64 `json:"maxRSSBytes"`
	} `json:"client"`
}

// runNdbench runs ndbench with args and reads its report: operations are the top-level
// classes' successes (read.read and read.write are parts of read), latency the response
// time of read, which holds every operation of the mix.
func runNdbench(ctx context.Context, dir, bin string, env, args []string) (result, error) {
	b, cpu, wall, err := runNdbenchReport(ctx, dir, bin, env, args)
	if err != nil {
		return result{}, err
	}
	return parseNdbenchReport(b, cpu, wall)
}

// runNdbenchReport runs ndbench with args, its JSON report written in dir, and returns
// the report with the process's CPU and wall time.
func runNdbenchReport(ctx context.Context, dir, bin string, env, args []string) ([]byte, time.Duration, time.Duration, error) {
	reportPath := filepath.Join(dir, "report.json")
	cmd := ndbenchCmd(ctx, bin, dir, append(args, "--report", reportPath))
	cmd.Env = append(cmd.Env, env...)
	cpu, wall, _, err := runProcess(ctx, dir, "ndbench", cmd)
	if err != nil {
		var ee *exec.ExitError
		b, rerr := os.ReadFile(reportPath)
		if !errors.As(err, &ee) || ee.ExitCode() != verdict.Invalid || rerr != nil || !onlyClientBound(b) {
			return nil, 0, 0, err
		}
		// A closed loop on a quiet machine is client-bound by design, and ndbench's
		// verdict says so (INVALID: its figures do not measure the store); what this
		// harness compares is the client's CPU per operation, which that run measured.
		return b, cpu, wall, nil
	}
	b, err := os.ReadFile(reportPath)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("read ndbench's report: %w", err)
	}
	return b, cpu, wall, nil
}

// onlyClientBound reports whether the ndbench report b was judged INVALID only because
// the load generator was the bottleneck (verdict.InvalidPrefix), and for no other reason.
func onlyClientBound(b []byte) bool {
	var rep struct {
		Verdict *struct {
			ExitCode int      `json:"exitCode"`
			Reasons  []string `json:"reasons"`
		} `json:"verdict"`
	}
	if json.Unmarshal(b, &rep) != nil || rep.Verdict == nil || rep.Verdict.ExitCode != verdict.Invalid || len(rep.Verdict.Reasons) == 0 {
		return false
	}
	for _, r := range rep.Verdict.Reasons {
		if !strings.HasPrefix(r, verdict.InvalidPrefix) {
			return false
		}
	}
	return true
}

// ndbenchOp is one operation's figures in ndbench's report.
type ndbenchOp struct {
	Succeeded    float64 `json:"succeeded"`
	Errors       float64 `json:"errors"`
	ResponseTime struct {
		P50 float64 `json:"p50"` // µs
		P99 float64 `json:"p99"`
	} `json:"responseTime"`
}

// parseNdbenchReport reads ndbench's report: the operations of the whole process, the
// warm-up's included, because the process's CPU (cpu) includes them (counting the CPU of
// 2 s of warm-up at the pair's rate but not its operations understated an open pair's
// ops per CPU-second by a fifth); the latency is the load phase's.
func parseNdbenchReport(b []byte, cpu, wall time.Duration) (result, error) {
	var rep ndbenchReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return result{}, fmt.Errorf("parse ndbench's report: %w", err)
	}
	r := result{cpu: cpu, wall: wall, rss: rep.Client.MaxRSSBytes}
	var errs float64
	count := func(ops map[string]ndbenchOp) {
		for name, op := range ops {
			if !strings.Contains(name, ".") {
				r.ops += op.Succeeded
				errs += op.Errors
			}
		}
	}
	count(rep.Ops)
	for _, ph := range rep.Phases {
		if ph.Name == "warmup" {
			count(ph.Ops)
		}
	}
	read, ok := rep.Ops["read"]
	if !ok || r.ops == 0 {
		return result{}, fmt.Errorf("ndbench's report has no successful read operations")
	}
	if errs > 0.01*r.ops {
		return result{}, fmt.Errorf("ndbench: %.0f of %.0f operations failed", errs, r.ops+errs)
	}
	r.p50 = time.Duration(read.ResponseTime.P50 * float64(time.Microsecond))
	r.p99 = time.Duration(read.ResponseTime.P99 * float64(time.Microsecond))
	return r, nil
}
