//go:build integration

package memcached

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.Memcached, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "memcached", map[string]string{"servers": srv.Addr()}, values).(*Driver)
}

// metaTTL asks the server for an item's remaining TTL with the meta protocol (mg KEY t):
// -1 means no expiry; ok is false on a miss.
func metaTTL(t *testing.T, addr, key string) (ttl int, ok bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(c, "mg %s t\r\n", key)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	line = strings.TrimSpace(line)
	if line == "EN" {
		return 0, false
	}
	if _, err := fmt.Sscanf(line, "HD t%d", &ttl); err != nil {
		t.Fatalf("mg reply %q: %v", line, err)
	}
	return ttl, true
}

// clients are the values of the option client that talk to plain servers; the tests that
// do not depend on the client run on each.
var clients = []string{"direct", "gomemcache"}

func TestWriteReadMiss(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { writeReadMiss(t, client) })
	}
}

func writeReadMiss(t *testing.T, client string) {
	d := open(t, map[string]string{"client": client})
	ctx := drivertest.Context(t)
	values := map[string][]byte{
		"mc-binary": {0, 1, 2, 0xff, 0, '\r', '\n'},
		"mc-text":   []byte("hello, world"),
		"mc-big":    bytes.Repeat([]byte("0123456789"), 90_000),
	}
	for k, v := range values {
		if err := d.Write(ctx, k, v); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	for k, v := range values {
		got, err := d.Read(ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("read %s = %d bytes, %v; want %d bytes", k, len(got), err, len(v))
		}
	}
	if _, err := d.Read(ctx, "mc-never-written"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a missing key: %v, want driver.ErrNotFound", err)
	}
	if s := d.DriverStats(); s["zone.default.reads"] != 4 || s["zone.default.misses"] != 1 || s["zone.default.writes"] != 3 {
		t.Errorf("DriverStats = %v", s)
	}
	ci := d.ConnectionInfo()
	if ci["zones"] != "default="+srv.Addr() || ci["server_version"] == "unknown" || !strings.HasPrefix(ci["server_version"], "1.") || ci["client"] != client {
		t.Errorf("ConnectionInfo = %v", ci)
	}
}

func TestTTL(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { ttl(t, client) })
	}
}

func ttl(t *testing.T, client string) {
	d := open(t, map[string]string{"ttl": "1s", "client": client})
	ctx := drivertest.Context(t)
	if err := d.Write(ctx, "ttl-a", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if ttl, ok := metaTTL(t, srv.Addr(), "ttl-a"); ok && (ttl < 0 || ttl > 1) {
		t.Errorf("TTL after write with ttl=1s = %d", ttl)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := d.Read(ctx, "ttl-a")
		if errors.Is(err, driver.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("item with ttl=1s still readable after 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, tc := range []struct {
		ttl      string
		min, max int
	}{{"0s", -1, -1}, {"1h", 3590, 3600}} {
		opts, _ := driver.NewOptions("memcached", map[string]string{"servers": srv.Addr(), "ttl": tc.ttl, "client": client})
		if err := d.Reconfigure(ctx, opts); err != nil {
			t.Fatal(err)
		}
		key := "ttl-" + client + tc.ttl
		if err := d.Write(ctx, key, []byte("v")); err != nil {
			t.Fatal(err)
		}
		ttl, ok := metaTTL(t, srv.Addr(), key)
		if !ok || ttl < tc.min || ttl > tc.max {
			t.Errorf("after Reconfigure ttl=%s: server TTL %d (found %v), want [%d, %d]", tc.ttl, ttl, ok, tc.min, tc.max)
		}
	}
}

func TestRejectedRequests(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		key   string
		value []byte
	}{
		{"value over maxValueSize", nil, "big", make([]byte, 2<<20)},
		// With the client-side limit raised, the server itself refuses the item.
		{"value over the server item limit", map[string]string{"maxValueSize": "4000000"}, "big2", make([]byte, 2<<20)},
		{"key with a space", nil, "bad key", []byte("v")},
		{"key over 250 bytes", nil, strings.Repeat("k", 251), []byte("v")},
	} {
		for _, client := range clients {
			t.Run(tc.name+" "+client, func(t *testing.T) {
				opts := map[string]string{"client": client}
				maps.Copy(opts, tc.opts)
				rejected(t, opts, tc.key, tc.value)
			})
		}
	}
}

func rejected(t *testing.T, opts map[string]string, key string, value []byte) {
	ctx := drivertest.Context(t)
	d := open(t, opts)
	err := d.Write(ctx, key, value)
	if c := driver.Classify(err); err == nil || c != driver.ClassRejected {
		t.Errorf("err = %v (class %v), want rejected", err, c)
	}
	// The connection pool stays usable after a rejected request.
	if err := d.Write(ctx, "after-reject", []byte("ok")); err != nil {
		t.Errorf("write after a rejected one: %v", err)
	}
}

func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, nil)
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key: "valid-1",
		Change: func(_ context.Context, key string, read []byte) error {
			return memcache.New(srv.Addr()).Set(&memcache.Item{Key: key, Value: drivertest.FlipByte(read, -5)})
		},
	})
}

