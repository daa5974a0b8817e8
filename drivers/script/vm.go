package script

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"

	"github.com/ndbench/ndbench/driver"
)

// prelude defines what scripts throw: NdbenchError carries a failure class, which the
// driver reads back when the exception reaches Go. It is compiled once and run in every
// runtime before the script.
var prelude = goja.MustCompile("ndbench-prelude.js", `
var NdbenchError = class NdbenchError extends Error {
	constructor(cls, message) {
		super(message);
		this.name = "NdbenchError";
		this.ndbenchClass = String(cls);
	}
};
function fail(cls, message) { throw new NdbenchError(cls, message); }
`, false)

// maxCallStack is the depth of JavaScript calls a runtime allows.
const maxCallStack = 10000

// errInterrupted is what an interrupted runtime reports; convert replaces it with the
// operation's context error.
var errInterrupted = errors.New("operation context ended")

// vm is one JavaScript runtime with the script loaded and initialised. A goja runtime is
// not safe for concurrent use, so a vm runs one operation at a time: the pool hands it to
// one caller, which returns it when done.
type vm struct {
	g   *generation
	rt  *goja.Runtime
	fns []goja.Callable // by function index; nil where the script has none
	// closeFn is the script's close(), if any.
	closeFn goja.Callable
	// ctx is the context of the operation running, for the host functions it calls
	// (nested drivers, http, sleep).
	ctx context.Context
	rnd *rand.Rand
	// broken marks a runtime not to return to the pool: it panicked, or the memory
	// watchdog stopped it (its heap may be what grew). Set by the watchdog too.
	broken atomic.Bool
	stores map[*store]goja.Value
	args   [2]goja.Value

	// The call's limit (callTimeout, or initTimeout while loading): the watchdog
	// interrupts JavaScript still running at limitAt, and host calls end there.
	limitAt  time.Time
	limit    time.Duration
	limitOpt string
	what     string // the function running (init, an operation, close), for messages
	// hctx is the host calls' context when the operation's own deadline is later than
	// limitAt (or absent), made on the first host call that needs it; most operations
	// have an earlier deadline and never pay for a derived context.
	hctx    context.Context
	hcancel context.CancelFunc

	// mu orders the watchdog's interrupt against the start and end of an operation, so
	// an interrupt meant for one operation never hits the next.
	mu     sync.Mutex
	active bool
	fired  bool // interrupted during this operation (once per operation)
}

// limitError is the interrupt of a call that ran past its limit.
type limitError struct {
	script, what, opt string
	limit             time.Duration
}

func (e *limitError) Error() string {
	return fmt.Sprintf("script %s: %s ran past %v (%s) and was interrupted", e.script, e.what, e.limit, e.opt)
}

// newVM creates a runtime, runs the prelude and the script, and calls init(config).
func (g *generation) newVM(ctx context.Context) (_ *vm, err error) {
	rt := goja.New()
	// Runaway recursion fails the operation instead of growing the heap without bound.
	rt.SetMaxCallStackSize(maxCallStack)
	v := &vm{g: g, rt: rt, rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), stores: map[*store]goja.Value{}}
	g.allMu.Lock()
	g.all = append(g.all, v)
	g.allMu.Unlock()
	v.begin(ctx, "loading (the script and its init)", "initTimeout", g.initTimeout)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("script %s: panic while loading: %v", g.src.name, r)
		}
		v.end()
		if err != nil {
			g.forget(v)
		}
	}()
	if err := v.installHost(); err != nil {
		return nil, fmt.Errorf("script %s: %w", g.src.name, err)
	}
	if _, err := rt.RunProgram(prelude); err != nil {
		return nil, fmt.Errorf("script prelude: %w", err)
	}
	if _, err := rt.RunProgram(g.prog); err != nil {
		return nil, v.convertTop(ctx, err)
	}
	v.fns = make([]goja.Callable, len(fnNames))
	for i, name := range fnNames {
		v.fns[i], _ = goja.AssertFunction(rt.Get(name))
	}
	v.closeFn, _ = goja.AssertFunction(rt.Get("close"))
	if initFn, ok := goja.AssertFunction(rt.Get("init")); ok {
		parse, _ := goja.AssertFunction(rt.Get("JSON").ToObject(rt).Get("parse"))
		config, err := parse(goja.Undefined(), rt.ToValue(g.config))
		if err != nil {
			return nil, fmt.Errorf("script %s: config: %w", g.src.name, err)
		}
		if _, err := initFn(goja.Undefined(), config); err != nil {
			return nil, fmt.Errorf("init: %w", v.convert(ctx, err))
		}
	}
	g.created.Add(1)
	return v, nil
}

