package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/verdict"
)

func TestParsers(t *testing.T) {
	wrkOut := `Running 8s test @ http://127.0.0.1:4242/kv/bench
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   621.33us  210.10us   9.87ms   91.02%
    Req/Sec    80.12k     3.01k   85.00k    71.25%
  Latency Distribution
     50%  590.00us
     75%  650.00us
     90%  760.00us
     99%    1.32ms
  637812 requests in 8.00s, 150.20MB read
Requests/sec:  79726.50
Transfer/sec:     18.77MB
`
	tests := []struct {
		name     string
		parse    func() (result, error)
		ops      float64
		p50, p99 time.Duration
		wantErr  string
	}{
		{"wrk", func() (result, error) { return parseWrk([]byte(wrkOut)) }, 637812, 590 * time.Microsecond, 1320 * time.Microsecond, ""},
		{"wrk with non-2xx answers", func() (result, error) {
			return parseWrk([]byte(wrkOut + "  Non-2xx or 3xx responses: 12\n"))
		}, 0, 0, 0, "Non-2xx"},
		{"wrk without a count", func() (result, error) { return parseWrk([]byte("unable to connect")) }, 0, 0, 0, "no request count"},
		{"vegeta", func() (result, error) {
			return parseVegetaJSON([]byte(`{"latencies":{"total":1,"mean":2,"50th":812345,"90th":1,"95th":1,"99th":2500000,"max":9},"requests":120000,"success":1}`))
		}, 120000, 812345, 2500000, ""},
		{"vegeta with failures", func() (result, error) {
			return parseVegetaJSON([]byte(`{"latencies":{"50th":1,"99th":2},"requests":100,"success":0.5}`))
		}, 0, 0, 0, "50.0% succeeded"},
		{"memtier", func() (result, error) {
			return parseMemtierJSON([]byte(`{"ALL STATS":{"Totals":{"Count":400000,"Ops/sec":50000.1,"Percentile Latencies":{"p50.00":0.871,"p99.00":1.663}}}}`))
		}, 400000, 871 * time.Microsecond, 1663 * time.Microsecond, ""},
		{"memtier 2.x, a histogram among the percentiles", func() (result, error) {
			return parseMemtierJSON([]byte(`{"ALL STATS":{"Totals":{"Count":233207,"Percentile Latencies":{"p50.00":0.551,"p99.00":8.511,"Histogram log format":{"Compressed Histogram":"HISTF"}}}}}`))
		}, 233207, 551 * time.Microsecond, 8511 * time.Microsecond, ""},
		{"memtier without percentiles", func() (result, error) {
			return parseMemtierJSON([]byte(`{"ALL STATS":{"Totals":{"Count":10,"Percentile Latencies":{}}}}`))
		}, 0, 0, 0, "no p50.00"},
		{"ndbench report: the top-level classes count, the mix's parts do not", func() (result, error) {
			return parseNdbenchReport([]byte(`{"ops":{"read":{"succeeded":1000,"errors":0,"responseTime":{"p50":65,"p99":3501}},
				"read.read":{"succeeded":800},"read.write":{"succeeded":200}}}`), time.Second, time.Second)
		}, 1000, 65 * time.Microsecond, 3501 * time.Microsecond, ""},
		{"ndbench report after a warm-up: its operations count, as its CPU does; latency is the load's", func() (result, error) {
			return parseNdbenchReport([]byte(`{"ops":{"read":{"succeeded":40000,"errors":0,"responseTime":{"p50":65,"p99":3501}}},
				"phases":[{"name":"warmup","ops":{"read":{"succeeded":10000,"errors":0,"responseTime":{"p50":9000,"p99":99000}},
				"read.read":{"succeeded":8000}}}]}`), time.Second, time.Second)
		}, 50000, 65 * time.Microsecond, 3501 * time.Microsecond, ""},
		{"ndbench report with failures", func() (result, error) {
			return parseNdbenchReport([]byte(`{"ops":{"read":{"succeeded":900,"errors":100}}}`), time.Second, time.Second)
		}, 0, 0, 0, "100 of 1000 operations failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.parse()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ops != tt.ops || r.p50 != tt.p50 || r.p99 != tt.p99 {
				t.Errorf("got ops %v p50 %v p99 %v, want %v %v %v", r.ops, r.p50, r.p99, tt.ops, tt.p50, tt.p99)
			}
		})
	}
}

