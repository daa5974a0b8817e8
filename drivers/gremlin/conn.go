package gremlin

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ndbench/ndbench/driver"
)

// A conn is one WebSocket to a Gremlin Server carrying many requests at once: requests are
// written under a lock, and one goroutine reads the replies and hands each to the call
// waiting for its request id. A call waits for its reply or for its context, whichever
// comes first; a reply that arrives after its call gave up finds no one waiting and is
// dropped, so nothing is ever written to memory the caller still uses. A read or write
// failure kills the conn: every waiting call gets the error and the pool dials a new one
// for the next request.
type conn struct {
	ws    *websocket.Conn
	addr  string
	codec *codec

	wmu chan struct{} // write lock, a channel so a writer can give up on its context

	mu      sync.Mutex
	pending map[requestID]*call
	err     error // set once, when the conn died
	done    chan struct{}
}

// call is one request awaiting its reply. Partial replies (status 206) accumulate in data
// until the final one.
type call struct {
	data []any
	res  chan result // buffered: the reader never blocks on a caller
}

type result struct {
	data []any
	err  error
}

// dialConfig is what every connection of a pool shares.
type dialConfig struct {
	url      string // ws[s]://host:port/path
	addr     string // host:port, for messages
	tls      *tls.Config
	username string
	password string
	timeout  time.Duration // connect timeout (dial, WebSocket and SASL handshakes)
	ids      *idSource
	codec    *codec

	maxMessage int        // write buffer size: the largest request, sent as one frame
	writePool  *writePool // shared by the pool's connections
}

// readBuffer is the size of a connection's read buffer (gorilla reassembles replies
// of any size from it).
const readBuffer = 64 << 10

// writePool lends connections their write buffers (of dialConfig.maxMessage bytes) while
// they write, so idle connections hold none. gorilla cuts a message larger than its
// write buffer into continuation frames, which Gremlin Server does not reassemble (the
// request is misread and never answered), so every request must fit in one buffer.
type writePool struct{ p sync.Pool }

func (w *writePool) Get() any  { return w.p.Get() }
func (w *writePool) Put(v any) { w.p.Put(v) }

// dial opens a WebSocket and, with a user name, authenticates it (SASL PLAIN, the
// mechanism of Gremlin Server's SimpleAuthenticator and of JanusGraph's authenticators).
func dial(ctx context.Context, cfg *dialConfig) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	d := websocket.Dialer{
		HandshakeTimeout: cfg.timeout,
		TLSClientConfig:  cfg.tls,
		ReadBufferSize:   readBuffer,
		WriteBufferSize:  cfg.maxMessage,
		WriteBufferPool:  cfg.writePool,
	}
	ws, resp, err := d.DialContext(ctx, cfg.url, http.Header{"User-Agent": {"ndbench"}})
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, driver.Wrap(driver.ClassTimeout, fmt.Errorf("connect to %s: %w", cfg.addr, err))
		}
		return nil, fmt.Errorf("connect to %s: %w", cfg.addr, err)
	}
	// Replies are bounded by what the server may send; values are at most a few MiB.
	ws.SetReadLimit(256 << 20)
	c := &conn{ws: ws, addr: cfg.addr, codec: cfg.codec, wmu: make(chan struct{}, 1), pending: map[requestID]*call{}, done: make(chan struct{})}
	go c.readLoop()
	if cfg.username != "" {
		if err := c.authenticate(ctx, cfg); err != nil {
			c.close(err)
			return nil, err
		}
	}
	return c, nil
}

// authenticate sends a trivial request, expects the server's challenge (407) and answers
// it with SASL PLAIN under the same request id, as TinkerPop's drivers do. A server
// without authentication simply answers the request.
func (c *conn) authenticate(ctx context.Context, cfg *dialConfig) error {
	id := cfg.ids.next()
	msg, err := cfg.codec.encode(nil, id, "eval", "", "gremlin", "0", "language", "gremlin-groovy")
	if err != nil {
		return err
	}
	cl := c.register(id)
	if err := c.write(ctx, msg); err != nil {
		return err
	}
	_, err = c.wait(ctx, id, cl)
	var se *statusError
	if err == nil || !errors.As(err, &se) || se.code != statusAuthenticate {
		return err // no challenge: a server without authentication answered
	}
	sasl := make([]byte, 0, 2+len(cfg.username)+len(cfg.password))
	sasl = append(append(append(append(sasl, 0), cfg.username...), 0), cfg.password...)
	msg, err = cfg.codec.encode(nil, id, "authentication", "", "saslMechanism", "PLAIN",
		"sasl", base64.StdEncoding.EncodeToString(sasl))
	if err != nil {
		return err
	}
	cl = c.register(id)
	if err := c.write(ctx, msg); err != nil {
		return err
	}
	if _, err := c.wait(ctx, id, cl); err != nil {
		return fmt.Errorf("authenticate as %s: %w", cfg.username, err)
	}
	return nil
}

// register records a call before its request is written, so a fast reply finds it.
func (c *conn) register(id requestID) *call {
	cl := &call{res: make(chan result, 1)}
	c.mu.Lock()
	if c.err == nil {
		c.pending[id] = cl
	} else {
		cl.res <- result{err: c.err}
	}
	c.mu.Unlock()
	return cl
}

