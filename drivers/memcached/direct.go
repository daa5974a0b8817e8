package memcached

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
)

// client=direct: each engine worker owns one connection per server (driver.Pipeliner) and
// this driver runs its hot loop, as the redis driver's mode=direct does: the requests of a
// batch are appended to one buffer per server and written with one system call each, and
// the replies are parsed in place (text.go). No pool, lock or goroutine sits between the
// worker and its socket; nothing is allocated per operation in steady state.
//
// Deadlines: a batch ends at the earlier of its context's deadline and timeout from its
// start. The engine's Interrupt ends blocked I/O when the context ends; the timeout is a
// deadline on the connection. A request that ended at its deadline leaves its
// connection's replies out of step, so the connection is closed, and the next operation
// on that server dials again, inside its own time (what any client does after a timeout;
// hiding the dial would flatter a closed loop's latency).

// opDelete is Driver.Delete's request in a pipeline; the engine never sends it (delete is
// not a pipelined operation), the pool does.
const opDelete = -100

// conn is a pipeline's connection to one server.
type conn struct {
	p    *pipeline
	addr string
	pc   driver.PipelineConn
	rd   *textReader
	w    []byte
	// wr is the connection as a driver.WriteReader, when it is one (RawIO's, on Linux);
	// unsent says the batch's requests in w go out inside the first read of their replies
	// (see Run).
	wr     driver.WriteReader
	unsent bool
	// err, within a batch, is why the connection failed (dial, write, read, a reply out of
	// step): its remaining operations of the batch fail with it, and it is closed at the
	// batch's end.
	err error
}

// pipeline is one worker's set of connections (client=direct).
type pipeline struct {
	d     *Driver
	z     *zone
	conns []conn
	// The batch in flight: its context and deadline (read by conn.Read to tell a stale
	// interrupt from a real one) and each operation's server, -1 once completed.
	ctx      context.Context
	deadline time.Time
	ctxLimit bool // deadline is ctx's, not timeout's
	server   []int
}

// Pipelines reports whether the driver runs client=direct.
func (d *Driver) Pipelines() bool { return d.direct != nil }

// NewPipeline returns the connections of one worker; they connect on first use.
func (d *Driver) NewPipeline(context.Context) (driver.Pipeline, error) {
	if d.direct == nil {
		return nil, fmt.Errorf("memcached: pipelines need client=direct (client is %s)", d.opts.Client)
	}
	return d.newPipeline(), nil
}

func (d *Driver) newPipeline() *pipeline {
	z := d.zones[0]
	p := &pipeline{d: d, z: z, conns: make([]conn, len(z.addrs))}
	for i := range p.conns {
		p.conns[i].p = p
		p.conns[i].addr = z.addrs[i]
	}
	return p
}

// pick is gomemcache's ServerList.PickServer: the CRC-32 (IEEE) of the key modulo the
// number of servers, in the order listed (a server listed twice has twice the share), so
// both clients put a key on the same server and data written by one is read by the other.
func pick(key string, servers int) int {
	if servers == 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE(stringBytes(key)) % uint32(servers))
}

// Read is the connection read by the textReader: it rides out stale interrupts (the
// engine's Interrupt after the batch it was meant for ended), and reports a real deadline
// as a timeout. When the batch's requests are unsent, the first Read sends them and waits
// for the reply in one call.
func (c *conn) Read(b []byte) (int, error) {
	for c.unsent {
		n, err := c.wr.WriteRead(c.w, b)
		if err == nil || n > 0 {
			c.unsent = false
			return n, err
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "write" {
			// Sent: what failed is the reply's read.
			c.unsent = false
			if !c.stale(err) {
				return 0, err
			}
			break
		}
		// Not sent, or not wholly: only a request that goes out whole in one send may be
		// sent again (see maxSendInRead).
		if !c.stale(err) || len(c.w) > maxSendInRead {
			c.unsent = false
			return 0, err
		}
	}
	for {
		n, err := c.pc.Conn().Read(b)
		if err == nil || n > 0 || !c.stale(err) {
			return n, err
		}
	}
}

// stale reports whether err is a deadline error that was not the batch's own (its context
// is not done and its deadline not reached); it then restores the batch's deadline.
func (c *conn) stale(err error) bool {
	p := c.p
	if !errors.Is(err, os.ErrDeadlineExceeded) || p.ctx == nil || p.ctx.Err() != nil || !time.Now().Before(p.deadline) {
		return false
	}
	return c.pc.Conn().SetDeadline(p.deadline) == nil
}

// connect takes a connection Warm opened to the server, or dials it with the batch's
// deadline.
func (c *conn) connect(ctx context.Context) error {
	d := c.p.d
	if d.closed.Load() {
		return errClosed
	}
	nc, ok := d.direct.warm.Take(c.addr)
	if !ok {
		var err error
		if nc, err = dial(ctx, c.addr, time.Until(c.p.deadline)); err != nil {
			return err
		}
	}
	c.rd = newTextReader(c)
	c.wr, _ = nc.(driver.WriteReader)
	c.pc.Set(nc)
	return nil
}

// dial connects to addr without Nagle's delay, reads and writes through driver.RawIO.
func dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	dl := net.Dialer{Timeout: timeout}
	nc, err := dl.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err // net's error names the address
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // Go's default, stated: a request must not wait for an ACK
	}
	return driver.RawIO(nc), nil
}

