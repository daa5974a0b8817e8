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
// a worker takes one for a batch and gives it back after. A connection per worker
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
}

func newDirectPool(d *Driver, size int) *directPool {
	return &directPool{d: d, free: make(chan *dconn, size), slots: make(chan struct{}, size),
		closing: make(chan struct{}), failed: make(chan struct{})}
}

// get returns an idle connection, or opens one if fewer than poolSize are open, waiting
// for as long as ctx allows. While connecting fails (in the backoff after a failure) it
// waits for a connection in use to come back, or fails at once with the connect's error
// when none is open.
func (p *directPool) get(ctx context.Context) (*dconn, error) {
	counted := false
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
		if len(p.slots) == cap(p.slots) && !counted {
			// Every connection the cap allows is open and none is idle: this worker
			// queues in the client, which the store's latency then includes.
			p.capWaits.Add(1)
			counted = true
		}
		select {
		case c := <-p.free:
			return c, nil
		case p.slots <- struct{}{}:
			go p.dial()
			select {
			case c := <-p.free:
				return c, nil
			case <-failed:
				// A connect failed (maybe this one): the loop returns its error or
				// waits for a connection in use.
			case <-ctx.Done():
				return nil, p.waitErr(ctx, nil)
			case <-p.closing:
				return nil, p.closedErr()
			}
		case <-failed:
		case <-ctx.Done():
			return nil, p.waitErr(ctx, nil)
		case <-p.closing:
			return nil, p.closedErr()
		}
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
