//go:build integration

package memcached

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// startMemcached starts a memcached of the test's own, for tests that stall, count
// connections on or split keys over servers.
func startMemcached(t *testing.T) *testserver.Server {
	t.Helper()
	s, err := testserver.Memcached(drivertest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// directPipeline opens the driver with values (client=direct among them) and one
// pipeline on it, closed when the test ends.
func directPipeline(t *testing.T, values map[string]string) driver.Pipeline {
	t.Helper()
	pl, err := open(t, values).NewPipeline(drivertest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pl.Close() })
	return pl
}

// serverStat reads one counter of memcached's "stats".
func serverStat(t *testing.T, addr, name string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return stat(t, c, bufio.NewReader(c), name)
}

// stat asks memcached for its "stats" on c (read through rd) and returns the counter
// name, reading the answer to its END so that c can ask again.
func stat(t *testing.T, c net.Conn, rd *bufio.Reader, name string) int {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		t.Fatal(err)
	}
	n, found := 0, false
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("stats from %s: %v", c.RemoteAddr(), err)
		}
		f := strings.Fields(line)
		if len(f) == 1 && f[0] == "END" {
			break
		}
		if len(f) == 3 && f[0] == "STAT" && f[1] == name {
			if n, err = strconv.Atoi(f[2]); err != nil {
				t.Fatal(err)
			}
			found = true
		}
	}
	if !found {
		t.Fatalf("memcached at %s has no stat %s", c.RemoteAddr(), name)
	}
	return n
}

// result is one completed operation of a pipeline's batch.
type result struct {
	value []byte
	err   error
}

// runBatch runs ops on p and returns each operation's result, failing the test when one
// is completed twice or never.
func runBatch(t *testing.T, ctx context.Context, p driver.Pipeline, ops []driver.PipelineOp) []result {
	t.Helper()
	out := make([]result, len(ops))
	seen := make([]bool, len(ops))
	p.Run(ctx, ops, func(i int, v []byte, err error) {
		if seen[i] {
			t.Errorf("operation %d completed twice", i)
		}
		seen[i] = true
		out[i] = result{bytes.Clone(v), err}
	})
	for i, ok := range seen {
		if !ok {
			t.Errorf("operation %d (%s) never completed", i, ops[i].Key)
		}
	}
	return out
}

