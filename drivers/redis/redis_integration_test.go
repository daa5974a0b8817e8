//go:build integration

package redis

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.Redis, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "redis", map[string]string{"addrs": srv.Addr()}, values).(*Driver)
}

// raw is a plain go-redis client for checking and tampering behind the driver's back.
func raw(t testing.TB) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var modesShapes = []map[string]string{
	{"mode": "pool", "shape": "string"},
	{"mode": "pool", "shape": "hash"},
	{"mode": "autopipeline", "shape": "string"},
	{"mode": "autopipeline", "shape": "hash"},
	{"mode": "pool", "shape": "hash", "hashFields": "5"},
	{"mode": "direct", "shape": "string"},
	{"mode": "direct", "shape": "hash", "hashFields": "3"},
}

func name(v map[string]string) string {
	var parts []string
	for _, k := range []string{"mode", "shape", "hashFields", "spinRead"} {
		if v[k] != "" {
			parts = append(parts, k+"="+v[k])
		}
	}
	return strings.Join(parts, ",")
}

func TestWriteReadMiss(t *testing.T) {
	for _, opts := range modesShapes {
		t.Run(name(opts), func(t *testing.T) {
			d := open(t, opts)
			ctx := drivertest.Context(t)
			prefix := "rw-" + name(opts) + "-"
			values := map[string][]byte{
				"binary": {0, 1, 2, 0xff, 0, 'x', '\r', '\n'},
				"text":   []byte("hello, world"),
				"one":    []byte("z"),
				"big":    bytes.Repeat([]byte("0123456789"), 50_000),
			}
			for k, v := range values {
				if err := d.Write(ctx, prefix+k, v); err != nil {
					t.Fatalf("write %s: %v", k, err)
				}
			}
			for k, v := range values {
				got, err := d.Read(ctx, prefix+k)
				if err != nil {
					t.Fatalf("read %s: %v", k, err)
				}
				if !bytes.Equal(got, v) {
					t.Errorf("read %s = %d bytes %.20q, want %d bytes %.20q", k, len(got), got, len(v), v)
				}
			}
			// Overwrite with a different value.
			if err := d.Write(ctx, prefix+"text", []byte("second")); err != nil {
				t.Fatal(err)
			}
			if got, err := d.Read(ctx, prefix+"text"); err != nil || string(got) != "second" {
				t.Errorf("after overwrite read = %q, %v; want second", got, err)
			}
			if _, err := d.Read(ctx, prefix+"never-written"); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("read of a missing key: err = %v, want driver.ErrNotFound", err)
			}
		})
	}
}

// TestCluster runs the driver's ClusterClient against a one-node Redis Cluster in both modes
// and shapes (with a TTL, so the hash shape's HSET+PEXPIRE pipeline is routed too).
func TestCluster(t *testing.T) {
	ctx := drivertest.Context(t)
	cl, err := testserver.RedisCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	for _, opts := range modesShapes[:4] {
		t.Run(name(opts), func(t *testing.T) {
			v := map[string]string{"addrs": cl.Addr(), "cluster": "true", "ttl": "1h"}
			for k, x := range opts {
				v[k] = x
			}
			d, _, err := driver.Open(ctx, "redis", v)
			if err != nil {
				t.Fatalf("open cluster driver: %v", err)
			}
			defer d.Close()
			for i := 0; i < 50; i++ { // keys spread over many slots
				key := fmt.Sprintf("cl-%s-%d", name(opts), i)
				if err := d.Write(ctx, key, []byte(key)); err != nil {
					t.Fatalf("write %s: %v", key, err)
				}
				if got, err := d.Read(ctx, key); err != nil || string(got) != key {
					t.Fatalf("read %s = %q, %v", key, got, err)
				}
			}
			if _, err := d.Read(ctx, "cl-missing"); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("miss: %v", err)
			}
			if ci := d.(driver.ConnectionInfoer).ConnectionInfo(); ci["cluster"] != "true" || ci["server_version"] == "unknown" {
				t.Errorf("ConnectionInfo = %v", ci)
			}
		})
	}
}

