package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/pacer"
)

// opContext is a worker's operation context, reused for every operation the worker runs.
//
// context.WithTimeout costs about a microsecond and five allocations per call, more than
// the engine's whole per-operation budget, and even re-arming one timer per operation costs
// two clock reads and timer-heap work. So an operation only stores its deadline in an
// atomic, and the engine's watchdog (see Engine.watch) expires overdue operations a few
// times per op-timeout. It implements AfterFunc, so contexts that drivers derive from it
// (context.WithCancel, context.AfterFunc) hook into it without a goroutine per operation.
//
// A driver must not keep the context after its Read or Write returns: the next operation
// re-arms it.
type opContext struct {
	parent context.Context // run context: cancelled only on a hard stop
	clock  pacer.Clock
	// deadline is the running operation's deadline on clock.Now, 0 while no operation runs,
	// and expiring while the watchdog fires it. The watchdog claims an operation by swapping
	// its deadline for expiring, and end swaps in 0: exactly one of them wins, so a fire can
	// never land on the next operation.
	deadline atomic.Int64
	fired    atomic.Bool // err is set: the slow path of end must reset it
	hooked   atomic.Bool // hooks may be non-empty
	release  func() bool // stops the hard-stop hook on the run context

	mu    sync.Mutex
	done  chan struct{} // created on demand; replaced once closed
	err   error
	hooks map[*afterHook]struct{}
}

type afterHook struct{ f func() }

// expiring marks an operation whose deadline the watchdog is firing.
const expiring = -1

func newOpContext(parent context.Context, clock pacer.Clock) *opContext {
	c := &opContext{parent: parent, clock: clock}
	// A hard stop of the run cancels the operation in flight. The hook is released when the
	// worker exits (close), or every worker ever started would stay registered on the run
	// context until the engine closes.
	c.release = context.AfterFunc(parent, func() { c.fire(parent.Err()) })
	return c
}

// close releases the context when its worker exits.
func (c *opContext) close() { c.release() }

// begin arms the context for an operation that started at start (clock.Now).
func (c *opContext) begin(start int64, timeout time.Duration) {
	c.deadline.Store(start + int64(timeout))
}

// end disarms the context after an operation. It reports whether the operation's deadline
// fired, so the engine counts it as a timeout whatever error the driver returned.
func (c *opContext) end() (timedOut bool) {
	// If the watchdog claimed this operation, its fire holds mu until done: the slow path
	// below waits for it and sees the timeout.
	if c.deadline.Swap(0) != expiring && !c.fired.Load() && !c.hooked.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	timedOut = c.err == context.DeadlineExceeded
	if c.err != nil && c.parent.Err() == nil {
		// Fired for this operation only: the next one starts with a fresh channel.
		c.err, c.done = nil, nil
		c.fired.Store(false)
	}
	clear(c.hooks)
	c.hooked.Store(false)
	return timedOut
}

// expire fires the context if the operation whose deadline was d is still running and d
// has passed. The check is made under the lock, so an operation that ended (or a new one
// that began) in the meantime is left alone.
func (c *opContext) expire(d, now int64) {
	if d <= 0 || now < d {
		return
	}
	c.mu.Lock()
	if c.err != nil || !c.deadline.CompareAndSwap(d, expiring) {
		c.mu.Unlock()
		return
	}
	hooks := c.fireLocked(context.DeadlineExceeded)
	c.mu.Unlock()
	runHooks(hooks)
}

func (c *opContext) fire(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	hooks := c.fireLocked(err)
	c.mu.Unlock()
	runHooks(hooks)
}

func (c *opContext) fireLocked(err error) map[*afterHook]struct{} {
	c.err = err
	c.fired.Store(true)
	if c.done == nil {
		c.done = make(chan struct{})
	}
	close(c.done)
	hooks := c.hooks
	c.hooks = nil
	return hooks
}

func runHooks(hooks map[*afterHook]struct{}) {
	for h := range hooks {
		go h.f()
	}
}

// Deadline returns the current operation's deadline.
func (c *opContext) Deadline() (time.Time, bool) {
	switch d := c.deadline.Load(); d {
	case 0:
		return time.Time{}, false
	case expiring:
		return c.clock.Time(c.clock.Now()), true
	default:
		return c.clock.Time(d), true
	}
}

// Done returns a channel closed when the operation times out or the run is stopped hard.
func (c *opContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns context.DeadlineExceeded after the operation timed out, the run's error after
// a hard stop, and nil otherwise.
func (c *opContext) Err() error {
	if !c.fired.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Value returns the run context's values.
func (c *opContext) Value(key any) any { return c.parent.Value(key) }

// AfterFunc arranges for f to run in its own goroutine when the context is done, as
// context.AfterFunc does; the context package uses it for contexts derived from this one.
func (c *opContext) AfterFunc(f func()) (stop func() bool) {
	h := &afterHook{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.hooks == nil {
		c.hooks = make(map[*afterHook]struct{})
	}
	c.hooks[h] = struct{}{}
	c.hooked.Store(true)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.hooks[h]
		delete(c.hooks, h)
		if len(c.hooks) == 0 {
			// Clients that hook every operation (pgx does) keep end on its fast path.
			c.hooked.Store(false)
		}
		return ok
	}
}

// watchdog expires the operations of every registered op context that ran past their
// deadline.
type watchdog struct {
	clock pacer.Clock
	mu    sync.Mutex
	ctxs  map[*opContext]struct{}
}

func (w *watchdog) add(c *opContext) {
	w.mu.Lock()
	if w.ctxs == nil {
		w.ctxs = make(map[*opContext]struct{})
	}
	w.ctxs[c] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(c *opContext) {
	w.mu.Lock()
	delete(w.ctxs, c)
	w.mu.Unlock()
}

// scan expires overdue operations. It costs one atomic load per worker.
func (w *watchdog) scan() {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for c := range w.ctxs {
		c.expire(c.deadline.Load(), now)
	}
}

// watchPeriod is how often the watchdog scans for an op timeout: 1/20 of it, so a timeout
// fires at most 5% late, bounded to [1 ms, 50 ms].
func watchPeriod(timeout time.Duration) time.Duration {
	return min(max(timeout/20, time.Millisecond), 50*time.Millisecond)
}