// begin makes ctx the context of the operation v runs, which the watchdog checks, and
// starts its limit: what (the function) must return within limit, set by option opt.
func (v *vm) begin(ctx context.Context, what, opt string, limit time.Duration) {
	v.mu.Lock()
	v.ctx = ctx
	v.active = true
	v.fired = false
	v.what, v.limitOpt, v.limit = what, opt, limit
	v.limitAt = time.Now().Add(limit)
	v.mu.Unlock()
}

// end ends the operation: under mu, so a watchdog interrupt either happened before (and
// is cleared here) or sees the runtime idle.
func (v *vm) end() {
	v.mu.Lock()
	v.active = false
	v.ctx = nil
	if v.hcancel != nil {
		v.hcancel()
		v.hctx, v.hcancel = nil, nil
	}
	v.rt.ClearInterrupt()
	v.mu.Unlock()
}

// checkInterrupt is the watchdog's check: it interrupts the JavaScript of an operation
// whose context ended or that ran past its limit. Go calls the script makes (stores,
// http, sleep) end with the context by themselves; this ends JavaScript that computes
// (a loop) past it.
func (v *vm) checkInterrupt(now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.active || v.fired {
		return
	}
	switch {
	case v.ctx.Err() != nil:
		v.rt.Interrupt(errInterrupted)
	case now.After(v.limitAt):
		v.rt.Interrupt(&limitError{script: v.g.src.name, what: v.what, opt: v.limitOpt, limit: v.limit})
	default:
		return
	}
	v.fired = true
	v.g.interrupts.Add(1)
}

// stop interrupts v's operation, if one runs, with err (the memory watchdog's or the
// driver's close), ends its host calls where it can, and marks v to be dropped rather
// than reused.
func (v *vm) stop(err error) {
	v.broken.Store(true)
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.active || v.fired {
		return
	}
	v.rt.Interrupt(err)
	v.fired = true
	v.g.interrupts.Add(1)
	if v.hcancel != nil {
		v.hcancel()
	}
}

// running says whether v runs an operation now.
func (v *vm) running() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.active
}

// call runs function fn with key (and value, for write kinds) as one operation.
func (v *vm) call(ctx context.Context, fn int, key string, value []byte) (out []byte, err error) {
	v.begin(ctx, fnNames[fn], "callTimeout", v.g.callTimeout)
	var buf goja.ArrayBuffer
	defer func() {
		if r := recover(); r != nil {
			v.broken.Store(true)
			err = fmt.Errorf("script %s: %s: panic: %v", v.g.src.name, fnNames[fn], r)
		}
		v.end()
		if value != nil {
			// The engine reuses value's buffer: a script that kept the ArrayBuffer gets a
			// TypeError on use, not bytes that change under it.
			buf.Detach()
		}
	}()
	var res goja.Value
	// The arguments live in v, not in a slice allocated per call.
	v.args[0] = v.rt.ToValue(key)
	args := v.args[:1]
	if fnKinds[fn] == driver.KindWrite {
		buf = v.rt.NewArrayBuffer(value)
		v.args[1] = v.rt.ToValue(buf)
		args = v.args[:2]
	}
	res, err = v.fns[fn](goja.Undefined(), args...)
	v.args[0], v.args[1] = nil, nil
	if err != nil {
		return nil, v.convert(ctx, err)
	}
	if fnKinds[fn] != driver.KindRead {
		return nil, nil
	}
	if res == nil || goja.IsUndefined(res) || goja.IsNull(res) {
		return nil, driver.ErrNotFound
	}
	b, err := bytesOf(res, true)
	if err != nil {
		return nil, driver.Wrap(driver.ClassOther, fmt.Errorf("script %s: %s returned %w", v.g.src.name, fnNames[fn], err))
	}
	return b, nil
}

