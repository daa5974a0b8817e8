package cassandra

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/datastax/go-cassandra-native-protocol/frame"
	"github.com/datastax/go-cassandra-native-protocol/message"
	"github.com/datastax/go-cassandra-native-protocol/primitive"

	"github.com/ndbench/ndbench/driver"
)

// mode=direct: each engine worker owns one CQL connection (driver.Pipeliner) and this
// driver owns its hot loop: every EXECUTE of a batch, each with its own stream id, is
// encoded into one buffer and written with one system call, and the replies are parsed in
// place as they arrive, in whatever order the server sends them. Nothing sits between the
// worker and the socket: no pool, no lock, no per-request timer, no goroutine hand-off, and
// no write coalescing timer (what is queued is written when the worker has it). A timeout
// or a hard stop reaches the connection through Interrupt. docs/design-notes.md has the
// measurements that led here.
//
// Connection set-up (STARTUP, authentication, PREPARE) and error replies go through the
// frame and message codecs of github.com/datastax/go-cassandra-native-protocol. Its
// encoder writes every primitive through binary.Write on an io.Writer, which allocates
// several times per field, so the per-operation EXECUTE frames and RESULT replies are
// appended and parsed here instead; cql_test.go checks that they are byte for byte what
// the library encodes and that the in-place parser reads what the library decodes.

// protoVersion is the native protocol version of direct connections: v4 is served by
// Cassandra 2.2 and later, ScyllaDB and YugabyteDB, and keeps plain frames (v5 wraps
// frames in checksummed segments, which would add CPU per batch for no gain here).
const protoVersion = primitive.ProtocolVersion4

// headerLen is the length of a v4 frame header.
const headerLen = 9

// errProtocol marks a reply this driver cannot make sense of; the connection is dropped.
var errProtocol = errors.New("cql protocol error")

// pipeline is one worker's connection in mode=direct.
type pipeline struct {
	d    *Driver
	host string              // host:port this pipeline connects to
	conn driver.PipelineConn // Interrupt may run on the engine's watchdog goroutine
	rd   *bufio.Reader
	wbuf []byte
	big  []byte // a reply body larger than rd's buffer
	join []byte // a value joined from several columns
	// The prepared statements' ids on this connection.
	readID, writeID []byte
	// inflight maps a stream id to its operation's index in the batch, -1 once done
	// (stream id i carries operation i).
	inflight []int32
	// blocked counts, per operation of the batch, the earlier operations it conflicts
	// with that are not answered yet; it is sent when that reaches 0 (see order).
	blocked []int32
	seen    map[string]int32 // order's key counts for large batches
	// The batch's consistency levels and base timestamp.
	readCL, writeCL uint16
	ts              int64
	rowSeq          uint64
	cols            [][]byte // the value columns of the newest row read
	cells           [][]byte // the cells of the row being read
}

// Pipelines reports whether the driver runs in mode=direct.
func (d *Driver) Pipelines() bool { return d.opts.Mode == "direct" }

// NewPipeline returns a connection for one worker; it connects on first use. Pipelines
// take the configured hosts in turn, so the workers spread over them.
func (d *Driver) NewPipeline(context.Context) (driver.Pipeline, error) {
	if !d.Pipelines() {
		return nil, fmt.Errorf("cassandra: pipelines need mode=direct (mode is %s)", d.opts.Mode)
	}
	n := d.nextHost.Add(1) - 1
	hosts := uint64(len(d.opts.Hosts))
	h := d.hostAddr(int(n % hosts))
	if d.opts.SharedConns == 0 {
		return &pipeline{d: d, host: h}, nil
	}
	// Pipelines take the hosts in turn, and on each host its shared connections in turn.
	sc, err := d.sharedConn(int(n%hosts)*d.opts.SharedConns+int(n/hosts)%d.opts.SharedConns, h)
	if err != nil {
		return nil, err
	}
	sp := &sharedPipeline{sc: sc, wake: make(chan struct{}, 1), enc: pipeline{d: d, host: h}, waitAt: -1}
	sp.retryFn = sp.retry
	return sp, nil
}

// hostAddr returns configured host i as host:port.
func (d *Driver) hostAddr(i int) string {
	h := d.opts.Hosts[i]
	if _, _, err := net.SplitHostPort(h); err != nil {
		h = net.JoinHostPort(h, strconv.Itoa(d.opts.Port))
	}
	return h
}

