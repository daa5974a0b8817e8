//go:build integration

package cassandra

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// readerGoroutines counts the shared connections' reader goroutines alive.
func readerGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*muxConn).read(") + strings.Count(string(buf), "(*muxConn).next(")
}

// sharedGoroutines counts the goroutines whose stack is in shared.go (a worker left
// waiting or reading).
func sharedGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "drivers/cassandra/shared.go")
}

// runBatch runs ops on pl with the given deadline, interrupting the pipeline when it
// passes as the engine's watchdog does, and returns each operation's error and how long
// Run took.
func runBatch(pl driver.Pipeline, ops []driver.PipelineOp, timeout time.Duration) ([]error, [][]byte, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stop := context.AfterFunc(ctx, pl.Interrupt)
	defer stop()
	errs := make([]error, len(ops))
	vals := make([][]byte, len(ops))
	calls := make([]int, len(ops))
	start := time.Now()
	pl.Run(ctx, ops, func(i int, v []byte, err error) {
		calls[i]++
		errs[i] = err
		vals[i] = append([]byte(nil), v...)
	})
	took := time.Since(start)
	for i, n := range calls {
		if n != 1 {
			errs[i] = fmt.Errorf("done called %d times for operation %d", n, i)
		}
	}
	return errs, vals, took
}

