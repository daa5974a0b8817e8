//go:build integration

package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// latteScript is latte's workload: on ndbench's table and keys (T0..T<keys-1>, 100-byte
// blob values in value0, row 0), 80% reads by key and 20% writes, chosen by latte's -f
// weights. Keys are spread by latte::hash, values by latte::blob, both per cycle.
const latteScript = `const KEYS = latte::param!("keys", 100000);
const SIZE = latte::param!("size", 100);

pub async fn prepare(ctx) {
    ctx.prepare("read", "SELECT value0 FROM perftest.test1 WHERE key = ? AND column1 = 0").await?;
    ctx.prepare("write", "INSERT INTO perftest.test1 (key, column1, value0) VALUES (?, 0, ?)").await?;
}

pub async fn read(ctx, i) {
    let k = latte::hash(i) % KEYS;
    ctx.execute_prepared("read", [` + "`T${k}`" + `]).await?
}

pub async fn write(ctx, i) {
    let k = latte::hash(i) % KEYS;
    ctx.execute_prepared("write", [` + "`T${k}`" + `, latte::blob(i, SIZE)]).await?
}
`

// latteKeys is the keyspace of the comparison: ndbench backfills T0..T<latteKeys-1> and
// latte draws from the same range (its script's keys parameter).
const latteKeys = 100000

// latteSetup skips tb when latte is not installed, else starts a Cassandra node (stopped
// when tb ends) and returns it with a directory holding latte's script.
func latteSetup(tb testing.TB) (*testserver.Server, string) {
	tb.Helper()
	if _, err := os.Stat(latteBin()); err != nil {
		tb.Skipf("latte is not installed at %s (run scripts/install-bench-peers.sh)", latteBin())
	}
	srv, err := testserver.Cassandra(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = srv.Stop() })
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ndbench.rn"), []byte(latteScript), 0o644); err != nil {
		tb.Fatal(err)
	}
	return srv, dir
}

// backfillValues stores a 100-byte value under each of ndbench's keys T0..T<keys-1> on d.
func backfillValues(ctx context.Context, d driver.Driver, keys int64) error {
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize = keys, 100
	e, err := engine.New(d, w, engine.Options{Collector: stats.NewCollector(stats.Config{})})
	if err != nil {
		return fmt.Errorf("backfill %d keys: %w", keys, err)
	}
	defer e.Close(2 * time.Second)
	if _, err := e.Backfill(ctx, engine.BackfillOptions{Workers: 16}); err != nil {
		return fmt.Errorf("backfill %d keys: %w", keys, err)
	}
	return nil
}

// latteBin is where scripts/install-bench-peers.sh installs latte: under $NDBENCH_CACHE,
// as the script does, or ~/.cache/ndbench.
func latteBin() string {
	cache := os.Getenv("NDBENCH_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "ndbench")
	}
	return filepath.Join(cache, "peers", "bin", "latte")
}

// cmpResult is one measured run of either tool.
type cmpResult struct {
	ops, cpu, secs float64 // operations, client CPU seconds, wall seconds
	p50, p99       float64 // service time, µs
	errors         int64
	allocs         float64 // heap allocations per operation (ndbench only: the whole process)
	ownCPU         float64 // latte only: the CPU seconds its report gives for the measured phase
}

func (r cmpResult) perCPU() float64 { return r.ops / r.cpu }

// latteReport is what the benches read of latte's JSON report (its -o file).
type latteReport struct {
	Result struct {
		ElapsedTimeS float64 `json:"elapsed_time_s"`
		CPUTimeS     float64 `json:"cpu_time_s"`
		RequestCount float64 `json:"request_count"`
		RowCount     float64 `json:"row_count"` // rows returned: one per read that found its key
		// error_count undercounts when several functions run (latte 0.29 keeps the last
		// function's count, stats/mod.rs), so errors, the messages it kept, are read too.
		ErrorCount     int64    `json:"error_count"`
		Errors         []string `json:"errors"`
		RequestLatency *struct {
			Percentiles []struct {
				Value float64 `json:"value"`
			} `json:"percentiles"`
		} `json:"request_latency"`
	} `json:"result"`
	Percentiles []float64 `json:"percentiles"`
}