// sharedConn returns shared connection slot i (to host h), making it on first use.
func (d *Driver) sharedConn(i int, h string) (*sharedConn, error) {
	d.sharedMu.Lock()
	defer d.sharedMu.Unlock()
	if d.closed.Load() {
		return nil, fmt.Errorf("cassandra at %s: %w", h, net.ErrClosed)
	}
	if d.shared == nil {
		d.shared = make([]*sharedConn, len(d.opts.Hosts)*d.opts.SharedConns)
	}
	if d.shared[i] == nil {
		d.shared[i] = &sharedConn{d: d, host: h, dial: make(chan struct{}, 1)}
	}
	return d.shared[i], nil
}

// closeShared closes the shared connections and waits for their readers to end.
func (d *Driver) closeShared() {
	d.sharedMu.Lock()
	shared := d.shared
	d.sharedMu.Unlock()
	for _, sc := range shared {
		if sc != nil {
			sc.close()
		}
	}
}

// connect dials and sets the connection up: TLS, STARTUP, authentication, and the
// PREPARE of the read and write statements. The password is never part of an error.
func (p *pipeline) connect(ctx context.Context) (err error) {
	d := p.d
	if d.closed.Load() {
		return fmt.Errorf("cassandra at %s: %w", p.host, net.ErrClosed)
	}
	dl := net.Dialer{Timeout: d.opts.Timeouts.Connect}
	nc, err := dl.DialContext(ctx, "tcp", p.host)
	if err != nil {
		return fmt.Errorf("connect to cassandra at %s: %w", p.host, err)
	}
	defer func() {
		if err != nil {
			_ = nc.Close()
		}
	}()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	nc = driver.RawIO(nc)
	// The set-up (TLS handshake, STARTUP, authentication, PREPAREs) ends within
	// connectTimeout, as the connect did: a node that accepts and never answers must not
	// hold Init or Warm, whose contexts may have no deadline.
	deadline := time.Now().Add(d.opts.Timeouts.Connect)
	if cdl, ok := ctx.Deadline(); ok && cdl.Before(deadline) {
		deadline = cdl
	}
	_ = nc.SetDeadline(deadline)
	if d.tls != nil {
		conf := d.tls
		if conf.ServerName == "" && d.opts.TLS.Verify {
			// As crypto/tls.Dial does: verify the certificate against the host dialled.
			conf = conf.Clone()
			conf.ServerName, _, _ = net.SplitHostPort(p.host)
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS handshake with cassandra at %s: %w", p.host, err)
		}
		nc = tc
	}
	rd := bufio.NewReaderSize(nc, 64<<10)
	s := setup{nc: nc, rd: rd, codec: frame.NewCodec()}
	reply, err := s.call(message.NewStartup())
	if err != nil {
		return fmt.Errorf("cassandra STARTUP at %s: %w", p.host, err)
	}
	switch m := reply.(type) {
	case *message.Ready:
	case *message.Authenticate:
		if d.opts.Auth.Username == "" {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("cassandra at %s asks for authentication (%s): set username and password", p.host, m.Authenticator))
		}
		token := []byte("\x00" + d.opts.Auth.Username + "\x00" + d.opts.Auth.Password)
		reply, err = s.call(&message.AuthResponse{Token: token})
		if err != nil {
			return fmt.Errorf("cassandra authentication of %s at %s: %w", d.opts.Auth.Username, p.host, err)
		}
		if _, ok := reply.(*message.AuthSuccess); !ok {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("cassandra authentication of %s at %s: the server answered %s; only PasswordAuthenticator is supported",
				d.opts.Auth.Username, p.host, reply.GetOpCode()))
		}
	default:
		return fmt.Errorf("%w: cassandra at %s answered STARTUP with %s", errProtocol, p.host, reply.GetOpCode())
	}
	readID, err := s.prepare(d.readSQL)
	if err != nil {
		return fmt.Errorf("cassandra at %s: %w", p.host, err)
	}
	writeID, err := s.prepare(d.writeSQL)
	if err != nil {
		return fmt.Errorf("cassandra at %s: %w", p.host, err)
	}
	_ = nc.SetDeadline(time.Time{})
	p.rd = rd
	p.conn.Set(nc)
	p.readID, p.writeID = readID, writeID
	return nil
}

// setup runs the request-reply exchanges of connection set-up with the library's codecs.
type setup struct {
	nc    net.Conn
	rd    *bufio.Reader
	codec frame.Codec
	buf   bytes.Buffer
}

