package script

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/ndbench/ndbench/driver"
)

// maxHTTPBody bounds what http.request reads of an answer.
const maxHTTPBody = 64 << 20

// store is a driver a script opened with stores.open, shared by all runtimes of its
// generation (drivers are safe for concurrent use).
type store struct {
	key  string
	name string
	d    driver.Driver
	def  driver.Definition
	refs atomic.Int32 // the store sets holding it; the last to let go closes it
}

// storeSet holds the stores of one generation, opened once each (the first runtime's
// init opens them; the others' init calls get the same drivers) and closed with it.
type storeSet struct {
	mu     sync.Mutex
	m      map[string]*store
	order  []*store
	closed bool
	// prev is the running generation's set while this one loads: a store opened with
	// the same driver and options is taken over, not opened again, so a reload neither
	// reconnects nor empties an in-process store (memory, pebble).
	prev   *storeSet
	client *http.Client
}

func newStoreSet(prev *storeSet) *storeSet {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024 // a connection per concurrent operation, kept
	return &storeSet{m: map[string]*store{}, prev: prev, client: &http.Client{
		Transport: tr,
		// Redirects are answers to the script, as in the http driver.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// loaded ends the take-over of the previous set's stores.
func (s *storeSet) loaded() {
	s.mu.Lock()
	s.prev = nil
	s.mu.Unlock()
}

// adopt returns the store of key from the set, holding a reference, if it has it open.
func (s *storeSet) adopt(key string) *store {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[key]
	if !ok || s.closed {
		return nil
	}
	st.refs.Add(1)
	return st
}

// open returns the store of driver name with values, opening it on first use.
func (s *storeSet) open(ctx context.Context, name string, values map[string]string) (*store, error) {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		fmt.Fprintf(&b, "\x00%s=%s", k, values[k])
	}
	key := b.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	if st, ok := s.m[key]; ok {
		return st, nil
	}
	if name == Name {
		return nil, driver.Wrap(driver.ClassRejected, errors.New("a script cannot open the script driver"))
	}
	var st *store
	if s.prev != nil {
		st = s.prev.adopt(key)
	}
	if st == nil {
		d, _, err := driver.Open(ctx, name, values)
		if err != nil {
			return nil, err
		}
		def, _ := driver.Lookup(name)
		st = &store{key: key, name: name, d: d, def: def}
		st.refs.Store(1)
	}
	s.m[key] = st
	s.order = append(s.order, st)
	return st, nil
}

func (s *storeSet) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, st := range s.order {
		names = append(names, st.name)
	}
	return names
}

// close closes the stores in the reverse order of opening.
func (s *storeSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for i := len(s.order) - 1; i >= 0; i-- {
		if s.order[i].refs.Add(-1) > 0 {
			continue // taken over by the next generation
		}
		if err := s.order[i].d.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store %s: %w", s.order[i].name, err))
		}
	}
	s.order, s.m = nil, nil
	s.client.CloseIdleConnections()
	return errors.Join(errs...)
}

// installHost defines the globals scripts call: stores, http and the helpers.
func (v *vm) installHost() error {
	rt := v.rt
	stores := rt.NewObject()
	if err := stores.Set("open", v.storesOpen); err != nil {
		return err
	}
	httpObj := rt.NewObject()
	if err := httpObj.Set("request", v.httpRequest); err != nil {
		return err
	}
	if err := httpObj.Set("get", func(c goja.FunctionCall) goja.Value {
		return v.httpRequest(goja.FunctionCall{Arguments: []goja.Value{rt.ToValue("GET"), c.Argument(0), goja.Undefined(), c.Argument(1)}})
	}); err != nil {
		return err
	}
	if err := httpObj.Set("post", func(c goja.FunctionCall) goja.Value {
		return v.httpRequest(goja.FunctionCall{Arguments: []goja.Value{rt.ToValue("POST"), c.Argument(0), c.Argument(1), c.Argument(2)}})
	}); err != nil {
		return err
	}
	for name, fn := range map[string]func(goja.FunctionCall) goja.Value{
		"sleep":       v.sleep,
		"now":         func(goja.FunctionCall) goja.Value { return rt.ToValue(float64(time.Now().UnixNano()) / 1e6) },
		"randomInt":   v.randomInt,
		"randomBytes": v.randomBytes,
		"text":        v.text,
		"bytes":       v.bytes,
	} {
		if err := rt.Set(name, fn); err != nil {
			return err
		}
	}
	console := rt.NewObject()
	for name, level := range map[string]slog.Level{"log": slog.LevelInfo, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError} {
		if err := console.Set(name, v.logger(level)); err != nil {
			return err
		}
	}
	if err := rt.Set("console", console); err != nil {
		return err
	}
	if err := rt.Set("stores", stores); err != nil {
		return err
	}
	return rt.Set("http", httpObj)
}

