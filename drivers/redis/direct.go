package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// mode=direct: each engine worker owns one connection (driver.Pipeliner) and this driver
// owns its hot loop: the commands of a batch are encoded into one buffer and written with
// one system call, and the replies are parsed in place as they arrive. Nothing sits
// between the worker and the socket: no pool, no lock on the way, no per-command deadline
// (a timeout or a hard stop reaches the connection through Interrupt), no goroutine
// hand-off. docs/design-notes.md has the measurements that led here.

// pipeline is one worker's connection in mode=direct.
type pipeline struct {
	d    *Driver
	conn driver.PipelineConn // Interrupt may run on the engine's watchdog goroutine
	rd   *respReader
	wbuf []byte
	hash []byte // hash shape: a value joined from its fields
}

// Pipelines reports whether the driver runs in mode=direct.
func (d *Driver) Pipelines() bool { return d.opts.Mode == "direct" }

// NewPipeline returns a connection for one worker; it connects on first use.
func (d *Driver) NewPipeline(context.Context) (driver.Pipeline, error) {
	if !d.Pipelines() {
		return nil, fmt.Errorf("redis: pipelines need mode=direct (mode is %s)", d.opts.Mode)
	}
	return &pipeline{d: d}, nil
}

// connect gives the pipeline a connection: one Warm opened, or a new one.
func (p *pipeline) connect(ctx context.Context) error {
	if p.d.closed.Load() {
		return fmt.Errorf("redis at %s: %w", p.d.opts.Addrs[0], net.ErrClosed)
	}
	if w, ok := p.d.direct.warm.Take(""); ok {
		p.rd = w.rd
		p.conn.Set(w.nc)
		return nil
	}
	nc, rd, err := p.d.session(ctx)
	if err != nil {
		return err
	}
	p.rd = rd
	p.conn.Set(nc)
	return nil
}

// session dials, and sets up the session: TLS, AUTH, SELECT.
func (d *Driver) session(ctx context.Context) (net.Conn, *respReader, error) {
	o := &d.opts
	nc, err := dial(ctx, "tcp", o.Addrs[0], o.Timeouts.Connect, d.tls)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to redis at %s: %w", o.Addrs[0], err)
	}
	var src io.Reader = nc
	if sr := newSpinReader(nc, o.SpinRead); sr != nil {
		src = sr
	}
	rd := newRespReader(src)
	var setup []byte
	var names []string
	if o.Auth.Password != "" {
		if o.Auth.Username != "" {
			setup = appendCommand(setup, "AUTH", o.Auth.Username, o.Auth.Password)
		} else {
			setup = appendCommand(setup, "AUTH", o.Auth.Password)
		}
		names = append(names, "AUTH")
	}
	if o.DB != 0 {
		setup = appendCommand(setup, "SELECT", strconv.Itoa(o.DB))
		names = append(names, "SELECT")
	}
	if len(setup) > 0 {
		// The set-up's replies come within connectTimeout, as the connect did: a server
		// that accepts and never answers (a black hole, a stopped process) must not hold
		// Init or Warm, whose contexts may have no deadline.
		dl := time.Now().Add(o.Timeouts.Connect)
		if cdl, ok := ctx.Deadline(); ok && cdl.Before(dl) {
			dl = cdl
		}
		_ = nc.SetDeadline(dl)
		_, err := nc.Write(setup)
		for i := 0; err == nil && i < len(names); i++ {
			if _, _, _, err = rd.reply(); err != nil {
				// The password is never part of the error: only the command's name is.
				err = fmt.Errorf("redis %s: %w", names[i], err)
			}
		}
		_ = nc.SetDeadline(time.Time{})
		if err != nil {
			_ = nc.Close()
			return nil, nil, err
		}
	}
	return nc, rd, nil
}

// Interrupt makes blocked I/O return; Run tells a stale interrupt from a real one by its
// context (PipelineConn.Retry).
func (p *pipeline) Interrupt() { p.conn.Interrupt() }