// call sends one request on stream 0 and returns its reply; an ERROR reply is returned
// as a classified error.
func (s *setup) call(m message.Message) (message.Message, error) {
	s.buf.Reset()
	if err := s.codec.EncodeFrame(frame.NewFrame(protoVersion, 0, m), &s.buf); err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.GetOpCode(), err)
	}
	if _, err := s.nc.Write(s.buf.Bytes()); err != nil {
		return nil, err
	}
	f, err := s.codec.DecodeFrame(s.rd)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errProtocol, err)
	}
	if e, ok := f.Body.Message.(message.Error); ok {
		return nil, newServerError(e)
	}
	return f.Body.Message, nil
}

// prepare prepares one statement and returns its id.
func (s *setup) prepare(cql string) ([]byte, error) {
	reply, err := s.call(&message.Prepare{Query: cql})
	if err != nil {
		return nil, fmt.Errorf("PREPARE %s: %w", cql, err)
	}
	pr, ok := reply.(*message.PreparedResult)
	if !ok || len(pr.PreparedQueryId) == 0 {
		return nil, fmt.Errorf("%w: PREPARE %s answered %v", errProtocol, cql, reply)
	}
	return pr.PreparedQueryId, nil
}

// serverError is an ERROR reply.
type serverError struct {
	code primitive.ErrorCode
	msg  string
}

// newServerError keeps what the driver uses of a decoded ERROR message.
func newServerError(e message.Error) *serverError {
	return &serverError{code: e.GetErrorCode(), msg: e.GetErrorMessage()}
}

// Error gives the code (with the library's name for it) and the node's message.
func (e *serverError) Error() string {
	return fmt.Sprintf("cassandra error %s: %s", e.code, e.msg)
}

// class maps the error code to a driver class, as Classify does for gocql's errors.
func (e *serverError) class() driver.Class {
	switch e.code {
	case primitive.ErrorCodeUnavailable, primitive.ErrorCodeIsBootstrapping:
		return driver.ClassUnavailable
	case primitive.ErrorCodeWriteTimeout, primitive.ErrorCodeReadTimeout:
		return driver.ClassTimeout
	case primitive.ErrorCodeOverloaded:
		return driver.ClassThrottled
	case primitive.ErrorCodeSyntaxError, primitive.ErrorCodeInvalid, primitive.ErrorCodeUnauthorized,
		primitive.ErrorCodeAuthenticationError, primitive.ErrorCodeConfigError, primitive.ErrorCodeAlreadyExists:
		return driver.ClassRejected
	}
	return driver.ClassOther
}

// classifyDirect wraps err with its class: a server error's, or the I/O error's.
func classifyDirect(err error) error {
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	var se *serverError
	if errors.As(err, &se) {
		return driver.Wrap(se.class(), err)
	}
	return driver.Wrap(driver.Classify(err), err)
}

// Interrupt makes blocked I/O return; Run tells a stale interrupt from a real one by its
// context (PipelineConn.Retry).
func (p *pipeline) Interrupt() { p.conn.Interrupt() }

// failAll completes every operation of the batch with err.
func failAll(ops []driver.PipelineOp, done func(int, []byte, error), err error) {
	err = classifyDirect(err)
	for i := range ops {
		done(i, nil, err)
	}
}