// Interrupt makes blocked I/O return; the connections tell a stale interrupt from a real
// one by the batch's context and deadline.
func (p *pipeline) Interrupt() {
	for i := range p.conns {
		p.conns[i].pc.Interrupt()
	}
}

// Close closes the connections.
func (p *pipeline) Close() error {
	var errs []error
	for i := range p.conns {
		if err := p.conns[i].pc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close connection to memcached at %s: %w", p.conns[i].addr, err))
		}
	}
	return errors.Join(errs...)
}

// Run sends ops, one write per server, and completes each as its reply is parsed.
func (p *pipeline) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	if p.d.closed.Load() {
		for i := range ops {
			done(i, nil, errClosed)
		}
		return
	}
	// Interrupt reaches only I/O that blocks: a batch on a context already done would
	// otherwise go through on a fast server.
	if err := ctx.Err(); err != nil {
		err = classify(fmt.Errorf("memcached: %d requests not sent: %w", len(ops), err))
		for i := range ops {
			done(i, nil, err)
		}
		return
	}
	now := time.Now()
	p.ctx, p.deadline, p.ctxLimit = ctx, now.Add(p.d.opts.Timeouts.Request), false
	if dl, ok := ctx.Deadline(); ok && dl.Before(p.deadline) {
		p.deadline, p.ctxLimit = dl, true
	}
	defer p.finish()
	exptime := expiration(time.Duration(p.d.ttl.Load()), now)

	p.server = p.server[:0]
	for i := range ops {
		s, err := p.add(ctx, &ops[i], exptime)
		if err != nil {
			done(i, nil, err)
			s = -1
		}
		p.server = append(p.server, s)
	}
	// A batch on one connection sends its requests inside the first read of their
	// replies (driver.WriteReader), which parks the worker until the netpoller reports the
	// reply, even when it is already there: see sendInRead.
	one := p.oneConn()
	for s := range p.conns {
		c := &p.conns[s]
		if len(c.w) > 0 && c.err == nil {
			if one && sendInRead(c) {
				c.unsent = true
			} else {
				c.err = c.send()
			}
		}
	}
	for i := range ops {
		if s := p.server[i]; s >= 0 {
			v, err := p.reply(&p.conns[s], &ops[i])
			done(i, v, err)
		}
	}
}

// finish ends a batch: it closes the connections that failed and forgets the context.
func (p *pipeline) finish() {
	for s := range p.conns {
		c := &p.conns[s]
		c.w, c.unsent = c.w[:0], false
		if c.err != nil {
			c.pc.Drop()
			c.rd, c.err = nil, nil
		}
	}
	p.ctx = nil
}

// add appends op's request to its server's buffer, connecting first when needed, and
// returns the server's index. A request refused before sending returns its error.
func (p *pipeline) add(ctx context.Context, op *driver.PipelineOp, exptime int32) (int, error) {
	verb := opVerb(op.Op)
	if !legalKey(op.Key) {
		p.count(op.Op, false, true)
		return -1, driver.Wrap(driver.ClassRejected, fmt.Errorf("memcached %s %.300q: malformed key: at most 250 bytes, without spaces or control characters", verb, op.Key))
	}
	if op.Op == driver.PipelineWrite && len(op.Value) > p.d.opts.MaxValueSize {
		p.count(op.Op, false, true)
		return -1, driver.Wrap(driver.ClassRejected, fmt.Errorf("memcached set %s: value of %d bytes exceeds maxValueSize %d", op.Key, len(op.Value), p.d.opts.MaxValueSize))
	}
	s := pick(op.Key, len(p.conns))
	c := &p.conns[s]
	if c.err == nil && c.pc.Conn() == nil {
		c.err = c.connect(ctx)
	}
	if c.err == nil && len(c.w) == 0 {
		// The batch's deadline, set once per connection and batch. A real interrupt that
		// came before it is not lost: ctx is done then, which the stale check sees.
		c.err = c.pc.Conn().SetDeadline(p.deadline)
	}
	if c.err != nil {
		p.count(op.Op, false, true)
		return -1, p.opError(c, op, c.err)
	}
	switch op.Op {
	case driver.PipelineRead:
		c.w = appendGet(c.w, op.Key)
	case driver.PipelineWrite:
		c.w = appendSet(c.w, op.Key, op.Value, exptime)
	case opDelete:
		c.w = appendDelete(c.w, op.Key)
	}
	return s, nil
}