// TestDirectKeepsGomemcacheServerMapping: with several servers both clients put a key on
// the same server, so data written before a switch of client stays readable after it.
// Writes go in one batch per client over three servers (a server listed twice gets
// twice the share, as gomemcache gives it); each key is then read back by the other
// client, and found on exactly the server gomemcache picks.
func TestDirectKeepsGomemcacheServerMapping(t *testing.T) {
	a, b := startMemcached(t), startMemcached(t)
	servers := []string{a.Addr(), b.Addr(), a.Addr()}
	ctx := drivertest.Context(t)
	direct := open(t, map[string]string{"servers": strings.Join(servers, ","), "client": "direct"})
	gm := memcache.New(servers...)
	pl, err := direct.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()

	const n = 200
	var ops []driver.PipelineOp
	for i := range n {
		k := "map-direct-" + strconv.Itoa(i)
		ops = append(ops, driver.PipelineOp{Op: driver.PipelineWrite, Key: k, Value: []byte(k)})
	}
	for i, r := range runBatch(t, ctx, pl, ops) {
		if r.err != nil {
			t.Fatalf("direct write %s: %v", ops[i].Key, r.err)
		}
	}
	perServer := map[string]int{}
	for _, op := range ops {
		it, err := gm.Get(op.Key)
		if err != nil || string(it.Value) != op.Key {
			t.Fatalf("gomemcache read of %s written by client=direct: %v", op.Key, err)
		}
		// The key is on the server gomemcache picks, and only there.
		want := servers[pick(op.Key, len(servers))]
		for _, s := range []string{a.Addr(), b.Addr()} {
			_, err := memcache.New(s).Get(op.Key)
			if on := err == nil; on != (s == want) {
				t.Fatalf("key %s on %s: %v; gomemcache puts it on %s", op.Key, s, err, want)
			}
		}
		perServer[want]++
	}
	if perServer[a.Addr()] < n/2 || perServer[b.Addr()] < n/6 {
		t.Errorf("keys per server %v; want about 2/3 on %s (listed twice), 1/3 on %s", perServer, a.Addr(), b.Addr())
	}

	// And the other way: what gomemcache wrote, client=direct reads in one batch.
	ops = ops[:0]
	for i := range n {
		k := "map-gomemcache-" + strconv.Itoa(i)
		if err := gm.Set(&memcache.Item{Key: k, Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, driver.PipelineOp{Op: driver.PipelineRead, Key: k})
	}
	for i, r := range runBatch(t, ctx, pl, ops) {
		if r.err != nil || string(r.value) != ops[i].Key {
			t.Fatalf("direct read of %s written by gomemcache = %q, %v", ops[i].Key, r.value, r.err)
		}
	}
}

// TestDirectTimeoutDropsAndRedials: an operation whose server stalls ends at the batch's
// deadline (timeout here) as a timeout; its connection, whose replies are now out of step,
// is closed, and the next operation dials a new one and succeeds once the server is back.
func TestDirectTimeoutDropsAndRedials(t *testing.T) {
	s := startMemcached(t)
	ctx := drivertest.Context(t)
	pl := directPipeline(t, map[string]string{"servers": s.Addr(), "client": "direct", "timeout": "200ms"})
	write := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "stall", Value: []byte("v")}}
	read := []driver.PipelineOp{{Op: driver.PipelineRead, Key: "stall"}}
	if r := runBatch(t, ctx, pl, write); r[0].err != nil {
		t.Fatal(r[0].err)
	}
	dials := serverStat(t, s.Addr(), "total_connections")

	resume, err := s.Pause()
	if err != nil {
		t.Fatal(err)
	}
	r := runBatch(t, ctx, pl, read)
	resume()
	if c := driver.Classify(r[0].err); c != driver.ClassTimeout {
		t.Fatalf("read from a stalled server: %v (class %v), want timeout", r[0].err, c)
	}
	if r := runBatch(t, ctx, pl, read); r[0].err != nil || string(r[0].value) != "v" {
		t.Fatalf("read after the server came back = %q, %v", r[0].value, r[0].err)
	}
	// Our stats connection counts as one dial; the pipeline's new connection as another.
	if got := serverStat(t, s.Addr(), "total_connections"); got != dials+2 {
		t.Errorf("connections made since the timeout: %d, want 2 (the pipeline's redial and this probe)", got-dials)
	}

	// The same with the operation's context ending first (the engine's opTimeout): the
	// engine interrupts the pipeline, as its watchdog does.
	resume, err = s.Pause()
	if err != nil {
		t.Fatal(err)
	}
	octx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	stop := context.AfterFunc(octx, pl.Interrupt)
	r = runBatch(t, octx, pl, read)
	stop()
	cancel()
	resume()
	if c := driver.Classify(r[0].err); c != driver.ClassTimeout || !errors.Is(r[0].err, context.DeadlineExceeded) {
		t.Fatalf("read past its context's deadline: %v (class %v), want a timeout naming the deadline", r[0].err, c)
	}
	if r := runBatch(t, ctx, pl, read); r[0].err != nil || string(r[0].value) != "v" {
		t.Fatalf("read after the interrupted one = %q, %v", r[0].value, r[0].err)
	}
}

// TestDirectRidesOutStaleInterrupts: the engine may interrupt a pipeline after the batch
// it meant has ended; the next batch must not fail for it.
func TestDirectRidesOutStaleInterrupts(t *testing.T) {
	ctx := drivertest.Context(t)
	pl := directPipeline(t, map[string]string{"client": "direct"})
	ops := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "stale", Value: []byte("v")}, {Op: driver.PipelineRead, Key: "stale"}}
	for range 3 {
		for i, r := range runBatch(t, ctx, pl, ops) {
			if r.err != nil {
				t.Fatalf("op %d after a stale interrupt: %v", i, r.err)
			}
		}
		pl.Interrupt()
	}
}