// Run sends every operation of the batch as an EXECUTE with its own stream id, in one
// write, and completes each as its reply is parsed.
func (p *pipeline) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	// Interrupt reaches only I/O that blocks: a batch on a context already done would
	// otherwise go through on a fast server.
	if err := ctx.Err(); err != nil {
		failAll(ops, done, fmt.Errorf("cassandra: %d requests not sent: %w", len(ops), err))
		return
	}
	if p.conn.Conn() == nil {
		if err := p.start(ctx); err != nil {
			failAll(ops, done, p.d.scrub(err))
			return
		}
	}
	for len(p.inflight) < len(ops) {
		p.inflight = append(p.inflight, -1)
		p.blocked = append(p.blocked, 0)
	}
	for i := range ops {
		p.inflight[i] = int32(i)
	}
	held := p.order(ops)
	p.readCL, p.writeCL = uint16(p.d.readCL.Load()), uint16(p.d.writeCL.Load())
	p.ts = time.Now().UnixMicro()
	w := p.wbuf[:0]
	for i := range ops {
		if p.blocked[i] == 0 {
			w = p.appendOp(w, ops, i, int16(i))
		}
	}
	if err := p.send(ctx, w); err != nil {
		p.fail(ops, done, fmt.Errorf("cassandra write of %d requests to %s: %w", len(ops), p.host, err))
		return
	}
	for left := len(ops); left > 0; {
		stream, opcode, body, err := p.frame(ctx)
		if err != nil {
			p.fail(ops, done, fmt.Errorf("cassandra reply from %s (%d of %d outstanding): %w", p.host, left, len(ops), err))
			return
		}
		if stream < 0 || int(stream) >= len(ops) || p.inflight[stream] < 0 || p.blocked[stream] > 0 {
			if stream < 0 {
				continue // an event; this connection registers for none, but never mind
			}
			p.fail(ops, done, fmt.Errorf("%w: cassandra at %s answered stream %d, which has no request in flight", errProtocol, p.host, stream))
			return
		}
		i := int(p.inflight[stream])
		p.inflight[stream] = -1
		left--
		op := &ops[i]
		value, err := p.result(op, opcode, body)
		switch {
		case err == nil, errors.Is(err, driver.ErrNotFound):
			done(i, value, err)
		default:
			var se *serverError
			if errors.As(err, &se) && se.code == primitive.ErrorCodeUnprepared {
				// The node forgot the statement (a restart, a schema change): the next
				// connection prepares it again.
				defer p.conn.Drop()
			} else if !errors.As(err, &se) {
				// A reply this driver cannot read: better not to trust the connection.
				defer p.conn.Drop()
			}
			done(i, nil, classifyDirect(fmt.Errorf("cassandra %s %s: %w", opName(op.Op), op.Key, err)))
		}
		if held > 0 {
			// Send what waited for this operation (one write for all of them).
			w := p.wbuf[:0]
			for k := i + 1; k < len(ops); k++ {
				if p.blocked[k] > 0 && conflict(&ops[i], &ops[k]) {
					if p.blocked[k]--; p.blocked[k] == 0 {
						w = p.appendOp(w, ops, k, int16(k))
						held--
					}
				}
			}
			if err := p.send(ctx, w); err != nil {
				p.fail(ops, done, fmt.Errorf("cassandra write of requests to %s: %w", p.host, err))
				return
			}
		}
	}
}

// conflict reports whether two operations of a batch must not run concurrently: the
// same key, and at least one of them writes. CQL runs the requests of a connection
// concurrently, unlike a RESP server, so a read sent beside a write of its key might not
// see it.
func conflict(a, b *driver.PipelineOp) bool {
	return (a.Op != driver.PipelineRead || b.Op != driver.PipelineRead) && a.Key == b.Key
}

// order sets blocked[i] to the number of earlier operations of the batch that operation
// i conflicts with, so that it is sent only once they have been answered, as if the batch
// ran one operation at a time; it returns how many operations are held back. Batches
// with distinct keys, the common case, all go out at once.
func (p *pipeline) order(ops []driver.PipelineOp) int {
	held := 0
	if len(ops) <= 64 {
		for i := range ops {
			n := int32(0)
			for j := 0; j < i; j++ {
				if conflict(&ops[j], &ops[i]) {
					n++
				}
			}
			p.blocked[i] = n
			if n > 0 {
				held++
			}
		}
		return held
	}
	// Large batches: find the keys seen more than once through a map, then count as
	// above only for the operations on those keys.
	if p.seen == nil {
		p.seen = make(map[string]int32, len(ops))
	}
	clear(p.seen)
	for i := range ops {
		p.seen[ops[i].Key]++
	}
	for i := range ops {
		n := int32(0)
		if p.seen[ops[i].Key] > 1 {
			for j := 0; j < i; j++ {
				if conflict(&ops[j], &ops[i]) {
					n++
				}
			}
		}
		p.blocked[i] = n
		if n > 0 {
			held++
		}
	}
	return held
}

// appendOp appends operation i's EXECUTE, on the given stream id.
func (p *pipeline) appendOp(w []byte, ops []driver.PipelineOp, i int, stream int16) []byte {
	op := &ops[i]
	if op.Op == driver.PipelineRead {
		return appendReadExecute(w, stream, p.readID, p.readCL, op.Key)
	}
	d := p.d
	row := 0
	if d.rows > 1 {
		row = int(p.rowSeq % uint64(d.rows))
		p.rowSeq++
	}
	// Each write of the batch gets its own microsecond, in batch order, so two writes of
	// one key are applied in the order the engine issued them.
	return appendWriteExecute(w, stream, p.writeID, p.writeCL, op.Key, int32(row), op.Value, d.cols, p.ts+int64(i))
}