// TestZones runs two zones on two servers: writes reach both, reads prefer the local zone
// and fall back on a miss or when the local zone is down, and the write policies apply.
func TestZones(t *testing.T) {
	ctx := drivertest.Context(t)
	start := func() *testserver.Server {
		s, err := testserver.Memcached(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop() })
		return s
	}
	a, b := start(), start()
	zones := fmt.Sprintf("a=%s;b=%s", a.Addr(), b.Addr())
	d := open(t, map[string]string{"zones": zones, "timeout": "500ms"})
	rawA, rawB := memcache.New(a.Addr()), memcache.New(b.Addr())
	stat := func(name string) int64 { return d.DriverStats()[name] }

	if err := d.Write(ctx, "z1", []byte("both")); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*memcache.Client{"a": rawA, "b": rawB} {
		if it, err := c.Get("z1"); err != nil || string(it.Value) != "both" {
			t.Errorf("zone %s does not hold the write: %v", name, err)
		}
	}
	if got, err := d.Read(ctx, "z1"); err != nil || string(got) != "both" || stat("zone.a.reads") != 1 || stat("zone.b.reads") != 0 {
		t.Errorf("read = %q, %v; stats %v; want a hit in zone a only", got, err, d.DriverStats())
	}

	// A miss in the local zone falls back to the next.
	if err := rawB.Set(&memcache.Item{Key: "only-b", Value: []byte("from-b")}); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(ctx, "only-b"); err != nil || string(got) != "from-b" {
		t.Errorf("read of a key only in zone b = %q, %v", got, err)
	}
	if stat("zone.a.misses") != 1 || stat("zone.b.fallbacks") != 1 {
		t.Errorf("after a fallback on miss: %v", d.DriverStats())
	}

	// localZone is live: reads go to b first.
	opts, _ := driver.NewOptions("memcached", map[string]string{"zones": zones, "localZone": "b", "timeout": "500ms"})
	if err := d.Reconfigure(ctx, opts); err != nil {
		t.Fatal(err)
	}
	readsA := stat("zone.a.reads")
	if got, err := d.Read(ctx, "only-b"); err != nil || string(got) != "from-b" || stat("zone.a.reads") != readsA {
		t.Errorf("with localZone=b: read %q, %v, zone a reads %d -> %d", got, err, readsA, stat("zone.a.reads"))
	}
	opts, _ = driver.NewOptions("memcached", map[string]string{"zones": zones, "localZone": "a", "timeout": "500ms"})
	if err := d.Reconfigure(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconfigure(ctx, &Options{LocalZone: "nowhere"}); err == nil {
		t.Error("Reconfigure to an unknown zone succeeded")
	}

	// The local zone goes down: reads fall back, writes follow writeSuccess.
	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	errsA, fallbacksB := stat("zone.a.read_errors"), stat("zone.b.fallbacks")
	if got, err := d.Read(ctx, "z1"); err != nil || string(got) != "both" {
		t.Errorf("read with zone a down = %q, %v; want the copy in zone b", got, err)
	}
	if stat("zone.a.read_errors") != errsA+1 || stat("zone.b.fallbacks") != fallbacksB+1 {
		t.Errorf("after a fallback on error: %v", d.DriverStats())
	}
	writeErrsA := stat("zone.a.write_errors")
	if err := d.Write(ctx, "z2", []byte("v")); err != nil {
		t.Errorf("writeSuccess=any with one zone down: %v", err)
	}
	if stat("zone.a.write_errors") != writeErrsA+1 {
		t.Errorf("the failed zone write was not counted: %v", d.DriverStats())
	}
	for _, policy := range []string{"all", "local"} {
		dp := open(t, map[string]string{"zones": fmt.Sprintf("a=%s;b=%s", b.Addr(), b.Addr()), "writeSuccess": policy})
		dp.zones[0].client = memcache.New(a.Addr()) // zone a points at the dead server
		dp.zones[0].client.Timeout = 500 * time.Millisecond
		err := dp.Write(ctx, "z3", []byte("v"))
		if c := driver.Classify(err); err == nil || (c != driver.ClassUnavailable && c != driver.ClassTimeout) {
			t.Errorf("writeSuccess=%s with the local zone down: err %v class %v, want unavailable", policy, err, c)
		}
	}
	// Both zones down: the read fails with the local zone's class.
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx, "z1"); err == nil || driver.Classify(err) != driver.ClassUnavailable {
		t.Errorf("read with every zone down: %v (class %v), want unavailable", err, driver.Classify(err))
	}
	if err := a.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// Zone a restarted empty and b is down: an authoritative miss from a.
	if _, err := d.Read(ctx, "z1"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read with zone a empty and b down: %v, want driver.ErrNotFound", err)
	}
}