// TestDirectWorkerConnections: a pipeline (one engine worker) holds one connection per
// server it used, and Close gives them back, so an elastic pool that shrinks closes its
// workers' connections.
func TestDirectWorkerConnections(t *testing.T) {
	a, b := startMemcached(t), startMemcached(t)
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"servers": a.Addr() + "," + b.Addr(), "client": "direct"})
	conns := newConnCounter(t, a.Addr(), b.Addr())
	// The driver's start-up version probes have closed, but the servers count them until
	// they notice, asynchronously: the base is the count once it has stopped moving.
	base := conns.settled()
	pls := pipelinesReading(t, ctx, d, 5, 20, "conns-") // 20 keys reach both servers
	if got := conns.await(base+10) - base; got != 10 {
		t.Errorf("5 pipelines over 2 servers hold %d connections, want 10", got)
	}
	for _, pl := range pls {
		if err := pl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.await(base) - base; got != 0 {
		t.Errorf("after Close, %d connections still open", got)
	}
}

// Warm opens a connection per worker and server before any operation (a server listed
// twice, one per listing); the workers' pipelines take them instead of connecting; a
// server that does not answer costs only its own connections, and the error names it;
// Close closes those never taken.
func TestDirectWarmOpensTheWorkersConnections(t *testing.T) {
	a, b := startMemcached(t), startMemcached(t)
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"servers": a.Addr() + "," + b.Addr() + "," + b.Addr(), "client": "direct"})
	conns := newConnCounter(t, a.Addr(), b.Addr())
	base := conns.settled()
	if err := d.Warm(ctx, 4); err != nil {
		t.Fatalf("Warm(4): %v", err)
	}
	if got := conns.await(base+12) - base; got != 12 {
		t.Fatalf("after Warm(4) on a, b, b: %d connections, want 12 (4 to a, 8 to b)", got)
	}
	if err := d.Warm(ctx, 4); err != nil {
		t.Fatal(err)
	}
	pls := pipelinesReading(t, ctx, d, 4, 40, "warm-") // 40 keys reach every listing
	if got, waiting := conns.settled()-base, d.direct.warm.Len(); got != 12 || waiting != 0 {
		t.Errorf("after a second Warm(4) and four workers' batches: %d connections (want the same 12), %d warmed ones waiting (want 0)", got, waiting)
	}
	for _, pl := range pls {
		_ = pl.Close()
	}
	if got := conns.await(base) - base; got != 0 {
		t.Fatalf("after the pipelines closed, %d connections open", got)
	}

	// A listed server that is gone: its connections fail, the live one's are opened.
	gone := startMemcached(t)
	goneAddr := gone.Addr()
	if err := gone.Stop(); err != nil {
		t.Fatal(err)
	}
	d2 := open(t, map[string]string{"servers": a.Addr(), "client": "direct"})
	d2.zones[0].addrs = []string{goneAddr, a.Addr()}
	err := d2.Warm(ctx, 3)
	if err == nil || !strings.Contains(err.Error(), goneAddr) || strings.Contains(err.Error(), a.Addr()) {
		t.Errorf("Warm with %s gone: %v, want an error naming it alone", goneAddr, err)
	}
	if got := conns.await(base+3) - base; got != 3 {
		t.Errorf("the live server holds %d warmed connections, want 3", got)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := conns.await(base) - base; got != 0 {
		t.Errorf("after Close, %d warmed connections open", got)
	}
}

// pipelinesReading opens n workers' pipelines on d, runs on each one batch reading keys
// prefix0 to prefix<keys-1>, and returns them open.
func pipelinesReading(t *testing.T, ctx context.Context, d *Driver, n, keys int, prefix string) []driver.Pipeline {
	t.Helper()
	var pls []driver.Pipeline
	for range n {
		pl, err := d.NewPipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pls = append(pls, pl)
		var ops []driver.PipelineOp
		for k := range keys {
			ops = append(ops, driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + strconv.Itoa(k)})
		}
		runBatch(t, ctx, pl, ops)
	}
	return pls
}