// send writes w, riding out stale interrupts; it keeps w's buffer for the next batch.
func (p *pipeline) send(ctx context.Context, w []byte) error {
	p.wbuf = w[:0]
	for len(w) > 0 {
		n, err := p.conn.Conn().Write(w)
		w = w[n:]
		if err != nil && !p.conn.Retry(ctx, err) {
			return err
		}
	}
	return nil
}

// fail completes the operations still in flight with err and drops the connection, whose
// replies are out of step with its requests now.
func (p *pipeline) fail(ops []driver.PipelineOp, done func(int, []byte, error), err error) {
	p.conn.Drop()
	err = classifyDirect(p.d.scrub(err))
	for s := range ops {
		if i := p.inflight[s]; i >= 0 {
			p.inflight[s] = -1
			done(int(i), nil, err)
		}
	}
}

func opName(op int) string {
	if op == driver.PipelineRead {
		return "read"
	}
	return "write"
}

// frame reads one reply frame, riding out stale interrupts, and returns its stream id,
// opcode and body. The body is valid until the next call.
func (p *pipeline) frame(ctx context.Context) (int16, primitive.OpCode, []byte, error) {
	return readFrame(p.rd, &p.big, func(err error) bool { return p.conn.Retry(ctx, err) })
}

// readFrame reads one reply frame from rd and returns its stream id, opcode and body; a
// body larger than rd's buffer is read into *big. retry, when not nil, tells an I/O error
// worth retrying (a stale interrupt). The body is valid until the next call.
func readFrame(rd *bufio.Reader, big *[]byte, retry func(error) bool) (int16, primitive.OpCode, []byte, error) {
	again := func(err error) bool { return retry != nil && retry(err) }
	var hdr []byte
	var err error
	for {
		hdr, err = rd.Peek(headerLen)
		if err == nil || !again(err) {
			break
		}
	}
	if err != nil {
		return 0, 0, nil, err
	}
	_, flags, stream, opcode, n, err := checkHeader(hdr)
	if err != nil {
		return 0, 0, nil, err
	}
	_, _ = rd.Discard(headerLen)
	var body []byte
	if int(n) <= rd.Size() {
		for {
			body, err = rd.Peek(int(n))
			if err == nil || !again(err) {
				break
			}
		}
		if err != nil {
			return 0, 0, nil, err
		}
		_, _ = rd.Discard(int(n))
	} else {
		if cap(*big) < int(n) {
			*big = make([]byte, n)
		}
		body = (*big)[:n]
		for got := 0; got < len(body); {
			m, err := rd.Read(body[got:])
			got += m
			if err != nil && !again(err) {
				return 0, 0, nil, err
			}
		}
	}
	body, err = frameBody(flags, body)
	if err != nil {
		return 0, 0, nil, err
	}
	return stream, opcode, body, nil
}

// checkHeader parses a reply frame's header and refuses what this driver does not read.
func checkHeader(hdr []byte) (version, flags byte, stream int16, opcode primitive.OpCode, n int32, err error) {
	version, flags, stream, opcode, n = parseHeader(hdr)
	if version != 0x80|byte(protoVersion) {
		return 0, 0, 0, 0, 0, fmt.Errorf("%w: reply frame of version byte %#x, want %#x", errProtocol, version, 0x80|byte(protoVersion))
	}
	if n < 0 || n > 256<<20 {
		return 0, 0, 0, 0, 0, fmt.Errorf("%w: reply frame body of %d bytes", errProtocol, n)
	}
	return version, flags, stream, opcode, n, nil
}

// frameBody returns a reply frame's body past what its flags put before the message.
func frameBody(flags byte, body []byte) ([]byte, error) {
	if flags&^byte(primitive.HeaderFlagWarning|primitive.HeaderFlagTracing|primitive.HeaderFlagCustomPayload) != 0 {
		return nil, fmt.Errorf("%w: reply frame flags %#x (compression is never asked for)", errProtocol, flags)
	}
	return skipBodyPrefix(flags, body)
}

