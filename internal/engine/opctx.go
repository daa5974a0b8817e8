package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ndbench/ndbench/internal/pacer"
)

// opCtx is the context of one operation. Every operation gets its own, and once the
// operation ends its state is final: Err returns context.Canceled (or DeadlineExceeded if
// it timed out, or the run's error after a hard stop), Done is closed, and hooks registered
// with AfterFunc have run. This is what context.WithTimeout followed by cancel gives, and
// it is what client libraries rely on: pgx, puddle, gocql and the cloud SDKs keep an
// operation's context after the call returns (a connection constructor waiting on Done, an
// AfterFunc whose hook reads Err when it runs), so a context must never change state again
// once anyone may hold it. An earlier design reused one context per worker and reset it
// between operations; a hook that ran after the reset saw a nil error and the context
// package panicked, and a goroutine waiting on a replaced Done channel waited forever.
//
// What it does not do is what makes context.WithTimeout cost ~1.3 µs and five allocations:
// it arms no timer (the engine's watchdog scans deadlines a few times per op timeout), it
// keeps no Done channel or hook list of its own (only the running operation can need them,
// so its slot holds them), and it is carved from a per-worker slab: a 16-byte context costs
// one allocation per opSlabCtxs operations.
type opCtx struct {
	// deadline is on the slot's clock. It is 0 until the operation begins; the watchdog
	// may read a context of the current slab that has not begun, hence the atomic.
	deadline atomic.Int64
	// state is the operation's state (opRunning until it ends, times out or is stopped)
	// and the opWaited flag in one word, so the transition and the flag are ordered by
	// the word itself.
	state atomic.Int32
	idx   uint8 // position in its slab, which leads back to the slot
}

// The states of an opCtx. Every transition leaves opRunning and is final.
const (
	opRunning  int32 = iota
	opEnded          // the operation returned: Err is context.Canceled
	opTimedOut       // the watchdog fired: Err is context.DeadlineExceeded
	opStopped        // the run was stopped hard: Err is the run context's error

	opStateMask int32 = 3
	// opWaited is set by Done and AfterFunc: a transition that finds it clear knows
	// nobody can be waiting (no channel to close, no hook to run) and takes no lock.
	opWaited int32 = 4
)

// status returns the context's state without the flag.
func (c *opCtx) status() int32 { return c.state.Load() & opStateMask }

type afterHook struct{ f func() }

// closedChan is the Done channel of every context that is already done when asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// opSlabCtxs is how many operation contexts one allocation carves: a 2 KiB object (the
// slot pointer, the contexts, and the allocator's 8-byte type header), so the allocator
// runs once per 127 operations and a retained context keeps 2 KiB alive.
const opSlabCtxs = (2048 - 2*unsafe.Sizeof(uintptr(0))) / unsafe.Sizeof(opCtx{})

// A context's index in its slab must fit its uint8 idx.
var _ [255 - opSlabCtxs]struct{}

// opSlab is a batch of operation contexts with the slot they belong to. A context finds
// its slot through the slab header rather than a pointer of its own: a pointer written per
// operation costs a write barrier whenever the garbage collector is marking, and a load
// generator allocating steadily is marking a good part of the time.
type opSlab struct {
	slot *opSlot
	ctx  [opSlabCtxs]opCtx
}

// slot returns the slot whose worker runs the operation.
func (c *opCtx) slot() *opSlot {
	// c is element idx of its slab's ctx array: the slab starts idx elements and the
	// header before it, within the same allocation.
	off := uintptr(c.idx)*unsafe.Sizeof(opCtx{}) + unsafe.Offsetof(opSlab{}.ctx)
	return (*opSlab)(unsafe.Add(unsafe.Pointer(c), -int(off))).slot
}

// opSlot is a worker's source of operation contexts. The watchdog and the run's hard stop
// find the operation in flight through it, and it holds the Done channel and hooks of the
// one operation that can be running.
type opSlot struct {
	parent  context.Context // run context: cancelled only on a hard stop
	clock   pacer.Clock
	slab    atomic.Pointer[opSlab] // the contexts of the current and next operations
	cur     atomic.Int32           // index in slab of the latest operation's context
	used    int32                  // contexts of slab taken (worker only)
	stopped atomic.Bool            // the run was stopped hard
	release func() bool            // stops the hard-stop hook on the run context
	// interrupt, when set, unblocks the worker's I/O once its operation timed out or the
	// run stopped hard (driver.Pipeline.Interrupt): a pipeline does not watch its context.
	interrupt func()
	// spent is what the worker's operations took, as the worker last published it (see
	// opPath.spent): the elastic check reads service times from it.
	spent atomic.Uint64
	// longest is the longest of the worker's operations that ended in the last second or
	// two, in nanoseconds, as last published.
	longest atomic.Int64

	mu    sync.Mutex
	wctx  *opCtx // the context done and hooks belong to; nil when none
	done  chan struct{}
	hooks []*afterHook
}

