package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// The connections of mode=direct are shared by the engine's workers, poolSize at most:
// a worker takes one for a batch and keeps it until another worker waits for one (see
// directPool.waiting). A connection per worker
// opened a backend per worker whatever poolSize said, elastic workers included, until
// the server ran out of connection slots.
//
// Connecting happens outside any operation's deadline, one connection at a time per
// free slot, with backoff after a failure: an operation waits for a connection for as
// long as its context allows, and while the server refuses connections (down, or out
// of slots) operations fail at once with the connect error instead of each opening a
// backend that its deadline then abandons.
//
// An operation cut at its deadline does not cost its connection: the query is cancelled
// (PostgreSQL's cancel request, on a connection of its own) and the reply read to its
// end in the background, and the connection goes back to the pool. Closing it instead
// made a run with opTimeout near the store's tail open a backend per operation and
// measure nothing but timeouts and connects.

// dconn is one connection of mode=direct with the read and the upsert prepared on it.
type dconn struct {
	pc          *pgconn.PgConn
	nc          net.Conn // pc's socket, where Interrupt sets a deadline
	read, write *pgconn.StatementDescription
	// wire runs the single operations on nc; synced says it owns the stream (pgconn's
	// SyncConn ran since pgconn last used it).
	wire   *wire
	synced bool
	// broken marks a connection whose stream can no longer be trusted (an I/O error, a
	// batch cut in pgconn's pipeline mode): it is closed when given back.
	broken bool
}