// Run sends ops in one write and completes each as its reply is parsed.
func (p *pipeline) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	// Interrupt reaches only I/O that blocks: a batch on a context already done would
	// otherwise go through on a fast server.
	if err := ctx.Err(); err != nil {
		err = classify(fmt.Errorf("redis: %d commands not sent: %w", len(ops), err))
		for i := range ops {
			done(i, nil, err)
		}
		return
	}
	if p.conn.Conn() == nil {
		if err := p.connect(ctx); err != nil {
			err = classify(err)
			for i := range ops {
				done(i, nil, err)
			}
			return
		}
	}
	hash := p.d.opts.Shape == "hash"
	ttl := time.Duration(p.d.ttl.Load())
	w := p.wbuf[:0]
	for i := range ops {
		w = p.d.appendOp(w, &ops[i], hash, ttl)
	}
	p.wbuf = w
	for len(w) > 0 {
		n, err := p.conn.Conn().Write(w)
		w = w[n:]
		if err != nil && !p.conn.Retry(ctx, err) {
			p.fail(ops, 0, done, fmt.Errorf("redis write of %d commands: %w", len(ops), err))
			return
		}
	}
	for i := range ops {
		value, err := p.readOp(ctx, &ops[i], hash, ttl)
		if err == nil || errors.Is(err, driver.ErrNotFound) {
			done(i, value, err)
			continue
		}
		// The error reply is looked for out of line: a replyError declared in this loop
		// escapes to errors.As's target and was allocated for every operation, answered
		// or not.
		if re, ok := asReplyError(err); ok {
			done(i, nil, driver.Wrap(serverClass(string(re)), fmt.Errorf("redis %s %s: %w", opName(ops[i].Op, hash), ops[i].Key, err)))
			continue
		}
		p.fail(ops, i, done, fmt.Errorf("redis %s %s: %w", opName(ops[i].Op, hash), ops[i].Key, err))
		return
	}
}

// asReplyError returns the error reply in err's chain, if any.
func asReplyError(err error) (replyError, bool) {
	var re replyError
	ok := errors.As(err, &re)
	return re, ok
}

// fail completes ops[from:] with err and drops the connection, whose replies are out of
// step with its commands now.
func (p *pipeline) fail(ops []driver.PipelineOp, from int, done func(int, []byte, error), err error) {
	p.conn.Drop()
	err = classify(err)
	for i := from; i < len(ops); i++ {
		done(i, nil, err)
	}
}

func opName(op int, hash bool) string {
	switch {
	case op == driver.PipelineRead && hash:
		return "HGETALL"
	case op == driver.PipelineRead:
		return "GET"
	case hash:
		return "HSET"
	}
	return "SET"
}

// appendOp encodes one operation's commands.
func (d *Driver) appendOp(w []byte, op *driver.PipelineOp, hash bool, ttl time.Duration) []byte {
	read := op.Op == driver.PipelineRead
	switch {
	case read && hash:
		return appendCommand(w, "HGETALL", d.hashKey(op.Key))
	case read:
		w = append(w, getHead...)
		return appendBulkString(w, op.Key)
	case hash:
		hk := d.hashKey(op.Key)
		n := d.opts.HashFields
		w = appendArrayHeader(w, 2+2*n)
		w = appendBulkString(w, "HSET")
		w = appendBulkString(w, hk)
		for i := 0; i < n; i++ {
			w = appendBulkString(w, hk+"__"+strconv.Itoa(i+1))
			w = appendBulk(w, op.Value[i*len(op.Value)/n:(i+1)*len(op.Value)/n])
		}
		if ttl > 0 {
			w = appendCommand(w, "PEXPIRE", hk, strconv.FormatInt(ttl.Milliseconds(), 10))
		}
		return d.appendIndex(w, op.Key)
	}
	if ttl > 0 {
		w = append(w, setPXHead...)
	} else {
		w = append(w, setHead...)
	}
	w = appendBulkString(w, op.Key)
	w = appendBulk(w, op.Value)
	if ttl > 0 {
		w = appendBulkString(w, "PX")
		w = appendBulkString(w, strconv.FormatInt(ttl.Milliseconds(), 10))
	}
	return d.appendIndex(w, op.Key)
}

// appendIndex appends, with scanIndex, the ZADD that adds key to the scan index.
func (d *Driver) appendIndex(w []byte, key string) []byte {
	if !d.opts.ScanIndex {
		return w
	}
	return appendCommand(w, "ZADD", d.opts.ScanIndexKey, "0", key)
}

