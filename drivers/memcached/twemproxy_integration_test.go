//go:build integration

package memcached

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// twemproxyTimeout is nutcracker's per-request backend timeout in these tests: short, so
// a stalled backend fails requests quickly, and below the driver's own timeout, so the
// proxy's answer (not the client's socket timeout) is what the test sees.
const twemproxyTimeout = 250 * time.Millisecond

// startTwemproxy starts nutcracker in front of three memcacheds for one test and stops
// them all by PID when it ends.
func startTwemproxy(t *testing.T, c testserver.TwemproxyConfig) *testserver.TwemproxyPool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := testserver.StartTwemproxyPool(ctx, c, 3, testserver.Memcached)
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
	return p
}

// owner returns the index of the backend that holds key, asking each one directly.
func owner(t *testing.T, p *testserver.TwemproxyPool, key string) int {
	t.Helper()
	found := -1
	for i, b := range p.Backends {
		c := memcache.New(b.Addr())
		c.Timeout = 2 * time.Second
		_, err := c.Get(key)
		switch {
		case err == nil:
			if found >= 0 {
				t.Fatalf("key %s is on backends %d and %d; ketama puts each key on one", key, found, i)
			}
			found = i
		case !errors.Is(err, memcache.ErrCacheMiss):
			t.Fatalf("get %s from backend %d: %v", key, i, err)
		}
		_ = c.Close()
	}
	if found < 0 {
		t.Fatalf("key %s written through twemproxy is on no backend", key)
	}
	return found
}

// TestTwemproxy runs the driver through twemproxy in front of three memcacheds: the
// conformance suite (the outage there is the proxy's own), keys spread over every backend,
// and the outage of one backend.
func TestTwemproxy(t *testing.T) {
	p := startTwemproxy(t, testserver.TwemproxyConfig{Timeout: twemproxyTimeout})
	proxy := p.Proxy

	for _, client := range []string{"direct", "gomemcache"} {
		t.Run("Conformance "+client, func(t *testing.T) {
			drivertest.Run(t, drivertest.Harness{
				Name:         "memcached",
				Options:      map[string]string{"servers": proxy.Addr(), "client": client},
				LiveValues:   map[string]string{"ttl": "1h", "localZone": "default"},
				MaxValueSize: 1048000,
				Pause:        proxy.Pause,
				Outage: &drivertest.Outage{
					Stop:          proxy.Kill,
					Start:         proxy.Restart,
					RecoverWithin: 10 * time.Second,
					Options:       map[string]string{"timeout": "1s"},
				},
			})
		})
	}

	t.Run("Spread", func(t *testing.T) {
		spread(t, p)
	})

	for _, client := range []string{"direct", "gomemcache"} {
		t.Run("BackendOutage "+client, func(t *testing.T) {
			backendOutage(t, p, client)
		})
	}
}

// backendOutage takes backend 0 down (SIGKILL, then SIGSTOP for a stall) and checks what a
// user would: operations on its keys fail fast as unavailable (or timeout when it stalls),
// keys on the other backends keep working, and everything works again once it is back.
func backendOutage(t *testing.T, p *testserver.TwemproxyPool, client string) {
	d := open(t, map[string]string{"servers": p.Proxy.Addr(), "timeout": "2s", "client": client})
	ctx := drivertest.Context(t)
	// A few keys on backend 0 (each costs the proxy's timeout while it stalls) and more elsewhere.
	var dead, alive []string
	for i := 0; len(dead) < 3 || len(alive) < 10; i++ {
		if i > 1000 {
			t.Fatalf("after %d keys: %d on backend 0, %d elsewhere", i, len(dead), len(alive))
		}
		key := fmt.Sprintf("twem-outage-%s-%d", client, i)
		if err := d.Write(ctx, key, []byte(key)); err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		if owner(t, p, key) == 0 {
			dead = append(dead, key)
		} else {
			alive = append(alive, key)
		}
	}
	b0 := p.Backends[0]
	drivertest.ProxyBackendOutage(t, d, drivertest.ProxyBackend{
		Kill: b0.Kill, Restart: b0.Restart, Pause: b0.Pause,
		Dead: dead, Alive: alive, FailWithin: twemproxyTimeout + time.Second,
	})
}

// spread writes NDBench-shaped keys ("T0", "T1", ...) through proxies with each hash and
// counts which backend holds each key. With murmur every backend must get a fair share;
// twemproxy's fnv1a_64 keeps 32 bits only and piles such keys on few backends, which the
// test records (a property of twemproxy that users must know, not a driver defect).
func spread(t *testing.T, p *testserver.TwemproxyPool) {
	for _, tc := range []struct {
		hash     string
		first    int     // key index; each hash gets its own keys, so each key is on one backend
		minShare float64 // of the keys each backend must hold; 0 only logs the spread
	}{
		{"murmur", 0, 0.2},
		{"fnv1a_64", 1000, 0},
	} {
		t.Run(tc.hash, func(t *testing.T) {
			ctx := drivertest.Context(t)
			proxy, err := testserver.Twemproxy(ctx, testserver.TwemproxyConfig{Hash: tc.hash, Timeout: twemproxyTimeout}, p.Backends)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = proxy.Stop() })
			d := open(t, map[string]string{"servers": proxy.Addr()})
			const n = 300
			per := make([]int, len(p.Backends))
			for i := 0; i < n; i++ {
				key := "T" + strconv.Itoa(tc.first+i)
				if err := d.Write(ctx, key, []byte(key)); err != nil {
					t.Fatalf("write %s through twemproxy: %v", key, err)
				}
				if got, err := d.Read(ctx, key); err != nil || string(got) != key {
					t.Fatalf("read %s through twemproxy = %q, %v", key, got, err)
				}
				per[owner(t, p, key)]++
			}
			t.Logf("hash %s: keys T%d..T%d per backend: %v", tc.hash, tc.first, tc.first+n-1, per)
			for i, c := range per {
				if float64(c) < tc.minShare*n {
					t.Errorf("backend %d holds %d of %d keys (%v); want at least %.0f%% each", i, c, n, per, 100*tc.minShare)
				}
			}
		})
	}
}
