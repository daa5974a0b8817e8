package composite

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	_ "github.com/ndbench/ndbench/drivers/memory"
)

// open opens a composition with the given composite options and children's options (of
// memory stores in the unit tests, of real ones in the integration tests), closed at the
// end of the test.
func open(t testing.TB, values map[string]string, children map[string]map[string]string) *Driver {
	t.Helper()
	all := map[string]map[string]string{"composite": values}
	for ref, v := range children {
		all[ref] = v
	}
	opts, err := driver.NewComposedOptions("composite", all)
	if err != nil {
		t.Fatalf("options %v: %v", values, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &Driver{}
	if err := d.Init(ctx, opts); err != nil {
		_ = d.Close()
		t.Fatalf("init: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// recSink is a driver.Sink that keeps what it was given.
type recSink struct {
	mu    sync.Mutex
	obs   []time.Duration
	fails []driver.Class
}

func (s *recSink) Observe(d time.Duration) { s.mu.Lock(); s.obs = append(s.obs, d); s.mu.Unlock() }
func (s *recSink) Fail(c driver.Class)     { s.mu.Lock(); s.fails = append(s.fails, c); s.mu.Unlock() }
func (s *recSink) counts() (int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.obs), len(s.fails)
}

func sinksFor(d *Driver) []*recSink {
	var out []*recSink
	var ds []driver.Sink
	for range d.Measures() {
		s := &recSink{}
		out = append(out, s)
		ds = append(ds, s)
	}
	d.SetSinks(ds)
	return out
}

var cacheChildren = map[string]map[string]string{"memory": {}, "memory@db": {}}

func TestConformanceCacheAside(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:       "composite",
		Options:    map[string]string{"mode": "cache-aside", "cache": "memory", "database": "memory@db"},
		Children:   cacheChildren,
		LiveValues: map[string]string{"writePolicy": "update", "readFrom": "derived", "lagSample": "0.5"},
	})
}

func TestConformanceDerived(t *testing.T) {
	// Two memory stores are not replicas of each other, so reads stay on the primary; the
	// suite's own check of readFrom=derived writes and reads through the composition.
	drivertest.Run(t, drivertest.Harness{
		Name:       "composite",
		Options:    map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica", "lagTimeout": "50ms"},
		Children:   map[string]map[string]string{"memory": {}, "memory@replica": {}},
		LiveValues: map[string]string{"writePolicy": "update", "readFrom": "primary", "lagSample": "0.5"},
		Skip:       map[string]string{"LiveReconfigure": "readFrom=derived reads a store the suite's writes never reach (two unconnected memory stores); covered by TestDerivedReadsFollowReadFrom"},
	})
}

func TestCacheAsideReadsFillAndWritesInvalidate(t *testing.T) {
	d := open(t, map[string]string{"mode": "cache-aside", "cache": "memory", "database": "memory@db"}, cacheChildren)
	sinks := sinksFor(d)
	ctx := context.Background()
	cache, db := d.children[cacheIdx].drv, d.children[databaseIdx].drv

	if err := db.Write(ctx, "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ hits, misses int64 }{{0, 1}, {1, 1}} {
		v, err := d.Read(ctx, "k")
		if err != nil || string(v) != "v1" {
			t.Fatalf("read %d = %q, %v; want v1", i, v, err)
		}
		if d.hits.Load() != want.hits || d.misses.Load() != want.misses {
			t.Fatalf("after read %d: hits %d misses %d, want %d %d", i, d.hits.Load(), d.misses.Load(), want.hits, want.misses)
		}
	}
	if v, err := cache.Read(ctx, "k"); err != nil || string(v) != "v1" {
		t.Fatalf("the miss did not fill the cache: %q, %v", v, err)
	}
	if err := d.Write(ctx, "k", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("writePolicy=invalidate left the key in the cache: %v", err)
	}
	if v, _ := d.Read(ctx, "k"); string(v) != "v2" {
		t.Fatalf("read after write = %q, want v2", v)
	}
	if err := d.Reconfigure(ctx, mustOptions(t, map[string]string{"mode": "cache-aside", "cache": "memory", "database": "memory@db", "writePolicy": "update"})); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(ctx, "k", []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if v, err := cache.Read(ctx, "k"); err != nil || string(v) != "v3" {
		t.Fatalf("writePolicy=update: cache has %q, %v; want v3", v, err)
	}
	st := d.DriverStats()
	if st["cache.hits"] != 1 || st["cache.misses"] != 2 || st["fills"] != 2 || st["invalidations"] != 1 || st["updates"] != 1 || st["hit_ratio_permille"] != 333 {
		t.Fatalf("stats %v", st)
	}
	// One measurement per call: 3 cache reads, 2 fills, a delete and an update; 2
	// database reads (the misses) and 2 writes.
	if n, _ := sinks[cacheIdx].counts(); n != 7 {
		t.Fatalf("child.cache series got %d measurements, want 7", n)
	}
	if n, _ := sinks[databaseIdx].counts(); n != 4 {
		t.Fatalf("child.database series got %d measurements, want 4", n)
	}
}

func mustOptions(t *testing.T, values map[string]string) any {
	t.Helper()
	o, err := driver.NewOptions("composite", values)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestWriteThroughAndReadThrough(t *testing.T) {
	ctx := context.Background()
	wt := open(t, map[string]string{"mode": "write-through", "cache": "memory", "database": "memory@db"}, cacheChildren)
	if err := wt.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for i, c := range wt.children {
		if v, err := c.drv.Read(ctx, "k"); err != nil || string(v) != "v" {
			t.Fatalf("write-through: child %d has %q, %v", i, v, err)
		}
	}
	rt := open(t, map[string]string{"mode": "read-through", "cache": "memory", "database": "memory@db"}, cacheChildren)
	if err := rt.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.children[cacheIdx].drv.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read-through wrote to the cache: %v", err)
	}
	if v, err := rt.Read(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read-through read = %q, %v", v, err)
	}
	if v, err := rt.children[cacheIdx].drv.Read(ctx, "k"); err != nil || string(v) != "v" {
		t.Fatalf("read-through did not load the cache: %q, %v", v, err)
	}
}

// TestVisibilityLag follows every write on a derived store that a goroutine fills from
// the primary after a delay, like a replica: the lag recorded is that delay.
func TestVisibilityLag(t *testing.T) {
	d := open(t, map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica",
		"lagSample": "1", "lagPollInterval": "1ms", "lagTimeout": "2s"},
		map[string]map[string]string{"memory": {}, "memory@replica": {}})
	sinks := sinksFor(d)
	vis := sinks[2]
	ctx := context.Background()
	replica := d.children[derivedIdx].drv
	const delay = 30 * time.Millisecond
	var wg sync.WaitGroup
	for i := range 5 {
		key, val := "k"+string(rune('0'+i)), []byte{byte(i)}
		if err := d.Write(ctx, key, val); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(delay)
			_ = replica.Write(ctx, key, val)
		}()
	}
	wg.Wait()
	waitFor(t, func() bool { n, _ := vis.counts(); return n == 5 })
	vis.mu.Lock()
	for _, lag := range vis.obs {
		if lag < delay || lag > delay+time.Second {
			t.Errorf("lag %v, want about %v", lag, delay)
		}
	}
	vis.mu.Unlock()
	if st := d.DriverStats(); st["lag.sampled"] != 5 || st["lag.visible"] != 5 {
		t.Fatalf("stats %v", st)
	}

	// A write never replicated times out; a key written again before it is seen is
	// superseded, not timed out.
	d2 := open(t, map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica",
		"lagSample": "1", "lagTimeout": "100ms"}, map[string]map[string]string{"memory": {}, "memory@replica": {}})
	vis2 := sinksFor(d2)[2]
	if err := d2.Write(ctx, "lost", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := d2.Write(ctx, "twice", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := d2.Write(ctx, "twice", []byte("b")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, f := vis2.counts(); return f == 2 })
	st := d2.DriverStats()
	if st["lag.timed_out"] != 2 || st["lag.superseded"] != 1 {
		t.Fatalf("want the lost key and the second write of twice timed out and the first superseded: %v", st)
	}
}

func TestDerivedReadsFollowReadFrom(t *testing.T) {
	d := open(t, map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica", "lagSample": "0"},
		map[string]map[string]string{"memory": {}, "memory@replica": {}})
	ctx := context.Background()
	if err := d.children[derivedIdx].drv.Write(ctx, "k", []byte("replica")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("readFrom=primary read the replica: %v", err)
	}
	if err := d.Reconfigure(ctx, mustOptions(t, map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica", "readFrom": "derived"})); err != nil {
		t.Fatal(err)
	}
	if v, err := d.Read(ctx, "k"); err != nil || !bytes.Equal(v, []byte("replica")) {
		t.Fatalf("readFrom=derived read %q, %v", v, err)
	}
}

// TestSampleBoundsAndClose: samples beyond lagMaxInFlight are skipped, and Close ends
// the ones in flight without counting them as timeouts.
func TestSampleBoundsAndClose(t *testing.T) {
	d := open(t, map[string]string{"mode": "derived", "primary": "memory", "derived": "memory@replica",
		"lagSample": "1", "lagTimeout": "1h", "lagMaxInFlight": "3"}, map[string]map[string]string{"memory": {}, "memory@replica": {}})
	ctx := context.Background()
	for i := range 10 {
		if err := d.Write(ctx, "k"+string(rune('a'+i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	// The samples still polling show, with the age of the oldest, while nothing completes.
	if st := d.DriverStats(); st["lag.skipped"] != 7 || st["lag.in_flight"] != 3 || st["lag.oldest_pending_ms"] < 20 {
		t.Fatalf("stats %v, want 7 skipped, 3 in flight, the oldest pending for 20 ms or more", st)
	}
	done := make(chan error)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the samples in flight")
	}
	if st := d.DriverStats(); st["lag.timed_out"] != 0 {
		t.Fatalf("closing counted timeouts: %v", st)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		field  string
	}{
		{map[string]string{"cache": ""}, "cache"},
		{map[string]string{"mode": "derived", "primary": "redis", "derived": "redis"}, "derived"},
		{map[string]string{"mode": "mirror"}, "mode"},
		{map[string]string{"lagSample": "2"}, "lagSample"},
	} {
		_, err := driver.NewOptions("composite", tc.values)
		fes, ok := driver.AsFieldErrors(err)
		if !ok || len(fes) == 0 || fes[0].Field != tc.field || fes[0].Allowed == "" {
			t.Errorf("%v: got %v, want a field error on %s naming what is allowed", tc.values, err, tc.field)
		}
	}
	// Children: an unknown driver, a bad instance, options a child rejects.
	for _, children := range []map[string]map[string]string{
		{"composite": {"cache": "nosuch"}},
		{"composite": {"cache": "memory@Bad!"}},
		{"composite": {"cache": "memory", "database": "memory@db"}, "memory@db": {"shards": "0"}},
	} {
		if _, err := driver.NewComposedOptions("composite", children); err == nil {
			t.Errorf("%v: accepted", children)
		}
	}
	// Invalidation needs a cache that deletes: checked at Init, before any load.
	opts, err := driver.NewComposedOptions("composite", map[string]map[string]string{
		"composite": {"cache": "nodelete", "database": "memory"}, "memory": {}, "nodelete": {}})
	if err != nil {
		t.Fatal(err)
	}
	d := &Driver{}
	err = d.Init(context.Background(), opts)
	_ = d.Close()
	if err == nil || driver.Classify(err) != driver.ClassRejected {
		t.Fatalf("invalidate with a cache that cannot delete: %v", err)
	}
}

// noDelete is a store without Delete, for the check above.
type noDelete struct{ driver.Driver }

func init() {
	driver.MustRegister(driver.Definition{Name: "nodelete", Summary: "memory without Delete (composite tests)",
		NewOptions: func() any { return &struct{}{} },
		New: func() driver.Driver {
			def, _ := driver.Lookup("memory")
			return &noDeleteInit{noDelete{def.New()}}
		}})
}

// noDeleteInit initialises the wrapped memory driver with its defaults.
type noDeleteInit struct{ noDelete }

func (n *noDeleteInit) Init(ctx context.Context, _ any) error {
	o, err := driver.NewOptions("memory", nil)
	if err != nil {
		return err
	}
	return n.Driver.Init(ctx, o)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