// TestTLS talks to a TLS-only port with a self-signed certificate: tlsSkipVerify accepts it,
// verification rejects it, and plain TCP to the TLS port fails.
func TestTLS(t *testing.T) {
	ctx := drivertest.Context(t)
	dir := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, dir)
	s, err := testserver.RedisTLS(ctx, certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Ports["tls"]))

	// Every mode dials through the driver's own dial (TLS over driver.RawIO), go-redis's
	// too.
	for _, mode := range []string{"direct", "pool", "autopipeline"} {
		d, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": addr, "tls": "true", "tlsSkipVerify": "true", "mode": mode})
		if err != nil {
			t.Fatalf("mode=%s: open with tls and tlsSkipVerify: %v", mode, err)
		}
		if err := d.Write(ctx, "tls-k-"+mode, []byte("secure")); err != nil {
			t.Fatalf("mode=%s: %v", mode, err)
		}
		if got, err := d.Read(ctx, "tls-k-"+mode); err != nil || string(got) != "secure" {
			t.Errorf("mode=%s: read over tls = %q, %v", mode, got, err)
		}
		if ci := d.(driver.ConnectionInfoer).ConnectionInfo(); ci["tls"] != "true" {
			t.Errorf("mode=%s: ConnectionInfo tls = %q", mode, ci["tls"])
		}
		d.Close()
	}
	for _, v := range []map[string]string{
		{"addrs": addr, "tls": "true", "dialTimeout": "2s"},       // unknown authority
		{"addrs": addr, "dialTimeout": "2s", "readTimeout": "2s"}, // plain TCP to a TLS port
	} {
		if d, _, err := driver.Open(ctx, "redis", v); err == nil {
			d.Close()
			t.Errorf("open with %v succeeded against a self-signed TLS port", v)
		}
	}

	// The option group's CA file: the self-signed certificate is its own CA, and it names
	// 127.0.0.1, so verification (certificate and host name) passes with it.
	for _, tc := range []struct {
		values map[string]string
		ok     bool
	}{
		{map[string]string{"tlsCAFile": certFile}, true},
		{map[string]string{"tlsVerify": "false"}, true},
		{map[string]string{"tlsCAFile": certFile, "tlsServerName": "db.example"}, false}, // wrong host name
		{map[string]string{"tlsCAFile": certFile, "tlsServerName": "db.example", "mode": "pool"}, false},
		{map[string]string{"tlsCAFile": certFile, "mode": "pool"}, true}, // host name from the address
		{map[string]string{"tlsCAFile": certFile, "tlsCertFile": certFile, "tlsKeyFile": keyFile}, true},
		{map[string]string{"tlsCAFile": filepath.Join(dir, "missing.pem")}, false},
	} {
		v := map[string]string{"addrs": addr, "tls": "true", "connectTimeout": "2s"}
		for k, x := range tc.values {
			v[k] = x
		}
		d, _, err := driver.Open(ctx, "redis", v)
		if err == nil {
			err = d.Write(ctx, "tls-ca", []byte("x"))
			d.Close()
		}
		if (err == nil) != tc.ok {
			t.Errorf("open with %v: error %v, want success %v", tc.values, err, tc.ok)
		}
	}
}

func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ndbench-test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestHashShapeLayout(t *testing.T) {
	d := open(t, map[string]string{"shape": "hash", "hashFields": "3"})
	ctx := drivertest.Context(t)
	if err := d.Write(ctx, "layout", []byte("aaabbbccc")); err != nil {
		t.Fatal(err)
	}
	r := raw(t)
	got, err := r.HGetAll(ctx, "HM__layout").Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"HM__layout__1": "aaa", "HM__layout__2": "bbb", "HM__layout__3": "ccc"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("HGETALL HM__layout = %v, want %v", got, want)
	}
	if n, _ := r.Exists(ctx, "layout").Result(); n != 0 {
		t.Errorf("hash shape also wrote the plain key")
	}
	// A hash whose fields do not follow the layout is reported, not silently truncated.
	if err := r.HSet(ctx, "HM__foreign", "x", "1", "y", "2").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx, "foreign"); err == nil || errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a foreign hash: err = %v, want an error", err)
	}
}