// maxSendInRead bounds the requests sent inside a read: one of at most 2 KiB on a
// connection whose earlier requests were all answered goes out whole in its first send
// (the smallest send buffer Linux gives a TCP socket is 4.6 KiB), so a write error from
// WriteRead means nothing was sent, and a stale interrupt's retry cannot send a request
// twice.
const maxSendInRead = 2 << 10

// sendInRead reports whether c's requests are to go out inside the first read of their
// replies.
//
// Why: the worker then always parks until the netpoller reports its reply, and the
// netpoller wakes the workers whose replies arrived together, in turn. Sending, then
// reading, lets a worker whose reply is already there when it reads (the server ran on
// the worker's core while it was sending: a loopback send wakes the server's thread
// there) go straight on to its next operation without parking; on one P such a worker
// kept the P for many operations while the replies of the others waited, unread, for
// the run queue to empty: most operations fast and ~1% waiting milliseconds
// (docs/performance.md, "Memcached's tail: workers that never park").
func sendInRead(c *conn) bool {
	return c.wr != nil && len(c.w) <= maxSendInRead && len(c.rd.Buffered()) == 0
}

// oneConn reports whether the batch's requests are all for one connection.
func (p *pipeline) oneConn() bool {
	n := 0
	for s := range p.conns {
		if len(p.conns[s].w) > 0 {
			n++
		}
	}
	return n == 1
}

// send writes the connection's buffer whole, riding out stale interrupts.
func (c *conn) send() error {
	w := c.w
	for len(w) > 0 {
		n, err := c.pc.Conn().Write(w)
		w = w[n:]
		if err != nil && !c.stale(err) {
			return err
		}
	}
	return nil
}

// reply reads op's reply from c and counts it in the zone's counters.
func (p *pipeline) reply(c *conn, op *driver.PipelineOp) ([]byte, error) {
	if c.err != nil {
		p.count(op.Op, false, true)
		return nil, p.opError(c, op, c.err)
	}
	var value []byte
	var err error
	missing := false
	switch op.Op {
	case driver.PipelineRead:
		var found bool
		value, found, err = c.rd.get()
		missing = err == nil && !found
	case driver.PipelineWrite:
		missing, err = c.rd.status(lineStored)
		if missing {
			// set never answers NOT_FOUND; it is out of step.
			err, missing = replyError("NOT_FOUND"), false
		}
	case opDelete:
		missing, err = c.rd.status(lineDeleted)
	}
	if err != nil && !inStep(err) {
		c.err = err
	}
	p.count(op.Op, missing, err != nil)
	switch {
	case err != nil:
		return nil, p.opError(c, op, err)
	case missing && op.Op == driver.PipelineRead:
		return nil, driver.ErrNotFound
	}
	return value, nil
}

// inStep reports whether the connection's replies are in step with its requests after
// err (a separate function: the errors.As target escapes, and only failures should pay
// for it).
func inStep(err error) bool {
	var re replyError
	return errors.As(err, &re) && re.inStep()
}

// count adds an operation to the zone's counters, as the gomemcache path counts them.
func (p *pipeline) count(op int, missing, failed bool) {
	z := p.z
	switch op {
	case driver.PipelineRead:
		z.reads.Add(1)
		if missing {
			z.misses.Add(1)
		}
		if failed {
			z.readErrors.Add(1)
		}
	case driver.PipelineWrite:
		z.writes.Add(1)
		if failed {
			z.writeErrors.Add(1)
		}
	}
}

