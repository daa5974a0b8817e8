package cassandra

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/ndbench/ndbench/driver"
)

// mode=direct with sharedConns > 0: the workers share that many CQL connections per host
// instead of owning one each. With many workers and one operation each in flight (the
// NDBench shape) a connection per worker costs every operation a write, a read and a
// network-poller wake-up of its own; on a shared connection CQL's stream ids multiplex the
// workers' requests, the frames queued by concurrent workers leave in one write (a worker
// appends its frame to the connection's queue, and whoever finds no write running writes
// everything queued), and the replies are read leader/follower style: a worker waiting
// for a reply reads the connection itself when no one else does (it leads), hands the
// replies of other workers to them, and keeps reading until its own batch is answered;
// the others wait to be handed theirs. No goroutine belongs to a connection, and the
// reply a worker reads for itself costs no wake-up: a worker with all its operations in
// flight on a connection of its own (1 x 64) reads as on the per-worker path. When a
// leader leaves, a worker that was just handed a reply, or failing that one that waits,
// takes the lead. docs/performance.md has the measurements.
//
// An operation whose deadline passes returns then with a timeout; its stream id stays
// reserved until its late reply arrives (which is then dropped, by whoever reads next) or
// the connection goes. A leader whose deadline passes stops reading at a frame boundary
// (a frame larger than the read buffer is resumed by the next leader) and hands the lead
// on. A connection that fails fails every operation on it, and the next batch reconnects.

// maxStreams is the number of stream ids of protocol v4 (non-negative int16s).
const maxStreams = 1 << 15

// abandoned marks a stream id whose operation returned at its deadline: its late reply
// frees the id.
var abandoned = &sharedPipeline{}

// errTooManyStreams refuses requests beyond the stream ids of a connection.
var errTooManyStreams = errors.New("more than 32768 requests in flight on one connection: raise sharedConns")

// sharedConn is one connection slot that several pipelines share; it reconnects when its
// connection fails.
type sharedConn struct {
	d    *Driver
	host string
	// dial is a one-slot lock on connecting, in a channel so that a worker waiting for
	// another's connect can leave at its deadline.
	dial chan struct{}
	cur  atomic.Pointer[muxConn] // the connection, nil before the first and after Close

	mu     sync.Mutex // orders installing a connection against Close
	closed bool
}

// muxConn is one connected CQL connection and the requests in flight on it.
type muxConn struct {
	host            string
	nc              net.Conn
	readID, writeID []byte

	// The reading side, used by the leader only (leadership passes under mu).
	rd  *bufio.Reader
	big []byte // a reply body larger than rd's buffer
	// part is set while such a body is read in parts: its header and how much of it has
	// been read, so the next leader goes on where one whose deadline passed stopped.
	part    bool
	partHdr [headerLen]byte
	partGot int

	mu      sync.Mutex
	err     error             // why the connection was dropped; nil while it serves
	out     []byte            // frames queued for the next write
	spare   []byte            // the buffer of the write before, reused
	flusher *sharedPipeline   // the pipeline writing now, nil when no write runs
	leader  *sharedPipeline   // the pipeline reading now, nil when none
	waiting []*sharedPipeline // pipelines asleep until a reply or the lead comes to them
	// nominated counts the waiting pipelines woken (with a reply, or to lead) that have
	// not looked yet: each of them will lead if no one does, so a leaving leader need
	// not wake another.
	nominated int
	owner     []*sharedPipeline // by stream id: who waits for its reply; nil when free
	slot      []int32           // by stream id: the operation's index in its owner's batch
	free      []int16           // stream ids free for reuse
}

// reply is one operation's answer as the reader hands it over.
type reply struct {
	opcode primitive.OpCode
	body   []byte
	err    error // the connection failed before the reply came
}

// sharedPipeline is one worker's pipeline over a shared connection.
type sharedPipeline struct {
	sc   *sharedConn
	wake chan struct{} // a reply is ready, or Interrupt ran
	mc   atomic.Pointer[muxConn]
	enc  pipeline // the encoder and reply parser of the per-worker path, with its scratch
	// The batch: each operation's stream id (-1 when none is in flight), its reply, and
	// the operations answered since the worker last looked (guarded by the conn's mu).
	stream []int16
	res    []reply
	ready  []int32
	took   []int32
	send   []int32
	// completed marks the operations of the batch done has been called for.
	completed []bool
	// ctx is the batch's context while Run runs, for retry; retryFn is retry bound once.
	ctx     context.Context
	retryFn func(error) bool
	// waitAt is the pipeline's index in its connection's waiting list, -1 when not there;
	// woken says it was woken from there and has not looked yet (both guarded by mc.mu).
	waitAt int
	woken  bool
	// own is the operation whose reply the pipeline read as the leader, -1 when none, with
	// the reply's opcode and body (in the read buffer, valid until the next read).
	own     int32
	ownOp   primitive.OpCode
	ownBody []byte
}

