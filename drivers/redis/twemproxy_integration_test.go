//go:build integration

package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// twemTimeout is nutcracker's per-request backend timeout here: short, so a stalled
// backend fails requests quickly, and below the driver's read timeout, so the proxy's
// answer (not the client's socket timeout) is what the test sees.
const twemTimeout = 250 * time.Millisecond

// twemFixName is the stand-in driver: the redis driver with the changes proxy.go proposes
// wired in (see twemFixDriver). The driver as shipped cannot connect through twemproxy.
const twemFixName = "redis-proxyfix-test"

func init() {
	driver.MustRegister(driver.Definition{
		Name:       twemFixName,
		Summary:    "test only: the redis driver with proxy.go's changes wired in",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &twemFixDriver{Driver: &Driver{}} },
	})
}

// twemFixDriver is what Init would do for a RESP proxy (a proposed proxy=true option):
// HELLO answered locally (proxyDialer), db other than 0 refused up front as rejected
// (proxies close the connection on SELECT), and the proxy's own ERR replies for a failed
// backend classified as timeout/unavailable (proxyErrorClass). Everything else is the
// shipped driver's code, embedded.
type twemFixDriver struct{ *Driver }

// Init mirrors Driver.Init for a plain client, with the proxy changes.
func (f *twemFixDriver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	if o.DB != 0 {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("redis db=%d through a proxy: RESP proxies do not support SELECT; use db=0", o.DB))
	}
	d := f.Driver
	d.opts = *o
	d.ttl.Store(int64(o.TTL))
	retries := o.MaxRetries
	if retries == 0 {
		retries = -1
	}
	d.client = goredis.NewClient(&goredis.Options{
		Addr: o.Addrs[0], Dialer: proxyDialer(o.Timeouts.Connect), PoolSize: o.PoolSize,
		DialTimeout: o.Timeouts.Connect, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		MaxRetries: retries, ContextTimeoutEnabled: true, DialerRetries: 1, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	if err := d.client.Ping(ctx).Err(); err != nil {
		return classify(fmt.Errorf("connect to redis at %s: %w", o.Addrs[0], err))
	}
	if o.Mode == "autopipeline" {
		d.ap, err = d.client.(autoPipeliners).AsyncAutoPipelineWithOptions(&goredis.AutoPipelineOptions{
			MaxBatchSize: o.PipelineBatch, MaxConcurrentBatches: 1,
		})
		if err != nil {
			return fmt.Errorf("start redis autopipeliner: %w", err)
		}
	}
	d.info = map[string]string{"addrs": o.Addrs[0], "mode": o.Mode, "shape": o.Shape, "server_version": serverVersion(ctx, d.client)}
	return nil
}

// Read is Driver.Read with proxy errors reclassified.
func (f *twemFixDriver) Read(ctx context.Context, key string) ([]byte, error) {
	v, err := f.Driver.Read(ctx, key)
	return v, proxyReclassify(err)
}

// Write is Driver.Write with proxy errors reclassified.
func (f *twemFixDriver) Write(ctx context.Context, key string, value []byte) error {
	return proxyReclassify(f.Driver.Write(ctx, key, value))
}

// proxyReclassify is what serverClass's ERR case would do with proxyErrorClass.
func proxyReclassify(err error) error {
	var rerr goredis.Error
	if err != nil && errors.As(err, &rerr) {
		if c, ok := proxyErrorClass(rerr.Error()); ok {
			return driver.Wrap(c, err)
		}
	}
	return err
}

// twemOpen opens driver name through the proxy with extra option values.
func twemOpen(t *testing.T, name, addr string, extra map[string]string) (driver.Driver, error) {
	t.Helper()
	v := map[string]string{"addrs": addr, "dialTimeout": "2s", "readTimeout": "2s", "writeTimeout": "2s"}
	for k, x := range extra {
		v[k] = x
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, _, err := driver.Open(ctx, name, v)
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

	for _, mode := range []string{"pool", "autopipeline"} {
		t.Run("AsShipped/mode="+mode, func(t *testing.T) {
			start := time.Now()
			d, err := twemOpen(t, "redis", p.Proxy.Addr(), map[string]string{"mode": mode})
			took := time.Since(start)
			if took > 5*time.Second {
				t.Errorf("Open through twemproxy took %v; it must fail or succeed promptly", took.Round(time.Millisecond))
			}
			if err != nil {
				// Once Init uses proxyDialer this branch is no longer taken and the whole
				// suite below runs against the shipped driver.
				t.Skipf("known defect (needs a change in redis.go): Open through twemproxy fails in %v as %v: %v. "+
					"go-redis v9 sends HELLO on every new connection; twemproxy closes the connection on it "+
					"and go-redis does not fall back to RESP2 on EOF (redis/go-redis#2616). "+
					"Fix: goredis.Options.Dialer = proxyDialer(...) (drivers/redis/proxy.go) for proxies; "+
					"the WithProxyFix subtests run the suite with it", took.Round(time.Millisecond), driver.Classify(err), err)
			}
			_ = d.Close()
			twemSuite(t, p, "redis", mode)
		})
	}
	for _, mode := range []string{"pool", "autopipeline"} {
		t.Run("WithProxyFix/mode="+mode, func(t *testing.T) {
			twemSuite(t, p, twemFixName, mode)
		})
	}
}

// twemSuite runs the checks through the proxy with driver name in mode.
func twemSuite(t *testing.T, p *testserver.TwemproxyPool, name, mode string) {
	proxy := p.Proxy
	t.Run("Conformance", func(t *testing.T) {
		drivertest.Run(t, drivertest.Harness{
			Name:       name,
			Options:    map[string]string{"addrs": proxy.Addr(), "mode": mode},
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
	t.Run("Spread", func(t *testing.T) { twemSpread(t, p, name, mode) })
	t.Run("SelectRejected", func(t *testing.T) {
		// db=1 makes go-redis send SELECT 1 on each new connection, which twemproxy
		// does not support: it closes the connection.
		start := time.Now()
		_, err := twemOpen(t, name, proxy.Addr(), map[string]string{"mode": mode, "db": "1"})
		took := time.Since(start)
		if err == nil {
			t.Fatal("Open with db=1 through twemproxy succeeded; SELECT cannot go through a proxy")
		}
		if took > 3*time.Second {
			t.Errorf("Open with db=1 took %v to fail; it must fail promptly", took.Round(time.Millisecond))
		}
		if c := driver.Classify(err); c != driver.ClassRejected {
			t.Errorf("Open with db=1 through twemproxy failed as %v in %v, want rejected (a configuration the proxy cannot serve, not an outage): %v",
				c, took.Round(time.Millisecond), err)
		}
	})
	t.Run("BackendOutage", func(t *testing.T) { twemBackendOutage(t, p, name, mode) })
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
func twemSpread(t *testing.T, p *testserver.TwemproxyPool, name, mode string) {
	d, err := twemOpen(t, name, p.Proxy.Addr(), map[string]string{"mode": mode})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
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
	prefix := fmt.Sprintf("T%s%s", name, mode) // new keys for every run
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
func twemBackendOutage(t *testing.T, p *testserver.TwemproxyPool, name, mode string) {
	d, err := twemOpen(t, name, p.Proxy.Addr(), map[string]string{"mode": mode})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	backends := twemBackends(t, p)
	// A few keys on backend 0 (each costs the proxy's timeout while it stalls), more elsewhere.
	var dead, alive []string
	for i := 0; len(dead) < 3 || len(alive) < 10; i++ {
		if i > 1000 {
			t.Fatalf("after %d keys: %d on backend 0, %d elsewhere", i, len(dead), len(alive))
		}
		key := fmt.Sprintf("twem-outage-%s-%s-%d", name, mode, i)
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

	check := func(t *testing.T, state string, want driver.Class) {
		t.Helper()
		classes := map[driver.Class]int{}
		for _, key := range dead {
			for _, op := range []func(context.Context) error{
				func(ctx context.Context) error { _, err := d.Read(ctx, key); return err },
				func(ctx context.Context) error { return d.Write(ctx, key, []byte(key)) },
			} {
				octx, cancel := context.WithTimeout(ctx, 3*time.Second)
				start := time.Now()
				err := op(octx)
				took := time.Since(start)
				cancel()
				if err == nil {
					t.Errorf("%s: operation on %s (backend 0) succeeded", state, key)
					continue
				}
				c := driver.Classify(err)
				classes[c]++
				if took > twemTimeout+time.Second {
					t.Errorf("%s: operation on %s took %v to fail", state, key, took.Round(time.Millisecond))
				}
				if c != want {
					t.Errorf("%s: operation on %s failed as %v, want %v: %v", state, key, c, want, err)
				}
			}
		}
		for _, key := range alive {
			if got, err := d.Read(ctx, key); err != nil || string(got) != key {
				t.Errorf("%s: read %s on a live backend = %q, %v", state, key, got, err)
			}
		}
		t.Logf("%s: failures by class on backend 0's %d keys: %v", state, len(dead), classes)
	}
	recovered := func(t *testing.T, state string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for _, key := range dead {
			for {
				err := d.Write(ctx, key, []byte(key))
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s, write %s still fails 5s later: %v", state, key, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		for _, key := range append(dead, alive...) {
			if got, err := d.Read(ctx, key); err != nil || string(got) != key {
				t.Errorf("after %s: read %s = %q, %v", state, key, got, err)
			}
		}
	}

	t.Run("Killed", func(t *testing.T) {
		if err := b0.Kill(); err != nil {
			t.Fatal(err)
		}
		check(t, "backend 0 killed", driver.ClassUnavailable)
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := b0.Restart(rctx); err != nil {
			t.Fatal(err)
		}
		recovered(t, "restart of backend 0")
	})
	t.Run("Stalled", func(t *testing.T) {
		resume, err := b0.Pause()
		if err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				resume()
			}
		}()
		check(t, "backend 0 stalled", driver.ClassTimeout)
		resume()
		resumed = true
		recovered(t, "resume of backend 0")
	})
}