// connCounter sums memcached's curr_connections over servers through one stats
// connection per server, held for the test: a probe that dialled per reading would
// itself be counted after it closed, until the server noticed.
type connCounter struct {
	t     *testing.T
	conns []net.Conn
	rds   []*bufio.Reader
}

func newConnCounter(t *testing.T, addrs ...string) *connCounter {
	t.Helper()
	c := &connCounter{t: t}
	for _, addr := range addrs {
		nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		c.conns = append(c.conns, nc)
		c.rds = append(c.rds, bufio.NewReader(nc))
	}
	return c
}

// read is the sum of curr_connections now (our own stats connections included).
func (c *connCounter) read() int {
	c.t.Helper()
	sum := 0
	for i, nc := range c.conns {
		sum += stat(c.t, nc, c.rds[i], "curr_connections")
	}
	return sum
}

// settled reads until the count has stayed the same for 200 ms (at most 10 s) and returns
// it: connections closed a moment ago are still counted until the server notices.
func (c *connCounter) settled() int {
	c.t.Helper()
	last, since := c.read(), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if n := c.read(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= 200*time.Millisecond {
			break
		}
	}
	return last
}

// await reads until the count is want (at most 10 s) and returns the last reading: the
// server counts connections opened and closed asynchronously.
func (c *connCounter) await(want int) int {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := c.read()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientOption: auto picks direct for plain servers and one zone, gomemcache for
// zones; only client=direct gives pipelines (so workload.pipeline > 1 is refused on
// gomemcache).
func TestClientOption(t *testing.T) {
	two := fmt.Sprintf("a=%s;b=%s", srv.Addr(), srv.Addr())
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{nil, "direct"},
		{map[string]string{"zones": "z=" + srv.Addr()}, "direct"},
		{map[string]string{"zones": two}, "gomemcache"},
		{map[string]string{"client": "gomemcache"}, "gomemcache"},
	} {
		d := open(t, tc.values)
		if got := d.ConnectionInfo()["client"]; got != tc.want || d.Pipelines() != (tc.want == "direct") {
			t.Errorf("%v: client %s, pipelines %v; want %s", tc.values, got, d.Pipelines(), tc.want)
		}
	}
}