// TestConformance runs the public driver conformance suite (driver/drivertest) with plain
// servers on each client, one zone on client=direct, and with two zones (both on the test server, so every write goes to it twice),
// pausing and killing the shared server. It is last in the file because its outage check
// restarts the server.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      map[string]string
		localZone string // a second valid value of the live option localZone
	}{
		{"servers direct", map[string]string{"servers": srv.Addr(), "client": "direct"}, "default"},
		{"servers gomemcache", map[string]string{"servers": srv.Addr(), "client": "gomemcache"}, "default"},
		{"one zone direct", map[string]string{"zones": "z=" + srv.Addr(), "client": "direct"}, "z"},
		{"zones", map[string]string{"zones": fmt.Sprintf("a=%s;b=%s", srv.Addr(), srv.Addr())}, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drivertest.Run(t, drivertest.Harness{
				Name:       "memcached",
				Options:    tc.opts,
				LiveValues: map[string]string{"ttl": "1h", "localZone": tc.localZone},
				// The driver's default maxValueSize: memcached's 1 MiB item limit less
				// the item's own overhead.
				MaxValueSize: 1048000,
				Pause:        srv.Pause,
				Outage: &drivertest.Outage{
					Stop:          srv.Kill,
					Start:         srv.Restart,
					RecoverWithin: 10 * time.Second,
					Options:       map[string]string{"timeout": "1s"},
				},
			})
		})
	}
}

// BenchmarkGetSet measures one SET and one GET per iteration from ~50 goroutines. Run:
//
//	go test -tags integration -run '^$' -bench GetSet ./drivers/memcached/
func BenchmarkGetSet(b *testing.B) {
	d := open(b, nil)
	value := bytes.Repeat([]byte("v"), 100)
	var n atomic.Int64
	b.SetParallelism(25) // 25 x GOMAXPROCS(2) = 50 goroutines
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
	b.ReportMetric(float64(2*b.N)/time.Since(start).Seconds(), "ops/s")
}

// TestDelete: Delete removes a key (a composition's cache invalidation), and a missing
// key is not an error.
func TestDelete(t *testing.T) {
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { deleteTwice(t, client) })
	}
}

func deleteTwice(t *testing.T, client string) {
	d := open(t, map[string]string{"client": client})
	ctx := drivertest.Context(t)
	if err := d.Write(ctx, "del", []byte("value")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := d.Delete(ctx, "del"); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, err := d.Read(ctx, "del"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}