// connect returns a serving connection, connecting when there is none; only one worker
// connects at a time, and a worker waiting for it leaves when its own deadline passes.
func (sc *sharedConn) connect(ctx context.Context, p *sharedPipeline) (*muxConn, error) {
	if mc := sc.cur.Load(); mc != nil && mc.alive() {
		return mc, nil
	}
	for {
		select {
		case sc.dial <- struct{}{}:
		case <-p.wake:
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("cassandra at %s: waiting for the connection: %w", sc.host, err)
			}
			continue
		}
		break
	}
	defer func() { <-sc.dial }()
	if mc := sc.cur.Load(); mc != nil && mc.alive() {
		return mc, nil
	}
	setup := pipeline{d: sc.d, host: sc.host}
	if err := setup.connect(ctx); err != nil {
		return nil, err
	}
	mc := &muxConn{host: sc.host, nc: setup.conn.Conn(), rd: setup.rd, readID: setup.readID, writeID: setup.writeID}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		_ = mc.nc.Close()
		return nil, fmt.Errorf("cassandra at %s: %w", sc.host, net.ErrClosed)
	}
	sc.cur.Store(mc)
	return mc, nil
}

// close drops the connection for good; a leader reading it gets an error and leaves.
func (sc *sharedConn) close() {
	sc.mu.Lock()
	sc.closed = true
	mc := sc.cur.Swap(nil)
	sc.mu.Unlock()
	if mc != nil {
		mc.drop(fmt.Errorf("cassandra at %s: %w", sc.host, net.ErrClosed))
	}
}

// alive reports whether the connection still serves.
func (mc *muxConn) alive() bool {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.err == nil
}

// drop fails every operation in flight with err and closes the connection; the first
// error is the one kept.
func (mc *muxConn) drop(err error) {
	var wake []*sharedPipeline
	mc.mu.Lock()
	if mc.err == nil {
		mc.err = err
		for s, o := range mc.owner {
			if o != nil && o != abandoned {
				i := mc.slot[s]
				o.res[i].err = err
				o.ready = append(o.ready, i)
				wake = append(wake, o)
			}
			mc.owner[s] = nil
		}
	}
	mc.mu.Unlock()
	_ = mc.nc.Close()
	for _, o := range wake {
		o.signal()
	}
}

// lead reads replies as the connection's leader until one of p's own operations is
// answered, handing the others' replies to them. It returns false when p's deadline
// passed while it read (the frame being read is left for the next leader) and true
// otherwise; a connection that fails is dropped, which answers p's operations too.
func (p *sharedPipeline) lead(mc *muxConn) bool {
	for {
		stream, opcode, body, err := mc.next(p.retryFn)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && p.ctx.Err() != nil {
				return false
			}
			mc.drop(fmt.Errorf("cassandra reply from %s: %w", mc.host, err))
			return true
		}
		if stream < 0 {
			continue // an event; this connection registers for none
		}
		mc.mu.Lock()
		if mc.err != nil {
			mc.mu.Unlock()
			return true
		}
		var o *sharedPipeline
		if int(stream) < len(mc.owner) {
			o = mc.owner[stream]
		}
		if o == nil {
			mc.mu.Unlock()
			mc.drop(fmt.Errorf("%w: cassandra at %s answered stream %d, which has no request in flight", errProtocol, mc.host, stream))
			return true
		}
		mc.owner[stream] = nil
		mc.free = append(mc.free, stream)
		if o == abandoned {
			mc.mu.Unlock()
			continue
		}
		i := mc.slot[stream]
		if o == p {
			// p's own reply: p parses it before it reads again, so the body stays
			// where it was read.
			mc.mu.Unlock()
			p.own, p.ownOp, p.ownBody = i, opcode, body
			return true
		}
		r := &o.res[i]
		r.opcode, r.body, r.err = opcode, append(r.body[:0], body...), nil
		o.ready = append(o.ready, i)
		if o.waitAt >= 0 && !o.woken {
			o.woken = true
			mc.nominated++
		}
		mc.mu.Unlock()
		o.signal()
	}
}

