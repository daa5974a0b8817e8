//go:build integration

package postgres

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// runOp runs one operation on pl the way the engine does: a context with the operation's
// deadline, and Interrupt called from another goroutine once it ends (the engine's
// watchdog). Whatever pgx keeps of a context after the call returns, this one stays valid.
func runOp(pl driver.Pipeline, timeout time.Duration, op driver.PipelineOp) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	stop := context.AfterFunc(ctx, pl.Interrupt)
	var got error
	n := 0
	pl.Run(ctx, []driver.PipelineOp{op}, func(_ int, _ []byte, err error) { got, n = err, n+1 })
	cancel()
	stop()
	if n != 1 {
		return fmt.Errorf("done called %d times", n)
	}
	return got
}

// TestDirectTimeoutKeepsConnection: with opTimeout shorter than some operations take
// (writes to a key whose row another transaction holds locked, or that sleep in a
// trigger), each such operation times out, the server cancels its query and the
// connection is kept: the operations after it succeed, on the same backend. The driver
// used to close the connection on every timeout and reconnect inside the next
// operation's deadline, a backend per timed-out operation, and with opTimeout near the
// store's tail no operation succeeded at all.
func TestDirectTimeoutKeepsConnection(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS tmo (key TEXT PRIMARY KEY, value BYTEA NOT NULL)",
		"CREATE TABLE IF NOT EXISTS tmo_pids (pid INT PRIMARY KEY)",
		"TRUNCATE tmo_pids",
		// Every write notes its backend, so the test counts the backends the run used.
		`CREATE OR REPLACE FUNCTION tmo_note() RETURNS trigger AS $$ BEGIN
			INSERT INTO tmo_pids VALUES (pg_backend_pid()) ON CONFLICT DO NOTHING;
			IF NEW.key LIKE 'sleep-%' THEN PERFORM pg_sleep(2); END IF;
			RETURN NEW; END $$ LANGUAGE plpgsql`,
		"DROP TRIGGER IF EXISTS tmo_note ON tmo",
		"CREATE TRIGGER tmo_note BEFORE INSERT OR UPDATE ON tmo FOR EACH ROW EXECUTE FUNCTION tmo_note()",
		"INSERT INTO tmo VALUES ('locked', 'v') ON CONFLICT DO NOTHING",
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, tc := range []struct {
		name    string
		slow    string // the key of the operations that time out
		timeout time.Duration
		pipe    string        // pipelineSync
		latency time.Duration // one way, through a proxy; 0 for none
	}{
		{"row lock", "locked", 300 * time.Millisecond, "op", 0},
		{"pg_sleep", "sleep-1", 250 * time.Millisecond, "op", 0},
		{"row lock, batch sync", "locked", 300 * time.Millisecond, "batch", 0},
		// A network with 30 ms each way: an operation takes a round trip (60 ms), a
		// connect with its two prepares three (180 ms), more than opTimeout: a reconnect
		// inside the operation's deadline never succeeds.
		{"row lock, 30ms network, opTimeout below a connect", "locked", 150 * time.Millisecond, "op", 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := raw.Exec(ctx, "TRUNCATE tmo_pids"); err != nil {
				t.Fatal(err)
			}
			// The lock holder: its transaction keeps key 'locked' locked until the end.
			lock, err := raw.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lock.Rollback(context.Background()) }()
			if _, err := lock.Exec(ctx, "SELECT 1 FROM tmo WHERE key = 'locked' FOR UPDATE"); err != nil {
				t.Fatal(err)
			}
			dsn := srv.DSN()
			if tc.latency > 0 {
				dsn = strings.Replace(dsn, srv.Addr(), slowProxy(t, srv.Addr(), tc.latency), 1)
			}
			d := open(t, map[string]string{"dsn": dsn, "table": "tmo", "createSchema": "false", "mode": "direct", "pipelineSync": tc.pipe, "poolSize": "1"})
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Close()
			const ops, every = 40, 4 // every 4th operation times out
			var ok, timedOut int
			var others []string
			for i := range ops {
				key := fmt.Sprintf("fast-%d", i%8)
				if i%every == every-1 {
					key = tc.slow
				}
				err := runOp(pl, tc.timeout, driver.PipelineOp{Op: driver.PipelineWrite, Key: key, Value: []byte("v")})
				switch c := driver.Classify(err); {
				case err == nil:
					ok++
				case c == driver.ClassTimeout && key == tc.slow:
					timedOut++
				default:
					others = append(others, fmt.Sprintf("%s: %v (%v)", key, err, c))
				}
			}
			// The slow operations time out, always; the others succeed, all but one or two
			// on a machine so loaded that a cancel takes longer than cancelGrace (or, with
			// the slow network, a round trip longer than opTimeout).
			fast := ops - ops/every
			if timedOut < ops/every || ok < fast*8/10 {
				t.Errorf("%d ok, %d timed out; want at least %d timeouts and %d of %d ok; other failures: %s",
					ok, timedOut, ops/every, fast*8/10, fast, strings.Join(others, "; "))
			}
			var backends int
			if err := raw.QueryRow(ctx, "SELECT count(*) FROM tmo_pids").Scan(&backends); err != nil {
				t.Fatal(err)
			}
			st := d.DriverStats()
			if backends > 2 {
				t.Errorf("the run's writes came from %d backends with poolSize 1 and %d timeouts; want 1 (2 if a cancel was too slow): a timed-out query is cancelled and its connection kept", backends, timedOut)
			}
			if st["directCancels"] < int64(timedOut) {
				t.Errorf("driver stats %v: want a cancel per timeout", st)
			}
			t.Logf("%d ok, %d timed out, %d backends, stats %v", ok, timedOut, backends, st)
		})
	}
}