// result interprets one operation's reply: a read's value (joined from its columns,
// newest row of the partition), or nil for a write.
func (p *pipeline) result(op *driver.PipelineOp, opcode primitive.OpCode, body []byte) ([]byte, error) {
	switch opcode {
	case primitive.OpCodeResult:
	case primitive.OpCodeError:
		return nil, decodeError(body)
	default:
		return nil, fmt.Errorf("%w: reply opcode %s", errProtocol, opcode)
	}
	d := p.d
	if op.Op != driver.PipelineRead {
		return nil, nil
	}
	extra := 0
	if d.rows > 1 {
		extra = 1 // writetime(value0) first
	}
	if cap(p.cols) < d.cols {
		p.cols = make([][]byte, d.cols)
	}
	cols := p.cols[:d.cols]
	rr, err := parseRows(body, extra+d.cols)
	if err != nil {
		return nil, err
	}
	found := false
	var bestWT int64
	for {
		var ok bool
		p.cells, ok = rr.next(p.cells)
		if !ok {
			break
		}
		row := p.cells
		if extra == 1 {
			wt := int64(-1 << 63)
			if len(row[0]) == 8 {
				wt = int64(beUint64(row[0]))
			}
			if found && wt <= bestWT {
				continue
			}
			bestWT = wt
		}
		found = true
		copy(cols, row[extra:])
	}
	if err := rr.err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, driver.ErrNotFound
	}
	if len(cols) == 1 {
		if cols[0] == nil {
			return []byte{}, nil
		}
		return cols[0], nil
	}
	j := p.join[:0]
	for _, c := range cols {
		j = append(j, c...)
	}
	p.join = j
	return j, nil
}

// decodeError decodes an ERROR body with the library's codec; errors are rare, so its
// allocations do not matter.
func decodeError(body []byte) error {
	codec := frame.NewRawCodec()
	h := &frame.Header{IsResponse: true, Version: protoVersion, OpCode: primitive.OpCodeError, BodyLength: int32(len(body))}
	b, err := codec.DecodeBody(h, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: ERROR reply: %w", errProtocol, err)
	}
	e, ok := b.Message.(message.Error)
	if !ok {
		return fmt.Errorf("%w: ERROR reply decoded as %T", errProtocol, b.Message)
	}
	return newServerError(e)
}

// Close closes the connection.
func (p *pipeline) Close() error {
	return p.conn.Close()
}

// directState is what mode=direct adds to the driver.
type directState struct {
	nextHost atomic.Uint64 // the next pipeline's host, round robin
	closed   atomic.Bool   // Close was called: pipelines never reconnect
	tls      *tls.Config

	sharedMu sync.Mutex    // guards shared
	shared   []*sharedConn // sharedConns per host, made on first use

	// warm holds the connections Warm opened, set up, by host until pipelines take them.
	warm *driver.WarmConns[warmed]
}

// warmed is a connection Warm opened: STARTUP (and authentication) done, the two
// statements prepared on it.
type warmed struct {
	nc              net.Conn
	rd              *bufio.Reader
	readID, writeID []byte
}

// Warm opens mode=direct's connections for workers workers ahead of the load
// (driver.Warmer), on the hosts the workers' pipelines will take in turn, as latte and
// cassandra-stress connect before their clocks start: a worker otherwise connects on its
// first operation, whose response time then holds a TCP connect, STARTUP, authentication
// and two PREPAREs (a TLS handshake too, where configured). A host that fails costs only
// its own connections, and the error names it. sharedConns' few connections and mode=gocql
// (gocql's own pool, opened at Init) are not warmed.
func (d *Driver) Warm(ctx context.Context, workers int) error {
	if d.warm == nil || d.opts.SharedConns > 0 { // d.warm is made for mode=direct only
		return nil
	}
	hosts := uint64(len(d.opts.Hosts))
	next := d.nextHost.Load()
	per := make([]int, hosts)
	for i := range per {
		// Pipelines next, next+1, ... take hosts (next+k) % hosts.
		per[(next+uint64(i))%hosts] = workers / int(hosts)
		if i < workers%int(hosts) {
			per[(next+uint64(i))%hosts]++
		}
	}
	var errs []error
	for i, n := range per {
		if n == 0 {
			continue
		}
		h := d.hostAddr(i)
		err := d.warm.Fill(ctx, h, n, func(ctx context.Context) (warmed, error) {
			p := pipeline{d: d, host: h}
			if err := p.connect(ctx); err != nil {
				return warmed{}, err
			}
			return warmed{nc: p.conn.Conn(), rd: p.rd, readID: p.readID, writeID: p.writeID}, nil
		})
		if err != nil {
			errs = append(errs, classifyDirect(d.scrub(err)))
		}
	}
	return errors.Join(errs...)
}

// start gives the pipeline a connection Warm opened to its host, or connects.
func (p *pipeline) start(ctx context.Context) error {
	if w, ok := p.d.warm.Take(p.host); ok {
		p.rd, p.readID, p.writeID = w.rd, w.readID, w.writeID
		p.conn.Set(w.nc)
		return nil
	}
	return p.connect(ctx)
}
