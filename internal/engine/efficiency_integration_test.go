//go:build integration

package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// effSeconds is how long each measured run lasts.
const effSeconds = 10

// BenchmarkDriverEfficiency runs each real driver closed loop (50 workers: 40 readers and
// 10 writers, 100-byte values, 100,000 backfilled keys) for effSeconds and reports, side
// by side, ops/s, client CPU per op and ops per client CPU-second, and the server's CPU
// per op, so a reader sees which side was the bottleneck. For Redis it also runs
// redis-benchmark at the same concurrency and value size on the same server, for the
// issue's ratio bar, and for PostgreSQL pgbench -M prepared (pgbench_integration_test.go).
// It ignores b.N: run it with -benchtime 1x.
//
//	go test -tags integration -run '^$' -bench DriverEfficiency -benchtime 1x ./internal/engine/
func BenchmarkDriverEfficiency(b *testing.B) {
	type run struct {
		name, driver string
		start        func(context.Context) (*testserver.Server, error)
		opts         func(*testserver.Server) map[string]string
		pipeline     int // workload.pipeline; 0 is 1
		// procs is GOMAXPROCS for the measured run (0: the machine's cores): 1 gives the
		// client the one core redis-benchmark's single thread uses, leaving the other
		// to the server it shares the machine with.
		procs int
	}
	runs := []run{
		{"redis-pool", "redis", testserver.Redis, func(s *testserver.Server) map[string]string {
			return map[string]string{"addrs": s.Addr(), "poolSize": "50"}
		}, 0, 0},
		{"redis-autopipeline", "redis", testserver.Redis, func(s *testserver.Server) map[string]string {
			return map[string]string{"addrs": s.Addr(), "mode": "autopipeline"}
		}, 0, 0},
		{"redis-direct", "redis", testserver.Redis, func(s *testserver.Server) map[string]string {
			return map[string]string{"addrs": s.Addr(), "mode": "direct"}
		}, 0, 0},
		{"redis-direct-P16", "redis", testserver.Redis, func(s *testserver.Server) map[string]string {
			return map[string]string{"addrs": s.Addr(), "mode": "direct"}
		}, 16, 0},
		{"redis-direct-P16-procs1", "redis", testserver.Redis, func(s *testserver.Server) map[string]string {
			return map[string]string{"addrs": s.Addr(), "mode": "direct"}
		}, 16, 1},
		{"memcached", "memcached", testserver.Memcached, func(s *testserver.Server) map[string]string {
			return map[string]string{"servers": s.Addr(), "maxIdleConns": "64"}
		}, 0, 0},
		{"postgres-pool", "postgres", testserver.Postgres, func(s *testserver.Server) map[string]string {
			return map[string]string{"dsn": s.DSN(), "poolSize": "50", "mode": "pool"}
		}, 0, 0},
		{"postgres-direct", "postgres", testserver.Postgres, func(s *testserver.Server) map[string]string {
			return map[string]string{"dsn": s.DSN(), "mode": "direct"}
		}, 0, 0},
		{"postgres-direct-P8", "postgres", testserver.Postgres, func(s *testserver.Server) map[string]string {
			return map[string]string{"dsn": s.DSN(), "mode": "direct"}
		}, 8, 0},
		{"postgres-direct-P8-batch", "postgres", testserver.Postgres, func(s *testserver.Server) map[string]string {
			return map[string]string{"dsn": s.DSN(), "mode": "direct", "pipelineSync": "batch"}
		}, 8, 0},
		{"cassandra-gocql", "cassandra", testserver.Cassandra, func(s *testserver.Server) map[string]string {
			return map[string]string{"hosts": s.Host, "port": strconv.Itoa(s.Port), "mode": "gocql"}
		}, 0, 0},
		{"cassandra-direct", "cassandra", testserver.Cassandra, func(s *testserver.Server) map[string]string {
			return map[string]string{"hosts": s.Host, "port": strconv.Itoa(s.Port), "mode": "direct"}
		}, 0, 0},
		{"cassandra-direct-P16", "cassandra", testserver.Cassandra, func(s *testserver.Server) map[string]string {
			return map[string]string{"hosts": s.Host, "port": strconv.Itoa(s.Port), "mode": "direct"}
		}, 16, 0},
	}
	for _, r := range runs {
		b.Run(r.name, func(b *testing.B) {
			ctx := context.Background()
			srv, err := r.start(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Stop()
			d, _, err := driver.Open(ctx, r.driver, r.opts(srv))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			w := config.DefaultWorkload()
			w.NumKeys, w.DataSize, w.Readers, w.Writers, w.ReadRate, w.WriteRate = 100000, 100, 40, 10, 0, 0
			w.Pipeline = max(r.pipeline, 1)
			coll := stats.NewCollector(stats.Config{})
			e, err := engine.New(d, w, engine.Options{Collector: coll})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(2 * time.Second)
			if _, err := e.Backfill(ctx, engine.BackfillOptions{Workers: 16}); err != nil {
				b.Fatal(err)
			}
			coll.Reset()
			u0, server0, t0 := report.ReadUsage(), procTreeCPU(srv.PID()), time.Now()
			if r.procs > 0 {
				runtime.GOMAXPROCS(r.procs)
			}
			_ = e.Start()
			time.Sleep(effSeconds * time.Second)
			_ = e.Stop()
			_ = e.Wait(ctx)
			if r.procs > 0 {
				// Back to the runtime's own choice (GOMAXPROCS(n) would pin n for good).
				runtime.SetDefaultGOMAXPROCS()
			}
			u1, server1, secs := report.ReadUsage(), procTreeCPU(srv.PID()), time.Since(t0).Seconds()
			coll.Tick(time.Now())
			cum := coll.Cumulative()
			ops := float64(cum.Ops["read"].Count + cum.Ops["write"].Count)
			errs := cum.Ops["read"].Errors + cum.Ops["write"].Errors
			client, server := (u1.User + u1.System - u0.User - u0.System).Seconds(), (server1 - server0).Seconds()
			b.ReportMetric(ops/secs, "ops/s")
			b.ReportMetric(ops/client, "ops/client-CPU-s")
			b.ReportMetric(client/ops*1e6, "client-µs/op")
			b.ReportMetric(server/ops*1e6, "server-µs/op")
			b.ReportMetric(float64(errs), "errors")
			if strings.HasPrefix(r.name, "redis-") && r.name != "redis-autopipeline" {
				if err := preloadRedisBenchmarkKeys(srv, 100000, 100); err != nil {
					b.Fatal(err)
				}
				rbServer0 := procTreeCPU(srv.PID())
				rbOps, rbCPU, rbGetRPS, rbP50, rbP99, err := redisBenchmark(srv, 50, 100, w.Pipeline)
				if err != nil {
					b.Fatal(err)
				}
				// The server's CPU per op under each client: on a machine the server shares,
				// a client whose traffic costs the server more leaves itself less CPU.
				b.ReportMetric((procTreeCPU(srv.PID())-rbServer0).Seconds()/rbOps*1e6, "redis-benchmark-server-µs/op")
				// The rates beside the latencies: a closed loop's latency grows with the
				// rate it runs at, so a p99 compares only at similar rates.
				b.ReportMetric(rbGetRPS, "redis-benchmark-get-ops/s")
				svc := cum.Ops["read"].ServiceTime
				b.ReportMetric(float64(svc.P50), "read-p50-µs")
				b.ReportMetric(float64(svc.P99), "read-p99-µs")
				b.ReportMetric(float64(rbP50.Microseconds()), "redis-benchmark-get-p50-µs")
				b.ReportMetric(float64(rbP99.Microseconds()), "redis-benchmark-get-p99-µs")
				b.ReportMetric(rbOps/rbCPU, "redis-benchmark-ops/client-CPU-s")
				b.ReportMetric((ops/client)/(rbOps/rbCPU), "ratio-vs-redis-benchmark")
				if r.name == "redis-direct" {
					spinEfficiency(b, srv, w, rbOps/rbCPU, rbP50, rbP99)
				}
			}
			if r.driver == "postgres" {
				reportPgbench(b, srv, w.Pipeline, ops/client, cum) // pgbench_integration_test.go
			}
		})
	}
}

// spinEfficiency runs mode=direct again with each -redis.spinRead value, right after
// redis-benchmark, and reports its figures against redis-benchmark's of the same subtest.
func spinEfficiency(b *testing.B, srv *testserver.Server, w config.Workload, rbPerCPU float64, rbP50, rbP99 time.Duration) {
	ctx := context.Background()
	for _, spin := range spinReads(b) {
		d, e, coll := spinEngine(ctx, b, srv, w, spin)
		u0, t0 := report.ReadUsage(), time.Now()
		_ = e.Start()
		time.Sleep(effSeconds * time.Second)
		_ = e.Stop()
		_ = e.Wait(ctx)
		u1, secs := report.ReadUsage(), time.Since(t0).Seconds()
		coll.Tick(time.Now())
		cum := coll.Cumulative()
		_ = e.Close(2 * time.Second)
		_ = d.Close()
		ops := float64(cum.Ops["read"].Count + cum.Ops["write"].Count)
		client := (u1.User + u1.System - u0.User - u0.System).Seconds()
		svc := cum.Ops["read"].ServiceTime
		prefix := "spin" + spin + "-"
		b.ReportMetric(ops/secs, prefix+"ops/s")
		b.ReportMetric(ops/client, prefix+"ops/client-CPU-s")
		b.ReportMetric((ops/client)/rbPerCPU, prefix+"ratio-vs-redis-benchmark")
		b.ReportMetric(float64(svc.P50)/float64(rbP50.Microseconds()), prefix+"read-p50-vs-redis-benchmark")
		b.ReportMetric(float64(svc.P99)/float64(rbP99.Microseconds()), prefix+"read-p99-vs-redis-benchmark")
	}
}

// redisBenchmark runs redis-benchmark against srv with c clients, d-byte values and
// pipeline depth p (its -P), 80% GET and 20% SET (two runs, as redis-benchmark has no mix),
// and returns the operations, its own CPU seconds, and its GET throughput, p50 and p99.
// Its keys must be preloaded (preloadRedisBenchmarkKeys): it fails if a GET missed.
func redisBenchmark(srv *testserver.Server, c, d, p int) (ops, cpu, getRPS float64, p50, p99 time.Duration, err error) {
	run := func(test string, n int) ([]byte, error) {
		out, used, err := execRedisBenchmark(srv, test, c, d, n, p)
		if err != nil {
			return nil, err
		}
		ops += float64(n)
		cpu += used
		return out, nil
	}
	// A peer that measured misses is not a comparison (preloadRedisBenchmarkKeys).
	if err := redisBenchmarkMissed(srv, func() error {
		out, err := run("get", 800000*p/min(p, 4))
		if err == nil {
			getRPS, _, p50, p99, err = parseRedisBenchmarkCSV(out)
		}
		return err
	}); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	if _, err := run("set", 200000*p/min(p, 4)); err != nil {
		return 0, 0, 0, 0, 0, err
	}
	return ops, cpu, getRPS, p50, p99, nil
}

// parseRedisBenchmarkCSV reads the last line of redis-benchmark --csv: its requests per
// second, mean, p50 and p99.
func parseRedisBenchmarkCSV(out []byte) (rps float64, mean, p50, p99 time.Duration, err error) {
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(f) < 7 {
		return 0, 0, 0, 0, fmt.Errorf("redis-benchmark --csv printed %q", out)
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	ms := func(s string) time.Duration { return time.Duration(num(s) * float64(time.Millisecond)) }
	return num(f[1]), ms(f[2]), ms(f[4]), ms(f[6]), nil
}

// procTreeCPU returns the CPU time of process pid and its descendants: their own time,
// and the time of children already reaped (PostgreSQL backends, for one).
func procTreeCPU(pid int) time.Duration {
	const tick = 100 // USER_HZ on Linux
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	stat := map[int][]string{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		stat[p] = fields
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var total int64
	var walk func(p int)
	walk = func(p int) {
		f := stat[p]
		if len(f) > 14 {
			for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
				v, _ := strconv.ParseInt(f[i], 10, 64)
				total += v
			}
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return time.Duration(total) * time.Second / tick
}
