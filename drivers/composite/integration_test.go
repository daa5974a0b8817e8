//go:build integration

package composite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/enginerun"
	_ "github.com/ndbench/ndbench/drivers/memcached"
	_ "github.com/ndbench/ndbench/drivers/postgres"
	_ "github.com/ndbench/ndbench/drivers/redis"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// The real stores: a memcached in front of a PostgreSQL, and a Redis primary with a
// replica.
var mc, pg, primary, replica *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(mainWith(m))
}

// mainWith starts every server (a failure fails the package), runs the tests and stops
// them by PID.
func mainWith(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var started []*testserver.Server
	defer func() {
		for _, s := range started {
			if err := s.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
			}
		}
	}()
	for _, x := range []struct {
		dst   **testserver.Server
		start func(context.Context) (*testserver.Server, error)
	}{{&mc, testserver.Memcached}, {&pg, testserver.Postgres}, {&primary, testserver.Redis}, {&replica, testserver.Redis}} {
		s, err := x.start(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
			return 1
		}
		started = append(started, s)
		*x.dst = s
	}
	if err := replicate(ctx, replica.Addr(), primary); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: make %s a replica of %s: %v\n", replica.Addr(), primary.Addr(), err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		for _, s := range started {
			fmt.Fprintf(os.Stderr, "--- testserver %s on %s: last lines of %s:\n%s\n", s.Name, s.Addr(), s.LogPath(), s.LogTail())
		}
	}
	return code
}