// TestTTL checks that ttl expires keys in both shapes, and that Reconfigure changes the TTL
// of later writes without reconnecting.
func TestTTL(t *testing.T) {
	for _, shape := range []string{"string", "hash"} {
		t.Run(shape, func(t *testing.T) {
			d := open(t, map[string]string{"shape": shape, "ttl": "1s"})
			ctx := drivertest.Context(t)
			r := raw(t)
			rawKey := func(k string) string {
				if shape == "hash" {
					return "HM__" + k
				}
				return k
			}
			if err := d.Write(ctx, "ttl-a", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if pttl, _ := r.PTTL(ctx, rawKey("ttl-a")).Result(); pttl <= 0 || pttl > time.Second {
				t.Errorf("PTTL after write with ttl=1s = %v, want in (0, 1s]", pttl)
			}
			// The key expires: poll (bounded) rather than sleep a fixed time.
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := d.Read(ctx, "ttl-a")
				if errors.Is(err, driver.ErrNotFound) {
					break
				}
				if err != nil {
					t.Fatalf("read while waiting for expiry: %v", err)
				}
				if time.Now().After(deadline) {
					t.Fatal("key with ttl=1s still readable after 10s")
				}
				time.Sleep(100 * time.Millisecond)
			}

			opts, _ := driver.NewOptions("redis", map[string]string{"addrs": srv.Addr(), "shape": shape, "ttl": "0s"})
			if err := d.Reconfigure(ctx, opts); err != nil {
				t.Fatalf("Reconfigure ttl=0: %v", err)
			}
			if err := d.Write(ctx, "ttl-b", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if pttl, _ := r.PTTL(ctx, rawKey("ttl-b")).Result(); pttl != -1 {
				t.Errorf("PTTL after Reconfigure ttl=0 = %v, want -1 (no expiry)", pttl)
			}
			if got := d.ConnectionInfo()["ttl"]; got != "0s" {
				t.Errorf("ConnectionInfo ttl = %q after Reconfigure, want 0s", got)
			}
			opts, _ = driver.NewOptions("redis", map[string]string{"addrs": srv.Addr(), "shape": shape, "ttl": "1h"})
			if err := d.Reconfigure(ctx, opts); err != nil {
				t.Fatal(err)
			}
			if err := d.Write(ctx, "ttl-c", []byte("v")); err != nil {
				t.Fatal(err)
			}
			if pttl, _ := r.PTTL(ctx, rawKey("ttl-c")).Result(); pttl <= 59*time.Minute || pttl > time.Hour {
				t.Errorf("PTTL after Reconfigure ttl=1h = %v", pttl)
			}
		})
	}
}

// TestAutopipelineConcurrent has 64 goroutines write and read back their own keys through
// one autopipelined driver: every caller must get its own reply.
func TestAutopipelineConcurrent(t *testing.T) {
	for _, shape := range []string{"string", "hash"} {
		t.Run(shape, func(t *testing.T) {
			d := open(t, map[string]string{"mode": "autopipeline", "shape": shape})
			ctx := drivertest.Context(t)
			const workers, ops = 64, 200
			var wg sync.WaitGroup
			var bad atomic.Int64
			errs := make(chan error, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, 0, 64)
					for i := 0; i < ops; i++ {
						key := fmt.Sprintf("ap-%s-%d-%d", shape, w, i%20)
						buf = fmt.Appendf(buf[:0], "value-%d-%d-%s", w, i, strings.Repeat("x", i%7))
						if err := d.Write(ctx, key, buf); err != nil {
							errs <- fmt.Errorf("worker %d write %s: %w", w, key, err)
							return
						}
						want := string(buf)
						// Scribble over the buffer as the engine would reuse it.
						for j := range buf {
							buf[j] = '#'
						}
						got, err := d.Read(ctx, key)
						if err != nil {
							errs <- fmt.Errorf("worker %d read %s: %w", w, key, err)
							return
						}
						if string(got) != want {
							bad.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if n := bad.Load(); n > 0 {
				t.Errorf("%d of %d reads returned another caller's or a stale value", n, workers*ops)
			}
		})
	}
}

func TestConnectionInfo(t *testing.T) {
	r := raw(t)
	ctx := drivertest.Context(t)
	info, err := r.Info(ctx, "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"mode": "autopipeline", "shape": "hash"})
	ci := d.ConnectionInfo()
	if ci["mode"] != "autopipeline" || ci["shape"] != "hash" || ci["addrs"] != srv.Addr() {
		t.Errorf("ConnectionInfo = %v", ci)
	}
	if v := ci["server_version"]; v == "" || v == "unknown" || !strings.Contains(info, "redis_version:"+v) {
		t.Errorf("server_version = %q, not the server's (INFO server: %.80q)", v, info)
	}
}

// TestPasswordNeverShown runs the server with a password for a moment: the driver
// authenticates, and neither ConnectionInfo nor any error carries the password.
func TestPasswordNeverShown(t *testing.T) {
	const secret = "s3cret-Pa55-for-test"
	r := raw(t)
	ctx := drivertest.Context(t)
	if err := r.ConfigSet(ctx, "requirepass", secret).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Password: secret})
		defer c.Close()
		if err := c.ConfigSet(context.Background(), "requirepass", "").Err(); err != nil {
			t.Errorf("reset requirepass: %v", err)
		}
	})

	d := open(t, map[string]string{"password": secret})
	if err := d.Write(ctx, "auth-k", []byte("v")); err != nil {
		t.Fatalf("write with the right password: %v", err)
	}
	for k, v := range d.ConnectionInfo() {
		if strings.Contains(v, secret) {
			t.Errorf("ConnectionInfo[%s] contains the password", k)
		}
	}

	_, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": srv.Addr(), "password": secret + "-wrong"})
	if err == nil {
		t.Fatal("Open with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the password: %v", err)
	}
	if c := driver.Classify(err); c != driver.ClassRejected {
		t.Errorf("wrong password: class %v, want rejected (err %v)", c, err)
	}
	_, _, err = driver.Open(ctx, "redis", map[string]string{"addrs": srv.Addr()})
	if c := driver.Classify(err); err == nil || c != driver.ClassRejected {
		t.Errorf("no password: err %v class %v, want rejected", err, c)
	}
}

