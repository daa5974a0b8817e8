package postgres

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ndbench/ndbench/driver"
)

// mode=direct's connections are a set of at most poolSize, shared by the workers'
// pipelines: a pipeline borrows one for a batch and gives it back. A worker per backend
// opened as many backends as the engine had workers (elastic pools included), past the
// server's max_connections; poolSize bounds them now, and a worker that finds none free
// waits for one within its operation's deadline, which DriverStats counts as queueing.

// defaultConnectTimeout bounds a connect when connectTimeout is not set: connects run in
// the background, outside any operation's deadline, so they need a bound of their own.
const defaultConnectTimeout = 10 * time.Second

// reconnectHoldOff is how long after a failed connect the set fails a batch at once with
// that failure instead of trying again: against a server that is down a worker at a high
// rate would otherwise open a connection attempt per operation.
const reconnectHoldOff = 100 * time.Millisecond

// cancelGrace is how long a timed-out batch's connection gets, after its interrupt, to
// come back to idle once the server was asked to cancel the query (a cancel takes a
// connect and a signal: about a millisecond on a healthy server, a hundred on a loaded
// one). A server that does not answer within it has the connection dropped, and a new
// one is opened in the background.
const cancelGrace = time.Second

// dconn is one backend of the set, with the read and the upsert prepared on it.
type dconn struct {
	pc          *pgconn.PgConn
	read, write *pgconn.StatementDescription
}

// connFailure is a failed connect: done is closed once err is set, so the batches
// waiting for a connection each get the error of the connect that woke them.
type connFailure struct {
	done chan struct{}
	err  error
}

// connSet is mode=direct's bounded set of connections.
type connSet struct {
	d     *Driver
	idle  chan *dconn   // connections ready for a batch
	slots chan struct{} // one token per connection open or being opened: at most poolSize

	mu       sync.Mutex
	failed   *connFailure // the next connect failure, which waiters watch
	lastErr  error        // the last connect's failure, nil once one succeeds
	failedAt time.Time
	closed   bool

	// DriverStats counters.
	waits, waitNanos, connects, connectFailures, cancels, drops atomic.Int64
}

func newConnSet(d *Driver, size int) *connSet {
	return &connSet{d: d, idle: make(chan *dconn, size), slots: make(chan struct{}, size), failed: &connFailure{done: make(chan struct{})}}
}

// acquire returns a connection for a batch on ctx: an idle one, or one opened in the
// background if the set has room, or the first one another batch gives back. It waits
// until ctx ends; a connect that fails meanwhile fails the wait with its error, so a
// server that is down shows as unavailable, not as timeouts.
func (s *connSet) acquire(ctx context.Context) (*dconn, error) {
	select {
	case c := <-s.idle:
		return c, nil
	default:
	}
	s.mu.Lock()
	failed, lastErr, failedAt, closed := s.failed, s.lastErr, s.failedAt, s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("connect to %s: %w", RedactDSN(s.d.opts.DSN), net.ErrClosed)
	}
	if lastErr == nil || time.Since(failedAt) >= reconnectHoldOff {
		select {
		case s.slots <- struct{}{}:
			go s.open()
		default:
		}
	} else if len(s.slots) == 0 {
		return nil, lastErr // nothing open, nothing being opened: the server is refusing
	}
	start := time.Now()
	s.waits.Add(1)
	defer func() { s.waitNanos.Add(int64(time.Since(start))) }()
	select {
	case c := <-s.idle:
		return c, nil
	case <-failed.done:
		// Another batch may have given a connection back just as the connect failed.
		select {
		case c := <-s.idle:
			return c, nil
		default:
		}
		return nil, failed.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no free connection of poolSize %d within the operation's deadline: %w", cap(s.slots), ctx.Err())
	}
}