// retry tells a stale interrupt (a deadline error while the leader's batch is not done)
// from a real one, and clears the deadline for the reads to go on. The deadline is
// cleared before the context is looked at: an interrupt that comes in between sets it
// again, and the next read returns.
func (p *sharedPipeline) retry(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if mc := p.mc.Load(); mc != nil {
		_ = mc.nc.SetReadDeadline(time.Time{})
	}
	return p.ctx.Err() == nil
}

// next reads the next reply frame and returns its stream id, opcode and body (valid until
// the next call). A read that fails consumes nothing of a frame that fits rd's buffer; a
// larger body is read in parts, its progress kept in mc for the next call.
func (mc *muxConn) next(retry func(error) bool) (int16, primitive.OpCode, []byte, error) {
	peek := func(n int) ([]byte, error) {
		for {
			b, err := mc.rd.Peek(n)
			if err == nil || !retry(err) {
				return b, err
			}
		}
	}
	if !mc.part {
		hdr, err := peek(headerLen)
		if err != nil {
			return 0, 0, nil, err
		}
		_, flags, stream, opcode, n, err := checkHeader(hdr)
		if err != nil {
			return 0, 0, nil, err
		}
		if headerLen+int(n) <= mc.rd.Size() {
			b, err := peek(headerLen + int(n))
			if err != nil {
				return 0, 0, nil, err
			}
			_, _ = mc.rd.Discard(len(b))
			body, err := frameBody(flags, b[headerLen:])
			return stream, opcode, body, err
		}
		copy(mc.partHdr[:], hdr)
		_, _ = mc.rd.Discard(headerLen)
		mc.part, mc.partGot = true, 0
		if cap(mc.big) < int(n) {
			mc.big = make([]byte, n)
		}
	}
	_, flags, stream, opcode, n, _ := checkHeader(mc.partHdr[:])
	body := mc.big[:n]
	for mc.partGot < len(body) {
		m, err := mc.rd.Read(body[mc.partGot:])
		mc.partGot += m
		if err != nil && !retry(err) {
			return 0, 0, nil, err
		}
	}
	mc.part = false
	body, err := frameBody(flags, body)
	return stream, opcode, body, err
}

// signal wakes the pipeline's worker if it waits.
func (p *sharedPipeline) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Interrupt wakes the worker, which returns if its batch's deadline has passed; if the
// worker is writing the connection's queue, or reading it as the leader, that I/O returns
// too.
func (p *sharedPipeline) Interrupt() {
	p.signal()
	if mc := p.mc.Load(); mc != nil {
		mc.mu.Lock()
		if mc.flusher == p {
			_ = mc.nc.SetWriteDeadline(longAgo)
		}
		if mc.leader == p {
			_ = mc.nc.SetReadDeadline(longAgo)
		}
		mc.mu.Unlock()
	}
}

// longAgo is a deadline in the past: setting it makes a blocked write return at once.
var longAgo = time.Unix(1, 0)

// Close releases the pipeline; the connection stays with the driver, which closes it.
func (p *sharedPipeline) Close() error {
	p.mc.Store(nil)
	return nil
}

// enqueue queues the EXECUTEs of the operations in p.send, each on a stream id of its
// own, and writes the queue unless another worker is writing it.
func (p *sharedPipeline) enqueue(ctx context.Context, mc *muxConn, ops []driver.PipelineOp) error {
	mc.mu.Lock()
	if mc.err != nil {
		err := mc.err
		mc.mu.Unlock()
		return err
	}
	if len(mc.free)+maxStreams-len(mc.owner) < len(p.send) {
		mc.mu.Unlock()
		return driver.Wrap(driver.ClassThrottled, fmt.Errorf("cassandra at %s: %w", mc.host, errTooManyStreams))
	}
	for _, i := range p.send {
		var s int16
		if n := len(mc.free); n > 0 {
			s = mc.free[n-1]
			mc.free = mc.free[:n-1]
		} else {
			s = int16(len(mc.owner))
			mc.owner = append(mc.owner, nil)
			mc.slot = append(mc.slot, 0)
		}
		mc.owner[s], mc.slot[s] = p, i
		p.stream[i] = s
		mc.out = p.enc.appendOp(mc.out, ops, int(i), s)
	}
	if mc.flusher != nil {
		mc.mu.Unlock()
		return nil
	}
	mc.flusher = p
	mc.mu.Unlock()
	p.flush(ctx, mc)
	return nil
}

