package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ndbench/ndbench/driver"
)

// scratch is a request's reusable memory: the expanded URL and body, the body reader and
// a buffer for answers nobody keeps. Pooled, so a request allocates little beyond what
// net/http itself needs.
type scratch struct {
	url     []byte
	body    bodyReader
	bodyBuf []byte // the expanded body, read by the transport until it closes the body
	buf     []byte // answers read for a check or drained
}

var scratchPool = sync.Pool{New: func() any { return &scratch{buf: make([]byte, 0, 4096)} }}

// bodyReader is a request body over a reused buffer. net/http may close a request body
// from its own goroutine after RoundTrip returned (a server may answer before reading
// the whole body), so the buffer is reused, and the caller's value released, only once
// Close was called: wait blocks until then.
type bodyReader struct {
	b      []byte
	off    int
	closed atomic.Bool
	mu     sync.Mutex // locked while the transport may still read b
}

func (r *bodyReader) reset(b []byte) {
	r.b, r.off = b, 0
	r.closed.Store(false)
	r.mu.Lock()
}

// Read implements io.Reader.
func (r *bodyReader) Read(p []byte) (int, error) {
	if r.off >= len(r.b) {
		return 0, io.EOF
	}
	n := copy(p, r.b[r.off:])
	r.off += n
	return n, nil
}

// Close implements io.Closer; the transport may call it more than once.
func (r *bodyReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.mu.Unlock()
	}
	return nil
}

// wait returns once Close was called.
func (r *bodyReader) wait(s *scratch) {
	r.mu.Lock()
	//lint:ignore SA2001 the lock is only a signal that Close happened
	r.mu.Unlock()
	s.bodyBuf = r.b[:0] // keep the buffer, grown or not, for the next request
	r.b = nil
}

// do runs slot i on key (and value, for write operations).
func (d *Driver) do(ctx context.Context, i int, key string, value []byte) ([]byte, error) {
	if d.closed.Load() {
		return nil, errClosed
	}
	o := d.ops[i]
	if o == nil {
		return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("http %s: operation not configured (set drivers.http.%s to METHOD URL)", slots[i].name, slots[i].name))
	}
	// The timeout option is the transport's ResponseHeaderTimeout, and the op's context
	// bounds the whole request: no context of the driver's own per request, since
	// context.WithTimeout (a timer, a goroutine-safe cancel tree) costs more allocations
	// than the rest of the driver's request set-up.
	v := vars{key: key, value: value, op: o.name}
	if o.usesSeq {
		// One counter shared by all workers: a contended cache line, paid only when used.
		v.seq = d.seq.Add(1)
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)

	s.url = o.path.expand(s.url[:0], &v, true)
	if hc := d.fast[i]; hc != nil {
		return d.doFast(ctx, o, hc, s, &v, key)
	}
	// A shallow copy of the op's prototype: one allocation instead of NewRequest's
	// parsing. Opaque carries the escaped path and query as they are: no second parse,
	// no re-escaping of what the template already escaped.
	req := o.proto.WithContext(ctx)
	req.URL = &url.URL{Scheme: o.scheme, Host: o.host, Opaque: string(s.url)}
	if o.hasBody {
		s.body.reset(o.body.expand(s.bodyBuf[:0], &v, false))
		if len(s.body.b) > 0 {
			req.Body, req.ContentLength = &s.body, int64(len(s.body.b))
		} else {
			s.body.Close()
			req.Body = http.NoBody
		}
	}
	resp, err := d.transport.RoundTrip(req)
	if o.hasBody {
		defer func() {
			s.body.wait(s)
		}()
	}
	if err != nil {
		return nil, d.transportError(ctx, o, key, err)
	}
	defer resp.Body.Close()
	if p := d.proto.Load(); p == nil || *p != resp.Proto {
		proto := resp.Proto
		d.proto.Store(&proto)
	}
	out := outOther
	if resp.StatusCode >= 100 && resp.StatusCode < len(o.statuses) {
		out = o.statuses[resp.StatusCode]
	}
	switch out {
	case outOK:
	case outMiss:
		s.drain(resp.Body)
		return nil, driver.ErrNotFound
	default:
		s.drain(resp.Body)
		return nil, driver.Wrap(out.class(), fmt.Errorf("http %s: %s %s (key %s): %s", o.name, o.method, o.displayURL(), key, resp.Status))
	}
	switch o.check {
	case checkBody:
		b, err := d.readBody(resp)
		if err != nil {
			return nil, d.bodyError(ctx, o, key, err)
		}
		return b, nil
	case checkJSON:
		b, err := s.readInto(resp, d.maxBody)
		if err != nil {
			return nil, d.bodyError(ctx, o, key, err)
		}
		return o.checkJSON(b, &v, key)
	}
	if err := s.drain(resp.Body); err != nil {
		return nil, d.bodyError(ctx, o, key, err)
	}
	if o.kind == driver.KindRead {
		return []byte{}, nil
	}
	return nil, nil
}

