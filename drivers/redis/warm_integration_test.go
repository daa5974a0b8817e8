//go:build integration

package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// warmDB is the database the warm tests' driver selects: the server lists each of its
// connections with db=9 (CLIENT LIST), which tells them from every other test's.
const warmDB = "9"

// clientsOn counts the server's connections that selected database db.
func clientsOn(t *testing.T, db string) int {
	t.Helper()
	list, err := raw(t).ClientList(drivertest.Context(t)).Result()
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	return strings.Count(list, " db="+db+" ")
}

// waitClients waits, on the server's answers, until it lists want connections on db.
func waitClients(t *testing.T, db string, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := clientsOn(t, db)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the server lists %d connections on db %s, want %d", what, got, db, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runOne runs one write on a new worker's pipeline and returns the pipeline.
func runOne(t *testing.T, d *Driver, key string) driver.Pipeline {
	t.Helper()
	ctx := drivertest.Context(t)
	p, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	var got error
	p.Run(ctx, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: key, Value: []byte("v")}}, func(_ int, _ []byte, err error) { got = err })
	if got != nil {
		t.Fatalf("write %s: %v", key, got)
	}
	return p
}

// Warm opens the workers' connections, set up (SELECT) before any operation; the workers'
// pipelines take them instead of connecting; a connection that waited longer than warmFor
// is closed and its worker connects anew; Close closes those never taken.
func TestDirectWarmOpensTheWorkersConnections(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"mode": "direct", "db": warmDB})
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	d.direct.warm = driver.NewWarmConns(driver.WarmKeepFor, clock, func(w warmed) { _ = w.nc.Close() })
	waitClients(t, warmDB, 0, "after Init")

	if err := d.Warm(ctx, 6); err != nil {
		t.Fatalf("Warm(6): %v", err)
	}
	if got := clientsOn(t, warmDB); got != 6 {
		t.Fatalf("after Warm(6) the server lists %d connections, want 6", got)
	}
	if err := d.Warm(ctx, 6); err != nil {
		t.Fatalf("Warm(6) again: %v", err)
	}
	if got := clientsOn(t, warmDB); got != 6 {
		t.Errorf("after a second Warm(6) the server lists %d connections, want the same 6", got)
	}
	for i := range 6 {
		runOne(t, d, fmt.Sprintf("warm-%d", i))
	}
	if got, waiting := clientsOn(t, warmDB), d.direct.warm.Len(); got != 6 || waiting != 0 {
		t.Errorf("after six workers' first writes: %d connections (want 6), %d warmed ones waiting (want 0)", got, waiting)
	}
	runOne(t, d, "warm-7")
	if got := clientsOn(t, warmDB); got != 7 {
		t.Errorf("a seventh worker: %d connections, want 7 (it connects itself)", got)
	}

	// Two warmed connections that wait longer than warmFor are not used.
	if err := d.Warm(ctx, 2); err != nil {
		t.Fatalf("Warm(2): %v", err)
	}
	waitClients(t, warmDB, 9, "after Warm(2)")
	mu.Lock()
	now = now.Add(driver.WarmKeepFor + time.Second)
	mu.Unlock()
	runOne(t, d, "warm-stale")
	waitClients(t, warmDB, 8, "a worker after the warmed connections expired (two closed, one opened)")

	if err := d.Warm(ctx, 3); err != nil {
		t.Fatalf("Warm(3): %v", err)
	}
	waitClients(t, warmDB, 11, "after Warm(3)")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The workers' pipelines are the engine's to close; the warmed ones are the driver's.
	waitClients(t, warmDB, 8, "after Close (the three warmed connections closed)")
}

// The first operation of a worker whose connection Warm opened measures the server, not
// a connect: its pipeline's connection is the one the server listed after Warm.
func TestDirectWarmedWorkerDoesNotConnect(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"mode": "direct", "db": warmDB})
	if err := d.Warm(ctx, 1); err != nil {
		t.Fatal(err)
	}
	list, err := raw(t).ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var warmedAddr string
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, " db="+warmDB+" ") {
			for _, f := range strings.Fields(l) {
				if a, ok := strings.CutPrefix(f, "addr="); ok {
					warmedAddr = a
				}
			}
		}
	}
	if warmedAddr == "" {
		t.Fatalf("no connection on db %s after Warm(1): %s", warmDB, list)
	}
	p := runOne(t, d, "warm-first").(*pipeline)
	if got := p.conn.Conn().LocalAddr().String(); got != warmedAddr {
		t.Errorf("the worker's pipeline connects from %s, not from the warmed connection's %s", got, warmedAddr)
	}
}

// Warm stops at its first failure: against a server that closes every connection at
// once, Warm(10000) returns an error after at most one wave of connects, not ten thousand.
func TestDirectWarmStopsAtItsFirstFailure(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"mode": "direct", "db": warmDB})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	// The same driver pointed at the closing server: SELECT's reply never comes.
	d.opts.Addrs = []string{ln.Addr().String()}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = d.Warm(wctx, 10000)
	if err == nil {
		t.Fatal("Warm against a server that closes every connection succeeded")
	}
	if n := accepted.Load(); n > 2*driver.WarmAtOnce {
		t.Errorf("Warm made %d connections after its first failure's wave, want at most %d", n, 2*driver.WarmAtOnce)
	}
	if c := driver.Classify(err); c != driver.ClassUnavailable {
		t.Errorf("Warm's error: class %v, want unavailable (a server that hangs up): %v", c, err)
	}
	if got := d.direct.warm.Len(); got != 0 {
		t.Errorf("%d connections wait after a failed Warm, want 0", got)
	}
}

// A server that accepts and never answers SELECT holds Warm for connectTimeout, not for
// as long as its context lasts (the node's Init context has no deadline).
func TestDirectWarmBoundedByConnectTimeout(t *testing.T) {
	d := open(t, map[string]string{"mode": "direct", "db": warmDB, "connectTimeout": "300ms"})
	d.opts.Addrs = []string{testserver.BlackHole(t)}
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "SELECT", true: "TLS handshake"}[useTLS], func(t *testing.T) {
			if useTLS {
				d.tls = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // never completes: the peer never answers
			}
			warmWithin(t, d)
		})
	}
}

// warmWithin checks Warm(3) against a server that never answers ends in a timeout within
// about connectTimeout.
func warmWithin(t *testing.T, d *Driver) {
	// A context that ends after 10 s, so that a Warm without its own bound fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := d.Warm(ctx, 3)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Warm against a server that never answers took %v, want about connectTimeout (300ms)", took)
	}
	if c := driver.Classify(err); err == nil || c != driver.ClassTimeout {
		t.Errorf("Warm against a server that never answers: %v (class %v), want a timeout", err, c)
	}
}
