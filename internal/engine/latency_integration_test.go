//go:build integration

package engine_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// BenchmarkClientAddedLatency measures what the tool adds to the latency it reports, the
// way issue 10 asks: redis-benchmark runs GETs closed loop at 50 connections and reports
// its throughput and latency; ndbench then runs GETs open loop at that throughput with 50
// workers (mode=direct: 50 connections) and its service time is compared with
// redis-benchmark's latency. Both see the same server at the same rate, so a difference is
// the clients'. The bar is ndbench's p50 and p99 at most 1.1x redis-benchmark's. It
// ignores b.N: run it with -benchtime 1x. When the machine is saturated (server and
// clients on the same cores) ndbench falls behind and runs closed loop like
// redis-benchmark; the cycle and mean metrics then show how much of the same cycle each
// client's latency covers. -redis.spinRead=0s,20us adds runs with spinRead.
//
//	go test -tags integration -run '^$' -bench ClientAddedLatency -benchtime 1x ./internal/engine/
func BenchmarkClientAddedLatency(b *testing.B) {
	ctx := context.Background()
	srv, err := testserver.Redis(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	d, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": srv.Addr(), "mode": "direct"})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.Readers, w.WriteEnabled = 100000, 100, 50, false
	// A fixed pool: 50 workers are 50 connections, as redis-benchmark's -c 50. An elastic
	// pool (the default) grows to 200 connections when it falls behind, and its service
	// time then grows with the connections in flight (Little's law), not with the client.
	w.MaxReaders = w.Readers
	coll := stats.NewCollector(stats.Config{})
	e, err := engine.New(d, w, engine.Options{Collector: coll})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(2 * time.Second)
	if _, err := e.Backfill(ctx, engine.BackfillOptions{Workers: 16}); err != nil {
		b.Fatal(err)
	}
	// redis-benchmark's own keys, so its GETs hit too.
	if out, err := exec.Command("redis-benchmark", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-c", "50",
		"-n", "200000", "-d", "100", "-r", "100000", "-t", "set", "-q").CombinedOutput(); err != nil {
		b.Fatalf("redis-benchmark SET: %v: %s", err, out)
	}
	rps, mean, p50, p99, err := redisBenchmarkGet(srv, 50, 100, 1000000)
	if err != nil {
		b.Fatal(err)
	}
	w.ReadRate = rps
	b.ReportMetric(rps, "redis-benchmark-ops/s")
	b.ReportMetric(float64(mean.Microseconds()), "redis-benchmark-mean-µs")
	// A connection's cycle (request to next request) is connections / throughput; the
	// part of it that a client's latency does not cover is its own time between ops.
	b.ReportMetric(50/rps*1e6, "redis-benchmark-cycle-µs")
	b.ReportMetric(float64(p50.Microseconds()), "redis-benchmark-p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "redis-benchmark-p99-µs")
	report := func(prefix string, e *engine.Engine, coll *stats.Collector) {
		if err := e.Apply(w); err != nil {
			b.Fatal(err)
		}
		coll.Reset()
		_ = e.Start()
		time.Sleep(2 * time.Second) // settle: connections open, pools warm
		coll.Tick(time.Now())
		time.Sleep(10 * time.Second)
		s := coll.Tick(time.Now()).Summary()
		// The comparison holds only at redis-benchmark's connection count: the workers'
		// 50, the driver's idle pool (up to 10, from the backfill) and this probe.
		conns, err := redisClients(srv)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(conns), prefix+"connections")
		if conns > 50+10+1 {
			b.Errorf("%d connections to Redis during the run, want at most 61 (50 workers): the comparison is with redis-benchmark's 50", conns)
		}
		_ = e.Stop()
		_ = e.Wait(ctx)
		rd := s.Ops["read"]
		b.ReportMetric(rd.Rate, prefix+"ndbench-ops/s")
		// Behind its schedule (start lag) the pool is a closed loop, and then every
		// client's cycle is the same at the same rate (Little's law): what differs is how
		// much of it each one times (see docs/performance.md).
		b.ReportMetric(rd.ServiceTime.Mean, prefix+"ndbench-service-mean-µs")
		b.ReportMetric(50/rd.Rate*1e6, prefix+"ndbench-cycle-µs")
		b.ReportMetric(rd.ServiceTime.P50, prefix+"ndbench-service-p50-µs")
		b.ReportMetric(rd.ServiceTime.P99, prefix+"ndbench-service-p99-µs")
		b.ReportMetric(rd.StartLag.P99, prefix+"ndbench-start-lag-p99-µs")
		b.ReportMetric(rd.ServiceTime.P50/float64(p50.Microseconds()), prefix+"ratio-p50")
		b.ReportMetric(rd.ServiceTime.P99/float64(p99.Microseconds()), prefix+"ratio-p99")
	}
	report("", e, coll)
	// The same rate with spinRead (-redis.spinRead), right after, against the same figures.
	for _, spin := range spinReads(b) {
		d, e, coll := spinEngine(ctx, b, srv, w, spin)
		report("spin"+spin+"-", e, coll)
		_ = e.Close(2 * time.Second)
		_ = d.Close()
	}
}

// spinReadFlag lists spinRead values to measure beside mode=direct's default in the Redis
// benchmarks (BenchmarkClientAddedLatency, BenchmarkDriverEfficiency/redis-direct).
var spinReadFlag = flag.String("redis.spinRead", "", "comma-separated spinRead values (e.g. 10us,50us) to measure beside the default in the Redis benchmarks")

// spinEngine opens the redis driver in mode=direct with spinRead spin on srv and an engine
// running w on it, with a collector of its own.
func spinEngine(ctx context.Context, b *testing.B, srv *testserver.Server, w config.Workload, spin string) (driver.Driver, *engine.Engine, *stats.Collector) {
	b.Helper()
	d, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": srv.Addr(), "mode": "direct", "spinRead": spin})
	if err != nil {
		b.Fatal(err)
	}
	coll := stats.NewCollector(stats.Config{})
	e, err := engine.New(d, w, engine.Options{Collector: coll})
	if err != nil {
		b.Fatal(err)
	}
	return d, e, coll
}

func spinReads(b *testing.B) []string {
	if *spinReadFlag == "" {
		return nil
	}
	out := strings.Split(*spinReadFlag, ",")
	for _, s := range out {
		if _, err := time.ParseDuration(s); err != nil {
			b.Fatalf("-redis.spinRead: %q is not a duration (e.g. 20us)", s)
		}
	}
	return out
}

// redisClients returns Redis's connected_clients (INFO clients), counting its own
// connection.
func redisClients(srv *testserver.Server) (int, error) {
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		return 0, fmt.Errorf("connect to count Redis's clients: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$7\r\nclients\r\n")); err != nil {
		return 0, fmt.Errorf("INFO clients: %w", err)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("INFO clients: no connected_clients: %w", err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			return strconv.Atoi(v)
		}
	}
}

// redisBenchmarkGet runs n GETs from redis-benchmark with c clients and returns its
// throughput and latency mean, p50 and p99 (--csv).
func redisBenchmarkGet(srv *testserver.Server, c, d, n int) (rps float64, mean, p50, p99 time.Duration, err error) {
	out, err := exec.Command("redis-benchmark", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-c", strconv.Itoa(c),
		"-n", strconv.Itoa(n), "-d", strconv.Itoa(d), "-r", "100000", "-t", "get", "--csv").CombinedOutput()
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("redis-benchmark GET: %v: %s", err, out)
	}
	return parseRedisBenchmarkCSV(out)
}