// displayURL is the op's URL template for messages, credentials masked.
func (o *op) displayURL() string { return o.display[len(o.method)+1:] }

// readBody returns the whole body in a new slice (the value read belongs to the engine),
// sized from Content-Length when the server sent one.
func (d *Driver) readBody(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n > d.maxBody {
		return nil, errTooLarge
	}
	if n < 0 {
		n = 512
	}
	return readAll(resp.Body, make([]byte, 0, n), d.maxBody)
}

var errTooLarge = errors.New("response body larger than maxResponseSize")

// readAll reads r to EOF into b (growing it), up to limit bytes. It reads until EOF
// even when b is full at the announced length, so the transport sees the body end and
// keeps the connection.
func readAll(r io.Reader, b []byte, limit int64) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			if int64(len(b)) >= limit {
				var one [1]byte
				n, err := r.Read(one[:])
				if n > 0 {
					return nil, errTooLarge
				}
				if err == io.EOF {
					return b, nil
				}
				if err != nil {
					return nil, err
				}
				continue
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readInto reads the body into the scratch buffer, for checks that do not keep it.
func (s *scratch) readInto(resp *http.Response, limit int64) ([]byte, error) {
	b, err := readAll(resp.Body, s.buf[:0], limit)
	if err == nil {
		s.buf = b[:0]
	}
	return b, err
}

// drain reads and drops the body (up to 1 MiB), so that HTTP/1.1 can reuse the
// connection.
func (s *scratch) drain(body io.Reader) error {
	buf := s.buf[:cap(s.buf)]
	var total int
	for {
		n, err := body.Read(buf)
		total += n
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if total > 1<<20 {
			return nil // closing the body drops the connection: cheaper than reading on
		}
	}
}

// transportError classifies a request that got no answer: the op's context, then the
// standard rules, and otherwise unavailable, since net/http reports a connection the
// server closed or broke with errors of its own ("server closed idle connection").
func (d *Driver) transportError(ctx context.Context, o *op, key string, err error) error {
	err = fmt.Errorf("http %s: %s %s (key %s): %w", o.name, o.method, o.displayURL(), key, err)
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return driver.Wrap(driver.ClassTimeout, err)
		}
		return err
	}
	if d.closed.Load() {
		return driver.Wrap(driver.ClassUnavailable, err)
	}
	if c := driver.Classify(err); c != driver.ClassOther {
		return driver.Wrap(c, err)
	}
	// A certificate the client refuses is a configuration problem, not an outage.
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	if errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) {
		return err
	}
	return driver.Wrap(driver.ClassUnavailable, err)
}

// bodyError classifies a failure while reading an answer.
func (d *Driver) bodyError(ctx context.Context, o *op, key string, err error) error {
	if errors.Is(err, errTooLarge) {
		return fmt.Errorf("http %s: %s %s (key %s): %w (%d bytes)", o.name, o.method, o.displayURL(), key, err, d.maxBody)
	}
	return d.transportError(ctx, o, key, err)
}

// checkJSON applies json:PATH[=TEMPLATE] to body b.
func (o *op) checkJSON(b []byte, v *vars, key string) ([]byte, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("http %s: %s %s (key %s): response check json:%s: %s", o.name, o.method, o.displayURL(), key,
			joinPath(o.jsonPath), fmt.Sprintf(format, args...))
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fail("body is not JSON: %v", err)
	}
	for _, p := range o.jsonPath {
		switch x := doc.(type) {
		case map[string]any:
			f, ok := x[p]
			if !ok {
				return nil, fail("no field %q", p)
			}
			doc = f
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fail("no element %q in an array of %d", p, len(x))
			}
			doc = x[n]
		default:
			return nil, fail("%q is inside a value that is neither object nor array", p)
		}
	}
	var got []byte
	if s, ok := doc.(string); ok {
		got = []byte(s)
	} else {
		got, _ = json.Marshal(doc)
	}
	if o.jsonWant != nil {
		want := o.jsonWant.expand(nil, v, false)
		if !bytes.Equal(got, want) {
			return nil, fail("got %.64q, want %.64q", got, want)
		}
		if o.kind == driver.KindRead {
			return got, nil
		}
		return nil, nil
	}
	return got, nil
}

func joinPath(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}
