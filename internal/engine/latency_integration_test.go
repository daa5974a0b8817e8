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
// client's latency covers. Each round also runs ndbench closed loop (metrics prefixed
// closed-), whose cycle against the peer's compares the clients' whole cost per
// operation. Then all of it at one connection, where nothing saturates and the server
// serves one request at a time (metrics prefixed c1-). -redis.spinRead=0s,20us adds runs
// with spinRead at 50 connections.
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
	if err := preloadRedisBenchmarkKeys(srv, 100000, 100); err != nil {
		b.Fatal(err)
	}
	// At 50 connections server and clients saturate the machine's cores; at one, neither
	// does and the server never has more than one request to serve. ndbench then runs open
	// loop at the peer's closed-loop rate, the most one connection carries, so it has no
	// headroom (its start lag shows it; service time leaves it out).
	for _, conns := range []int{50, 1} {
		prefix := ""
		if conns != 50 {
			prefix = fmt.Sprintf("c%d-", conns)
		}
		var rps float64
		var mean, p50, p99 time.Duration
		if err := redisBenchmarkMissed(srv, func() (err error) {
			rps, mean, p50, p99, err = redisBenchmarkGet(srv, conns, 100, max(20000*conns, 200000))
			return err
		}); err != nil {
			b.Fatal(err)
		}
		w.Readers, w.MaxReaders, w.ReadRate = conns, conns, rps
		b.ReportMetric(rps, prefix+"redis-benchmark-ops/s")
		b.ReportMetric(float64(mean.Microseconds()), prefix+"redis-benchmark-mean-µs")
		// A connection's cycle (request to next request) is connections / throughput; the
		// part of it that a client's latency does not cover is its own time between ops.
		b.ReportMetric(float64(conns)/rps*1e6, prefix+"redis-benchmark-cycle-µs")
		b.ReportMetric(float64(p50.Microseconds()), prefix+"redis-benchmark-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), prefix+"redis-benchmark-p99-µs")
		peer := peerLatency{conns: conns, rps: rps, p50: p50, p99: p99}
		clientAddedLatency(b, srv, prefix, e, coll, w, peer)
		// Open loop at the peer's rate cannot show ndbench cheaper than the peer: keeping up
		// gives a cycle ratio of 1 however little it spends. Closed loop, each client's
		// cycle is the round trip plus all its own cost per operation.
		closed := w
		closed.ReadRate = 0
		clientAddedLatency(b, srv, prefix+"closed-", e, coll, closed, peer)
		if conns != 50 {
			continue
		}
		// The same rate with spinRead (-redis.spinRead), right after, against the same figures.
		for _, spin := range spinReads(b) {
			d, e, coll := spinEngine(ctx, b, srv, w, spin)
			clientAddedLatency(b, srv, "spin"+spin+"-", e, coll, w, peer)
			_ = e.Close(2 * time.Second)
			_ = d.Close()
		}
	}
}

// peerLatency is what redis-benchmark measured at conns connections.
type peerLatency struct {
	conns    int
	rps      float64
	p50, p99 time.Duration
}

// clientAddedLatency runs w (the peer's connection count, at the peer's rate or closed
// loop) on e for 10 s after 2 s of settling and reports ndbench's figures beside the
// peer's, under prefix.
func clientAddedLatency(b *testing.B, srv *testserver.Server, prefix string, e *engine.Engine, coll *stats.Collector, w config.Workload, peer peerLatency) {
	b.Helper()
	ctx := context.Background()
	if err := e.Apply(w); err != nil {
		b.Fatal(err)
	}
	coll.Reset()
	// The comparison holds only at redis-benchmark's connection count: what the run adds to
	// the connections already open (the driver's idle pool, this probe) is its workers'.
	idle, err := redisClients(srv)
	if err != nil {
		b.Fatal(err)
	}
	_ = e.Start()
	time.Sleep(2 * time.Second) // settle: connections open, pools warm
	coll.Tick(time.Now())
	time.Sleep(10 * time.Second)
	s := coll.Tick(time.Now()).Summary()
	conns, err := redisClients(srv)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(conns-idle), prefix+"connections")
	if conns-idle > peer.conns {
		b.Errorf("the run opened %d connections to Redis (%d before it, %d during it), want at most %d: the comparison is with redis-benchmark's -c %d",
			conns-idle, idle, conns, peer.conns, peer.conns)
	}
	_ = e.Stop()
	_ = e.Wait(ctx)
	rd := s.Ops["read"]
	b.ReportMetric(rd.Rate, prefix+"ndbench-ops/s")
	// Behind its schedule (start lag) the pool is a closed loop, and then every client's
	// cycle is the same at the same rate (Little's law): what differs is how much of it
	// each one times (see docs/performance.md). In a closed-loop run the cycle ratio is
	// the clients' whole cost per operation compared, whatever each one's clock covers; at
	// the peer's rate it is 1 whenever ndbench keeps up.
	cycle := float64(peer.conns) / rd.Rate * 1e6
	b.ReportMetric(rd.ServiceTime.Mean, prefix+"ndbench-service-mean-µs")
	b.ReportMetric(cycle, prefix+"ndbench-cycle-µs")
	b.ReportMetric(cycle/(float64(peer.conns)/peer.rps*1e6), prefix+"ratio-cycle")
	b.ReportMetric(rd.ServiceTime.P50, prefix+"ndbench-service-p50-µs")
	b.ReportMetric(rd.ServiceTime.P99, prefix+"ndbench-service-p99-µs")
	b.ReportMetric(rd.StartLag.P99, prefix+"ndbench-start-lag-p99-µs")
	b.ReportMetric(rd.ServiceTime.P50/float64(peer.p50.Microseconds()), prefix+"ratio-p50")
	b.ReportMetric(rd.ServiceTime.P99/float64(peer.p99.Microseconds()), prefix+"ratio-p99")
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
	n, err := redisInfo(srv, "clients", "connected_clients")
	return int(n), err
}