func newOpSlot(parent context.Context, clock pacer.Clock, interrupt func()) *opSlot {
	s := &opSlot{parent: parent, clock: clock, interrupt: interrupt}
	// Registered once per worker, not per operation. It is released when the worker exits,
	// or every worker ever started would stay registered on the run context.
	s.release = context.AfterFunc(parent, s.hardStop)
	return s
}

// close releases the slot when its worker exits.
func (s *opSlot) close() { s.release() }

func (s *opSlot) hardStop() {
	s.stopped.Store(true)
	if c := s.current(); c != nil && c.finish(opStopped) && s.interrupt != nil {
		s.interrupt()
	}
}

// current returns the context of the operation in flight, or of the last one, or nil.
// It may be called concurrently with begin. The index is read before the slab, and begin
// writes them the other way round, so a torn read can only pair a new slab with an old
// index: a context that has not begun (deadline 0, skipped here), never a running one other
// than the current operation.
func (s *opSlot) current() *opCtx {
	i := s.cur.Load()
	sl := s.slab.Load()
	if sl == nil {
		return nil
	}
	c := &sl.ctx[i]
	if c.deadline.Load() == 0 {
		return nil
	}
	return c
}

// begin returns the context of an operation that started at start (clock.Now) and may
// run for timeout.
func (s *opSlot) begin(start int64, timeout time.Duration) *opCtx {
	sl := s.slab.Load()
	if sl == nil || s.used == int32(opSlabCtxs) {
		sl = &opSlab{slot: s}
		for i := range sl.ctx {
			sl.ctx[i].idx = uint8(i)
		}
		s.slab.Store(sl)
		s.used = 0
	}
	c := &sl.ctx[s.used]
	// A deadline of 0 means "not begun"; only a clock reading of 0 with no timeout gives
	// it, and 1 ns later changes nothing.
	c.deadline.Store(max(start+int64(timeout), 1))
	s.cur.Store(s.used)
	s.used++
	// hardStop stores stopped before it loads cur, and this stores cur before it loads
	// stopped: one of the two sees the other, so no operation outlives a hard stop.
	if s.stopped.Load() {
		c.finish(opStopped)
	}
	return c
}

// end finishes the operation's context and reports whether the watchdog fired it first,
// so the engine counts a timeout whatever error the driver returned.
func (c *opCtx) end() (timedOut bool) {
	if c.finish(opEnded) {
		return false
	}
	return c.status() == opTimedOut
}

// expire fires the context if the operation is still running at now and past its deadline.
func (c *opCtx) expire(now int64) {
	if now >= c.deadline.Load() && c.status() == opRunning && c.finish(opTimedOut) {
		if f := c.slot().interrupt; f != nil {
			f()
		}
	}
}

// finish moves a running context to state to, closes Done and runs the hooks. It reports
// whether it made the transition; only one caller ever does.
func (c *opCtx) finish(to int32) bool {
	old := c.state.Load()
	for {
		if old&opStateMask != opRunning {
			return false
		}
		if c.state.CompareAndSwap(old, old|to) {
			break
		}
		old = c.state.Load() // Done or AfterFunc set opWaited meanwhile
	}
	if old&opWaited == 0 {
		return true
	}
	s := c.slot()
	s.mu.Lock()
	hooks := s.flushLocked()
	s.mu.Unlock()
	runHooks(hooks)
	return true
}

// flushLocked closes the Done channel and takes the hooks of a context that is no longer
// running. Whoever takes s.mu first after the transition does it: the one that made the
// transition, or a later operation's Done or AfterFunc that got there before it.
func (s *opSlot) flushLocked() []*afterHook {
	if s.wctx == nil || s.wctx.status() == opRunning {
		return nil
	}
	if s.done != nil {
		close(s.done)
	}
	hooks := s.hooks
	s.wctx, s.done, s.hooks = nil, nil, nil
	return hooks
}

func runHooks(hooks []*afterHook) {
	for _, h := range hooks {
		go h.f()
	}
}