// callClose runs the script's close().
func (v *vm) callClose(ctx context.Context, limit time.Duration) (err error) {
	v.begin(ctx, "close", fmt.Sprintf("callTimeout, %v at most for close", closeLimit), limit)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("script %s: close: panic: %v", v.g.src.name, r)
		}
		v.end()
	}()
	if _, err := v.closeFn(goja.Undefined()); err != nil {
		return fmt.Errorf("close: %w", v.convert(ctx, err))
	}
	return nil
}

// bytesOf returns the bytes of an ArrayBuffer, a Uint8Array, a DataView or a string (as
// UTF-8). With own set it returns a copy, for a value that leaves the runtime.
func bytesOf(val goja.Value, own bool) ([]byte, error) {
	var b []byte
	switch x := val.Export().(type) {
	case goja.ArrayBuffer:
		b = x.Bytes()
	case []byte:
		b = x
	case string:
		return []byte(x), nil
	default:
		what := "nothing"
		if t := val.ExportType(); t != nil && val.Export() != nil {
			what = "a " + t.String()
		}
		return nil, fmt.Errorf("%s, want an ArrayBuffer, a Uint8Array or a string", what)
	}
	if own {
		b = append(make([]byte, 0, len(b)), b...)
	}
	return b, nil
}

// convert turns what a script threw into a classified Go error: an NdbenchError's class,
// a nested driver's error as it was (class and all), an interrupt as the context's error,
// anything else class other, with the script's position.
func (v *vm) convert(ctx context.Context, err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("script %s: interrupted: %w", v.g.src.name, cerr)
		}
		var le *limitError
		if errors.As(ie, &le) {
			return driver.Wrap(driver.ClassTimeout, le)
		}
		if cause, ok := ie.Value().(error); ok && cause != errInterrupted {
			// The memory watchdog's or Close's error, classified already.
			return cause
		}
		return fmt.Errorf("script %s: %w", v.g.src.name, ie)
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return fmt.Errorf("script %s: stack overflow: calls nested more than %d deep", v.position(&so.Exception), maxCallStack)
	}
	var exc *goja.Exception
	if !errors.As(err, &exc) {
		return fmt.Errorf("script %s: %w", v.g.src.name, err)
	}
	where := v.position(exc)
	if inner := exc.Unwrap(); inner != nil {
		return fmt.Errorf("script %s: %w", where, inner)
	}
	if obj, ok := exc.Value().(*goja.Object); ok {
		if c := obj.Get("ndbenchClass"); c != nil && !goja.IsUndefined(c) {
			msg := obj.Get("message").String()
			class, ok := classOf(c.String())
			if !ok {
				msg = fmt.Sprintf("%s (unknown class %q)", msg, c.String())
			}
			return driver.Wrap(class, fmt.Errorf("%s (script %s)", msg, where))
		}
	}
	return fmt.Errorf("script %s: %s", where, exc.Value())
}

// position is file:line:column of the innermost frame of the script itself (not the
// prelude's fail).
func (v *vm) position(exc *goja.Exception) string {
	for _, f := range exc.Stack() {
		if f.SrcName() == v.g.src.name {
			p := f.Position()
			return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
		}
	}
	return v.g.src.name
}

func classOf(name string) (driver.Class, bool) {
	for _, c := range driver.Classes {
		if c.String() == name {
			return c, true
		}
	}
	return driver.ClassOther, false
}

// throw raises err in JavaScript as an Error whose class property is err's class, and
// which carries err itself, so a script can test e.class and an exception that reaches Go
// unwraps to err (class, ErrNotFound and all).
func (v *vm) throw(err error) {
	obj := v.rt.NewGoError(err)
	_ = obj.Set("class", driver.Classify(err).String())
	panic(obj)
}
