//go:build integration

package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	_ "github.com/ndbench/ndbench/drivers/memcached"
	_ "github.com/ndbench/ndbench/drivers/redis"
	"github.com/ndbench/ndbench/internal/testserver"
)

var redisSrv, mcSrv *testserver.Server

// TestMain starts a Redis (the database) and a memcached (the cache) for the example
// cache-aside script to compose.
func TestMain(m *testing.M) {
	code := testserver.Main(m, func(ctx context.Context) (*testserver.Server, error) {
		s, err := testserver.Memcached(ctx)
		if err != nil {
			return nil, err
		}
		mcSrv = s
		return testserver.Redis(ctx)
	}, func(s *testserver.Server) { redisSrv = s })
	if mcSrv != nil {
		if err := mcSrv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// cacheAside is the example script's options with memcached in front of Redis.
func cacheAside(extra string) map[string]string {
	return map[string]string{
		"file": "../../examples/script/cache-aside.js",
		"config": fmt.Sprintf(`{"cache": {"driver": "memcached", "options": {"servers": %q%s}},
			"db": {"driver": "redis", "options": {"addrs": %q}}}`, mcSrv.Addr(), extra, redisSrv.Addr()),
	}
}

func TestIntegrationConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:       Name,
		Options:    cacheAside(""),
		LiveValues: map[string]string{"config": cacheAside(`, "timeout": "2s"`)["config"]},
		// memcached's item limit (1 MiB) includes the key and the item header.
		MaxValueSize: 1048000,
		// No Pause: DeadlineOnStall reads a key it wrote, which this script serves from
		// memcached, so a frozen Redis is never reached (the suite requires that reads
		// reach the paused store). TestDeadlineInterrupts covers deadlines.
		// The database killed and restarted: the nested driver's failures keep their
		// class through the script, and it recovers without being reopened.
		Outage: &drivertest.Outage{
			Stop:          redisSrv.Kill,
			Start:         redisSrv.Restart,
			RecoverWithin: 10 * time.Second,
		},
	})
}

// TestIntegrationReadThrough writes a key to Redis only, reads it through the script and
// finds it filled into memcached; the workflow writes a missing key to both.
func TestIntegrationReadThrough(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := open(t, cacheAside(""))
	db, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": redisSrv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	cache, _, err := driver.Open(ctx, "memcached", map[string]string{"servers": mcSrv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cache.Close() }()

	key := fmt.Sprintf("script-it-%d", time.Now().UnixNano())
	if err := db.Write(ctx, key, []byte("from-db")); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Read(ctx, key); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("cache before the read: %v, want a miss", err)
	}
	if v, err := d.Read(ctx, key); err != nil || string(v) != "from-db" {
		t.Fatalf("read through the script = %q, %v", v, err)
	}
	if v, err := cache.Read(ctx, key); err != nil || string(v) != "from-db" {
		t.Fatalf("cache after the read = %q, %v; want it filled", v, err)
	}
	if err := d.RunWorkflow(ctx, key+"-wf"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]driver.Driver{"redis": db, "memcached": cache} {
		if v, err := s.Read(ctx, key+"-wf"); err != nil || len(v) != 128 {
			t.Fatalf("%s after the workflow: %d bytes, %v; want 128", name, len(v), err)
		}
	}
	if got := d.ConnectionInfo()["stores"]; got != "memcached,redis" {
		t.Fatalf("stores = %q", got)
	}
}
