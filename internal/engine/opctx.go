package engine

import (
	"context"
	"sync"
	"time"

	"github.com/ndbench/ndbench/internal/pacer"
)

// opContext is a worker's operation context, reused for every operation the worker runs.
//
// context.WithTimeout costs about a microsecond and five allocations per call, more than
// the engine's whole per-operation budget, so each worker keeps one context whose deadline
// is re-armed per operation with a timer reset. It implements AfterFunc, so contexts that
// drivers derive from it (context.WithCancel, context.AfterFunc) hook into it without a
// goroutine per operation.
//
// A driver must not keep the context after its Read or Write returns: the next operation
// re-arms it.
type opContext struct {
	parent context.Context // run context: cancelled only on a hard stop
	clock  *pacer.Pacer    // the worker's clock: deadlines are on its Now scale
	timer  *time.Timer

	mu       sync.Mutex
	deadline int64 // on clock.Now
	armed    bool
	done     chan struct{} // created on demand; replaced once closed
	err      error
	hooks    map[*afterHook]struct{}
}

type afterHook struct{ f func() }

func newOpContext(parent context.Context, clock *pacer.Pacer) *opContext {
	c := &opContext{parent: parent, clock: clock}
	c.timer = time.AfterFunc(time.Hour, c.expire)
	c.timer.Stop()
	// A hard stop of the run cancels the operation in flight.
	context.AfterFunc(parent, func() { c.fire(parent.Err()) })
	return c
}

// begin arms the context for an operation that started at start (clock.Now) with the
// given timeout.
func (c *opContext) begin(start int64, timeout time.Duration) {
	c.mu.Lock()
	c.deadline = start + int64(timeout)
	c.armed = true
	c.mu.Unlock()
	c.timer.Reset(timeout)
}

// end disarms the context after an operation. It reports whether the operation's deadline
// fired, so the engine counts it as a timeout whatever error the driver returned.
func (c *opContext) end() (timedOut bool) {
	c.timer.Stop()
	c.mu.Lock()
	c.armed = false
	timedOut = c.err == context.DeadlineExceeded
	if c.err != nil && c.parent.Err() == nil {
		// Fired for this operation only: the next one starts with a fresh channel.
		c.err, c.done = nil, nil
	}
	clear(c.hooks)
	c.mu.Unlock()
	return timedOut
}

// expire is the timer's callback. A callback left over from an earlier operation can run
// after the next one was armed; it is recognised because that operation's deadline has not
// passed yet.
func (c *opContext) expire() {
	c.mu.Lock()
	stale := !c.armed || c.clock.Now() < c.deadline
	c.mu.Unlock()
	if !stale {
		c.fire(context.DeadlineExceeded)
	}
}

func (c *opContext) fire(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done == nil {
		c.done = make(chan struct{})
	}
	close(c.done)
	hooks := c.hooks
	c.hooks = nil
	c.mu.Unlock()
	for h := range hooks {
		go h.f()
	}
}

// Deadline returns the current operation's deadline.
func (c *opContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock.Time(c.deadline), c.armed
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
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.hooks[h]
		delete(c.hooks, h)
		return ok
	}
}