// TestDirectSharedConns checks mode=direct with sharedConns: many workers' pipelines
// share few connections and read back what they wrote (batches with conflicting keys
// included); operations on a stalled node (SIGSTOP) end at their deadline as timeouts,
// their late replies are dropped and the connection serves again; a dropped connection
// fails the operations on it as unavailable and the next batch reconnects; no goroutine
// reads a connection (the waiting workers do), and none is left after Close.
func TestDirectSharedConns(t *testing.T) {
	before := readerGoroutines()
	d := open(t, map[string]string{"table": "direct_shared", "mode": "direct", "sharedConns": "2", "timeout": "5m"})
	ctx := drivertest.Context(t)
	const workers = 16
	pls := make([]driver.Pipeline, workers)
	for i := range pls {
		pl, err := d.NewPipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := pl.(*sharedPipeline); !ok {
			t.Fatalf("sharedConns=2 gives a %T; want a shared pipeline", pl)
		}
		pls[i] = pl
	}
	// each runs f on every pipeline concurrently.
	each := func(f func(w int, pl driver.Pipeline)) {
		var wg sync.WaitGroup
		for w, pl := range pls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(w, pl)
			}()
		}
		wg.Wait()
	}
	roundTrip := func(t *testing.T, round string) {
		t.Helper()
		var mu sync.Mutex
		each(func(w int, pl driver.Pipeline) {
			for j := range 2 {
				k := fmt.Sprintf("%s-w%d-%d", round, w, j)
				// A write, a read of it, a second write and a read: the reads must see
				// the writes before them in the batch.
				ops := []driver.PipelineOp{
					{Op: driver.PipelineWrite, Key: k, Value: []byte("one")},
					{Op: driver.PipelineRead, Key: k},
					{Op: driver.PipelineWrite, Key: k, Value: []byte("two")},
					{Op: driver.PipelineRead, Key: k},
					{Op: driver.PipelineRead, Key: k + "-missing"},
				}
				errs, vals, _ := runBatch(pl, ops, 30*time.Second)
				mu.Lock()
				if errs[0] != nil || errs[1] != nil || errs[2] != nil || errs[3] != nil || string(vals[1]) != "one" || string(vals[3]) != "two" {
					t.Errorf("worker %d: errors %v, values %q %q; want one, two", w, errs, vals[1], vals[3])
				}
				if errs[4] != driver.ErrNotFound {
					t.Errorf("worker %d: read of a missing key: %v; want not found", w, errs[4])
				}
				mu.Unlock()
			}
		})
	}
	t.Run("round trip", func(t *testing.T) { roundTrip(t, "a") })
	if n := readerGoroutines() - before; n != 0 {
		t.Errorf("%d reader goroutines for 16 workers on sharedConns=2; want none (the workers read)", n)
	}

	t.Run("stalled node", func(t *testing.T) {
		resume, err := srv.Pause()
		if err != nil {
			t.Fatal(err)
		}
		defer resume()
		const timeout = 300 * time.Millisecond
		var mu sync.Mutex
		each(func(w int, pl driver.Pipeline) {
			for range 3 {
				ops := []driver.PipelineOp{{Op: driver.PipelineRead, Key: fmt.Sprintf("a-w%d-0", w)}, {Op: driver.PipelineWrite, Key: "stall", Value: []byte("x")}}
				// The driver's own request timeout is 5 minutes (its most): a batch that the
				// deadline does not end fails at the minute's patience. How soon after
				// the deadline it returns is the machine's (it was bounded at 2 s).
				var errs []error
				if !testserver.Patiently(func() { errs, _, _ = runBatch(pl, ops[:1+w%2], timeout) }) {
					t.Errorf("worker %d: a batch with a %v deadline on a stalled node has not returned after a minute", w, timeout)
					return
				}
				mu.Lock()
				for i, err := range errs[:1+w%2] {
					if c := driver.Classify(err); c != driver.ClassTimeout {
						t.Errorf("worker %d op %d on a stalled node: class %v (%v); want timeout", w, i, c, err)
					}
				}
				mu.Unlock()
			}
		})
		resume()
		// The connections serve again, and the late replies, read by whoever reads the
		// connection next, free their stream ids.
		roundTrip(t, "b")
		deadline := time.Now().Add(30 * time.Second)
		for r := 0; inFlight(d) > 0 && time.Now().Before(deadline); r++ {
			time.Sleep(50 * time.Millisecond)
			roundTrip(t, fmt.Sprintf("b%d", r))
		}
		if n := inFlight(d); n > 0 {
			t.Errorf("%d stream ids still reserved 30 s after the stall; want their late replies to free them", n)
		}
	})

	t.Run("leader deadline", func(t *testing.T) {
		// pls[0] and pls[2] share a connection. On a stalled node pls[0] leads (it waits
		// first) with a short deadline and pls[2] waits behind it with a long one: when
		// pls[0] gives up, pls[2] must take the lead and read its own reply once the node
		// resumes, not sit out its deadline.
		resume, err := srv.Pause()
		if err != nil {
			t.Fatal(err)
		}
		defer resume()
		type res struct {
			errs []error
			vals [][]byte
			took time.Duration
		}
		first, second := make(chan res, 1), make(chan res, 1)
		go func() {
			errs, vals, took := runBatch(pls[0], []driver.PipelineOp{{Op: driver.PipelineRead, Key: "a-w0-0"}}, 500*time.Millisecond)
			first <- res{errs, vals, took}
		}()
		time.Sleep(200 * time.Millisecond)
		go func() {
			errs, vals, took := runBatch(pls[2], []driver.PipelineOp{{Op: driver.PipelineRead, Key: "a-w2-0"}}, 60*time.Second)
			second <- res{errs, vals, took}
		}()
		r0 := <-first
		if c := driver.Classify(r0.errs[0]); c != driver.ClassTimeout {
			t.Errorf("the leader on a stalled node: class %v (%v); want timeout", c, r0.errs[0])
		}
		resume()
		// A follower that sat out its deadline (60 s) instead of reading its reply once
		// it came fails as a timeout (it was bounded at 20 s after the resume too).
		r2 := <-second
		if r2.errs[0] != nil || string(r2.vals[0]) != "two" {
			t.Errorf("the follower after the leader gave up: %v, %q; want two, read as soon as it came", r2.errs[0], r2.vals[0])
		}
	})

	t.Run("dropped connection", func(t *testing.T) {
		// Stall the node so requests are in flight, then cut the connections under them.
		resume, err := srv.Pause()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([][]error, workers)
		for w, pl := range pls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[w], _, _ = runBatch(pl, []driver.PipelineOp{{Op: driver.PipelineRead, Key: "cut"}}, 20*time.Second)
			}()
		}
		time.Sleep(500 * time.Millisecond)
		d.sharedMu.Lock()
		for _, sc := range d.shared {
			if mc := sc.cur.Load(); mc != nil {
				_ = mc.nc.Close()
			}
		}
		d.sharedMu.Unlock()
		wg.Wait()
		resume()
		for w, e := range errs {
			if c := driver.Classify(e[0]); c != driver.ClassUnavailable {
				t.Errorf("worker %d: an op on a dropped connection: class %v (%v); want unavailable", w, c, e[0])
			}
		}
		roundTrip(t, "c")
	})

	for _, pl := range pls {
		if err := pl.Close(); err != nil {
			t.Error(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n := readerGoroutines() - before; n != 0 {
		t.Errorf("%d reader goroutines left after Close; want none", n)
	}
	if n := sharedGoroutines(); n != 0 {
		t.Errorf("%d goroutines in shared.go left after Close; want none", n)
	}
}

// inFlight counts the stream ids reserved on the driver's shared connections.
func inFlight(d *Driver) int {
	n := 0
	d.sharedMu.Lock()
	defer d.sharedMu.Unlock()
	for _, sc := range d.shared {
		mc := sc.cur.Load()
		if mc == nil {
			continue
		}
		mc.mu.Lock()
		for _, o := range mc.owner {
			if o != nil {
				n++
			}
		}
		mc.mu.Unlock()
	}
	return n
}

// TestCloseOnStalledNode checks that Close returns within its bound while the node is
// stalled (SIGSTOP): gocql's Session.Close can wait on its control connection for far
// longer, and a run's end or a driver swap must not hang on it.
func TestCloseOnStalledNode(t *testing.T) {
	for _, mode := range []string{"gocql", "direct"} {
		t.Run(mode, func(t *testing.T) {
			d, err := tryOpen(map[string]string{"table": "close_stalled", "mode": mode, "sharedConns": "1", "timeout": "5m"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := drivertest.Context(t)
			if mode == "direct" {
				pl, err := d.NewPipeline(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if errs, _, _ := runBatch(pl, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "k", Value: []byte("v")}}, 30*time.Second); errs[0] != nil {
					t.Fatal(errs[0])
				}
				defer pl.Close()
			} else if err := d.Write(ctx, "k", []byte("v")); err != nil {
				t.Fatal(err)
			}
			resume, err := srv.Pause()
			if err != nil {
				t.Fatal(err)
			}
			defer resume()
			// Let gocql notice: its heartbeats and the control connection's queries stall.
			time.Sleep(2 * time.Second)
			// The node stays stopped until Close returns: a Close that waits for it
			// fails at the minute's patience (it was bounded at 10 s; its own bound is
			// sessionCloseWait, and the driver's request timeout is 5 minutes).
			start := time.Now()
			if !testserver.Patiently(func() { err = d.Close() }) {
				t.Fatalf("Close on a stalled node has not returned after a minute; want about %v", sessionCloseWait)
			}
			if err != nil {
				t.Errorf("Close: %v", err)
			}
			t.Logf("Close on a stalled node took %v", time.Since(start))
			resume()
		})
	}
}
