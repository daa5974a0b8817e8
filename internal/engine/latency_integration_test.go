//go:build integration

package engine_test

import (
	"context"
	"fmt"
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
// ignores b.N: run it with -benchtime 1x.
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
	rps, p50, p99, err := redisBenchmarkGet(srv, 50, 100, 1000000)
	if err != nil {
		b.Fatal(err)
	}
	w.ReadRate = rps
	if err := e.Apply(w); err != nil {
		b.Fatal(err)
	}
	coll.Reset()
	_ = e.Start()
	time.Sleep(2 * time.Second) // settle: connections open, pools warm
	coll.Tick(time.Now())
	time.Sleep(10 * time.Second)
	s := coll.Tick(time.Now()).Summary()
	_ = e.Stop()
	_ = e.Wait(ctx)
	rd := s.Ops["read"]
	b.ReportMetric(rps, "redis-benchmark-ops/s")
	b.ReportMetric(rd.Rate, "ndbench-ops/s")
	b.ReportMetric(float64(p50.Microseconds()), "redis-benchmark-p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "redis-benchmark-p99-µs")
	b.ReportMetric(rd.ServiceTime.P50, "ndbench-service-p50-µs")
	b.ReportMetric(rd.ServiceTime.P99, "ndbench-service-p99-µs")
	b.ReportMetric(rd.StartLag.P99, "ndbench-start-lag-p99-µs")
	b.ReportMetric(rd.ServiceTime.P50/float64(p50.Microseconds()), "ratio-p50")
	b.ReportMetric(rd.ServiceTime.P99/float64(p99.Microseconds()), "ratio-p99")
}

// redisBenchmarkGet runs n GETs from redis-benchmark with c clients and returns its
// throughput and latency p50 and p99 (--csv).
func redisBenchmarkGet(srv *testserver.Server, c, d, n int) (rps float64, p50, p99 time.Duration, err error) {
	out, err := exec.Command("redis-benchmark", "-h", srv.Host, "-p", strconv.Itoa(srv.Port), "-c", strconv.Itoa(c),
		"-n", strconv.Itoa(n), "-d", strconv.Itoa(d), "-r", "100000", "-t", "get", "--csv").CombinedOutput()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("redis-benchmark GET: %v: %s", err, out)
	}
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(f) < 7 {
		return 0, 0, 0, fmt.Errorf("redis-benchmark --csv printed %q", out)
	}
	num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	ms := func(s string) time.Duration { return time.Duration(num(s) * float64(time.Millisecond)) }
	return num(f[1]), ms(f[4]), ms(f[6]), nil
}