// opCtx is the context of the operation running (or of init), for host calls: it ends
// with the operation's context or at the call's limit, whichever comes first, so a
// nested call, a request or a sleep cannot outlast the limit either.
func (v *vm) opCtx() context.Context {
	if v.hctx != nil {
		return v.hctx
	}
	ctx := v.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if d, ok := ctx.Deadline(); ok && !d.After(v.limitAt) {
		return ctx
	}
	hctx, cancel := context.WithDeadlineCause(ctx, v.limitAt,
		&limitError{script: v.g.src.name, what: v.what, opt: v.limitOpt, limit: v.limit})
	v.mu.Lock() // stop reads hcancel
	v.hctx, v.hcancel = hctx, cancel
	v.mu.Unlock()
	return hctx
}

// storesOpen is stores.open(name, options): a handle on bundled driver name opened with
// options (an object of option values, converted to strings).
func (v *vm) storesOpen(c goja.FunctionCall) goja.Value {
	name := c.Argument(0).String()
	values := map[string]string{}
	if o := c.Argument(1); !goja.IsUndefined(o) && !goja.IsNull(o) {
		obj := o.ToObject(v.rt)
		for _, k := range obj.Keys() {
			values[k] = obj.Get(k).String()
		}
	}
	st, err := v.g.stores.open(v.opCtx(), name, values)
	if err != nil {
		v.throw(err)
	}
	if h, ok := v.stores[st]; ok {
		return h
	}
	h := v.handle(st)
	v.stores[st] = h
	return h
}

// handle builds the JavaScript object of store st: read, write, op and workflow, each
// running with the calling operation's context.
func (v *vm) handle(st *store) goja.Value {
	rt := v.rt
	h := rt.NewObject()
	set := func(name string, fn func(goja.FunctionCall) goja.Value) {
		_ = h.Set(name, fn)
	}
	_ = h.Set("name", st.name)
	// read(key): an ArrayBuffer (a copy: the driver's slice may be its stored data), or
	// null on a miss.
	set("read", func(c goja.FunctionCall) goja.Value {
		b, err := st.d.Read(v.opCtx(), c.Argument(0).String())
		if errors.Is(err, driver.ErrNotFound) {
			return goja.Null()
		}
		if err != nil {
			v.throw(err)
		}
		return rt.ToValue(rt.NewArrayBuffer(append(make([]byte, 0, len(b)), b...)))
	})
	set("write", func(c goja.FunctionCall) goja.Value {
		b, err := bytesOf(c.Argument(1), false)
		if err != nil {
			panic(rt.NewTypeError("%s.write: value is %v", st.name, err))
		}
		if err := st.d.Write(v.opCtx(), c.Argument(0).String(), b); err != nil {
			v.throw(err)
		}
		return goja.Undefined()
	})
	// op(name, key, value): one of the driver's named operations; a read kind returns an
	// ArrayBuffer or null on a miss.
	set("op", func(c goja.FunctionCall) goja.Value {
		opName := c.Argument(0).String()
		o, idx, ok := st.def.Operation(opName)
		if !ok {
			panic(rt.NewTypeError("driver %s has no operation %q (it has %s)", st.name, opName, strings.Join(st.def.OperationNames(), ", ")))
		}
		ctx, key := v.opCtx(), c.Argument(1).String()
		var val []byte
		if o.Kind == driver.KindWrite {
			b, err := bytesOf(c.Argument(2), false)
			if err != nil {
				panic(rt.NewTypeError("%s.op(%s): value is %v", st.name, opName, err))
			}
			val = b
		}
		var out []byte
		var err error
		switch idx {
		case driver.IndexRead:
			out, err = st.d.Read(ctx, key)
		case driver.IndexWrite:
			err = st.d.Write(ctx, key, val)
		case driver.IndexDelete:
			err = st.d.(driver.Deleter).Delete(ctx, key)
		case driver.IndexRMW, driver.IndexScan:
			// The engine runs these itself (read then write; a scan's length); a script
			// composes them from read, write and its own loops.
			panic(rt.NewTypeError("%s.op(%s): run by the engine only; call the driver's read and write", st.name, opName))
		default:
			opr, _ := st.d.(driver.Operator)
			out, err = opr.Do(ctx, idx, key, val)
		}
		if errors.Is(err, driver.ErrNotFound) && o.Kind == driver.KindRead {
			return goja.Null()
		}
		if err != nil {
			v.throw(err)
		}
		if o.Kind != driver.KindRead || out == nil {
			return goja.Undefined()
		}
		return rt.ToValue(rt.NewArrayBuffer(append(make([]byte, 0, len(out)), out...)))
	})
	set("workflow", func(c goja.FunctionCall) goja.Value {
		w, ok := st.d.(driver.Workflower)
		if !ok {
			panic(rt.NewTypeError("driver %s has no workflow", st.name))
		}
		if err := w.RunWorkflow(v.opCtx(), c.Argument(0).String()); err != nil {
			v.throw(err)
		}
		return goja.Undefined()
	})
	return h
}