// Deadline returns the operation's deadline.
func (c *opCtx) Deadline() (time.Time, bool) {
	return c.slot().clock.Time(c.deadline.Load()), true
}

// Done returns a channel closed when the operation ends, times out or is stopped.
func (c *opCtx) Done() <-chan struct{} {
	c.state.Or(opWaited)
	s := c.slot()
	s.mu.Lock()
	hooks := s.flushLocked()
	ch := closedChan
	if c.status() == opRunning {
		// Only the running operation's context gets here, so the slot's channel is its.
		s.wctx = c
		if s.done == nil {
			s.done = make(chan struct{})
		}
		ch = s.done
	}
	s.mu.Unlock()
	runHooks(hooks)
	return ch
}

// Err returns nil while the operation runs, then context.DeadlineExceeded if it timed out,
// the run's error if the run was stopped hard, and context.Canceled once it ended.
func (c *opCtx) Err() error {
	switch c.status() {
	case opRunning:
		return nil
	case opTimedOut:
		return context.DeadlineExceeded
	case opStopped:
		if err := c.slot().parent.Err(); err != nil {
			return err
		}
	}
	return context.Canceled
}

// Value returns the run context's values.
func (c *opCtx) Value(key any) any { return c.slot().parent.Value(key) }

// AfterFunc arranges for f to run in its own goroutine when the context is done, as
// context.AfterFunc does; the context package uses it for contexts derived from this one,
// so they cost no goroutine while the operation runs.
func (c *opCtx) AfterFunc(f func()) (stop func() bool) {
	c.state.Or(opWaited)
	s := c.slot()
	s.mu.Lock()
	hooks := s.flushLocked()
	if c.status() != opRunning {
		s.mu.Unlock()
		runHooks(hooks)
		go f()
		return func() bool { return false }
	}
	h := &afterHook{f: f}
	s.wctx = c
	s.hooks = append(s.hooks, h)
	s.mu.Unlock()
	runHooks(hooks)
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wctx != c {
			return false // already fired
		}
		for i, x := range s.hooks {
			if x == h {
				s.hooks = append(s.hooks[:i], s.hooks[i+1:]...)
				return true
			}
		}
		return false
	}
}

// watchdog expires the operations in flight that ran past their deadline.
type watchdog struct {
	clock pacer.Clock
	mu    sync.Mutex
	slots map[*opSlot]struct{}
}

func (w *watchdog) add(s *opSlot) {
	w.mu.Lock()
	if w.slots == nil {
		w.slots = make(map[*opSlot]struct{})
	}
	w.slots[s] = struct{}{}
	w.mu.Unlock()
}

func (w *watchdog) remove(s *opSlot) {
	w.mu.Lock()
	delete(w.slots, s)
	w.mu.Unlock()
}

// scan expires overdue operations. It costs a few atomic loads per worker. A context is
// never reused, so a fire can never land on a later operation.
func (w *watchdog) scan() {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.slots {
		if c := s.current(); c != nil {
			c.expire(now)
		}
	}
}

// count returns how many workers' slots the watchdog scans.
func (w *watchdog) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.slots)
}

// watchPeriod is how often the watchdog of slots workers scans for an op timeout: 1/20 of
// it, bounded to [1 ms, 50 ms], and to slots × watchPerSlot above 50 ms (never above
// 1/20). A timeout therefore fires at most max(5% of it, 1 ms) late (plus the scheduler's
// delay in waking the watchdog on a busy machine).
//
// A scan visits every worker, each a few cache misses (~175 ns in this VM): at 10,000
// workers (10,000 connections) a scan every 50 ms took a fifth of the client's CPU at
// 2,000 ops/s, more than any other part of the operations; every 250 ms it takes a
// twenty-fifth of that, within the 5% of a 5 s timeout. At 1,000 ops/s with a 24 s
// timeout (the http-conns pair: answers delayed 9.6 s) a scan every 250 ms was still 6%
// of the client's CPU: with a long timeout the period grows on, to 1 s at 10,000.
func watchPeriod(timeout time.Duration, slots int) time.Duration {
	return max(min(timeout/20, max(50*time.Millisecond, time.Duration(slots)*watchPerSlot)), time.Millisecond)
}

// watchPerSlot is the scan period each worker adds above 50 ms: a scan's cost (slots ×
// ~175 ns) stays under 0.2% of a core.
const watchPerSlot = 100 * time.Microsecond