// Backoff between connection attempts after a failure: doubled per failure from the
// first, up to the last.
const (
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// directPool holds mode=direct's connections.
type directPool struct {
	d    *Driver
	free chan *dconn // idle connections, ready
	// slots has a token per connection open, being opened or being drained: its
	// capacity is poolSize.
	slots     chan struct{}
	closing   chan struct{}
	closeOnce sync.Once

	mu sync.Mutex
	// lastErr is the last connect's error while connecting fails; retryAt ends its
	// backoff, during which operations fail with lastErr rather than connect.
	lastErr error
	retryAt time.Time
	backoff time.Duration
	// failed is closed, and replaced, when a connect fails: it wakes the operations
	// waiting for that connection.
	failed chan struct{}
	// drains counts the connections draining a cancelled reply, which close waits for;
	// closed (under mu) stops new ones.
	drains sync.WaitGroup
	closed bool
	// capWaits counts the operations that found every connection of the cap in use and
	// waited for one (DriverStats pool_waits): workers beyond poolSize queue silently
	// otherwise.
	capWaits atomic.Int64

	// A worker keeps its connection between batches in its home (pipeline.home) while
	// no one waits for a connection: a closed loop then takes and gives back nothing per
	// operation, where the free channel cost two channel operations and their locks,
	// about a twentieth of the client's user-space instructions per operation. An
	// operation that finds no idle connection counts itself in waiting, then takes one
	// from any home it finds full (homes lists them, under homesMu); a worker ending its
	// batch while someone waits gives its connection to the free channel instead. Both
	// sides' atomics are sequentially consistent, so a connection homed before a waiter
	// counted itself is found by that waiter's scan, and one homed after is moved to the
	// free channel by its worker: no waiter sleeps beside an idle connection.
	waiting atomic.Int32
	// homed counts the connections in homes, so that an operation waiting beside many
	// workers whose homes are empty (poolSize below the workers) scans none of them.
	homed   atomic.Int32
	homesMu sync.Mutex
	homes   map[*atomic.Pointer[dconn]]struct{}
}

func newDirectPool(d *Driver, size int) *directPool {
	return &directPool{d: d, free: make(chan *dconn, size), slots: make(chan struct{}, size),
		closing: make(chan struct{}), failed: make(chan struct{}),
		homes: make(map[*atomic.Pointer[dconn]]struct{})}
}

// addHome registers a worker's home, where it keeps its connection between batches.
func (p *directPool) addHome(h *atomic.Pointer[dconn]) {
	p.homesMu.Lock()
	p.homes[h] = struct{}{}
	p.homesMu.Unlock()
}

// removeHome unregisters h and gives back the connection it holds.
func (p *directPool) removeHome(h *atomic.Pointer[dconn]) {
	p.homesMu.Lock()
	delete(p.homes, h)
	p.homesMu.Unlock()
	if c := p.unhome(h); c != nil {
		p.put(c)
	}
}

// unhome takes the connection in h, if any.
func (p *directPool) unhome(h *atomic.Pointer[dconn]) *dconn {
	c := h.Swap(nil)
	if c != nil {
		p.homed.Add(-1)
	}
	return c
}

// fromHome takes a connection kept idle in a worker's home, or returns nil.
func (p *directPool) fromHome() *dconn {
	if p.homed.Load() == 0 {
		return nil
	}
	p.homesMu.Lock()
	defer p.homesMu.Unlock()
	for h := range p.homes {
		if c := p.unhome(h); c != nil {
			return c
		}
	}
	return nil
}

// keep puts c, a connection in step after a batch, in the worker's home h, or gives it
// back when someone waits for a connection or the driver closes.
func (p *directPool) keep(h *atomic.Pointer[dconn], c *dconn) {
	if c.broken || p.d.closed.Load() || p.waiting.Load() > 0 {
		p.put(c)
		return
	}
	// Counted before it is stored, so that a waiter that finds it has it counted: the
	// count is never below the connections homed.
	p.homed.Add(1)
	h.Store(c)
	if p.waiting.Load() > 0 || p.d.closed.Load() {
		// A waiter counted itself after the check above and may have scanned the homes
		// before c was stored: c goes where it waits (unless it was taken already).
		if c := p.unhome(h); c != nil {
			p.put(c)
		}
	}
}

// get returns an idle connection, or opens one if fewer than poolSize are open, waiting
// for as long as ctx allows. While connecting fails (in the backoff after a failure) it
// waits for a connection in use to come back, or fails at once with the connect's error
// when none is open.
func (p *directPool) get(ctx context.Context) (*dconn, error) {
	counted, waiting := false, false
	defer func() {
		if waiting {
			p.waiting.Add(-1)
		}
	}()
	// idle returns a connection a worker keeps idle in its home, once this operation is
	// counted as waiting: from then on every worker ending a batch gives its connection
	// back to the free channel (keep), so none is left idle while this one waits.
	idle := func() *dconn {
		if !waiting {
			p.waiting.Add(1)
			waiting = true
		}
		return p.fromHome()
	}
	for {
		select {
		case c := <-p.free:
			return c, nil
		default:
		}
		p.mu.Lock()
		lastErr, failed, retryAt := p.lastErr, p.failed, p.retryAt
		p.mu.Unlock()
		if wait := time.Until(retryAt); lastErr != nil && wait > 0 {
			if c := idle(); c != nil {
				return c, nil
			}
			if len(p.slots) == 0 {
				return nil, lastErr
			}
			t := time.NewTimer(wait)
			select {
			case c := <-p.free:
				t.Stop()
				return c, nil
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, p.waitErr(ctx, lastErr)
			case <-p.closing:
				t.Stop()
				return nil, p.closedErr()
			}
			continue
		}
		// A slot free opens a connection rather than take one a worker keeps.
		dialed := false
		select {
		case c := <-p.free:
			return c, nil
		case p.slots <- struct{}{}:
			go p.dial()
			dialed = true
		default:
			// Every slot taken: a connection a worker keeps idle, or wait for one.
			if c := idle(); c != nil {
				return c, nil
			}
			if !counted {
				// Every connection the cap allows is open and none is idle: this worker
				// queues in the client, which the store's latency then includes.
				p.capWaits.Add(1)
				counted = true
			}
		}
		if dialed {
			if c, done, err := p.afterDial(ctx, failed); done {
				return c, err
			}
			continue
		}
		select {
		case c := <-p.free:
			return c, nil
		case p.slots <- struct{}{}:
			go p.dial()
			if c, done, err := p.afterDial(ctx, failed); done {
				return c, err
			}
		case <-failed:
		case <-ctx.Done():
			return nil, p.waitErr(ctx, nil)
		case <-p.closing:
			return nil, p.closedErr()
		}
	}
}

// afterDial waits, once a connect has started, for a connection (freed or the new one),
// ctx's end or the pool's close (done), or a connect's failure, maybe this one's (not
// done: the caller's loop returns its error or waits for a connection in use).
func (p *directPool) afterDial(ctx context.Context, failed <-chan struct{}) (c *dconn, done bool, err error) {
	select {
	case c := <-p.free:
		return c, true, nil
	case <-failed:
		return nil, false, nil
	case <-ctx.Done():
		return nil, true, p.waitErr(ctx, nil)
	case <-p.closing:
		return nil, true, p.closedErr()
	}
}

// waitErr is the error of an operation whose context ended while it waited for a
// connection, with the last connect's failure if connecting fails.
func (p *directPool) waitErr(ctx context.Context, connectErr error) error {
	if connectErr != nil {
		return fmt.Errorf("postgres: waiting for one of %s connections, while connecting more fails (%v): %w", p.d.opts.poolLabel(), connectErr, ctx.Err())
	}
	return fmt.Errorf("postgres: waiting for one of %s connections: %w", p.d.opts.poolLabel(), ctx.Err())
}

// closedErr is the error of an operation on a closed driver.
func (p *directPool) closedErr() error {
	return fmt.Errorf("connect to %s: %w", RedactDSN(p.d.opts.DSN), net.ErrClosed)
}

// dial opens a connection in a slot already taken, under the connect timeout only, and
// makes it idle; on failure it records the error, starts the backoff and frees the slot.
func (p *directPool) dial() {
	ctx, cancel := context.WithTimeout(context.Background(), p.d.opts.Timeouts.Connect+time.Second)
	defer cancel()
	go func() {
		select {
		case <-p.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := p.connect(ctx)
	if err != nil {
		p.mu.Lock()
		p.lastErr = err
		p.backoff = min(max(2*p.backoff, firstBackoff), maxBackoff)
		p.retryAt = time.Now().Add(p.backoff)
		close(p.failed)
		p.failed = make(chan struct{})
		p.mu.Unlock()
		<-p.slots
		return
	}
	p.mu.Lock()
	p.lastErr, p.backoff = nil, 0
	p.mu.Unlock()
	p.put(c)
}

// warm opens connections at once, each as dial does, until n are open or being opened
// (poolSize at most), and returns when those it started are open or failed, with the
// last connect's error, as the workers would meet it, or when ctx ends (the connects
// then finish in the background, within the connect timeout).
func (p *directPool) warm(ctx context.Context, n int) error {
	var wg sync.WaitGroup
open:
	for len(p.slots) < n {
		select {
		case p.slots <- struct{}{}:
		default:
			break open // every slot taken
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.dial()
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// connect opens a connection and prepares the read and the upsert on it.
func (p *directPool) connect(ctx context.Context) (*dconn, error) {
	d := p.d
	if d.closed.Load() {
		return nil, p.closedErr()
	}
	pc, err := pgconn.ConnectConfig(ctx, d.pgcfg)
	if err != nil {
		return nil, d.fail("connect to "+RedactDSN(d.opts.DSN), err)
	}
	c := &dconn{pc: pc, nc: pc.Conn()}
	c.read, err = pc.Prepare(ctx, readStmt, d.readSQL, []uint32{oidText})
	if err == nil {
		c.write, err = pc.Prepare(ctx, writeStmt, d.writeSQL, []uint32{oidText, oidBytea})
	}
	if err == nil {
		err = pc.SyncConn(ctx)
	}
	if err != nil {
		closeConn(pc)
		return nil, d.fail("prepare statements", err)
	}
	c.wire, c.synced = newWire(c.nc), true
	return c, nil
}

// put gives c back: idle again, or closed (and its slot freed) when broken or when the
// driver closes.
func (p *directPool) put(c *dconn) {
	if c.broken || c.pc.IsClosed() || p.d.closed.Load() {
		closeConn(c.pc)
		<-p.slots
		return
	}
	p.free <- c // never blocks: no more connections than slots
	if p.d.closed.Load() {
		// Close may have emptied free before c went in.
		p.closeIdle()
	}
}

// closeIdle closes the idle connections.
func (p *directPool) closeIdle() {
	for {
		select {
		case c := <-p.free:
			closeConn(c.pc)
			<-p.slots
		default:
			return
		}
	}
}

// close ends waits for a connection and drains, and closes the idle connections; those in
// use are closed when given back. Called after the driver is marked closed.
func (p *directPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.closeOnce.Do(func() { close(p.closing) })
	p.drains.Wait()
	for c := p.fromHome(); c != nil; c = p.fromHome() {
		p.put(c) // closes it: the driver is marked closed
	}
	p.closeIdle()
}

// drain finishes, in the background, the reply of an operation cut at its deadline:
// the query is cancelled, the rest of its reply read up to ReadyForQuery, and the
// connection given back in step with the server. Both within connectTimeout, and cut
// short when the driver closes: a server that does not answer in time (frozen) costs the
// connection, as any I/O failure does.
func (p *directPool) drain(c *dconn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.broken = true
		p.put(c)
		return
	}
	p.drains.Add(1) // under mu, so never concurrent with close's Wait
	p.mu.Unlock()
	go func() {
		defer p.drains.Done()
		ctx, cancel := context.WithTimeout(context.Background(), p.d.opts.Timeouts.Connect)
		defer cancel()
		go func() {
			select {
			case <-p.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		// The socket's past deadline (Interrupt's) ends when ctx does, so the read
		// below cannot outlast the bound.
		_ = c.nc.SetDeadline(time.Time{})
		stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(longAgo) })
		// The cancel request is delivered when this returns (the server closes its
		// connection after signalling the backend); a backend already idle ignores it,
		// so it cannot cancel the connection's next query.
		_ = c.pc.CancelRequest(ctx)
		// The reply is read where exec left it, in wire's buffer (a single operation is
		// the only one drained: a cut pipelined batch costs its connection).
		if _, _, _, err := c.wire.reply(nil); err != nil {
			c.broken = true
		}
		if !stop() {
			// The bound passed as the reply ended: the past deadline may be on the
			// socket by now, or about to be.
			c.broken = true
		}
		p.put(c)
	}()
}

// isTimeout says whether err is a socket deadline passing (Interrupt's past deadline):
// what was read so far stays buffered, so the reply can be read on.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