// httpRequest is http.request(method, url, body, headers): the answer as {status, headers,
// body (ArrayBuffer), text}. Failures without an answer throw, classified like the http
// driver's; a status is the script's to judge.
func (v *vm) httpRequest(c goja.FunctionCall) goja.Value {
	rt := v.rt
	method, url := c.Argument(0).String(), c.Argument(1).String()
	var body io.Reader
	if b := c.Argument(2); !goja.IsUndefined(b) && !goja.IsNull(b) {
		// A copy: net/http may still send the body after the answer came back (a
		// server refusing from the headers answers while the client sends), and the
		// script may refill its buffer at once, or the engine reuse its value buffer.
		p, err := bytesOf(b, true)
		if err != nil {
			panic(rt.NewTypeError("http: body is %v", err))
		}
		body = bytes.NewReader(p)
	}
	req, err := http.NewRequestWithContext(v.opCtx(), method, url, body)
	if err != nil {
		v.throw(driver.Wrap(driver.ClassRejected, err))
	}
	if h := c.Argument(3); !goja.IsUndefined(h) && !goja.IsNull(h) {
		obj := h.ToObject(rt)
		for _, k := range obj.Keys() {
			req.Header.Set(k, obj.Get(k).String())
		}
	}
	resp, err := v.g.stores.client.Do(req)
	if err != nil {
		v.throw(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPBody+1))
	if err == nil && len(data) > maxHTTPBody {
		err = fmt.Errorf("http %s %s: answer larger than %d bytes", method, url, maxHTTPBody)
	}
	if err != nil {
		v.throw(err)
	}
	out := rt.NewObject()
	headers := rt.NewObject()
	for k := range resp.Header {
		_ = headers.Set(strings.ToLower(k), resp.Header.Get(k))
	}
	_ = out.Set("status", resp.StatusCode)
	_ = out.Set("headers", headers)
	_ = out.Set("body", rt.NewArrayBuffer(data))
	_ = out.Set("text", string(data))
	return out
}

// sleep(ms) waits, ending early with a thrown timeout when the operation's context ends.
func (v *vm) sleep(c goja.FunctionCall) goja.Value {
	d := time.Duration(c.Argument(0).ToFloat() * float64(time.Millisecond))
	if d <= 0 {
		return goja.Undefined()
	}
	ctx := v.opCtx()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		if le, ok := context.Cause(ctx).(*limitError); ok {
			v.throw(driver.Wrap(driver.ClassTimeout, fmt.Errorf("sleep: %w", le)))
		}
		v.throw(fmt.Errorf("sleep: %w", ctx.Err()))
	case <-v.g.killed:
		v.throw(fmt.Errorf("sleep: %w", errClosed))
	}
	return goja.Undefined()
}

// randomInt(n) is a uniform integer in [0, n).
func (v *vm) randomInt(c goja.FunctionCall) goja.Value {
	n := c.Argument(0).ToInteger()
	if n <= 0 {
		panic(v.rt.NewTypeError("randomInt(n): n must be positive, got %d", n))
	}
	return v.rt.ToValue(v.rnd.Int64N(n))
}

// randomBytes(n) is an ArrayBuffer of n random bytes.
func (v *vm) randomBytes(c goja.FunctionCall) goja.Value {
	n := c.Argument(0).ToInteger()
	if n < 0 || n > 64<<20 {
		panic(v.rt.NewTypeError("randomBytes(n): n must be in 0..64MiB, got %d", n))
	}
	b := make([]byte, n)
	for i := 0; i < len(b); i += 8 {
		x := v.rnd.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	return v.rt.ToValue(v.rt.NewArrayBuffer(b))
}

// text(bytes) decodes an ArrayBuffer or Uint8Array as UTF-8.
func (v *vm) text(c goja.FunctionCall) goja.Value {
	b, err := bytesOf(c.Argument(0), false)
	if err != nil {
		panic(v.rt.NewTypeError("text: %v", err))
	}
	return v.rt.ToValue(string(b))
}

// bytes(string) encodes a string as UTF-8 in a new ArrayBuffer.
func (v *vm) bytes(c goja.FunctionCall) goja.Value {
	return v.rt.ToValue(v.rt.NewArrayBuffer([]byte(c.Argument(0).String())))
}

// logger returns console.log and its kin: the arguments joined by spaces, logged at level
// with the script's name. A script that logs every operation floods the log; that is its
// author's call, as with any print.
func (v *vm) logger(level slog.Level) func(goja.FunctionCall) goja.Value {
	return func(c goja.FunctionCall) goja.Value {
		parts := make([]string, len(c.Arguments))
		for i, a := range c.Arguments {
			parts[i] = a.String()
		}
		ctx := v.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		slog.Log(ctx, level, strings.Join(parts, " "), "script", v.g.src.name)
		return goja.Undefined()
	}
}