// replicate makes the Redis at addr a replica of p and waits until its link is up.
func replicate(ctx context.Context, addr string, p *testserver.Server) error {
	if _, err := redisCommand(addr, "REPLICAOF", p.Host, fmt.Sprint(p.Port)); err != nil {
		return err
	}
	for ctx.Err() == nil {
		info, err := redisCommand(addr, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("replication link not up: %w", ctx.Err())
}

// redisCommand sends one command in RESP and returns the reply's text (a status line or
// a bulk string).
func redisCommand(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	switch line[0] {
	case '+':
		return strings.TrimSpace(line[1:]), nil
	case '-':
		return "", fmt.Errorf("redis %s: %s", args[0], strings.TrimSpace(line[1:]))
	case '$':
		var n int
		fmt.Sscanf(line[1:], "%d", &n)
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return strings.TrimSpace(line), nil
}

func cacheAside(table string) (map[string]string, map[string]map[string]string) {
	return map[string]string{"mode": "cache-aside", "cache": "memcached", "database": "postgres"},
		map[string]map[string]string{"memcached": {"servers": mc.Addr()}, "postgres": {"dsn": pg.DSN(), "table": table}}
}

func TestConformanceMemcachedPostgres(t *testing.T) {
	values, children := cacheAside("composite_conformance")
	values["writePolicy"] = "invalidate"
	drivertest.Run(t, drivertest.Harness{
		Name: "composite", Options: values, Children: children,
		LiveValues:   map[string]string{"writePolicy": "update", "readFrom": "derived", "lagSample": "0.5"},
		MaxValueSize: 1000 << 10, // memcached's item limit
	})
}

// TestCacheAsideHitRatioFollowsPattern: the same cache-aside composition reads keys of a
// sliding window (a few hundred keys at a time) mostly from the cache, and keys spread
// uniformly over the whole keyspace mostly from the database. Reads are validated
// throughout.
func TestCacheAsideHitRatioFollowsPattern(t *testing.T) {
	values, children := cacheAside("composite_hits")
	d := open(t, values, children)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.ValidateValues = 20000, 100, true
	w.Readers, w.Writers, w.ReadRate, w.WriteRate = 4, 0, 2000, 0
	run := enginerun.New(t, d, w, engine.Options{})
	// The backfill writes through the composition: into PostgreSQL, invalidating the cache.
	run.Backfill(t, ctx, 8)
	ratio := func(pattern string) float64 {
		t.Helper()
		w.Pattern, w.WindowSize, w.WindowDuration = pattern, 200, time.Hour
		if err := run.Engine.Apply(w); err != nil {
			t.Fatal(err)
		}
		before := d.DriverStats()
		// 4,000 reads (2 s at 2,000/s), however long a loaded machine takes to send them:
		// counted, not timed (2 s of a starved generator once sent 956), with a minute's
		// patience.
		const reads = 4000
		r := run.Measure(t, ctx, func() {
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				now := d.DriverStats()
				if now["cache.hits"]+now["cache.misses"]-before["cache.hits"]-before["cache.misses"] >= reads {
					return
				}
			}
		}).Ops["read"]
		after := d.DriverStats()
		if r.Errors != 0 || r.Misses != 0 {
			t.Fatalf("%s: %d errors %v, %d misses; want none (every key was backfilled)", pattern, r.Errors, r.Failures, r.Misses)
		}
		for k, n := range r.Validation {
			if n != 0 {
				t.Fatalf("%s: validation %s: %d", pattern, k, n)
			}
		}
		hits, misses := after["cache.hits"]-before["cache.hits"], after["cache.misses"]-before["cache.misses"]
		if hits+misses < reads {
			t.Fatalf("%s: %d reads after a minute at 2000/s, want %d", pattern, hits+misses, reads)
		}
		if after["fill_errors"] != 0 || after["cache.errors"] != 0 {
			t.Fatalf("%s: stats %v", pattern, after)
		}
		return float64(hits) / float64(hits+misses)
	}
	sliding, uniform := ratio("sliding_window"), ratio("uniform")
	t.Logf("hit ratio: sliding window of 200 keys %.3f, uniform over 20000 keys %.3f", sliding, uniform)
	if sliding < 0.8 || uniform > 0.4 {
		t.Fatalf("hit ratio: sliding window %.3f (want >= 0.8: 200 keys, each missed once), uniform %.3f (want <= 0.4: ~4000 reads over 20000 keys)", sliding, uniform)
	}
}

// TestVisibilityLagRedisReplica measures the lag of a real Redis replica: small on
// loopback, and as long as the replica is frozen (SIGSTOP) when it is.
func TestVisibilityLagRedisReplica(t *testing.T) {
	d := open(t, map[string]string{"mode": "derived", "primary": "redis", "derived": "redis@replica",
		"lagSample": "1", "lagPollInterval": "1ms", "lagTimeout": "10s"},
		map[string]map[string]string{"redis": {"addrs": primary.Addr()}, "redis@replica": {"addrs": replica.Addr(), "readTimeout": "10s"}})
	coll := stats.NewCollector(stats.Config{Shards: 4})
	var sinks []driver.Sink
	for _, name := range d.Measures() {
		op, err := coll.Register(name)
		if err != nil {
			t.Fatal(err)
		}
		sinks = append(sinks, coll.Recorder(op).Sink())
	}
	d.SetSinks(sinks)
	ctx := context.Background()
	write := func(prefix string, n int, every time.Duration) {
		for i := range n {
			if err := d.Write(ctx, fmt.Sprintf("%s%d", prefix, i), []byte(fmt.Sprintf("value %d", i))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(every)
		}
	}
	settle := func(want int64) stats.OpSummary {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := d.DriverStats()
			if st["lag.visible"]+st["lag.timed_out"]+st["lag.superseded"] >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("samples not settled: %v", st)
			}
			time.Sleep(20 * time.Millisecond)
		}
		coll.Tick(time.Now())
		return coll.Cumulative().Ops["visibility"]
	}

	// Warm up: the first samples open the pool's connections to the replica.
	write("warm", 20, time.Millisecond)
	settle(20)
	coll.Reset()
	write("calm", 200, time.Millisecond)
	v := settle(220)
	t.Logf("replica lag, calm: %d samples, p50 %.2f ms, p99 %.2f ms, max %.2f ms", v.Count, v.ResponseTime.P50/1000, v.ResponseTime.P99/1000, v.ResponseTime.Max/1000)
	if v.Count != 200 || v.Errors != 0 {
		t.Fatalf("calm: %d visible, %d errors %v; want all 200 visible", v.Count, v.Errors, v.Failures)
	}
	if p99 := time.Duration(v.ResponseTime.P99 * 1e3); p99 <= 0 || p99 > 200*time.Millisecond {
		t.Fatalf("calm: p99 lag %v on loopback; want above 0 and below 200 ms", p99)
	}

	coll.Reset()
	resume, err := replica.Pause()
	if err != nil {
		t.Fatal(err)
	}
	const frozen = 400 * time.Millisecond
	time.AfterFunc(frozen, resume)
	write("frozen", 20, time.Millisecond)
	v = settle(240)
	t.Logf("replica lag, frozen %v: %d samples, p50 %.1f ms, max %.1f ms", frozen, v.Count, v.ResponseTime.P50/1000, v.ResponseTime.Max/1000)
	if v.Count != 20 || v.Errors != 0 {
		t.Fatalf("frozen: %d visible, %d errors; want all 20 visible", v.Count, v.Errors)
	}
	if mx := time.Duration(v.ResponseTime.Max * 1e3); mx < frozen/2 || mx > frozen+2*time.Second {
		t.Fatalf("frozen: max lag %v; want about the %v the replica was frozen", mx, frozen)
	}
}
