package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// runPgbench runs pgbench -M prepared with 50 connections on one thread (-j 1) and the
// driver's two statements, 80% reads and 20% upserts of 100-byte values over ndbench's
// keys T0..T99999, for d. Operations are its transactions (one statement each); latency
// is every transaction's, from a 5% sampled --log, so logging costs it little. A rate
// above 0 runs it open loop (-R), where it times each transaction from its scheduled
// start, as ndbench times an operation from its intended start.
func runPgbench(ctx context.Context, dir, bin string, s *testserver.Server, d time.Duration, rate int) (result, error) {
	readSQL := fmt.Sprintf("\\set k random(0, %d)\nSELECT value FROM ndbench WHERE key = 'T' || :k::text;\n", numKeys-1)
	writeSQL := fmt.Sprintf("\\set k random(0, %d)\nINSERT INTO ndbench (key, value) VALUES ('T' || :k::text, :v::bytea) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n", numKeys-1)
	readFile, writeFile := filepath.Join(dir, "read.sql"), filepath.Join(dir, "write.sql")
	if err := os.WriteFile(readFile, []byte(readSQL), 0o644); err != nil {
		return result{}, err
	}
	if err := os.WriteFile(writeFile, []byte(writeSQL), 0o644); err != nil {
		return result{}, err
	}
	prefix := filepath.Join(dir, "pgbench_log")
	secs := max(int(d.Round(time.Second)/time.Second), 1)
	args := []string{"-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", "postgres",
		"-n", "-M", "prepared", "-c", strconv.Itoa(connections), "-j", "1", "-T", strconv.Itoa(secs),
		"-f", readFile + "@80", "-f", writeFile + "@20", "-D", "v=" + strings.Repeat("x", valueSize),
		"--log", "--log-prefix", prefix, "--sampling-rate", "0.05"}
	if rate > 0 {
		args = append(args, "-R", strconv.Itoa(rate))
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "postgres")...)
	cpu, wall, out, err := runProcess(ctx, dir, "pgbench", cmd)
	if err != nil {
		return result{}, err
	}
	txns, err := parsePgbenchProcessed(out)
	if err != nil {
		return result{}, err
	}
	files, _ := filepath.Glob(prefix + ".*")
	var lat []time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return result{}, fmt.Errorf("read pgbench's log: %w", err)
		}
		lat = append(lat, parsePgbenchLog(b)...)
	}
	r := result{ops: txns, cpu: cpu, wall: wall, note: "latency of every transaction (one statement each) in a 5% sample of pgbench's --log"}
	if rate > 0 {
		r.note += ", from its scheduled start (-R)"
	}
	r.p50, r.p99 = percentile(lat, 50), percentile(lat, 99)
	return r, nil
}

var pgbenchProcessed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)

func parsePgbenchProcessed(out []byte) (float64, error) {
	m := pgbenchProcessed.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no transaction count: %s", tail(out, 400))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// parsePgbenchLog reads pgbench's per-transaction log lines, "client_id transaction_no
// time script_no time_epoch time_us", time being the latency in microseconds.
func parsePgbenchLog(b []byte) []time.Duration {
	var lat []time.Duration
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue // "skipped" under --rate
		}
		lat = append(lat, time.Duration(us)*time.Microsecond)
	}
	return lat
}