// execLatte runs latte on the script in dir against srv with the settings every run shares
// (64 requests in flight on one connection and one thread, LOCAL_ONE, no retries) and
// args, and returns its report and the latte process's CPU seconds (rusage).
func execLatte(dir string, srv *testserver.Server, args ...string) (latteReport, float64, error) {
	out := filepath.Join(dir, fmt.Sprintf("latte-%d.json", time.Now().UnixNano()))
	args = append([]string{"run", filepath.Join(dir, "ndbench.rn"), "-q", "-t", "1", "-p", "64", "-c", "1",
		"--consistency", "LOCAL_ONE", "--retries", "0", "-o", out}, args...)
	args = append(args, srv.Addr())
	cmd := exec.Command(latteBin(), args...)
	cmd.Dir = dir
	text, err := cmd.CombinedOutput()
	if err != nil {
		return latteReport{}, 0, fmt.Errorf("latte %s: %v: %s", strings.Join(args, " "), err, text)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return latteReport{}, 0, fmt.Errorf("latte report %s: %w", out, err)
	}
	var rep latteReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return latteReport{}, 0, fmt.Errorf("latte report %s: %w", out, err)
	}
	return rep, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), nil
}

// runLatte runs latte closed loop (rate 0) or at rate ops/s for effSeconds, 80% reads and
// 20% writes, and returns its throughput, the latte process's CPU time and its request
// latency percentiles. The warm-up is latte's default of one cycle: a longer one would be
// CPU spent on operations its report does not count. Its start-up (connect, schema
// metadata, compiling the script) is counted; ownCPU is latte's own figure for the
// measured phase, for comparison.
func runLatte(dir string, srv *testserver.Server, rate float64) (cmpResult, error) {
	args := []string{"-d", strconv.Itoa(effSeconds) + "s", "-w", "1", "-f", "read:0.8,write:0.2",
		"-P", "keys=" + strconv.Itoa(latteKeys)}
	if rate > 0 {
		args = append(args, "-r", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	rep, cpu, err := execLatte(dir, srv, args...)
	if err != nil {
		return cmpResult{}, err
	}
	r := cmpResult{
		ops:    rep.Result.RequestCount,
		secs:   rep.Result.ElapsedTimeS,
		cpu:    cpu,
		errors: max(rep.Result.ErrorCount, int64(len(rep.Result.Errors))),
		ownCPU: rep.Result.CPUTimeS,
	}
	if rep.Result.RequestLatency == nil {
		return cmpResult{}, fmt.Errorf("latte report has no request latency")
	}
	for i, p := range rep.Percentiles {
		if i >= len(rep.Result.RequestLatency.Percentiles) {
			break
		}
		ms := rep.Result.RequestLatency.Percentiles[i].Value
		switch p {
		case 50:
			r.p50 = ms * 1000
		case 99:
			r.p99 = ms * 1000
		}
	}
	return r, nil
}

// latteReadsMissed runs latte's read function alone for reads cycles over keys keys and
// returns an error unless every read returned its row. A read of a key no one stored is an
// empty result, cheaper for both client and server and not an error in latte's report, so
// a comparison whose peer misses compares unlike work (design-notes: "A comparison with a
// peer checks that the peer did the same work").
func latteReadsMissed(dir string, srv *testserver.Server, keys, reads int) error {
	rep, _, err := execLatte(dir, srv, "-d", strconv.Itoa(reads), "-w", "0", "-f", "read:1",
		"-P", "keys="+strconv.Itoa(keys))
	if err != nil {
		return fmt.Errorf("latte's read check over %d keys: %w", keys, err)
	}
	res := rep.Result
	if res.ErrorCount > 0 || len(res.Errors) > 0 || res.RequestCount < float64(reads) {
		return fmt.Errorf("latte's read check: %.0f of %d reads done, errors %d %q", res.RequestCount, reads, res.ErrorCount, res.Errors)
	}
	if res.RowCount != res.RequestCount {
		return fmt.Errorf("latte's reads missed: %.0f rows for %.0f reads over keys T0..T%d", res.RowCount, res.RequestCount, keys-1)
	}
	return nil
}

// runNDBench runs the engine on d for effSeconds: one class of workers at pipeline depth
// depth, each operation a read (80%) or a write (20%), closed loop or at rate ops/s.
func runNDBench(d driver.Driver, workers, depth int, rate float64) (cmpResult, error) {
	ctx := context.Background()
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.Readers, w.Writers, w.ReadRate, w.WriteRate = latteKeys, 100, workers, 0, rate, 0
	// latte runs exactly this many connections; an elastic pool would grow past them
	// whenever ndbench fell behind and compare a different concurrency.
	w.MaxReaders = workers
	w.ReadMix = "read:8,write:2"
	w.Pipeline = depth
	coll := stats.NewCollector(stats.Config{})
	e, err := engine.New(d, w, engine.Options{Collector: coll})
	if err != nil {
		return cmpResult{}, err
	}
	defer e.Close(2 * time.Second)
	coll.Reset()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	u0, t0 := report.ReadUsage(), time.Now()
	if err := e.Start(); err != nil {
		return cmpResult{}, err
	}
	time.Sleep(effSeconds * time.Second)
	_ = e.Stop()
	_ = e.Wait(ctx)
	u1, secs := report.ReadUsage(), time.Since(t0).Seconds()
	runtime.ReadMemStats(&m1)
	coll.Tick(time.Now())
	cls := coll.Cumulative().Ops["read"] // the class: reads and writes of the mix
	return cmpResult{
		ops:    float64(cls.Count),
		cpu:    (u1.User + u1.System - u0.User - u0.System).Seconds(),
		secs:   secs,
		p50:    cls.ServiceTime.P50,
		p99:    cls.ServiceTime.P99,
		errors: cls.Errors,
		allocs: float64(m1.Mallocs-m0.Mallocs) / float64(max(cls.Count, 1)),
	}, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// BenchmarkCassandraVsLatte compares the cassandra driver with latte (scylla-rust-driver)
// on one Cassandra node, 100,000 preloaded keys, 100-byte values, 80% reads and 20%
// writes, 64 operations in flight: closed loop for client CPU per operation, then open
// loop at half of latte's closed-loop throughput for client-added latency (service time).
// The runs of each round are interleaved and each figure is the median over the rounds
// (NDBENCH_LATTE_ROUNDS, 3 by default). It ignores b.N: run it with -benchtime 1x.
//
//	go test -tags integration -run '^$' -bench CassandraVsLatte -benchtime 1x -timeout 30m ./internal/engine/
func BenchmarkCassandraVsLatte(b *testing.B) {
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("NDBENCH_LATTE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	ctx := context.Background()
	srv, dir := latteSetup(b)
	hp := map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port), "readConsistencyLevel": "LOCAL_ONE", "writeConsistencyLevel": "LOCAL_ONE"}
	open := func(mode string, extra ...string) driver.Driver {
		o := map[string]string{"mode": mode}
		for i := 0; i+1 < len(extra); i += 2 {
			o[extra[i]] = extra[i+1]
		}
		for k, v := range hp {
			o[k] = v
		}
		d, _, err := driver.Open(ctx, "cassandra", o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = d.Close() })
		return d
	}
	direct, gocql := open("direct"), open("gocql")
	// mode=direct with the workers sharing one or two connections (sharedConns).
	shared1, shared2 := open("direct", "sharedConns", "1"), open("direct", "sharedConns", "2")
	if err := backfillValues(ctx, direct, latteKeys); err != nil {
		b.Fatal(err)
	}
	if err := latteReadsMissed(dir, srv, latteKeys, 20000); err != nil {
		b.Fatal(err)
	}

	type run struct {
		name string
		fn   func(rate float64) (cmpResult, error)
	}
	latte := run{"latte", func(rate float64) (cmpResult, error) { return runLatte(dir, srv, rate) }}
	shape := func(name string, d driver.Driver, workers, depth int) run {
		return run{name, func(rate float64) (cmpResult, error) { return runNDBench(d, workers, depth, rate) }}
	}
	closed := []run{
		latte,
		shape("direct-4x16", direct, 4, 16),
		// latte's own shape: one connection, 64 in flight (in batches, where latte sends a
		// request whenever one returns).
		shape("direct-1x64", direct, 1, 64),
		shape("direct-64x1", direct, 64, 1),
		// NDBench's shape on shared connections: 64 workers, one op each in flight, their
		// requests multiplexed on one (two) connection(s) by stream id.
		shape("shared1-64x1", shared1, 64, 1),
		shape("shared2-64x1", shared2, 64, 1),
		shape("shared1-4x16", shared1, 4, 16),
		shape("shared1-1x64", shared1, 1, 64),
		shape("gocql-64", gocql, 64, 1),
	}
	results := map[string][]cmpResult{}
	for round := 0; round < rounds; round++ {
		for _, r := range closed {
			res, err := r.fn(0)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("round %d closed %-12s %8.0f ops/s %8.0f ops/CPU-s  p50 %6.0fµs p99 %6.0fµs  errors %d  allocs/op %.2f  own CPU %.2fs of %.2fs",
				round, r.name, res.ops/res.secs, res.perCPU(), res.p50, res.p99, res.errors, res.allocs, res.ownCPU, res.cpu)
			results[r.name] = append(results[r.name], res)
		}
	}
	med := func(name string, f func(cmpResult) float64) float64 {
		var xs []float64
		for _, r := range results[name] {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	perCPU := func(r cmpResult) float64 { return r.perCPU() }
	latteCPU := med("latte", perCPU)
	b.ReportMetric(latteCPU, "latte-ops/client-CPU-s")
	b.ReportMetric(med("latte", func(r cmpResult) float64 { return r.ops / r.secs }), "latte-ops/s")
	for _, r := range closed[1:] {
		b.ReportMetric(med(r.name, perCPU), r.name+"-ops/client-CPU-s")
		b.ReportMetric(med(r.name, func(r cmpResult) float64 { return r.ops / r.secs }), r.name+"-ops/s")
		b.ReportMetric(med(r.name, perCPU)/latteCPU, r.name+"-ratio-vs-latte")
		b.ReportMetric(med(r.name, func(r cmpResult) float64 { return r.allocs }), r.name+"-allocs/op")
	}

	// Open loop at half of latte's closed-loop throughput: far from saturation, so the
	// service time is the round trip plus what each client adds.
	rate := med("latte", func(r cmpResult) float64 { return r.ops / r.secs }) / 2
	// latte, the direct shapes on a connection per worker, and 64 x 1 on one shared
	// connection; the other rows are only measured closed loop.
	openRuns := append(slices.Clone(closed[:4]), closed[4])
	openRes := map[string][]cmpResult{}
	for round := 0; round < rounds; round++ {
		for _, r := range openRuns {
			res, err := r.fn(rate)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("round %d open at %.0f/s %-12s %8.0f ops/s %8.0f ops/CPU-s  p50 %6.0fµs p99 %6.0fµs  errors %d",
				round, rate, r.name, res.ops/res.secs, res.perCPU(), res.p50, res.p99, res.errors)
			openRes[r.name] = append(openRes[r.name], res)
		}
	}
	results = openRes
	lp50, lp99 := med("latte", func(r cmpResult) float64 { return r.p50 }), med("latte", func(r cmpResult) float64 { return r.p99 })
	b.ReportMetric(rate, "open-rate-ops/s")
	b.ReportMetric(lp50, "open-latte-p50-µs")
	b.ReportMetric(lp99, "open-latte-p99-µs")
	for _, r := range openRuns[1:] {
		p50, p99 := med(r.name, func(r cmpResult) float64 { return r.p50 }), med(r.name, func(r cmpResult) float64 { return r.p99 })
		b.ReportMetric(p50, "open-"+r.name+"-p50-µs")
		b.ReportMetric(p99, "open-"+r.name+"-p99-µs")
		b.ReportMetric(p50/lp50, "open-"+r.name+"-p50-vs-latte")
		b.ReportMetric(p99/lp99, "open-"+r.name+"-p99-vs-latte")
		b.ReportMetric(med(r.name, perCPU)/med("latte", perCPU), "open-"+r.name+"-cpu-ratio-vs-latte")
	}
}

// TestLatteReadsHit shows that the bench's check sees latte's misses: on a table that holds
// keys T0..T999, latte's reads over 1,000 keys all return their row and its reads over
// 2,000 keys (half never stored) fail the check.
func TestLatteReadsHit(t *testing.T) {
	ctx := context.Background()
	srv, dir := latteSetup(t)
	d, _, err := driver.Open(ctx, "cassandra", map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port), "mode": "direct"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := backfillValues(ctx, d, 1000); err != nil {
		t.Fatal(err)
	}
	if err := latteReadsMissed(dir, srv, 1000, 5000); err != nil {
		t.Fatalf("reads over the 1,000 stored keys: %v", err)
	}
	if err := latteReadsMissed(dir, srv, 2000, 5000); err == nil || !strings.Contains(err.Error(), "missed") {
		t.Fatalf("reads over 2,000 keys, 1,000 of them never stored: got %v, want an error that they missed", err)
	}
}
