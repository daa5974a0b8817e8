package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// The key-value tail pairs (issue 41): Redis and Memcached against memtier_benchmark,
// closed loop (the redis and memcached pairs) and open loop at half of memtier's
// closed-loop throughput (redis-open and memcached-open), p99 beside p99.

// toolEnv names the environment variable that points lookTool at a peer's binary
// before PATH: memtier_benchmark is not packaged for Debian 12, so it is often a build of
// one's own (MEMTIER=path).
var toolEnv = map[string]string{"memtier_benchmark": "MEMTIER"}

// memtierBin finds memtier_benchmark.
func memtierBin() (string, error) { return lookTool("memtier_benchmark") }

// memtierKeyArgs are memtier's server, protocol, value size and key range: memtier-1 to
// memtier-100000 (its default prefix; it refuses a key minimum of 0), which load()
// writes so that no tool measures misses.
func memtierKeyArgs(s *testserver.Server, protocol string) []string {
	return []string{"-s", s.Host, "-p", strconv.Itoa(s.Port), "--protocol=" + protocol,
		"-d", strconv.Itoa(valueSize), "--key-minimum=1", "--key-maximum=" + strconv.Itoa(numKeys)}
}

// memtierProtocol is memtier's --protocol for a pair's store.
func memtierProtocol(pair string) string {
	if pair == "memcached" || pair == "memcached-open" {
		return "memcache_text"
	}
	return "redis"
}

// isKVOpen reports whether pair is an open-loop key-value pair.
func isKVOpen(pair string) bool { return pair == "redis-open" || pair == "memcached-open" }

// kvOpenRate is the open-loop pairs' total rate: o.kvRate when given, else half of what
// memtier does closed loop in a short run on the pair's server (issue 41: "the same open
// loop at half of memtier's throughput"), rounded down to a multiple of the 50
// connections, as memtier's --rate-limiting is per connection.
func kvOpenRate(ctx context.Context, pair string, s *testserver.Server, o options) (int, error) {
	rate := o.kvRate
	if rate == 0 {
		bin, err := memtierBin()
		if err != nil {
			return 0, err
		}
		dir := filepath.Join(o.out, pair+"-load")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
		r, err := runMemtier(ctx, dir, bin, s, memtierProtocol(pair), 4*time.Second, 0)
		if err != nil {
			return 0, fmt.Errorf("memtier's closed-loop throughput, for the open-loop rate: %w", err)
		}
		rate = int(opsPerSec(r) / 2)
	}
	return max(rate/connections, 1) * connections, nil
}

// kvOpenArgs is ndbench's open-loop command line: the closed-loop pair's shape with a
// total read rate and a fixed pool of 50 workers (as memtier's 50 connections), and 2 s
// of warm-up out of the figures, as postgres-open.
func kvOpenArgs(pair string, s *testserver.Server, d time.Duration, rate int) []string {
	closed := pair[:len(pair)-len("-open")]
	return append(ndbenchArgs(closed, s, d, 0),
		"--set", "workload.readRate="+strconv.Itoa(rate), "--set", "workload.maxReaders="+strconv.Itoa(connections),
		"--warmup", "2s")
}

// runNdbenchService runs ndbench as runNdbench does but reads its service time (from the
// driver's call to its reply) instead of its response time (from each operation's
// scheduled start): memtier times a request from its sending, so in an open loop the
// two spans compare only so. The response time's p99 goes into the note.
func runNdbenchService(ctx context.Context, dir, bin string, env, args []string) (result, error) {
	b, cpu, wall, err := runNdbenchReport(ctx, dir, bin, env, args)
	if err != nil {
		return result{}, err
	}
	return parseNdbenchService(b, cpu, wall)
}

func parseNdbenchService(b []byte, cpu, wall time.Duration) (result, error) {
	r, err := parseNdbenchReport(b, cpu, wall)
	if err != nil {
		return r, err
	}
	var rep struct {
		Ops map[string]struct {
			ServiceTime struct {
				P50 float64 `json:"p50"` // µs
				P99 float64 `json:"p99"`
			} `json:"serviceTime"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return result{}, fmt.Errorf("parse ndbench's report: %w", err)
	}
	st := rep.Ops["read"].ServiceTime
	if st.P99 <= 0 {
		return result{}, fmt.Errorf("ndbench's report has no service time for read")
	}
	r.note = fmt.Sprintf("service time (call to reply), as memtier times from sending; response time from the schedule p50 %s p99 %s",
		ms(r.p50), ms(r.p99))
	r.p50 = time.Duration(st.P50 * float64(time.Microsecond))
	r.p99 = time.Duration(st.P99 * float64(time.Microsecond))
	return r, nil
}

// preloadMemtierKeys writes memtier's keys on a Memcached server, each once, in order
// (P:P with --requests=allkeys). Redis's are written by load()'s script.
func preloadMemtierKeys(ctx context.Context, dir string, s *testserver.Server) error {
	bin, err := memtierBin()
	if err != nil {
		return nil // no memtier, no memtier keys to read
	}
	cmd := exec.CommandContext(ctx, bin, append(memtierKeyArgs(s, "memcache_text"),
		"-c", "1", "-t", "1", "--ratio=1:0", "--key-pattern=P:P", "--requests=allkeys", "--hide-histogram")...)
	if _, _, _, err := runProcess(ctx, dir, "memtier-preload", cmd); err != nil {
		return fmt.Errorf("preload memtier's keys: %w", err)
	}
	return nil
}