// TestDirectPoolSizeBoundsBackends: more workers than poolSize share poolSize backends in
// mode=direct (the driver used to open one per worker, elastic ones included), and a
// worker waits for a free connection instead of failing.
func TestDirectPoolSizeBoundsBackends(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	const poolSize, workers, perWorker = 3, 10, 60
	app := fmt.Sprintf("ndbench_bound_%d", time.Now().UnixNano())
	d := open(t, map[string]string{"dsn": srv.DSN() + "&application_name=" + app, "table": "bound", "mode": "direct", "poolSize": fmt.Sprint(poolSize)})
	var (
		wg       sync.WaitGroup
		ok       atomic.Int64
		firstErr atomic.Value
		running  atomic.Bool
	)
	running.Store(true)
	for w := range workers {
		wg.Go(func() {
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			defer pl.Close()
			for i := range perWorker {
				op := driver.PipelineOp{Op: driver.PipelineWrite, Key: fmt.Sprintf("b-%d-%d", w, i%4), Value: []byte("v")}
				if err := runOp(pl, 10*time.Second, op); err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	most := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		case <-time.After(5 * time.Millisecond):
		}
		var n int
		if err := raw.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		most = max(most, n)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		t.Errorf("an operation failed: %v", err)
	}
	if ok.Load() != workers*perWorker {
		t.Errorf("%d of %d operations succeeded", ok.Load(), workers*perWorker)
	}
	if most > poolSize || most == 0 {
		t.Errorf("up to %d backends of application_name %s with %d workers; want between 1 and poolSize %d", most, app, workers, poolSize)
	}
	t.Logf("%d workers, poolSize %d: at most %d backends, stats %v", workers, poolSize, most, d.DriverStats())
}

// TestDirectTooManyConnections: in mode=direct a server out of connection slots
// (SQLSTATE 53300, here a role's CONNECTION LIMIT) fails the operations that cannot get a
// connection as unavailable, naming max_connections and poolSize, while the connections it
// did get keep working; it was counted as the store throttling.
func TestDirectTooManyConnections(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	for _, q := range []string{
		"DO $$ BEGIN CREATE ROLE limited2 LOGIN NOSUPERUSER CONNECTION LIMIT 2; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
		"CREATE TABLE IF NOT EXISTS limited_kv (key TEXT PRIMARY KEY, value BYTEA NOT NULL)",
		"GRANT ALL ON TABLE limited_kv TO limited2",
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := strings.Replace(srv.DSN(), "postgres@", "limited2@", 1)
	d := open(t, map[string]string{"dsn": dsn, "table": "limited_kv", "createSchema": "false", "mode": "direct", "poolSize": "6"})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ok      int
		byClass [driver.NumClasses]int
		sample  [driver.NumClasses]string
	)
	for w := range 6 {
		wg.Go(func() {
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer pl.Close()
			for i := range 40 {
				op := driver.PipelineOp{Op: driver.PipelineWrite, Key: fmt.Sprintf("l-%d-%d", w, i%4), Value: []byte("v")}
				err := runOp(pl, 5*time.Second, op)
				mu.Lock()
				if err == nil {
					ok++
				} else {
					c := driver.Classify(err)
					byClass[c]++
					sample[c] = err.Error()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok == 0 {
		t.Errorf("no operation succeeded on the 2 connections the role may open")
	}
	if byClass[driver.ClassUnavailable] == 0 {
		t.Errorf("no operation failed as unavailable with 6 workers and a role limited to 2 connections; failures %v", byClass)
	}
	for c, n := range byClass {
		if n > 0 && driver.Class(c) != driver.ClassUnavailable {
			t.Errorf("%d failures classified %v, e.g. %s; want unavailable", n, driver.Class(c), sample[c])
		}
	}
	if s := sample[driver.ClassUnavailable]; s != "" && (!strings.Contains(s, "max_connections") || !strings.Contains(s, "poolSize=6") || !strings.Contains(s, "53300")) {
		t.Errorf("unavailable failure %q does not name max_connections, poolSize=6 and SQLSTATE 53300", s)
	}
	t.Logf("%d ok, failures %v, e.g. %s", ok, byClass, sample[driver.ClassUnavailable])
}

// TestDirectTimeoutOnPausedServer: a server that answers neither the query nor its cancel
// (paused) has the connection cut cancelGrace after the deadline; the operation is a
// timeout, and once the server is back the worker goes on, on a connection opened in the
// background.
func TestDirectTimeoutOnPausedServer(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"table": "paused", "mode": "direct", "poolSize": "1"})
	pl, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	op := driver.PipelineOp{Op: driver.PipelineWrite, Key: "p", Value: []byte("v")}
	if err := runOp(pl, 5*time.Second, op); err != nil {
		t.Fatalf("before the pause: %v", err)
	}
	resume, err := srv.Pause()
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	start := time.Now()
	err = runOp(pl, timeout, op)
	took := time.Since(start)
	resume()
	if c := driver.Classify(err); c != driver.ClassTimeout {
		t.Errorf("on a paused server: class %v (%v), want timeout", c, err)
	}
	// Generous: the bound is the deadline plus cancelGrace, then scheduling on a busy machine.
	if limit := timeout + cancelGrace + 3*time.Second; took > limit {
		t.Errorf("the operation took %v on a paused server; want at most %v", took, limit)
	}
	// The cut connection was replaced in the background: the first operation after the
	// resume gets the new one (a dropped connection once freed its slot without waking the
	// batch waiting for it, which then waited out its deadline).
	if err := runOp(pl, 5*time.Second, op); err != nil {
		t.Errorf("the first operation after the server resumed: %v", err)
	}
	t.Logf("took %v on the paused server; stats %v", took.Round(time.Millisecond), d.DriverStats())
}

// TestDirectPoolIdleAfterBackfill: in mode=direct the pool that served a backfill closes
// its connections once they are idle, so the load after it holds the workers' poolSize
// backends, not twice that.
func TestDirectPoolIdleAfterBackfill(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	defer func(v time.Duration) { poolIdle = v }(poolIdle)
	poolIdle = 300 * time.Millisecond
	const poolSize = 2
	app := fmt.Sprintf("ndbench_idle_%d", time.Now().UnixNano())
	d := open(t, map[string]string{"dsn": srv.DSN() + "&application_name=" + app, "table": "idle", "mode": "direct", "poolSize": fmt.Sprint(poolSize)})
	backends := func() int {
		var n int
		if err := raw.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A backfill: bulk writes from several goroutines open the pool's connections.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				if err := d.WriteBulk(ctx, []string{fmt.Sprintf("i-%d-%d", w, i)}, [][]byte{[]byte("v")}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The load: more workers than poolSize.
	for w := range 4 {
		wg.Go(func() {
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer pl.Close()
			for i := range 20 {
				if err := runOp(pl, 10*time.Second, driver.PipelineOp{Op: driver.PipelineWrite, Key: fmt.Sprintf("i-%d-%d", w, i), Value: []byte("v")}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := backends()
	for deadline := time.Now().Add(10 * time.Second); n > poolSize && time.Now().Before(deadline); n = backends() {
		time.Sleep(50 * time.Millisecond)
	}
	if n > poolSize {
		t.Errorf("%d backends of application_name %s after the backfill's connections were idle; want at most poolSize %d", n, app, poolSize)
	}
}

// slowProxy forwards TCP connections to addr, delaying every chunk by latency in each
// direction (latency, not bandwidth: chunks are not held behind each other). It returns
// its address; the proxy stops when the test ends.
func slowProxy(t *testing.T, addr string, latency time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	pipe := func(dst, src net.Conn) {
		type chunk struct {
			at time.Time
			b  []byte
		}
		ch := make(chan chunk, 1024)
		wg.Go(func() {
			defer close(ch)
			for {
				b := make([]byte, 32<<10)
				n, err := src.Read(b)
				if n > 0 {
					ch <- chunk{time.Now().Add(latency), b[:n]}
				}
				if err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			defer func() { _ = dst.Close(); _ = src.Close() }()
			for c := range ch {
				time.Sleep(time.Until(c.at))
				if _, err := dst.Write(c.b); err != nil {
					for range ch { // let the reader finish
					}
					return
				}
			}
		})
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			pipe(s, c)
			pipe(c, s)
		}
	})
	return ln.Addr().String()
}