// TestServerErrorClasses provokes real server errors and checks their classes.
func TestServerErrorClasses(t *testing.T) {
	r := raw(t)
	ctx := drivertest.Context(t)
	d := open(t, nil)

	// WRONGTYPE: the key holds a list.
	if err := r.LPush(ctx, "a-list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := d.Read(ctx, "a-list")
	if c := driver.Classify(err); c != driver.ClassRejected {
		t.Errorf("GET of a list: class %v, want rejected (err %v)", c, err)
	}

	// OOM: maxmemory far below usage with noeviction refuses writes.
	if err := r.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.ConfigSet(context.Background(), "maxmemory", "0").Err() })
	err = d.Write(ctx, "oom-k", []byte("v"))
	if c := driver.Classify(err); c != driver.ClassThrottled {
		t.Errorf("write over maxmemory: class %v, want throttled (err %v)", c, err)
	}
	if err := r.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(ctx, "oom-k", []byte("v")); err != nil {
		t.Errorf("write after lifting maxmemory: %v", err)
	}
}

// TestValidationDetectsCorruption writes a validated value through the driver, changes one
// byte behind its back, and checks the read-back fails validation.
func TestValidationDetectsCorruption(t *testing.T) {
	for _, shape := range []string{"string", "hash"} {
		t.Run(shape, func(t *testing.T) {
			d := open(t, map[string]string{"shape": shape})
			r := raw(t)
			drivertest.Corruption(t, d, validation, drivertest.Tamper{
				Key: "valid-" + shape,
				Seq: 42,
				// Flip one payload byte in the store.
				Change: func(ctx context.Context, key string, _ []byte) error {
					if shape == "string" {
						return r.SetRange(ctx, key, 60, "Z").Err()
					}
					return r.HSet(ctx, "HM__"+key, "HM__"+key+"__2", strings.Repeat("Z", 50)).Err()
				},
			})
		})
	}
}