// opError says which request failed where, and classifies it.
func (p *pipeline) opError(c *conn, op *driver.PipelineOp, err error) error {
	if errors.Is(err, errClosed) {
		return errClosed
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && p.ctx != nil {
		// Say which limit ended it: the connection's deadline and the context's may
		// expire together, in either order.
		switch cerr := p.ctx.Err(); {
		case cerr != nil:
			err = fmt.Errorf("%w (%w)", err, cerr)
		case p.ctxLimit:
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		default:
			err = fmt.Errorf("%w (timeout %v)", err, p.d.opts.Timeouts.Request)
		}
	}
	return classify(fmt.Errorf("memcached %s %s at %s: %w", opVerb(op.Op), op.Key, c.addr, err))
}

func opVerb(op int) string {
	switch op {
	case driver.PipelineRead:
		return "get"
	case opDelete:
		return "delete"
	}
	return "set"
}

// directPool serves Read, Write and Delete with client=direct (the engine's workers have
// their own pipelines): pipelines reused across calls, at most maxIdleConns kept idle.
type directPool struct {
	d    *Driver
	idle chan *pipeline
	// warm holds the connections Warm opened, by server address, until workers take them.
	warm *driver.WarmConns[net.Conn]
}

// Warm opens client=direct's connections for workers workers ahead of the load, one per
// worker and server (driver.Warmer), as memtier connects its clients before its clock
// starts: a worker otherwise connects to a server on its first operation there, whose
// response time then holds the connect. A server that fails stops only its own
// connections: the others are opened, and the error names it. client=gomemcache
// connects on demand, as gomemcache does.
func (d *Driver) Warm(ctx context.Context, workers int) error {
	if d.direct == nil {
		return nil
	}
	per := map[string]int{} // a server listed twice has a connection per listing
	var order []string
	for _, a := range d.zones[0].addrs {
		if per[a] == 0 {
			order = append(order, a)
		}
		per[a]++
	}
	var errs []error
	for _, a := range order {
		err := d.direct.warm.Fill(ctx, a, workers*per[a], func(ctx context.Context) (net.Conn, error) {
			return dial(ctx, a, d.opts.Timeouts.Request)
		})
		if err != nil {
			errs = append(errs, classify(fmt.Errorf("open the workers' connections to memcached at %s: %w", a, err)))
		}
	}
	return errors.Join(errs...)
}

// do runs one operation on a pooled pipeline; ctx's end interrupts it. The value is a
// copy: the pipeline's buffer is reused.
func (dp *directPool) do(ctx context.Context, op driver.PipelineOp) ([]byte, error) {
	var p *pipeline
	select {
	case p = <-dp.idle:
	default:
		p = dp.d.newPipeline()
	}
	stop := context.AfterFunc(ctx, p.Interrupt)
	var got []byte
	var gotErr error
	p.Run(ctx, []driver.PipelineOp{op}, func(_ int, v []byte, err error) {
		if v != nil {
			got = append([]byte(nil), v...)
		}
		gotErr = err
	})
	stop()
	if dp.d.closed.Load() {
		_ = p.Close()
		return got, gotErr
	}
	select {
	case dp.idle <- p:
	default:
		_ = p.Close()
	}
	return got, gotErr
}

// close closes the idle pipelines; the driver is marked closed first, so none connects
// again.
func (dp *directPool) close() {
	dp.warm.Close()
	for {
		select {
		case p := <-dp.idle:
			_ = p.Close()
		default:
			return
		}
	}
}

// initDirect checks every server answers "version" and reads the first one's.
func (d *Driver) initDirect(ctx context.Context) error {
	d.direct = &directPool{d: d, idle: make(chan *pipeline, d.opts.MaxIdleConns),
		warm: driver.NewWarmConns(0, nil, func(nc net.Conn) { _ = nc.Close() })}
	z := d.zones[0]
	for i, addr := range z.addrs {
		v, err := version(ctx, addr, d.opts.Timeouts.Request)
		if err != nil {
			return classify(fmt.Errorf("ping memcached zone %s (%s): %w", z.name, strings.Join(z.addrs, ","), err))
		}
		if i == 0 {
			d.version = v
		}
	}
	return nil
}

// version asks one server for its version.
func version(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := dial(ctx, addr, timeout)
	if err != nil {
		return "", err
	}
	defer func() { _ = nc.Close() }()
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	if _, err := nc.Write([]byte("version\r\n")); err != nil {
		return "", err
	}
	l, err := newTextReader(nc).line()
	if err != nil {
		return "", err
	}
	v, ok := strings.CutPrefix(string(l), "VERSION ")
	if !ok {
		return "", fmt.Errorf("%w: version answered %q", errProtocol, clip(l))
	}
	return v, nil
}

// stringBytes is s's bytes without a copy, for reading only: a conversion would allocate
// on every operation, as crc32 is reached through a function value escape analysis cannot
// see into.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