// BenchmarkClients compares the two clients as the engine drives them: 50 workers, each
// with a pipeline of its own on client=direct (one operation per batch, the engine's
// workload.pipeline=1) and through Read and Write on gomemcache, one SET and one GET of
// 100 bytes per iteration. It reports client CPU per operation as ops/cpu-s (the test
// binary's user and system time; the server is another process) and allocations. Run:
//
//	go test -tags integration -run '^$' -bench Clients -benchmem -count 5 ./drivers/memcached/
func BenchmarkClients(b *testing.B) {
	value := bytes.Repeat([]byte("v"), 100)
	for _, client := range clients {
		b.Run(client, func(b *testing.B) {
			d := open(b, map[string]string{"client": client})
			var n atomic.Int64
			b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			srv.Measure(b, "op", 2, func() {
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					w := int(n.Add(1))
					keys := make([]string, 1000)
					for i := range keys {
						keys[i] = "bench-" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
					}
					var op func(driver.PipelineOp) error
					if client == "direct" {
						pl, err := d.NewPipeline(ctx)
						if err != nil {
							b.Error(err)
							return
						}
						defer pl.Close()
						ops := make([]driver.PipelineOp, 1)
						var failed error
						done := func(_ int, _ []byte, err error) { failed = err }
						op = func(o driver.PipelineOp) error {
							ops[0] = o
							pl.Run(ctx, ops, done)
							return failed
						}
					} else {
						op = func(o driver.PipelineOp) error {
							if o.Op == driver.PipelineWrite {
								return d.Write(ctx, o.Key, o.Value)
							}
							_, err := d.Read(ctx, o.Key)
							return err
						}
					}
					for i := 0; pb.Next(); i++ {
						k := keys[i%len(keys)]
						if err := op(driver.PipelineOp{Op: driver.PipelineWrite, Key: k, Value: value}); err != nil {
							b.Error(err)
							return
						}
						if err := op(driver.PipelineOp{Op: driver.PipelineRead, Key: k}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// TestDirectParksForEveryReply: a worker gives up its P while it waits for a reply,
// every time, even when the server answers before the worker reads. On one P this is
// what lets the other workers, whose replies are already there, run in turn: a worker
// that found its reply at once went on to its next operation and kept the P for many
// operations (docs/performance.md, "Memcached's tail: workers that never park"). A
// goroutine made runnable just before each batch must have run by the time the batch's
// reply is handed over.
func TestDirectParksForEveryReply(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RawIO's WriteRead, which sends inside the read, is Linux's")
	}
	ctx := drivertest.Context(t)
	pl := directPipeline(t, map[string]string{"client": "direct"})
	value := bytes.Repeat([]byte("v"), 100)
	write := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "parks", Value: value}}
	read := []driver.PipelineOp{{Op: driver.PipelineRead, Key: "parks"}}
	if r := runBatch(t, ctx, pl, write); r[0].err != nil { // connects
		t.Fatal(r[0].err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Bool
	kept := 0
	var failed error
	check := func(_ int, _ []byte, err error) {
		if err != nil {
			failed = err
		}
		if !ran.Load() {
			kept++
		}
	}
	const batches = 400
	for i := range batches {
		ran.Store(false)
		go ran.Store(true)
		ops := read
		if i%5 == 0 {
			ops = write
		}
		pl.Run(ctx, ops, check)
		if failed != nil {
			t.Fatal(failed)
		}
	}
	// Not zero: when another thread's netpoll (sysmon's, or one blocked in epoll from
	// before) sees the reply between the send and the wait, the wait returns at once, as
	// it must. That was 0-1 of 400 here; sending, then reading, kept the P in about half.
	if kept > batches/100 {
		t.Errorf("%d of %d batches completed without giving up the P; want at most %d", kept, batches, batches/100)
	}
}

// TestDirectSendInReadRidesOutStaleInterrupt: a stale interrupt that lands after a
// batch's deadline was set but before its request went out (inside the reply's read)
// is ridden out: the request is sent once, and its reply read.
func TestDirectSendInReadRidesOutStaleInterrupt(t *testing.T) {
	s := startMemcached(t)
	ctx := drivertest.Context(t)
	pl := directPipeline(t, map[string]string{"servers": s.Addr(), "client": "direct"})
	write := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "stale-send", Value: []byte("v")}}
	if r := runBatch(t, ctx, pl, write); r[0].err != nil {
		t.Fatal(r[0].err)
	}
	p := pl.(*pipeline)
	c := &p.conns[0]
	if c.wr == nil {
		t.Skip("the connection sends before it reads (no driver.WriteReader on " + runtime.GOOS + ")")
	}
	gets := serverStat(t, s.Addr(), "cmd_get")
	// A batch in flight as Run sets it up, then the interrupt meant for an earlier one.
	p.ctx, p.deadline = ctx, time.Now().Add(time.Minute)
	if err := c.pc.Conn().SetDeadline(p.deadline); err != nil {
		t.Fatal(err)
	}
	c.w = appendGet(c.w[:0], "stale-send")
	c.unsent = true
	pl.Interrupt()
	v, found, err := c.rd.get()
	if err != nil || !found || string(v) != "v" {
		t.Fatalf("get after a stale interrupt = %q, %v, %v; want \"v\"", v, found, err)
	}
	p.finish()
	if got := serverStat(t, s.Addr(), "cmd_get") - gets; got != 1 {
		t.Errorf("the server answered %d gets, want 1", got)
	}
	read := []driver.PipelineOp{{Op: driver.PipelineRead, Key: "stale-send-other"}}
	if r := runBatch(t, ctx, pl, read); !errors.Is(r[0].err, driver.ErrNotFound) {
		t.Errorf("the next batch's read of a key never written: %q, %v; want a miss (replies in step)", r[0].value, r[0].err)
	}
}