// flush writes what is queued on the connection until the queue is empty; the frames that
// other workers queue meanwhile go out in the next write. A failed write drops the
// connection (a frame may be cut short), which fails every operation on it.
func (p *sharedPipeline) flush(ctx context.Context, mc *muxConn) {
	mc.mu.Lock()
	for len(mc.out) > 0 && mc.err == nil {
		w := mc.out
		mc.out = mc.spare[:0]
		mc.mu.Unlock()
		err := writeAll(ctx, mc.nc, w)
		mc.mu.Lock()
		mc.spare = w[:0]
		if err != nil {
			mc.flusher = nil
			mc.mu.Unlock()
			mc.drop(fmt.Errorf("cassandra write to %s: %w", mc.host, err))
			return
		}
	}
	mc.flusher = nil
	mc.mu.Unlock()
}

// writeAll writes w, riding out interrupts meant for another worker's batch (a deadline
// error while ctx is not done).
func writeAll(ctx context.Context, nc net.Conn, w []byte) error {
	for len(w) > 0 {
		n, err := nc.Write(w)
		w = w[n:]
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
				return err
			}
			_ = nc.SetWriteDeadline(time.Time{})
		}
	}
	return nil
}

// Run queues every operation of the batch on the shared connection and completes each as
// its reply comes; operations that conflict with earlier ones of the batch wait for them,
// as on a connection of the worker's own.
func (p *sharedPipeline) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	if err := ctx.Err(); err != nil {
		failAll(ops, done, fmt.Errorf("cassandra: %d requests not sent: %w", len(ops), err))
		return
	}
	mc, err := p.sc.connect(ctx, p)
	if err != nil {
		failAll(ops, done, p.sc.d.scrub(err))
		return
	}
	p.mc.Store(mc)
	p.ctx = ctx
	defer p.leave(mc)
	e := &p.enc
	for len(p.stream) < len(ops) {
		p.stream = append(p.stream, -1)
		p.res = append(p.res, reply{})
		p.completed = append(p.completed, false)
		e.blocked = append(e.blocked, 0)
	}
	held := e.order(ops)
	e.readID, e.writeID = mc.readID, mc.writeID
	e.readCL, e.writeCL = uint16(e.d.readCL.Load()), uint16(e.d.writeCL.Load())
	e.ts = time.Now().UnixMicro()
	p.send = p.send[:0]
	for i := range ops {
		p.stream[i], p.completed[i] = -1, false
		if e.blocked[i] == 0 {
			p.send = append(p.send, int32(i))
		}
	}
	if err := p.enqueue(ctx, mc, ops); err != nil {
		p.failRest(ops, done, err)
		return
	}
	p.own = -1
	for left := len(ops); left > 0; {
		mc.mu.Lock()
		p.took = append(p.took[:0], p.ready...)
		p.ready = p.ready[:0]
		mc.mu.Unlock()
		for _, i := range p.took {
			r := &p.res[i]
			if !p.answer(ctx, mc, ops, done, i, r.opcode, r.body, r.err, &left, &held) {
				return
			}
		}
		if left == 0 {
			break
		}
		if len(p.took) > 0 {
			continue
		}
		if err := p.await(ctx, mc); err != nil {
			p.failRest(ops, done, fmt.Errorf("cassandra reply from %s (%d of %d outstanding): %w", mc.host, left, len(ops), err))
			return
		}
		if i := p.own; i >= 0 {
			// The leader's own reply, parsed where it was read (no copy, no queue).
			p.own = -1
			if !p.answer(ctx, mc, ops, done, i, p.ownOp, p.ownBody, nil, &left, &held) {
				return
			}
		}
	}
}