// readOp reads one operation's replies. An error reply (replyError) leaves the stream in
// step; any other error does not.
func (p *pipeline) readOp(ctx context.Context, op *driver.PipelineOp, hash bool, ttl time.Duration) ([]byte, error) {
	read := op.Op == driver.PipelineRead
	switch {
	case read && hash:
		return p.readHash(ctx, op.Key)
	case !read && (hash && ttl > 0 || p.d.opts.ScanIndex):
		// HSET then PEXPIRE, and the index's ZADD: the first error reply wins, every
		// reply is consumed.
		replies := 1
		if hash && ttl > 0 {
			replies++
		}
		if p.d.opts.ScanIndex {
			replies++
		}
		var err error
		for range replies {
			_, err2 := p.reply(ctx)
			if err2 != nil && (err == nil || !isReplyError(err2)) {
				err = err2
			}
		}
		return nil, err
	}
	data, err := p.reply(ctx)
	if err == nil && read && data == nil {
		return nil, driver.ErrNotFound
	}
	return data, err
}

// isReplyError reports whether err's chain holds an error reply. Its target escapes to
// errors.As, so a caller checks for an error before calling it.
func isReplyError(err error) bool {
	_, ok := asReplyError(err)
	return ok
}

// reply reads one reply, riding out stale interrupts, and returns a bulk's bytes.
func (p *pipeline) reply(ctx context.Context) ([]byte, error) {
	for {
		tag, data, n, err := p.rd.reply()
		if err != nil {
			if p.conn.Retry(ctx, err) {
				continue
			}
			return nil, err
		}
		if tag == '*' {
			for i := 0; i < n; i++ {
				if err := p.rd.skip(); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		return data, nil
	}
}

// readHash reads an HGETALL reply and joins the fields hk__1..hk__n in order.
func (p *pipeline) readHash(ctx context.Context, key string) ([]byte, error) {
	var tag byte
	var n int
	var err error
	for {
		tag, _, n, err = p.rd.reply()
		if err == nil || !p.conn.Retry(ctx, err) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if tag != '*' || n%2 != 0 {
		return nil, fmt.Errorf("%w: HGETALL answered type %q of %d elements", errProtocol, tag, n)
	}
	if n == 0 {
		return nil, driver.ErrNotFound
	}
	// Fields may come in any order: collect them by number, then join.
	hk := p.d.hashKey(key)
	parts := make([][]byte, n/2)
	var bad error
	for i := 0; i < n/2; i++ {
		f, err := p.reply(ctx)
		if err != nil {
			return nil, err
		}
		num, ok := fieldNumber(f, hk)
		v, err := p.reply(ctx)
		if err != nil {
			return nil, err
		}
		if !ok || num > len(parts) || parts[num-1] != nil {
			bad = fmt.Errorf("redis HGETALL %s: %d fields, and field %q is not %s__1..%d", hk, n/2, f, hk, n/2)
			continue
		}
		parts[num-1] = append([]byte(nil), v...)
	}
	if bad != nil {
		return nil, driver.Wrap(driver.ClassOther, bad)
	}
	out := p.hash[:0]
	for _, part := range parts {
		out = append(out, part...)
	}
	p.hash = out
	return out, nil
}

// fieldNumber parses the field name hk__N.
func fieldNumber(f []byte, hk string) (int, bool) {
	if len(f) < len(hk)+3 || string(f[:len(hk)]) != hk || f[len(hk)] != '_' || f[len(hk)+1] != '_' {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[len(hk)+2:]))
	return n, err == nil && n > 0
}

// Close closes the connection.
func (p *pipeline) Close() error {
	return p.conn.Close()
}

// directPool serves Read, Write and the API in mode=direct (the engine's workers have
// their own pipelines): pipelines reused across calls, at most poolSize kept idle. It
// also holds the connections Warm opened until pipelines take them.
type directPool struct {
	d    *Driver
	idle chan *pipeline
	warm *driver.WarmConns[warmed]
}

// warmed is a connection Warm opened and set up, with its reply reader.
type warmed struct {
	nc net.Conn
	rd *respReader
}

// Warm opens mode=direct's connections for workers workers ahead of the load
// (driver.Warmer), as memtier and redis-benchmark connect their clients before their
// clocks start: each worker's pipeline otherwise connects on its first operation, whose
// response time then holds a TCP connect (and a TLS handshake, AUTH and SELECT where
// configured). Other modes keep go-redis's pools, which connect on demand.
func (d *Driver) Warm(ctx context.Context, workers int) error {
	if d.direct == nil {
		return nil
	}
	err := d.direct.warm.Fill(ctx, "", workers, func(ctx context.Context) (warmed, error) {
		nc, rd, err := d.session(ctx)
		return warmed{nc, rd}, err
	})
	return classify(err)
}

// do runs one operation on a pooled pipeline. ctx's end interrupts it, as the engine's
// watchdog does for workers' pipelines.
func (dp *directPool) do(ctx context.Context, op driver.PipelineOp) ([]byte, error) {
	var p *pipeline
	select {
	case p = <-dp.idle:
	default:
		p = &pipeline{d: dp.d}
	}
	stop := context.AfterFunc(ctx, p.Interrupt)
	var got []byte
	var gotErr error
	p.Run(ctx, []driver.PipelineOp{op}, func(_ int, v []byte, err error) {
		got, gotErr = append([]byte(nil), v...), err
		if v == nil {
			got = nil
		}
	})
	if !stop() {
		// The interrupt ran or is running: the connection's deadline is in the past.
		p.conn.Drop()
	}
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

// close closes the idle pipelines; the driver is marked closed first, so no pipeline
// connects again.
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

// initDirect checks the server answers PING on a connection of the pool, and reads its
// version.
func (d *Driver) initDirect(ctx context.Context) error {
	o := &d.opts
	d.direct = &directPool{d: d, idle: make(chan *pipeline, max(o.PoolSize, 10)),
		warm: driver.NewWarmConns(0, nil, func(w warmed) { _ = w.nc.Close() })}
	p := &pipeline{d: d}
	defer func() { _ = p.Close() }()
	if err := p.connect(ctx); err != nil {
		return classify(err)
	}
	if _, err := p.call(ctx, "PING"); err != nil {
		return classify(fmt.Errorf("connect to redis at %s: %w", o.Addrs[0], err))
	}
	version := "unknown"
	if info, err := p.call(ctx, "INFO", "server"); err == nil {
		version = versionFromInfo(string(info))
	}
	d.info = map[string]string{
		"addrs":          o.Addrs[0],
		"mode":           o.Mode,
		"shape":          o.Shape,
		"cluster":        "false",
		"db":             strconv.Itoa(o.DB),
		"tls":            strconv.FormatBool(o.TLS.Enable),
		"scanIndex":      scanIndexInfo(o),
		"server_version": version,
	}
	return nil
}

// call sends one command and returns its reply's bytes (a copy), for set-up and probes.
func (p *pipeline) call(ctx context.Context, args ...string) ([]byte, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = p.conn.Conn().SetDeadline(dl)
		defer func() { _ = p.conn.Conn().SetDeadline(time.Time{}) }()
	}
	if _, err := p.conn.Conn().Write(appendCommand(nil, args...)); err != nil {
		return nil, fmt.Errorf("redis %s: %w", args[0], err)
	}
	_, data, _, err := p.rd.reply()
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", args[0], err)
	}
	return append([]byte(nil), data...), nil
}

// command sends one command outside the pipelines' batches (a composition's DEL) on a
// pooled connection. The operation's deadline bounds it; a connection whose command
// failed is closed rather than pooled, since its state is unknown.
func (dp *directPool) command(ctx context.Context, args ...string) ([]byte, error) {
	if dp.d.closed.Load() {
		return nil, classify(fmt.Errorf("redis %s: %w", args[0], net.ErrClosed))
	}
	var p *pipeline
	select {
	case p = <-dp.idle:
	default:
		p = &pipeline{d: dp.d}
	}
	if p.conn.Conn() == nil {
		if err := p.connect(ctx); err != nil {
			return nil, classify(err)
		}
	}
	out, err := p.call(ctx, args...)
	if err != nil || dp.d.closed.Load() {
		_ = p.Close()
		return out, classify(err)
	}
	select {
	case dp.idle <- p:
	default:
		_ = p.Close()
	}
	return out, nil
}

// scan is Driver.Scan in mode=direct, on a pooled connection; ctx's end interrupts it. A
// connection whose scan failed other than by an error reply is closed, not pooled.
func (dp *directPool) scan(ctx context.Context, start string, n int) (int, error) {
	if dp.d.closed.Load() {
		return 0, classify(fmt.Errorf("redis scan: %w", net.ErrClosed))
	}
	// As in Run: Interrupt reaches only I/O that blocks, so a scan on a context already
	// done would otherwise go through on a fast server.
	if err := ctx.Err(); err != nil {
		return 0, classify(fmt.Errorf("redis scan: not sent: %w", err))
	}
	var p *pipeline
	select {
	case p = <-dp.idle:
	default:
		p = &pipeline{d: dp.d}
	}
	if p.conn.Conn() == nil {
		if err := p.connect(ctx); err != nil {
			return 0, classify(err)
		}
	}
	stop := context.AfterFunc(ctx, p.Interrupt)
	got, err := p.scan(ctx, start, n)
	if !stop() {
		p.conn.Drop()
	}
	var re replyError
	if err != nil && !errors.Is(err, driver.ErrNotFound) && !errors.As(err, &re) || dp.d.closed.Load() {
		_ = p.Close()
	} else {
		select {
		case dp.idle <- p:
		default:
			_ = p.Close()
		}
	}
	switch {
	case errors.As(err, &re):
		return 0, driver.Wrap(serverClass(string(re)), fmt.Errorf("redis scan: %w", err))
	case err != nil && !errors.Is(err, driver.ErrNotFound):
		return 0, classify(fmt.Errorf("redis scan: %w", err))
	}
	return got, err
}

// scan reads the keys from start in the scan index, then their values, in two round
// trips (see Driver.Scan).
func (p *pipeline) scan(ctx context.Context, start string, n int) (int, error) {
	o := &p.d.opts
	if err := p.send(ctx, appendCommand(p.wbuf[:0], "ZRANGEBYLEX", o.ScanIndexKey, "["+start, "+", "LIMIT", "0", strconv.Itoa(n))); err != nil {
		return 0, err
	}
	tag, _, count, err := p.next(ctx)
	if err != nil {
		return 0, err
	}
	if tag != '*' {
		return 0, fmt.Errorf("%w: ZRANGEBYLEX answered type %q", errProtocol, tag)
	}
	keys := make([]string, 0, count)
	for range count {
		k, err := p.reply(ctx)
		if err != nil {
			return 0, err
		}
		keys = append(keys, string(k))
	}
	if len(keys) == 0 {
		return 0, driver.ErrNotFound
	}
	got := 0
	if o.Shape == "hash" {
		w := p.wbuf[:0]
		for _, k := range keys {
			w = appendCommand(w, "HGETALL", p.d.hashKey(k))
		}
		if err := p.send(ctx, w); err != nil {
			return 0, err
		}
		for _, k := range keys {
			_, err := p.readHash(ctx, k)
			switch {
			case err == nil:
				got++
			case errors.Is(err, driver.ErrNotFound):
			default:
				return 0, err
			}
		}
	} else {
		if err := p.send(ctx, appendCommand(p.wbuf[:0], append([]string{"MGET"}, keys...)...)); err != nil {
			return 0, err
		}
		tag, _, count, err := p.next(ctx)
		if err != nil {
			return 0, err
		}
		if tag != '*' || count != len(keys) {
			return 0, fmt.Errorf("%w: MGET of %d keys answered type %q of %d elements", errProtocol, len(keys), tag, count)
		}
		for range count {
			_, _, size, err := p.next(ctx)
			if err != nil {
				return 0, err
			}
			if size >= 0 {
				got++
			}
		}
	}
	if got == 0 {
		return 0, driver.ErrNotFound
	}
	return got, nil
}

// send writes w whole, riding out stale interrupts.
func (p *pipeline) send(ctx context.Context, w []byte) error {
	p.wbuf = w
	for len(w) > 0 {
		n, err := p.conn.Conn().Write(w)
		w = w[n:]
		if err != nil && !p.conn.Retry(ctx, err) {
			return err
		}
	}
	return nil
}

// next reads one reply as respReader.reply does, riding out stale interrupts.
func (p *pipeline) next(ctx context.Context) (tag byte, data []byte, n int, err error) {
	for {
		tag, data, n, err = p.rd.reply()
		if err == nil || !p.conn.Retry(ctx, err) {
			return tag, data, n, err
		}
	}
}