// TestConformance runs the public driver conformance suite (driver/drivertest) in both
// modes and in the hash shape, pausing and killing the shared server. It is last in the
// file because its outage check restarts the server.
func TestConformance(t *testing.T) {
	for _, opts := range []map[string]string{
		{"mode": "pool"},
		{"mode": "autopipeline"},
		{"mode": "pool", "shape": "hash", "hashFields": "3"},
		{"mode": "direct"},
		{"mode": "direct", "shape": "hash", "hashFields": "3"},
		{"mode": "direct", "spinRead": "20us"},
	} {
		t.Run(name(opts), func(t *testing.T) {
			opts["addrs"] = srv.Addr()
			drivertest.Run(t, drivertest.Harness{
				Name:       "redis",
				Options:    opts,
				LiveValues: map[string]string{"ttl": "1h"},
				Pause:      srv.Pause,
				Outage: &drivertest.Outage{
					Stop:          srv.Kill,
					Start:         srv.Restart,
					RecoverWithin: 10 * time.Second,
					Options:       map[string]string{"readTimeout": "1s", "writeTimeout": "1s", "dialTimeout": "1s"},
				},
			})
		})
	}
}

// BenchmarkGetSet compares pool and autopipeline modes with ~50 concurrent callers doing
// one SET and one GET each per iteration. Run:
//
//	go test -tags integration -run '^$' -bench GetSet -benchtime 5s ./drivers/redis/
func BenchmarkGetSet(b *testing.B) {
	rates := map[string]float64{}
	for _, mode := range []string{"pool", "autopipeline"} {
		b.Run(mode, func(b *testing.B) {
			d := open(b, map[string]string{"mode": mode})
			value := bytes.Repeat([]byte("v"), 100)
			var n atomic.Int64
			b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				i := n.Add(1_000_000)
				for pb.Next() {
					key := fmt.Sprintf("bench-%d", i%1000)
					i++
					if err := d.Write(ctx, key, value); err != nil {
						b.Error(err)
						return
					}
					if _, err := d.Read(ctx, key); err != nil {
						b.Error(err)
						return
					}
				}
			})
			ops := float64(2*b.N) / time.Since(start).Seconds()
			b.ReportMetric(ops, "ops/s")
			rates[mode] = ops
		})
	}
	if rates["pool"] > 0 && rates["autopipeline"] > 0 {
		b.Logf("autopipeline/pool throughput ratio: %.2f", rates["autopipeline"]/rates["pool"])
	}
}

// TestDelete: Delete removes a key in every mode and shape (a composition's cache
// invalidation), and a missing key is not an error.
func TestDelete(t *testing.T) {
	for _, opts := range modesShapes {
		t.Run(name(opts), func(t *testing.T) {
			d := open(t, opts)
			ctx := drivertest.Context(t)
			key := "del-" + name(opts)
			if err := d.Write(ctx, key, []byte("value")); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := d.Delete(ctx, key); err != nil {
					t.Fatalf("delete: %v", err)
				}
			}
			if _, err := d.Read(ctx, key); !errors.Is(err, driver.ErrNotFound) {
				t.Fatalf("read after delete: %v", err)
			}
			// The connection a delete used stays good for the next operations.
			if err := d.Write(ctx, key, []byte("again")); err != nil {
				t.Fatal(err)
			}
			if v, err := d.Read(ctx, key); err != nil || string(v) != "again" {
				t.Fatalf("read after delete and write: %q, %v", v, err)
			}
		})
	}
}