// answer completes operation i with its reply (or rerr, the connection's failure), then
// sends what waited for it; it returns false when the batch ended on a failed send.
func (p *sharedPipeline) answer(ctx context.Context, mc *muxConn, ops []driver.PipelineOp, done func(int, []byte, error),
	i int32, opcode primitive.OpCode, body []byte, rerr error, left, held *int) bool {
	e := &p.enc
	p.stream[i] = -1
	*left--
	op := &ops[i]
	p.completed[i] = true
	if rerr != nil {
		done(int(i), nil, classifyDirect(p.sc.d.scrub(fmt.Errorf("cassandra %s %s: %w", opName(op.Op), op.Key, rerr))))
	} else {
		value, err := e.result(op, opcode, body)
		switch {
		case err == nil, errors.Is(err, driver.ErrNotFound):
			done(int(i), value, err)
		default:
			var se *serverError
			if !errors.As(err, &se) || se.code == primitive.ErrorCodeUnprepared {
				// A reply this driver cannot read, or a statement the node forgot:
				// the next connection prepares the statements again.
				mc.drop(fmt.Errorf("cassandra at %s: %w", mc.host, err))
			}
			done(int(i), nil, classifyDirect(fmt.Errorf("cassandra %s %s: %w", opName(op.Op), op.Key, err)))
		}
	}
	if *held == 0 {
		return true
	}
	// Send what waited for this operation (one queueing for all of them).
	p.send = p.send[:0]
	for k := int(i) + 1; k < len(ops); k++ {
		if e.blocked[k] > 0 && conflict(&ops[i], &ops[k]) {
			if e.blocked[k]--; e.blocked[k] == 0 {
				p.send = append(p.send, int32(k))
				*held--
			}
		}
	}
	if len(p.send) == 0 {
		return true
	}
	if err := p.enqueue(ctx, mc, ops); err != nil {
		p.failRest(ops, done, err)
		return false
	}
	return true
}

// await waits for a reply to one of p's operations: it reads the connection itself if no
// one else does, and otherwise sleeps until it is handed a reply or the lead. It returns
// the batch's context error when its deadline passed, or the connection's when it failed.
func (p *sharedPipeline) await(ctx context.Context, mc *muxConn) error {
	mc.mu.Lock()
	p.looked(mc)
	if len(p.ready) > 0 {
		mc.mu.Unlock()
		return nil
	}
	if err := mc.err; err != nil {
		mc.mu.Unlock()
		return err
	}
	if mc.leader == nil || mc.leader == p {
		// Interrupt sets the read deadline only for the leader: a deadline that passed
		// before p took the lead shows here.
		mc.leader = p
		mc.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err
		}
		if !p.lead(mc) {
			return ctx.Err()
		}
		return nil
	}
	p.waitAt = len(mc.waiting)
	mc.waiting = append(mc.waiting, p)
	mc.mu.Unlock()
	<-p.wake
	mc.mu.Lock()
	if i := p.waitAt; i >= 0 {
		last := mc.waiting[len(mc.waiting)-1]
		mc.waiting[i], last.waitAt = last, i
		mc.waiting[len(mc.waiting)-1] = nil
		mc.waiting = mc.waiting[:len(mc.waiting)-1]
		p.waitAt = -1
	}
	mc.mu.Unlock()
	return ctx.Err()
}

// looked ends p's nomination (see muxConn.nominated): it is back where it leads if no
// one else does, or leaves. The caller holds mc.mu.
func (p *sharedPipeline) looked(mc *muxConn) {
	if p.woken {
		p.woken = false
		mc.nominated--
	}
}

// leave ends p's batch on the connection: it gives up the lead if it has it, and when no
// one leads and no woken pipeline is on its way to, it wakes a waiting one to lead.
func (p *sharedPipeline) leave(mc *muxConn) {
	var next *sharedPipeline
	mc.mu.Lock()
	p.looked(mc)
	if mc.leader == p {
		mc.leader = nil
	}
	if mc.leader == nil && mc.nominated == 0 && len(mc.waiting) > 0 {
		next = mc.waiting[len(mc.waiting)-1]
		next.woken = true
		mc.nominated++
	}
	mc.mu.Unlock()
	if next != nil {
		next.signal()
	}
}

// failRest completes with err every operation of the batch not completed yet: a sent
// one's stream id stays reserved for its late reply (dropped when it comes), and a reply
// that came meanwhile is dropped too.
func (p *sharedPipeline) failRest(ops []driver.PipelineOp, done func(int, []byte, error), err error) {
	err = classifyDirect(p.sc.d.scrub(err))
	if mc := p.mc.Load(); mc != nil {
		mc.mu.Lock()
		for i := range ops {
			if s := p.stream[i]; s >= 0 && mc.owner[s] == p {
				mc.owner[s] = abandoned
			}
		}
		p.ready = p.ready[:0]
		mc.mu.Unlock()
	}
	for i := range ops {
		p.stream[i] = -1
		p.enc.blocked[i] = 0
		if !p.completed[i] {
			p.completed[i] = true
			done(i, nil, err)
		}
	}
}