// open connects one backend, with a timeout of its own (never an operation's deadline),
// and prepares the statements on it. It holds a slot token taken by its caller.
func (s *connSet) open() {
	d := s.d
	timeout := d.pgcfg.ConnectTimeout
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.connects.Add(1)
	c, err := s.connect(ctx)
	if err != nil {
		s.connectFailures.Add(1)
		<-s.slots
		s.mu.Lock()
		s.lastErr, s.failedAt = err, time.Now()
		s.failed.err = err
		close(s.failed.done)
		s.failed = &connFailure{done: make(chan struct{})}
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	s.lastErr = nil
	closed := s.closed
	s.mu.Unlock()
	if closed {
		closeConn(c.pc)
		<-s.slots
		return
	}
	s.idle <- c // never blocks: the tokens bound the connections to its capacity
}

func (s *connSet) connect(ctx context.Context) (*dconn, error) {
	d := s.d
	pc, err := pgconn.ConnectConfig(ctx, d.pgcfg)
	if err != nil {
		return nil, d.fail("connect to "+RedactDSN(d.opts.DSN), err)
	}
	c := &dconn{pc: pc}
	if c.read, err = pc.Prepare(ctx, readStmt, d.readSQL, []uint32{oidText}); err == nil {
		c.write, err = pc.Prepare(ctx, writeStmt, d.writeSQL, []uint32{oidText, oidBytea})
	}
	if err != nil {
		closeConn(pc)
		return nil, d.fail("prepare statements", err)
	}
	return c, nil
}

// first opens the set's first connection during Init, on Init's ctx: it reads the
// server's version, creates the table when asked, and then prepares the statements, so a
// DSN or table that does not work fails Init as it does in mode=pool.
func (s *connSet) first(ctx context.Context, createSchema bool) error {
	d := s.d
	pc, err := pgconn.ConnectConfig(ctx, d.pgcfg)
	if err != nil {
		return d.fail("connect to "+RedactDSN(d.opts.DSN), err)
	}
	d.version = pc.ParameterStatus("server_version")
	if createSchema {
		if _, err := pc.Exec(ctx, d.createSQL()).ReadAll(); err != nil {
			if err = d.createFailed(err); err != nil {
				closeConn(pc)
				return err
			}
		}
	}
	c := &dconn{pc: pc}
	if c.read, err = pc.Prepare(ctx, readStmt, d.readSQL, []uint32{oidText}); err == nil {
		c.write, err = pc.Prepare(ctx, writeStmt, d.writeSQL, []uint32{oidText, oidBytea})
	}
	if err != nil {
		// A table missing with createSchema false is found by the first batch, as rejected.
		closeConn(pc)
		return nil
	}
	s.connects.Add(1)
	s.slots <- struct{}{}
	s.idle <- c
	return nil
}

// release gives c back after a batch: to the idle connections if it is back at idle, or,
// if its stream cannot be trusted, closed and replaced by a connection opened in the
// background (batches may be waiting for one), so the worker that gave it back does not
// wait for either.
func (s *connSet) release(c *dconn, broken bool) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || broken || c.pc.IsClosed() || c.pc.IsBusy() || c.pc.TxStatus() != 'I' {
		if closed {
			closeConn(c.pc)
			<-s.slots
			return
		}
		s.drops.Add(1)
		go func() {
			closeConn(c.pc)
			s.open() // takes over c's slot
		}()
		return
	}
	s.idle <- c
}

// close closes the idle connections; those lent out are closed when given back.
func (s *connSet) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for {
		select {
		case c := <-s.idle:
			closeConn(c.pc)
			<-s.slots
		default:
			return
		}
	}
}

// stats are the set's counters for DriverStats.
func (s *connSet) stats() map[string]int64 {
	return map[string]int64{
		"directConns":           int64(len(s.slots)),
		"directConnWaits":       s.waits.Load(),
		"directConnWaitMicros":  s.waitNanos.Load() / 1e3,
		"directConnects":        s.connects.Load(),
		"directConnectFailures": s.connectFailures.Load(),
		"directCancels":         s.cancels.Load(),
		"directDrops":           s.drops.Load(),
	}
}

// DriverStats reports mode=direct's connection counters: connections open, batches that
// waited for a free one and how long in all, connects and failed connects, queries
// cancelled at their deadline and connections dropped.
func (d *Driver) DriverStats() map[string]int64 {
	if d.conns == nil {
		return nil
	}
	return d.conns.stats()
}

var _ driver.StatsReporter = (*Driver)(nil)
