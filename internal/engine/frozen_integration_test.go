//go:build integration && linux

package engine_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// TestFrozenTwemproxyBackend is issue 39's frozen backend on real processes: twemproxy in
// front of three redis-servers, one of them SIGSTOPped. The proxy's own backend timeout
// is far longer than the run, so only the op timeout (250 ms) bounds a read of a frozen
// key; each holds a worker for that long. At 300 reads/s on 8 readers (automatic
// maximum), the reads of the two healthy backends' keys must keep at least 60% of their
// share: the pool grows while its workers wait on the frozen keys, and not far past what
// Little's law asks.
func TestFrozenTwemproxyBackend(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := testserver.StartTwemproxyPool(ctx, testserver.TwemproxyConfig{Redis: true, Hash: "murmur", Timeout: time.Minute}, 3, testserver.Redis)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Log(p.LogTails())
		}
		_ = p.Stop()
	}()
	d, _, err := driver.Open(ctx, "redis", map[string]string{"addrs": p.Proxy.Addr(), "proxy": "true",
		"dialTimeout": "2s", "readTimeout": "2s", "writeTimeout": "2s", "maxRetries": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	const rate, numKeys = 300, 300
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize = numKeys, 64
	w.WriteEnabled = false
	w.ReadRate, w.Readers, w.MaxReaders = rate, 8, 0
	w.OpTimeout = 250 * time.Millisecond
	coll := stats.NewCollector(stats.Config{Shards: 4})
	e, err := engine.New(d, w, engine.Options{Collector: coll})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(2 * time.Second)
	if st, err := e.Backfill(ctx, engine.BackfillOptions{Workers: 4}); err != nil || st.Written != numKeys {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
	// The healthy share: the keys on backends 1 and 2.
	var healthyKeys int64
	for _, b := range p.Backends[1:] {
		c := goredis.NewClient(&goredis.Options{Addr: b.Addr()})
		n, err := c.DBSize(ctx).Result()
		_ = c.Close()
		if err != nil {
			t.Fatal(err)
		}
		healthyKeys += n
	}
	share := float64(rate) * float64(healthyKeys) / numKeys
	resume, err := p.Backends[0].Pause()
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the pool grows
	s := window(coll, 5*time.Second).Ops["read"]
	t.Logf("%d of %d keys healthy (share %.0f/s); in 5 s: %d workers, %.0f answered/s, failures %v",
		healthyKeys, numKeys, share, s.Workers, s.Rate, s.Failures)
	if s.Rate < 0.6*share {
		t.Errorf("the healthy backends answered %.0f reads/s of their share of %.0f/s (%.0f%%); want at least 60%%", s.Rate, share, 100*s.Rate/share)
	}
	// Little's law: each frozen read holds a worker for the op timeout, each healthy one
	// for its service time. The old rule (half the pool per check) grew to 60.
	frozen := float64(numKeys-healthyKeys) / numKeys
	need := rate * (frozen*w.OpTimeout.Seconds() + (1-frozen)*s.ServiceTime.Mean/1e6)
	if float64(s.Workers) > 2*need {
		t.Errorf("%d workers; Little's law asks for %.1f, want at most twice that", s.Workers, need)
	}
	if s.Failures["timeout"] == 0 {
		t.Errorf("no read timed out: the frozen backend's keys were not read (failures %v)", s.Failures)
	}
}
