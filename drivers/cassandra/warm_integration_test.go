//go:build integration

package cassandra

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// clientPorts returns the client ports of the node's connections (system_views.clients).
func clientPorts(t *testing.T) map[int]bool {
	t.Helper()
	iter := raw(t).Query("SELECT port FROM system_views.clients").Iter()
	ports := map[int]bool{}
	var port int
	for iter.Scan(&port) {
		ports[port] = true
	}
	if err := iter.Close(); err != nil {
		t.Fatalf("read system_views.clients: %v", err)
	}
	return ports
}

// localPort is the client port of a pipeline's connection.
func localPort(t *testing.T, pl driver.Pipeline) int {
	t.Helper()
	nc := pl.(*pipeline).conn.Conn()
	if nc == nil {
		t.Fatal("the pipeline has no connection")
	}
	return nc.LocalAddr().(*net.TCPAddr).Port
}

// Warm opens the workers' connections (STARTUP and PREPAREs done) before any operation;
// the workers' pipelines run on them instead of connecting; Close closes those never
// taken.
func TestDirectWarm(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"table": "direct_warm", "mode": "direct", "timeout": "30s"})
	before := clientPorts(t)
	if err := d.Warm(ctx, 3); err != nil {
		t.Fatalf("Warm(3): %v", err)
	}
	warmed := map[int]bool{}
	for p := range clientPorts(t) {
		if !before[p] {
			warmed[p] = true
		}
	}
	if len(warmed) != 3 {
		t.Fatalf("the node lists %d new connections after Warm(3), want 3", len(warmed))
	}
	for i := range 4 {
		pl, err := d.NewPipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer pl.Close()
		var got error
		pl.Run(ctx, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "warm", Value: []byte("v")}}, func(_ int, _ []byte, err error) { got = err })
		if got != nil {
			t.Fatalf("worker %d's write: %v", i, got)
		}
		port := localPort(t, pl)
		if i < 3 && !warmed[port] {
			t.Errorf("worker %d runs on a connection of its own (port %d), not a warmed one %v", i, port, warmed)
		}
		if i == 3 && warmed[port] {
			t.Errorf("the fourth worker runs on a warmed connection (port %d); Warm(3) opened three", port)
		}
	}
	if n := d.warm.Len(); n != 0 {
		t.Errorf("%d warmed connections wait after three workers took theirs", n)
	}
	if err := d.Warm(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := d.warm.Len(); n != 2 {
		t.Fatalf("%d warmed connections wait after Warm(2), want 2", n)
	}
	now := clientPorts(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The node notices closed connections asynchronously.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := 0
		after := clientPorts(t)
		for p := range now {
			if !before[p] && !warmed[p] && after[p] {
				left++
			}
		}
		// What stays is the fourth worker's own connection (its pipeline is the engine's
		// to close, deferred above).
		if left <= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the warmed connections still listed 20 s after Close", left-1)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A node that accepts and never answers (here: the TLS handshake) holds Warm for
// connectTimeout, not for as long as its context lasts (the node's Init context has no
// deadline).
func TestDirectWarmBoundedByConnectTimeout(t *testing.T) {
	d := open(t, map[string]string{"table": "direct_warm", "mode": "direct", "timeout": "30s", "connectTimeout": "300ms"})
	d.opts.Hosts = []string{testserver.BlackHole(t)}
	d.tls = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // never completes: the peer never answers
	// A context that ends after 10 s, so that a Warm without its own bound fails the test
	// instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := d.Warm(ctx, 3)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Warm against a node that never answers its TLS handshake took %v, want about connectTimeout (300ms)", took)
	}
	if err == nil {
		t.Error("Warm against a node that never answers succeeded")
	}
}