// An operation whose context has ended before the call must fail and must not reach the
// server: the engine cancels the contexts of operations it abandons, and a write that
// lands after its caller was told it failed is a write the report does not count. In
// autopipeline mode go-redis's WaitContext returns the command's result when its batch
// finished before the wait, whatever the context, so a cancelled GET could succeed (a CI
// run's conformance suite caught one) and a cancelled SET was sent.
func TestCancelledOperationsNeverReachTheServer(t *testing.T) {
	const n = 300
	for _, opts := range modesShapes {
		t.Run(name(opts), func(t *testing.T) {
			d := open(t, opts)
			live := drivertest.Context(t)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			prefix := "cancelled-" + strings.NewReplacer("=", "-", ",", "-").Replace(name(opts))
			if err := d.Write(live, prefix+"-read", []byte("v")); err != nil {
				t.Fatalf("write the key to read: %v", err)
			}
			succeeded := 0
			for i := range n {
				if err := d.Write(ctx, fmt.Sprintf("%s-%d", prefix, i), []byte("v")); err == nil {
					succeeded++
				}
				if _, err := d.Read(ctx, prefix+"-read"); err == nil {
					succeeded++
				}
			}
			if succeeded > 0 {
				t.Errorf("%d of %d operations with a cancelled context succeeded", succeeded, 2*n)
			}
			landed := 0
			for i := range n {
				switch _, err := d.Read(live, fmt.Sprintf("%s-%d", prefix, i)); {
				case err == nil:
					landed++
				case !errors.Is(err, driver.ErrNotFound):
					t.Fatalf("read back a cancelled write's key: %v", err)
				}
			}
			if landed > 0 {
				t.Errorf("%d of %d writes with a cancelled context reached the server", landed, n)
			}
		})
	}
}

// TestScanIndex: with scanIndex the driver passes the conformance suite's delete and scan
// check (byte order) in every mode and shape: each write adds its key to the sorted set,
// each delete removes it, a scan reads up to n keys from the start key with their values.
// Without it a scan fails as rejected, naming the option.
func TestScanIndex(t *testing.T) {
	for i, opts := range modesShapes {
		t.Run(name(opts), func(t *testing.T) {
			v := maps.Clone(opts)
			v["scanIndex"], v["scanIndexKey"] = "true", "ndbench:test:scan"+strconv.Itoa(i)
			_ = raw(t).Del(context.Background(), v["scanIndexKey"]).Err()
			d := open(t, v)
			if got := driver.ScanOrderOf(d); got != driver.ScanBytes {
				t.Errorf("scan order %v, want bytes", got)
			}
			drivertest.ScanAndDelete(t, d)
			if n, err := raw(t).ZCard(context.Background(), v["scanIndexKey"]).Result(); err != nil || n != 4 {
				t.Errorf("the index holds %d keys (%v), want the 4 written and not deleted", n, err)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		d := open(t, nil)
		_, err := d.Scan(drivertest.Context(t), "k", 5)
		if driver.Classify(err) != driver.ClassRejected || !strings.Contains(fmt.Sprint(err), "scanIndex=true") {
			t.Errorf("scan without scanIndex: %v (class %v), want rejected naming scanIndex", err, driver.Classify(err))
		}
	})
}

// TestYCSBEInDefaultMode: ycsb-e runs on the driver's default mode (direct: workers on
// pipelines) with scanIndex (the kit's case, ycsb.Run): after the backfill every scan
// reads keys, its inserts grow the keyspace and are scanned too, nothing fails.
func TestYCSBEInDefaultMode(t *testing.T) {
	idx := "ndbench:test:ycsbe"
	ycsb.Run(t, ycsb.Case{
		Driver:  "redis",
		Presets: []string{"ycsb-e"},
		Open: func(t *testing.T, _ string) driver.Driver {
			_ = raw(t).Del(drivertest.Context(t), idx).Err()
			return open(t, map[string]string{"scanIndex": "true", "scanIndexKey": idx})
		},
		Tune: func(w *config.Workload) { w.KeyPrefix = "ycsbe-" },
		After: func(t *testing.T, r ycsb.Result) {
			want := r.Workload.NumKeys + r.Summary.Ops["write"].Count
			if n, err := raw(t).ZCard(drivertest.Context(t), idx).Result(); err != nil || n != want {
				t.Errorf("the index holds %d keys (%v), want the %d backfilled and inserted", n, err, want)
			}
		},
	})
}