func (c *conn) forget(id requestID) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// write sends one message. The socket's write deadline is the context's, so a server
// that stopped reading (its TCP window full) cannot hold a writer past its deadline; a
// write cut short leaves a partial frame, so it kills the conn.
func (c *conn) write(ctx context.Context, msg []byte) error {
	select {
	case c.wmu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.deadErr()
	}
	defer func() { <-c.wmu }()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Time{}
	}
	_ = c.ws.SetWriteDeadline(dl)
	if err := c.ws.WriteMessage(websocket.BinaryMessage, msg); err != nil {
		c.close(err)
		return err
	}
	return nil
}

// wait returns the call's result, or ctx's error when ctx ends first; the call is then
// forgotten, and its late reply dropped by the reader.
func (c *conn) wait(ctx context.Context, id requestID, cl *call) ([]any, error) {
	select {
	case r := <-cl.res:
		return r.data, r.err
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

// readLoop dispatches replies until the socket fails or is closed.
func (c *conn) readLoop() {
	for {
		_, msg, err := c.ws.ReadMessage()
		if err != nil {
			c.close(err)
			return
		}
		r, err := c.codec.decode(msg)
		if err != nil {
			// The stream is no longer trustworthy: which call the garbage belonged to is
			// unknown, so every call on the conn fails.
			c.close(fmt.Errorf("decode reply: %w", err))
			return
		}
		c.mu.Lock()
		cl := c.pending[r.id]
		if cl == nil { // its caller gave up (deadline): drop the late reply
			c.mu.Unlock()
			continue
		}
		switch r.status {
		case statusPartialContent:
			cl.data = append(cl.data, r.data...)
			c.mu.Unlock()
			continue
		case statusSuccess, statusNoContent:
			delete(c.pending, r.id)
			cl.res <- result{data: append(cl.data, r.data...)}
		default:
			delete(c.pending, r.id)
			cl.res <- result{err: &statusError{code: r.status, message: r.message}}
		}
		c.mu.Unlock()
	}
}

// close kills the conn once: waiting calls get err, the socket is closed.
func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	for id, cl := range c.pending {
		cl.res <- result{err: err}
		delete(c.pending, id)
	}
	close(c.done)
	c.mu.Unlock()
	_ = c.ws.Close()
}

// dead reports whether the conn failed or was closed.
func (c *conn) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) deadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// statusError is a reply with a failure status.
type statusError struct {
	code    int32
	message string
}

// Error shows the status code and the server's message.
func (e *statusError) Error() string {
	return fmt.Sprintf("gremlin server status %d: %s", e.code, e.message)
}

// idSource makes request ids: a random 8-byte prefix per driver and a counter, unique
// for the server without a call to the system's random source per request.
type idSource struct {
	prefix [8]byte
	n      atomic.Uint64
}

func newIDSource() *idSource {
	s := &idSource{}
	_, _ = rand.Read(s.prefix[:])
	return s
}

func (s *idSource) next() requestID {
	var id requestID
	copy(id[:8], s.prefix[:])
	binary.BigEndian.PutUint64(id[8:], s.n.Add(1))
	id[6] = id[6]&0x0f | 0x40 // a version-4 UUID, as servers may check
	id[8] = id[8]&0x3f | 0x80
	return id
}

// pool holds up to size connections per driver, spread over the addresses, and dials a
// slot again after its connection died. Requests go round robin over the slots.
type pool struct {
	cfgs   []*dialConfig // one per address
	slots  []slot
	next   atomic.Uint64
	closed atomic.Bool
}

type slot struct {
	lock chan struct{} // held while dialing; a channel so a waiter can give up
	mu   sync.Mutex
	c    *conn
}

var errClosed = errors.New("gremlin driver closed")

func newPool(cfgs []*dialConfig, size int) *pool {
	p := &pool{cfgs: cfgs, slots: make([]slot, size)}
	for i := range p.slots {
		p.slots[i].lock = make(chan struct{}, 1)
	}
	return p
}

// get returns the live connection of the next slot, dialing it if needed.
func (p *pool) get(ctx context.Context) (*conn, error) {
	if p.closed.Load() {
		return nil, errClosed
	}
	i := int(p.next.Add(1) % uint64(len(p.slots)))
	s := &p.slots[i]
	s.mu.Lock()
	c := s.c
	s.mu.Unlock()
	if c != nil && !c.dead() {
		return c, nil
	}
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.lock }()
	s.mu.Lock()
	c = s.c
	s.mu.Unlock()
	if c != nil && !c.dead() { // another caller dialed while we waited
		return c, nil
	}
	c, err := dial(ctx, p.cfgs[i%len(p.cfgs)])
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if p.closed.Load() { // Close ran while we dialed: do not leave a connection behind
		s.mu.Unlock()
		c.close(errClosed)
		return nil, errClosed
	}
	s.c = c
	s.mu.Unlock()
	return c, nil
}

// close closes every connection; later gets fail.
func (p *pool) close() {
	p.closed.Store(true)
	for i := range p.slots {
		s := &p.slots[i]
		s.mu.Lock()
		c := s.c
		s.c = nil
		s.mu.Unlock()
		if c != nil {
			c.close(errClosed)
		}
	}
}

// open reports how many slots hold a live connection.
func (p *pool) open() int {
	n := 0
	for i := range p.slots {
		s := &p.slots[i]
		s.mu.Lock()
		if s.c != nil && !s.c.dead() {
			n++
		}
		s.mu.Unlock()
	}
	return n
}
