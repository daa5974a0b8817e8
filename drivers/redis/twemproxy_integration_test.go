//go:build integration

package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// twemTimeout is nutcracker's per-request backend timeout here: short, so a stalled
// backend fails requests quickly, and below the driver's read timeout, so the proxy's
// answer (not the client's socket timeout) is what the test sees.
const twemTimeout = 250 * time.Millisecond

// with returns a copy of base with extra's values added.
func with(base, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// twemOpen opens the redis driver through the proxy with extra option values.
func twemOpen(t *testing.T, addr string, extra map[string]string) (driver.Driver, error) {
	t.Helper()
	v := map[string]string{"addrs": addr, "dialTimeout": "2s", "readTimeout": "2s", "writeTimeout": "2s"}
	for k, x := range extra {
		v[k] = x
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, _, err := driver.Open(ctx, "redis", v)
	if err == nil {
		t.Cleanup(func() { _ = d.Close() })
	}
	return d, err
}

// TestTwemproxy runs the redis driver in both modes through twemproxy in front of three
// redis-servers. The pool hashes with murmur: twemproxy's fnv1a_64 piles NDBench-shaped
// keys on few backends (drivers/memcached's twemproxy test records it), and this test is
// about the driver, not about that hash.
func TestTwemproxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	p, err := testserver.StartTwemproxyPool(ctx, testserver.TwemproxyConfig{Redis: true, Hash: "murmur", Timeout: twemTimeout}, 3, testserver.Redis)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(p.LogTails())
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stop twemproxy pool: %v", err)
		}
	})

	// mode=direct speaks RESP2 from the start and needs nothing; go-redis's modes need
	// proxy=true (HELLO answered locally).
	for _, opts := range []map[string]string{
		{"mode": "direct"},
		{"mode": "pool", "proxy": "true"},
		{"mode": "autopipeline", "proxy": "true"},
	} {
		label := opts["mode"]
		t.Run("mode="+label, func(t *testing.T) { twemSuite(t, p, label, opts) })
	}
	t.Run("PoolWithoutProxyOption", func(t *testing.T) {
		// go-redis's HELLO makes twemproxy close the connection: Open must fail at once
		// and say what to do.
		start := time.Now()
		_, err := twemOpen(t, p.Proxy.Addr(), map[string]string{"mode": "pool"})
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Open through twemproxy took %v; it must fail promptly", took.Round(time.Millisecond))
		}
		if err == nil || !strings.Contains(err.Error(), "proxy=true") {
			t.Errorf("Open in mode=pool through twemproxy without proxy=true: %v; want a failure that names proxy=true", err)
		}
	})
}

// twemSuite runs the checks through the proxy with driver name in mode.
func twemSuite(t *testing.T, p *testserver.TwemproxyPool, label string, opts map[string]string) {
	proxy := p.Proxy
	t.Run("Conformance", func(t *testing.T) {
		drivertest.Run(t, drivertest.Harness{
			Name:       "redis",
			Options:    with(opts, map[string]string{"addrs": proxy.Addr()}),
			LiveValues: map[string]string{"ttl": "1h"},
			Pause:      proxy.Pause,
			Outage: &drivertest.Outage{
				Stop:          proxy.Kill,
				Start:         proxy.Restart,
				RecoverWithin: 10 * time.Second,
				Options:       map[string]string{"readTimeout": "1s", "writeTimeout": "1s", "dialTimeout": "1s"},
			},
		})
	})
	t.Run("Spread", func(t *testing.T) { twemSpread(t, p, label, opts) })
	t.Run("SelectRefused", func(t *testing.T) {
		// A proxy closes the connection on SELECT, which looks like an outage: with
		// proxy=true a db other than 0 is refused as a configuration error naming db,
		// before anything is sent.
		_, err := twemOpen(t, proxy.Addr(), with(opts, map[string]string{"db": "1", "proxy": "true"}))
		fes, ok := driver.AsFieldErrors(err)
		if !ok || len(fes) == 0 || fes[0].Field != "db" {
			t.Errorf("Open with db=1 and proxy=true: %v; want a field error on db", err)
		}
	})
	t.Run("BackendOutage", func(t *testing.T) { twemBackendOutage(t, p, label, opts) })
}

// twemBackends returns plain clients to each backend, for checks behind the proxy's back.
func twemBackends(t *testing.T, p *testserver.TwemproxyPool) []*goredis.Client {
	t.Helper()
	cs := make([]*goredis.Client, len(p.Backends))
	for i, b := range p.Backends {
		cs[i] = goredis.NewClient(&goredis.Options{Addr: b.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = cs[i].Close() })
	}
	return cs
}

// twemSpread writes NDBench-shaped keys through the proxy and checks each backend's
// DBSIZE grew by a fair share.
func twemSpread(t *testing.T, p *testserver.TwemproxyPool, label string, opts map[string]string) {
	d, err := twemOpen(t, p.Proxy.Addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := drivertest.Context(t)
	backends := twemBackends(t, p)
	dbsize := func() []int64 {
		out := make([]int64, len(backends))
		for i, c := range backends {
			n, err := c.DBSize(ctx).Result()
			if err != nil {
				t.Fatalf("DBSIZE of backend %d: %v", i, err)
			}
			out[i] = n
		}
		return out
	}
	before := dbsize()
	const n = 300
	prefix := fmt.Sprintf("T%s", label) // new keys for every run
	for i := 0; i < n; i++ {
		key := prefix + strconv.Itoa(i)
		if err := d.Write(ctx, key, []byte(key)); err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		if got, err := d.Read(ctx, key); err != nil || string(got) != key {
			t.Fatalf("read %s = %q, %v", key, got, err)
		}
	}
	after := dbsize()
	var total int64
	grew := make([]int64, len(after))
	for i := range after {
		grew[i] = after[i] - before[i]
		total += grew[i]
	}
	if total != n {
		t.Errorf("backends gained %d keys in all (%v), want %d: each key on exactly one backend", total, grew, n)
	}
	for i, g := range grew {
		if g < n/5 {
			t.Errorf("backend %d gained %d of %d keys (%v); the proxy does not spread keys", i, g, n, grew)
		}
	}
	t.Logf("keys per backend: %v", grew)
}

// twemBackendOutage takes backend 0 down (SIGKILL, then SIGSTOP) and checks what a user
// would: operations on its keys fail promptly as unavailable (timeout while it stalls),
// keys on the other backends keep working, and everything works again once it is back.
func twemBackendOutage(t *testing.T, p *testserver.TwemproxyPool, label string, opts map[string]string) {
	d, err := twemOpen(t, p.Proxy.Addr(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := drivertest.Context(t)
	backends := twemBackends(t, p)
	// A few keys on backend 0 (each costs the proxy's timeout while it stalls), more elsewhere.
	var dead, alive []string
	for i := 0; len(dead) < 3 || len(alive) < 10; i++ {
		if i > 1000 {
			t.Fatalf("after %d keys: %d on backend 0, %d elsewhere", i, len(dead), len(alive))
		}
		key := fmt.Sprintf("twem-outage-%s-%d", label, i)
		if err := d.Write(ctx, key, []byte(key)); err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		n, err := backends[0].Exists(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			dead = append(dead, key)
		} else {
			alive = append(alive, key)
		}
	}
	b0 := p.Backends[0]
	drivertest.ProxyBackendOutage(t, d, drivertest.ProxyBackend{
		Kill: b0.Kill, Restart: b0.Restart, Pause: b0.Pause,
		Dead: dead, Alive: alive, FailWithin: twemTimeout + time.Second,
	})
}