// percentile returns the p-th percentile of lat (nearest rank), 0 for none.
func percentile(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := int(math.Ceil(float64(p)/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// runRedisBenchmark runs redis-benchmark with 50 clients, 100-byte values and 100k random
// keys as two processes, GET then SET, 4:1 (it has no mix), and sums them. Its latency
// figures are the GET run's: the SET run's are printed in its output.
func runRedisBenchmark(ctx context.Context, dir, bin string, s *testserver.Server, d time.Duration) (result, error) {
	// It runs a count, not a time: 50,000 operations a second of d is about what it
	// does on a loaded 2-core machine, so a run lasts about as long as the others'.
	return runRedisBenchmarkShape(ctx, dir, bin, s, redisShape{conns: connections, pipeline: 1, perSec: 50000}, d)
}

// redisShape is a Redis pair's concurrency: conns connections, each with pipeline
// commands in flight, and the rate redis-benchmark is expected to reach (it runs a count,
// so perSec × d sets how long it runs).
type redisShape struct {
	conns, pipeline, perSec int
}

// runRedisBenchmarkShape runs redis-benchmark on shape's connections and pipeline depth
// (-P), GET then SET processes 4:1, and sums them; latency is the GET run's.
func runRedisBenchmarkShape(ctx context.Context, dir, bin string, s *testserver.Server, shape redisShape, d time.Duration) (result, error) {
	var r result
	n := max(int(d.Seconds()*float64(shape.perSec)), 1000)
	for _, run := range []struct {
		test string
		n    int
	}{{"get", n * 4 / 5}, {"set", n / 5}} {
		cmd := exec.CommandContext(ctx, bin, redisBenchmarkArgs(s, shape, run.test, run.n)...)
		cpu, wall, out, err := runProcess(ctx, dir, "redis-benchmark-"+run.test, cmd)
		if err != nil {
			return result{}, err
		}
		r.ops += float64(run.n)
		r.cpu += cpu
		r.wall += wall
		if run.test == "get" {
			if r.p50, r.p99, err = parseRedisBenchmarkCSV(out); err != nil {
				return result{}, err
			}
		}
	}
	r.note = fmt.Sprintf("two processes, %d GETs then %d SETs (it has no mix); latency of the GET run", n*4/5, n/5)
	return r, nil
}

// redisBenchmarkArgs is redis-benchmark's command line for n operations of test (get or
// set) on shape's connections, 100-byte values over the 100k keys key:000000000000..
// that load() writes.
func redisBenchmarkArgs(s *testserver.Server, shape redisShape, test string, n int) []string {
	args := []string{"-h", s.Host, "-p", strconv.Itoa(s.Port), "-c", strconv.Itoa(shape.conns),
		"-n", strconv.Itoa(n), "-d", strconv.Itoa(valueSize), "-r", strconv.Itoa(numKeys), "-t", test, "--csv"}
	if shape.pipeline > 1 {
		args = append(args, "-P", strconv.Itoa(shape.pipeline))
	}
	return args
}

// parseRedisBenchmarkCSV reads the last line of redis-benchmark --csv: "test","rps",
// "avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",...
func parseRedisBenchmarkCSV(out []byte) (p50, p99 time.Duration, err error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Split(strings.ReplaceAll(lines[len(lines)-1], `"`, ""), ",")
	if len(f) < 7 {
		return 0, 0, fmt.Errorf("redis-benchmark --csv printed %q", tail(out, 400))
	}
	a, err1 := strconv.ParseFloat(f[4], 64)
	b, err2 := strconv.ParseFloat(f[6], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("redis-benchmark --csv printed %q", tail(out, 400))
	}
	return time.Duration(a * float64(time.Millisecond)), time.Duration(b * float64(time.Millisecond)), nil
}

// runMemtier runs memtier_benchmark with 50 connections on one thread, SET:GET 1:4 over
// the 100k keys load() stored under its default prefix, for d; closed loop, or open
// loop at rate operations per second in all (memtier's --rate-limiting is per
// connection, so rate is rounded down to a multiple of 50).
func runMemtier(ctx context.Context, dir, bin string, s *testserver.Server, protocol string, d time.Duration, rate int) (result, error) {
	return runMemtierShape(ctx, dir, bin, s, protocol, redisShape{conns: connections, pipeline: 1}, d, rate)
}

// runMemtierShape runs memtier_benchmark as runMemtier does on shape's connections, each
// with shape.pipeline requests in flight (--pipeline).
func runMemtierShape(ctx context.Context, dir, bin string, s *testserver.Server, protocol string, shape redisShape, d time.Duration, rate int) (result, error) {
	jsonPath := filepath.Join(dir, "memtier.json")
	cmd := exec.CommandContext(ctx, bin, memtierArgs(s, protocol, shape, d, rate, jsonPath)...)
	cpu, wall, _, err := runProcess(ctx, dir, "memtier", cmd)
	if err != nil {
		return result{}, err
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return result{}, fmt.Errorf("read memtier's JSON: %w", err)
	}
	r, err := parseMemtierJSON(b)
	r.cpu, r.wall = cpu, wall
	if rate > 0 {
		r.note = fmt.Sprintf("--rate-limiting=%d per connection; latency from each request's sending (memtier does not time from a schedule)", max(rate/shape.conns, 1))
	}
	return r, err
}

// memtierArgs is memtier's command line: shape's connections on one thread, SET:GET 1:4
// over random keys for d, its JSON written to jsonPath.
func memtierArgs(s *testserver.Server, protocol string, shape redisShape, d time.Duration, rate int, jsonPath string) []string {
	secs := max(int(d.Round(time.Second)/time.Second), 1)
	args := append(memtierKeyArgs(s, protocol), "-c", strconv.Itoa(shape.conns), "-t", "1", "--ratio=1:4",
		"--key-pattern=R:R", "--test-time="+strconv.Itoa(secs), "--hide-histogram", "--json-out-file="+jsonPath)
	if shape.pipeline > 1 {
		args = append(args, "--pipeline="+strconv.Itoa(shape.pipeline))
	}
	if rate > 0 {
		args = append(args, "--rate-limiting="+strconv.Itoa(max(rate/shape.conns, 1)))
	}
	return args
}

// parseMemtierJSON reads memtier's --json-out-file: ALL STATS / Totals, its Count and
// its percentiles in milliseconds.
func parseMemtierJSON(b []byte) (result, error) {
	var doc struct {
		All struct {
			Totals struct {
				Count float64 `json:"Count"`
				// Newer memtiers put an object ("Histogram log format") among the
				// figures, so each is decoded on its own.
				Percentiles map[string]json.RawMessage `json:"Percentile Latencies"`
			} `json:"Totals"`
		} `json:"ALL STATS"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return result{}, fmt.Errorf("parse memtier's JSON: %w", err)
	}
	t := doc.All.Totals
	if t.Count == 0 {
		return result{}, fmt.Errorf("memtier's JSON has no operations")
	}
	var p50, p99 float64
	if json.Unmarshal(t.Percentiles["p50.00"], &p50) != nil || json.Unmarshal(t.Percentiles["p99.00"], &p99) != nil {
		return result{}, fmt.Errorf("memtier's JSON has no p50.00 and p99.00 figures")
	}
	msd := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return result{ops: t.Count, p50: msd(p50), p99: msd(p99)}, nil
}

// runWrk runs Debian's wrk on one thread with 50 keep-alive connections for d.
func runWrk(ctx context.Context, dir, bin, url string, d time.Duration) (result, error) {
	cmd := exec.CommandContext(ctx, bin, "-t", "1", "-c", strconv.Itoa(connections), "-d", d.String(), "--latency", url)
	cpu, wall, out, err := runProcess(ctx, dir, "wrk", cmd)
	if err != nil {
		return result{}, err
	}
	r, err := parseWrk(out)
	r.cpu, r.wall = cpu, wall
	return r, err
}

var (
	wrkRequests = regexp.MustCompile(`(\d+) requests in `)
	wrkPct      = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$`)
	wrkErrors   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
)

// parseWrk reads wrk --latency's output: its request count and its 50% and 99% lines.
// Non-2xx answers or socket errors fail the round: a peer that measured failures is no
// comparison.
func parseWrk(out []byte) (result, error) {
	m := wrkRequests.FindSubmatch(out)
	if m == nil {
		return result{}, fmt.Errorf("wrk printed no request count: %s", tail(out, 400))
	}
	if e := wrkErrors.Find(out); e != nil {
		return result{}, fmt.Errorf("wrk: %s", e)
	}
	var r result
	r.ops, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, pm := range wrkPct.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(pm[2]), 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(pm[3])]
		d := time.Duration(v * float64(unit))
		if string(pm[1]) == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	return r, nil
}

// runVegeta runs vegeta attack with 50 workers and no rate (as fast as they go) for d,
// then vegeta report on its output; the attack's CPU is counted, the report's is not
// (it is reading results afterwards, as ndbench's summary is counted in its own run).
func runVegeta(ctx context.Context, dir, bin, url string, d time.Duration) (result, error) {
	targets := filepath.Join(dir, "targets.txt")
	if err := os.WriteFile(targets, []byte("GET "+url+"\n"), 0o644); err != nil {
		return result{}, err
	}
	results := filepath.Join(dir, "results.bin")
	w := strconv.Itoa(connections)
	cmd := exec.CommandContext(ctx, bin, "attack", "-targets="+targets, "-rate=0", "-workers="+w, "-max-workers="+w,
		"-connections="+w, "-keepalive=true", "-duration="+d.String(), "-output="+results)
	cpu, wall, _, err := runProcess(ctx, dir, "vegeta-attack", cmd)
	if err != nil {
		return result{}, err
	}
	rep := exec.CommandContext(ctx, bin, "report", "-type=json", results)
	_, _, out, err := runProcess(ctx, dir, "vegeta-report", rep)
	if err != nil {
		return result{}, err
	}
	r, err := parseVegetaJSON(out)
	r.cpu, r.wall = cpu, wall
	return r, err
}

// parseVegetaJSON reads vegeta report -type=json: requests, success ratio and latencies
// in nanoseconds.
func parseVegetaJSON(b []byte) (result, error) {
	var doc struct {
		Requests  float64 `json:"requests"`
		Success   float64 `json:"success"`
		Latencies struct {
			P50 float64 `json:"50th"`
			P99 float64 `json:"99th"`
		} `json:"latencies"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return result{}, fmt.Errorf("parse vegeta's report: %w", err)
	}
	if doc.Requests == 0 || doc.Success < 0.99 {
		return result{}, fmt.Errorf("vegeta: %.0f requests, %.1f%% succeeded", doc.Requests, doc.Success*100)
	}
	return result{ops: doc.Requests, p50: time.Duration(doc.Latencies.P50), p99: time.Duration(doc.Latencies.P99)}, nil
}