func TestPgbenchOutput(t *testing.T) {
	n, err := parsePgbenchProcessed([]byte("number of clients: 50\nnumber of transactions actually processed: 116459\n"))
	if err != nil || n != 116459 {
		t.Errorf("transactions: got %v, %v", n, err)
	}
	var log strings.Builder
	for i := 1; i <= 100; i++ {
		log.WriteString("3 17 " + strconv.Itoa(i*10) + " 0 1732755555 123456\n")
	}
	log.WriteString("4 18 skipped 1 1732755555 123456\n")
	lat := parsePgbenchLog([]byte(log.String()))
	if len(lat) != 100 {
		t.Fatalf("got %d latencies, want 100 (the skipped line left out)", len(lat))
	}
	if p50, p99 := percentile(lat, 50), percentile(lat, 99); p50 != 500*time.Microsecond || p99 != 990*time.Microsecond {
		t.Errorf("p50 %v p99 %v, want 500µs 990µs", p50, p99)
	}
}

func TestRedisBenchmarkCSV(t *testing.T) {
	out := `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"GET","81566.07","0.331","0.072","0.303","0.511","0.855","4.023"
`
	p50, p99, err := parseRedisBenchmarkCSV([]byte(out))
	if err != nil || p50 != 303*time.Microsecond || p99 != 855*time.Microsecond {
		t.Errorf("got %v %v %v, want 303µs 855µs", p50, p99, err)
	}
	if _, _, err := parseRedisBenchmarkCSV([]byte("Could not connect")); err == nil {
		t.Error("no CSV: want an error")
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := options{rounds: 3, duration: 8 * time.Second, pairs: []string{"postgres"}, ndbench: "main_test.go", rate: 5000}
	for _, tt := range []struct {
		name   string
		change func(*options)
		want   string
	}{
		{"valid", func(*options) {}, ""},
		{"no rounds", func(o *options) { o.rounds = 0 }, "-rounds 0: allowed 1 to 100"},
		{"too short", func(o *options) { o.duration = time.Millisecond }, "-duration 1ms: allowed 1s to 10m"},
		{"unknown pair", func(o *options) { o.pairs = []string{"postgres", "mongo"} }, `unknown pair "mongo"; allowed: postgres, postgres-open, redis, redis-open, redis-pipelined, memcached, memcached-open, http`},
		{"negative kv rate", func(o *options) { o.kvRate = -1 }, "-kv-rate -1: allowed 0"},
		{"no rate", func(o *options) { o.rate = 0 }, "-rate 0: allowed 1 to 1000000"},
		{"no binary", func(o *options) { o.ndbench = "no/such/ndbench" }, "run make build first"},
		{"no baseline binary", func(o *options) { o.baseline = "no/such/ndbench" }, "-baseline no/such/ndbench"},
		{"environment without =", func(o *options) { o.env = []string{"GOMAXPROCS"} }, `-ndbench-env "GOMAXPROCS": allowed KEY=VALUE`},
		{"quota below a tenth of a CPU", func(o *options) { o.quota = 0.05 }, "-quota 0.05: allowed 0 (no quota condition) or 0.1 to 1024 CPUs"},
		{"negative quota", func(o *options) { o.quota = -1 }, "-quota -1: allowed 0"},
		{"quota of one CPU", func(o *options) { o.quota = 1 }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.change(&o)
			err := o.validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestMain lets the test binary stand in for a tool: with BENCHPEERS_CHILD_WRITE set it
// writes that file (a path as a tool is given it) and exits.
func TestMain(m *testing.M) {
	if p := os.Getenv("BENCHPEERS_CHILD_WRITE"); p != "" {
		if err := os.WriteFile(p, []byte("ok"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A tool handed a path under a relative -out (make bench-drivers passes
// bench-results/peers) finds it: runProcess runs the child where this program runs, so
// the path means the same to both. (It ran children in their output directory, and
// ndbench's --report under the relative path failed: no such file or directory.)
func TestRunProcessRelativePaths(t *testing.T) {
	t.Chdir(t.TempDir())
	dir := filepath.Join("out", "pair-tool-1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "report.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BENCHPEERS_CHILD_WRITE="+target)
	cpu, _, out, err := runProcess(context.Background(), dir, "child", cmd)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the child's file at %s: %v", target, err)
	}
	if cpu <= 0 {
		t.Errorf("child CPU %v, want the child's own user+system time", cpu)
	}
}

// TestNdbenchArgsConnections checks that every pair's ndbench runs on the 50 connections
// its peer opens: a driver whose default pool is smaller gets its pool set, or the
// comparison measures ndbench's workers queueing for connections.
func TestNdbenchArgsConnections(t *testing.T) {
	tests := []struct {
		pair string
		want []string // --set values the command line must hold
	}{
		{"postgres", []string{"workload.readers=50", "drivers.postgres.poolSize=50"}},
		{"postgres-open", []string{"workload.maxReaders=50", "drivers.postgres.poolSize=50", "workload.readRate=5000"}},
		{"redis", []string{"workload.readers=50"}},
		{"memcached", []string{"workload.readers=50"}},
		{"redis-open", []string{"workload.maxReaders=50", "workload.readRate=5000", "drivers.redis.addrs=127.0.0.1:1"}},
		{"memcached-open", []string{"workload.maxReaders=50", "workload.readRate=5000", "drivers.memcached.servers=127.0.0.1:1"}},
	}
	srv := &testserver.Server{Host: "127.0.0.1", Port: 1}
	for _, tt := range tests {
		t.Run(tt.pair, func(t *testing.T) {
			args := ndbenchArgs(tt.pair, srv, time.Second, 5000)
			sets := map[string]bool{}
			for i, a := range args {
				if a == "--set" && i+1 < len(args) {
					sets[args[i+1]] = true
				}
			}
			for _, w := range tt.want {
				if !sets[w] {
					t.Errorf("%s: no --set %s in %q", tt.pair, w, args)
				}
			}
		})
	}
}

// TestNdbenchServiceTime: the open-loop key-value pairs compare ndbench's service time
// with memtier's latency, both timed from the request's sending; the response time from
// the schedule stays in the note.
func TestNdbenchServiceTime(t *testing.T) {
	rep := `{"ops":{"read":{"succeeded":1000,"errors":0,"responseTime":{"p50":80,"p99":4200},"serviceTime":{"p50":60,"p99":900}},
		"read.read":{"succeeded":800},"read.write":{"succeeded":200}}}`
	r, err := parseNdbenchService([]byte(rep), time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.ops != 1000 || r.p50 != 60*time.Microsecond || r.p99 != 900*time.Microsecond {
		t.Errorf("got ops %v p50 %v p99 %v, want 1000 60µs 900µs", r.ops, r.p50, r.p99)
	}
	if !strings.Contains(r.note, "p99 4.20ms") {
		t.Errorf("note %q does not carry the response time's p99", r.note)
	}
	if _, err := parseNdbenchService([]byte(`{"ops":{"read":{"succeeded":10,"responseTime":{"p99":1}}}}`), time.Second, time.Second); err == nil {
		t.Error("a report without service times: want an error")
	}
}

// TestMemtierArgs: memtier refuses a key minimum of 0, so its keys run from 1 to 100000
// (load() writes those); the open loop's rate is split over the 50 connections.
func TestMemtierArgs(t *testing.T) {
	srv := &testserver.Server{Host: "127.0.0.1", Port: 1}
	args := strings.Join(memtierKeyArgs(srv, "memcache_text"), " ")
	for _, want := range []string{"--key-minimum=1", "--key-maximum=100000", "--protocol=memcache_text", "-d 100"} {
		if !strings.Contains(args, want) {
			t.Errorf("memtier's arguments %q lack %s", args, want)
		}
	}
	if memtierProtocol("memcached-open") != "memcache_text" || memtierProtocol("redis-open") != "redis" {
		t.Error("wrong protocol for a pair")
	}
	o := options{kvRate: 30030}
	if got, err := kvOpenRate(context.Background(), "redis-open", srv, o); err != nil || got != 30000 {
		t.Errorf("kvOpenRate %d, %v; want 30000 (a multiple of 50 connections)", got, err)
	}
}

// TestMemtierFromEnvironment: MEMTIER=path names memtier_benchmark's binary (it is not
// packaged for Debian 12, so it is often a build of one's own); a wrong path says so.
func TestMemtierFromEnvironment(t *testing.T) {
	t.Setenv("MEMTIER", os.Args[0])
	if p, err := memtierBin(); err != nil || p != os.Args[0] {
		t.Errorf("memtierBin() = %q, %v; want %s", p, err, os.Args[0])
	}
	t.Setenv("MEMTIER", "/no/such/memtier")
	if _, err := memtierBin(); err == nil || !strings.Contains(err.Error(), "MEMTIER=/no/such/memtier") {
		t.Errorf("a missing MEMTIER binary: %v", err)
	}
	// Nowhere at all: the pair's note says so and how to give it.
	t.Setenv("MEMTIER", "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("NDBENCH_CACHE", t.TempDir())
	if _, err := memtierBin(); err == nil || !strings.Contains(err.Error(), "memtier_benchmark not installed") || !strings.Contains(err.Error(), "MEMTIER=path") {
		t.Errorf("no memtier anywhere: %v", err)
	}
}

// A client-bound run's report is taken (the harness compares client CPU); a report
// INVALID for any other reason, or failed, is not.
func TestOnlyClientBound(t *testing.T) {
	clientBound := verdict.InvalidPrefix + "the client kept 0.9 of 1 cores busy"
	for _, tc := range []struct {
		name string
		rep  string
		want bool
	}{
		{"client-bound", `{"verdict":{"status":"INVALID","exitCode":4,"reasons":[` + strconv.Quote(clientBound) + `]}}`, true},
		{"client-bound and another reason", `{"verdict":{"status":"INVALID","exitCode":4,"reasons":[` + strconv.Quote(clientBound) + `,"the clock stepped back"]}}`, false},
		{"invalid for another reason", `{"verdict":{"status":"INVALID","exitCode":4,"reasons":["the clock stepped back"]}}`, false},
		{"failed", `{"verdict":{"status":"FAILED","exitCode":1,"reasons":[` + strconv.Quote(clientBound) + `]}}`, false},
		{"no reasons", `{"verdict":{"status":"INVALID","exitCode":4}}`, false},
		{"no verdict", `{}`, false},
		{"not json", `{`, false},
	} {
		if got := onlyClientBound([]byte(tc.rep)); got != tc.want {
			t.Errorf("%s: onlyClientBound = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPgbenchWrapperIsUnwrapped(t *testing.T) {
	dir := t.TempDir()
	write := func(p, body string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	versions := filepath.Join(dir, "postgresql")
	wrapper := write(filepath.Join(dir, "usr", "bin", "pgbench"), "#!/usr/bin/perl\n")
	write(filepath.Join(versions, "9", "bin", "pgbench"), "\x7fELF old")
	newest := write(filepath.Join(versions, "15", "bin", "pgbench"), "\x7fELF new")
	write(filepath.Join(versions, "16", "bin", "pgbench"), "#!/bin/sh\n") // a script is never chosen
	other := write(filepath.Join(dir, "usr", "bin", "redis-benchmark"), "#!/bin/sh\n")
	for _, tc := range []struct{ path, want string }{
		{wrapper, newest}, // Debian's Perl wrapper: the newest real binary
		{newest, newest},  // a binary is itself
		{other, other},    // only pgbench is unwrapped
	} {
		if got := unwrapIn(tc.path, versions); got != tc.want {
			t.Errorf("unwrapIn(%s) = %s, want %s", tc.path, got, tc.want)
		}
	}
	if got := unwrapIn(wrapper, filepath.Join(dir, "none")); got != wrapper {
		t.Errorf("with no versions installed: %s, want the wrapper itself", got)
	}
}