// redisInfo returns one integer field of a section of Redis's INFO.
func redisInfo(srv *testserver.Server, section, field string) (int64, error) {
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		return 0, fmt.Errorf("connect to read Redis's INFO %s: %w", section, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "*2\r\n$4\r\nINFO\r\n$%d\r\n%s\r\n", len(section), section); err != nil {
		return 0, fmt.Errorf("INFO %s: %w", section, err)
	}
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("INFO %s: no %s: %w", section, field, err)
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
}

// preloadRedisBenchmarkKeys stores a d-byte value under every key redis-benchmark -r n
// draws (key:000000000000 to key:%012d of n-1), so that its GETs hit as ndbench's do. A
// GET of a missing key costs client and server less (a 5-byte reply instead of d bytes):
// without this the efficiency bench compared ndbench's hits with redis-benchmark's misses,
// and the latency bench's 200,000 random SETs left 14% of them missing.
func preloadRedisBenchmarkKeys(srv *testserver.Server, n, d int) error {
	c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect to preload redis-benchmark's keys: %w", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	value := strings.Repeat("x", d)
	w := bufio.NewWriterSize(c, 1<<16)
	r := bufio.NewReader(c)
	const batch = 1000
	for from := 0; from < n; from += batch {
		to := min(from+batch, n)
		for i := from; i < to; i++ {
			fmt.Fprintf(w, "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$%d\r\n%s\r\n", i, d, value)
		}
		if err := w.Flush(); err != nil {
			return fmt.Errorf("preload redis-benchmark's keys: %w", err)
		}
		for i := from; i < to; i++ {
			line, err := r.ReadString('\n')
			if err != nil {
				return fmt.Errorf("preload redis-benchmark's keys: %w", err)
			}
			if line != "+OK\r\n" {
				return fmt.Errorf("preload redis-benchmark's keys: SET key:%012d answered %q", i, line)
			}
		}
	}
	return nil
}

// redisBenchmarkMissed runs fn, a redis-benchmark run of GETs, and fails if any of its
// GETs missed: a peer that measured misses is not a comparison.
func redisBenchmarkMissed(srv *testserver.Server, fn func() error) error {
	before, err := redisInfo(srv, "stats", "keyspace_misses")
	if err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	after, err := redisInfo(srv, "stats", "keyspace_misses")
	if err != nil {
		return err
	}
	if after > before {
		return fmt.Errorf("redis-benchmark's GETs missed %d times: its keys were not all preloaded", after-before)
	}
	return nil
}

// redisBenchmarkGet runs n GETs from redis-benchmark with c clients and returns its
// throughput and latency mean, p50 and p99 (--csv).
func redisBenchmarkGet(srv *testserver.Server, c, d, n int) (rps float64, mean, p50, p99 time.Duration, err error) {
	out, _, err := execRedisBenchmark(srv, "get", c, d, n, 1)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return parseRedisBenchmarkCSV(out)
}

// execRedisBenchmark runs n requests of redis-benchmark's test (get, set) against srv with
// c clients, d-byte values, keys from -r 100000 and pipeline depth p, and returns its --csv
// output and the CPU seconds it used.
func execRedisBenchmark(srv *testserver.Server, test string, c, d, n, p int) ([]byte, float64, error) {
	cmd := exec.Command("redis-benchmark", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-c", strconv.Itoa(c),
		"-n", strconv.Itoa(n), "-d", strconv.Itoa(d), "-r", "100000", "-t", test, "-P", strconv.Itoa(p), "--csv")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, 0, fmt.Errorf("redis-benchmark %s: %v: %s", test, err, out)
	}
	return out, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), nil
}

// TestRedisBenchmarkGetsHit checks the comparison benches' peer setup: redis-benchmark's
// GETs of keys it never stored miss (the efficiency bench compared ndbench's hits with
// such misses until 2026-11-23), and after preloadRedisBenchmarkKeys every one hits.
func TestRedisBenchmarkGetsHit(t *testing.T) {
	srv, err := testserver.Redis(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	get := func() error {
		_, _, _, _, err := redisBenchmarkGet(srv, 4, 100, 2000)
		return err
	}
	if err := redisBenchmarkMissed(srv, get); err == nil || !strings.Contains(err.Error(), "missed") {
		t.Fatalf("redis-benchmark's GETs on an empty server: got %v, want an error that they missed", err)
	}
	if err := preloadRedisBenchmarkKeys(srv, 100000, 100); err != nil {
		t.Fatal(err)
	}
	if err := redisBenchmarkMissed(srv, get); err != nil {
		t.Fatalf("after the preload: %v", err)
	}
}
