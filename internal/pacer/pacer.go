// Package pacer schedules operations open loop: every operation has an intended start time
// t_k = anchor + Shape.Offset(k), claimed by workers from a shared, lock-free schedule.
//
// Latency is measured from the intended start, not from when a worker got round to it, so a
// store that stalls is charged for every operation that should have started during the
// stall (no coordinated omission). A schedule that workers cannot keep up with shows as
// backlog; it is never silently stretched. A rate change keeps the operations that were
// already due under the old schedule, with their intended start times, and issues them
// first: a change during a stall cannot wipe the stall from the measurements. With no shape
// (rate 0) the loop is closed: an operation is due as soon as a worker is free.
package pacer

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// Shape is a load shape: when the k-th operation since the anchor is due. Constant rates are
// the common case; ramps and steps for scenarios and auto-tune implement the same interface.
type Shape interface {
	// Offset returns the intended start of operation k (k ≥ 0) relative to the anchor.
	Offset(k int64) time.Duration
	// Due returns how many operations are due by elapsed d (those with Offset ≤ d).
	Due(d time.Duration) int64
	// Rate returns the target rate in ops/s at elapsed d, for display.
	Rate(d time.Duration) float64
}

// Constant is a fixed rate in operations per second. It must be positive.
type Constant float64

// Offset returns k/rate, at most maxOffset.
func (c Constant) Offset(k int64) time.Duration {
	return nanos(float64(k) * 1e9 / float64(c))
}

// Due returns floor(d·rate)+1 for d ≥ 0 (operation 0 is due at the anchor), exactly the
// operations whose Offset is at most d.
func (c Constant) Due(d time.Duration) int64 {
	return dueOf(func(t float64) float64 { return t * float64(c) }, c.Offset, d)
}

// Rate returns the constant rate.
func (c Constant) Rate(time.Duration) float64 { return float64(c) }

// schedule is immutable but for next; a rate change installs a new one, so a claim never
// mixes the anchor of one schedule with the counter of another. Its slots are first the
// carried ones (carryN of them, in order), then those of shape from anchor.
type schedule struct {
	anchor int64 // ns on the pacer's monotonic clock
	shape  Shape // nil: closed loop
	fine   fineWait
	procs  int // GOMAXPROCS when the schedule was installed
	// varying is set for shapes other than Constant: their final wait is chosen from the
	// rate at each operation's due time, not once for the schedule.
	varying bool
	carry   []carried
	carryN  int64
	next    atomic.Int64 // slots claimed; replaced once the schedule is replaced
	// waiters are those waiting on the timers of the clock's source, on a pacer whose
	// clock has one (ClockOn; nil otherwise).
	waiters *sourceWaiters
	// replacedAt is when the schedule was replaced (0 while it is current). A slot claimed
	// before then but not yet due at that time belongs to no schedule: its claimer, even
	// one that wakes after the slot's time, must retry on the new schedule rather than
	// hand it out beside the new schedule's slots.
	replacedAt atomic.Int64
	// gone is closed once the schedule is replaced, after the new one is stored: a waiter
	// whose slot is far off sleeps until its time or this, whichever comes first.
	gone chan struct{}
	// back holds slots claimed and then given up by a caller whose context ended while
	// it waited (a worker cut when its pool shrinks, which holds a slot up to a pool's
	// width ahead): the next claim takes the oldest of them before a new one, so a
	// shrinking pool leaves no hole in the schedule. nback is their count, read without
	// the lock on every claim.
	back returned
}

// returned is a schedule's given-up slots, oldest first.
type returned struct {
	nback  atomic.Int32
	mu     sync.Mutex
	slots  []int64
	closed bool // the schedule was replaced: its due given-up slots were carried
}

// give puts back slot k, unless the schedule was replaced meanwhile (install has then
// carried what was due and dropped the rest, as it does for unclaimed slots).
func (r *returned) give(k int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	i := len(r.slots)
	for i > 0 && r.slots[i-1] > k {
		i--
	}
	r.slots = append(r.slots, 0)
	copy(r.slots[i+1:], r.slots[i:])
	r.slots[i] = k
	r.nback.Add(1)
}

// take returns the oldest given-up slot, if there is one and ok(it) says to take it.
func (r *returned) take(ok func(k int64) bool) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || len(r.slots) == 0 || !ok(r.slots[0]) {
		return 0, false
	}
	k := r.slots[0]
	r.slots = r.slots[1:]
	r.nback.Add(-1)
	return k, true
}

// close ends giving back and returns the slots given up and not taken.
func (r *returned) close() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	out := r.slots
	r.slots = nil
	r.nback.Store(0)
	return out
}

// due counts the given-up slots of s due at now and returns the oldest one's time.
func (r *returned) due(s *schedule, now int64) (n int64, oldest int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range r.slots {
		if at := s.slot(k); at <= now {
			if n == 0 {
				oldest = at
			}
			n++
		}
	}
	return n, oldest
}

// carried is a run of slots that fell due under an earlier schedule and were not claimed
// before it was replaced: slots from..from+n of that schedule's shape.
type carried struct {
	anchor  int64
	shape   Shape
	from, n int64
}

// replaced is what a replaced schedule's counter is set to: a claim at or beyond it
// belongs to no schedule, and the claimer retries on the current one.
const replaced = math.MaxInt64 / 2

// maxSlots bounds every count of slots (a shape's Due, a schedule's carried slots), and
// maxOffset every offset from an anchor: a shape at any rate, however long it runs, then
// counts and schedules in int64 without overflow, and a schedule's due count
// (carried + due) stays below replaced. Both are far beyond what a run reaches: 2^60
// operations, 2^62 ns (146 years).
const (
	maxSlots  = 1 << 60
	maxOffset = 1 << 62
)

// MaxRate is the highest rate, in operations per second, a shape may be built with and the
// configuration accepts: one operation per nanosecond, the resolution of intended start
// times (beyond it operations would share their intended start). The pacer itself stays
// correct, and every call O(1), at any rate; no node sends this many.
const MaxRate = 1e9

// slot returns the intended start of slot k (k ≥ 0) of s.
func (s *schedule) slot(k int64) int64 {
	for _, c := range s.carry {
		if k < c.n {
			return c.anchor + int64(c.shape.Offset(c.from+k))
		}
		k -= c.n
	}
	return s.anchor + int64(s.shape.Offset(k))
}

// run returns slot k of s as a carried run of one.
func (s *schedule) run(k int64) carried {
	for _, c := range s.carry {
		if k < c.n {
			return carried{anchor: c.anchor, shape: c.shape, from: c.from + k, n: 1}
		}
		k -= c.n
	}
	return carried{anchor: s.anchor, shape: s.shape, from: k, n: 1}
}

// due returns how many slots of s are due at now.
func (s *schedule) due(now int64) int64 {
	if s.shape == nil {
		return s.carryN
	}
	return s.carryN + s.shape.Due(time.Duration(now-s.anchor))
}

// Pacer hands out intended start times. It is safe for concurrent use.
type Pacer struct {
	Clock
	mu      sync.Mutex // serialises schedule changes
	sched   atomic.Pointer[schedule]
	spinner atomic.Bool  // at most one goroutine spins at a time
	fine    atomic.Int32 // waiters in their final time.Sleep
	beating atomic.Bool  // a heartbeat goroutine runs
	wake    wakeMargin   // how early a spinning waiter leaves its kernel sleep
}

// coarseMargin is how early a waiter wakes from time.Sleep before its due time. The Go
// runtime fires timers within tens of µs while it is busy, but when it idles it blocks in
// epoll, whose timeout has millisecond resolution: a sleep there can end up to ~1 ms late,
// which would add that much to every response time at low rates.
const coarseMargin = 1500 * time.Microsecond

// The last coarseMargin is waited out in one of three ways, chosen by the rate, because
// what is precise and what is cheap differ with it (measured on 2 cores, memory store;
// docs/performance.md has the figures):
//   - up to spinMaxRate: a kernel nanosleep to a wake margin before the due time, then a
//     spin by one goroutine at a time, holding its P. The margin is learnt: the kernel's
//     wake-up is late by a machine-dependent amount (~5 µs on bare metal, 40-150 µs in a
//     VM whose idle vCPU must be woken), and a fixed margin smaller than that makes every
//     start late by the difference. The spin costs at most spinBudget of a core and makes
//     the start precise to a few µs.
//   - up to nanoMaxRate: a kernel nanosleep to the due time, with the thread's timer slack
//     lowered to timerSlack: p50 ~25 µs late, for two syscalls per operation.
//   - above: time.Sleep, with a heartbeat goroutine that wakes every heartbeatPeriod while
//     any waiter is in its final stretch, so the runtime never idles in its
//     millisecond-granular poller and fires the sleepers' timers on time (p99 < 100 µs).
//     A nanosleep per operation at these rates cost over a core at 100k ops/s and blew
//     the p99.9 up to hundreds of ms as goroutines piled into blocking syscalls; the
//     heartbeat costs a fixed ~0.3 core however high the rate.
const (
	spinMaxRate = 10000
	nanoMaxRate = 20000
	kernelSlack = 20 * time.Microsecond
	// spinBudget bounds the spin's cost: rate × margin ≤ spinBudget core. At 10,000/s
	// the margin is then at most 15 µs, at 2,000/s 75 µs, at 100/s the learnt one.
	spinBudget = 0.15
)

type fineWait uint8

const (
	waitSpin fineWait = iota
	waitNano
	waitRuntime
	// waitSleep is time.Sleep alone, for a process on one P (GOMAXPROCS=1, which
	// ndbench --threads chooses beside a store on a 2-core machine): a nanosleep or a
	// spin holds the only P, so every other goroutine, the replies' among them, waits
	// until sysmon takes the P back (start lag p50 1.6 ms against 0.03 ms on two Ps,
	// PostgreSQL at 5,000/s), and the heartbeat would hold it in nanosleep. A runtime
	// timer may fire up to ~1 ms late when the process idles; that is the price.
	waitSleep
)

func fineWaitFor(rate float64, procs int) fineWait {
	switch {
	case procs == 1:
		return waitSleep
	case rate <= spinMaxRate:
		return waitSpin
	case rate <= nanoMaxRate:
		return waitNano
	}
	return waitRuntime
}

// recheck bounds a single time.Sleep so a waiter notices a rate change promptly instead
// of sleeping out a slot claimed under the old, slower schedule. A wait longer than that
// sleeps on a timer beside the schedule's gone channel instead (waitLong): with many
// workers at a low rate each worker holds a slot workers/rate ahead (10,000 connections
// at 2,000 ops/s: 5 s), and waking every recheck to look cost 10,000 × 50 wake-ups a
// second, which made an idle connection cost more client CPU per operation than a busy
// one (docs/performance.md, "Connection scale").
const recheck = 20 * time.Millisecond

// New returns a pacer at rate ops/s on its own clock; rate ≤ 0 means closed loop.
func New(rate float64) *Pacer { return NewWithClock(rate, NewClock()) }

// NewWithClock returns a pacer at rate ops/s on clock c. Intended and actual start times
// and end times must all come from the same clock.
func NewWithClock(rate float64, c Clock) *Pacer {
	p := &Pacer{Clock: c}
	p.Reset(ForRate(rate))
	return p
}

// ForRate returns the shape of a fixed rate: Constant, or nil (closed loop) for a rate ≤ 0
// or not a number.
func ForRate(rate float64) Shape {
	if rate <= 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil
	}
	return Constant(rate)
}

// SetRate changes the rate: see SetShape. Rate ≤ 0 closes the loop.
func (p *Pacer) SetRate(rate float64) { p.SetShape(ForRate(rate)) }

// SetShape installs a load shape anchored at now; nil closes the loop. Operations that
// were due under the old schedule and not yet started keep their intended start times and
// are handed out first, so a change made while the workers are behind (a store stall)
// neither drops them nor hides how late they are; the new shape applies after them. Slots
// of the old schedule that were not yet due are dropped: the new shape replaces them.
func (p *Pacer) SetShape(s Shape) { p.install(s, true, 0) }

// Reset installs a load shape anchored at now and drops whatever the old schedule still
// owed: for a pool that stops, or starts afresh, and must not burst through slots that
// fell due while it was off.
func (p *Pacer) Reset(s Shape) { p.install(s, false, 0) }

// ResetAt is Reset with the schedule anchored at a later instant (a reading of Now): the
// first operation is due at anchor, not at once. A fleet starts every node's pools at one
// common instant this way, so the nodes' first operations wait in the pacer's precise
// final wait rather than behind a timer and a goroutine start. An anchor already past
// means now.
func (p *Pacer) ResetAt(s Shape, anchor int64) { p.install(s, false, anchor) }

func (p *Pacer) install(s Shape, carry bool, at int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.sched.Load()
	// Freeze the old counter first, and read the time after: every claim the old schedule
	// granted then happened before now, so whatever it hands out is due by now, and the
	// new schedule (from now on) never meets it. Claims after this retry on the new one,
	// so each slot is either claimed on the old schedule or carried, never both.
	claimed := int64(0)
	if old != nil {
		claimed = old.next.Swap(replaced)
	}
	now := p.Now()
	next := &schedule{anchor: max(now, at), shape: s, gone: make(chan struct{})}
	if p.src != nil {
		next.waiters = &sourceWaiters{gone: make(chan struct{}), timers: map[clock.Timer]struct{}{}}
	}
	if s != nil {
		// GOMAXPROCS is read per schedule, not per wait (it takes the scheduler's lock);
		// the command line sets it before any pacer starts.
		next.procs = runtime.GOMAXPROCS(0)
		next.fine = fineWaitFor(s.Rate(0), next.procs)
		_, constant := s.(Constant)
		next.varying = !constant
	}
	if old != nil {
		old.replacedAt.Store(max(now, 1))
		back := old.back.close()
		if carry {
			// Given-up slots due by now are owed like unclaimed ones, and older than
			// them; the rest belong to no schedule, as unclaimed slots not yet due.
			var owed []carried
			for _, k := range back {
				if old.slot(k) <= now {
					owed = append(owed, old.run(k))
				}
			}
			// The carried slots are at most maxSlots, cut at the end: a count beyond what
			// any run issues, which keeps the schedule's counts in range.
			for _, c := range append(owed, old.owed(claimed, now)...) {
				c.n = min(c.n, maxSlots-next.carryN)
				if c.n <= 0 {
					break
				}
				next.carry = append(next.carry, c)
				next.carryN += c.n
			}
			next.anchor = continueFrom(old, s, now)
		}
	}
	p.sched.Store(next)
	if old != nil {
		close(old.gone) // after the Store: a waiter it wakes finds the new schedule
		if old.waiters != nil {
			old.waiters.release()
		}
	}
}

// sourceWaiters are the waiters of one schedule on a clock with a source. A waiter
// blocked on the source's timer, which a test's simulated time may not reach for a while,
// must learn of a rate change at once (as a real waiter does within recheck), and its
// timer must be gone by the time the change returns: a test counts the pending timers
// to know that every worker is waiting, and a timer left behind by a worker that went
// back to work would count it as waiting.
type sourceWaiters struct {
	mu     sync.Mutex
	gone   chan struct{} // closed when the schedule is replaced
	done   bool
	timers map[clock.Timer]struct{}
}

// release wakes every waiter and stops its timer before returning.
func (w *sourceWaiters) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	for t := range w.timers {
		t.Stop()
		delete(w.timers, t)
	}
	close(w.gone)
}

// continueFrom returns where a shape that replaces old at now starts: one interval of the
// new rate after old's last slot due by now, or now if that is earlier. Starting at now
// itself would put the new schedule's first operation right after the old one's last
// (the same instant when an old slot fell due exactly at now): every rate change would
// add up to one operation, a bias of a percent for a pool whose rate is retuned every
// millisecond, and the two slots could share an intended start time.
func continueFrom(old *schedule, s Shape, now int64) int64 {
	if old.shape == nil || s == nil {
		return now
	}
	rate := s.Rate(0)
	due := old.due(now)
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) || due == 0 {
		return now
	}
	return max(now, old.slot(due-1)+int64(nanos(float64(time.Second)/rate)))
}

// owed returns the slots of s that are due at now but were not claimed.
func (s *schedule) owed(claimed, now int64) []carried {
	var out []carried
	k := claimed
	for _, c := range s.carry {
		if k >= c.n {
			k -= c.n
			continue
		}
		out = append(out, carried{anchor: c.anchor, shape: c.shape, from: c.from + k, n: c.n - k})
		k = 0
	}
	if s.shape == nil {
		return out
	}
	if due := s.shape.Due(time.Duration(now - s.anchor)); due > k {
		out = append(out, carried{anchor: s.anchor, shape: s.shape, from: k, n: due - k})
	}
	return out
}

// Rate returns the current target rate in ops/s (0 for closed loop).
func (p *Pacer) Rate() float64 {
	s := p.sched.Load()
	if s.shape == nil {
		return 0
	}
	return s.shape.Rate(time.Duration(p.Now() - s.anchor))
}

// Acquire blocks until the next operation is due and returns its intended start time and
// the actual time it returned (the operation's start), both on the Now clock. In closed
// loop it returns at once with both set to now. It returns ctx's error if ctx ends first;
// the slot it held is then given back, and the next claim on the schedule takes it: a
// worker cut from a shrinking pool holds a slot up to the pool's width ahead, and leaving
// it unused would drop an operation from the schedule silently, counted neither as sent
// nor as dropped.
//
// Returning the start saves the caller a clock read per operation, a measurable share of
// the engine's per-operation budget.
func (p *Pacer) Acquire(ctx context.Context) (intended, start int64, err error) {
	for {
		// A cancelled caller never claims a slot, even an overdue one it would get at once.
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		s := p.sched.Load()
		// A slot given back (by a caller whose context ended while it waited) is older
		// than any new one: it is taken first.
		k, given := int64(0), false
		if s.back.nback.Load() != 0 {
			k, given = s.back.take(func(int64) bool { return true })
		}
		if !given {
			if s.shape == nil && s.next.Load() >= s.carryN {
				// Closed loop, with nothing carried left to issue: due at once, or at the
				// anchor of a start set for later (ResetAt).
				now := p.Now()
				if now < s.anchor {
					if now, ok := p.waitUntil(ctx, s, s.anchor); ok {
						return now, now, nil
					}
					continue
				}
				return now, now, nil
			}
			k = s.next.Add(1) - 1
			if k >= replaced {
				continue // the schedule was replaced after we loaded it
			}
			if k >= s.carryN && s.shape == nil {
				now := p.Now()
				return now, now, nil
			}
		}
		due := s.slot(k)
		if now, ok := p.waitUntil(ctx, s, due); ok {
			return due, now, nil
		}
		if err := ctx.Err(); err != nil {
			// The slot is given back, not left as a hole in the schedule: the next
			// claim sends it (a run's end gives back slots no one takes, harmlessly).
			s.back.give(k)
			return 0, 0, err
		}
		// The schedule changed while we waited: the slot belongs to the old one.
	}
}

// TryAcquire claims the next operation only if it is already due at now (a reading of
// Now), and returns its intended start time; it never waits. In closed loop it always
// succeeds, with intended = now. A pipelining worker calls it after Acquire to add every
// operation that fell due meanwhile to its batch: under load the batches fill up by
// themselves, and at a low rate each operation still starts at its own time.
func (p *Pacer) TryAcquire(now int64) (intended int64, ok bool) {
	for {
		s := p.sched.Load()
		if s.back.nback.Load() != 0 {
			if k, ok := s.back.take(func(k int64) bool { return s.slot(k) <= now }); ok {
				return s.slot(k), true
			}
		}
		k := s.next.Load()
		if k >= replaced {
			continue // being replaced: the new schedule is about to be stored
		}
		if s.shape == nil && k >= s.carryN {
			return now, true
		}
		due := s.slot(k)
		if due > now {
			return 0, false
		}
		if s.next.CompareAndSwap(k, k+1) {
			return due, true
		}
	}
}

// waitUntil sleeps, then spins, until due, and returns the time it got there. It returns
// false if ctx ended or s stopped being the current schedule first.
func (p *Pacer) waitUntil(ctx context.Context, s *schedule, due int64) (int64, bool) {
	done := ctx.Done()
	fine := s.fine
	var rate float64
	if s.shape != nil {
		rate = s.shape.Rate(time.Duration(max(due-s.anchor, 0)))
	}
	if s.varying && due > s.anchor {
		fine = fineWaitFor(rate, s.procs)
	}
	for {
		now := p.Now()
		remaining := time.Duration(due - now)
		if remaining <= 0 {
			if s.next.Load() >= replaced {
				// Replaced, or being replaced: wait for the time it happened (install sets
				// it right after freezing the counter). A slot not yet due then was dropped
				// with the old schedule; its claimer retries on the new one.
				r := s.replacedAt.Load()
				for ; r == 0; r = s.replacedAt.Load() {
					runtime.Gosched()
				}
				if due > r {
					return 0, false
				}
			}
			return now, true
		}
		if p.sched.Load() != s {
			return 0, false
		}
		select {
		case <-done:
			return 0, false
		default:
		}
		if p.src != nil {
			p.waitOn(ctx, s, remaining)
			continue
		}
		// Read once: another waiter may move the estimate between the test and the sleep,
		// and a target computed from a larger margin than the one tested could be negative.
		margin := p.wake.margin(rate)
		switch {
		case remaining > recheck+coarseMargin:
			p.waitLong(s, done, remaining-coarseMargin)
		case fine == waitSleep:
			time.Sleep(min(remaining, recheck))
		case remaining > coarseMargin:
			time.Sleep(remaining - coarseMargin)
		case fine == waitRuntime:
			p.fine.Add(1)
			if p.beating.CompareAndSwap(false, true) {
				go p.heartbeat()
			}
			time.Sleep(remaining)
			p.fine.Add(-1)
		case fine == waitNano:
			nanosleep(remaining)
		case remaining > margin:
			// The kernel wakes us late by its own delay; how late, this sleep tells.
			target := remaining - margin
			nanosleep(target)
			p.wake.observe(time.Duration(p.Now()-now) - target)
		case p.spinner.CompareAndSwap(false, true):
			// The spin keeps its P: it lasts at most the margin (< 1 ms), and a spinner
			// that yields goes to the global run queue, to run again only when a P frees
			// up, which on a VM took 3-18 ms for one start in a thousand at 2,000/s
			// (TestSpinStartsOnTimeWhileOtherGoroutinesWantItsP).
			for now = p.Now(); now < due; now = p.Now() {
			}
			p.spinner.Store(false)
			// The loop's first check hands the slot out, unless it was dropped meanwhile.
		default:
			// Another waiter spins; this one settles for the kernel's precision.
			nanosleep(remaining)
		}
	}
}

// waitLong sleeps d on a timer, or until s is replaced or done is closed; the caller's
// loop then finds out what became of its slot (or its context), as after a recheck. One
// wake-up per slot however far off it is, at the cost of a timer (an allocation) per wait
// longer than recheck, which only workers running fewer than 1/recheck operations a
// second take.
func (p *Pacer) waitLong(s *schedule, done <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.gone:
	case <-done:
	}
}

// waitOn waits d on the clock's source (ClockOn), or until ctx ends or s is replaced. The
// caller's loop then reads the time again: on a simulated source the wait ends exactly
// at the due time, however the test advances, so start lag is zero unless a worker was
// busy.
func (p *Pacer) waitOn(ctx context.Context, s *schedule, d time.Duration) {
	w := s.waiters
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	t := p.src.c.NewTimer(d)
	w.timers[t] = struct{}{}
	w.mu.Unlock()
	select {
	case <-t.C():
	case <-ctx.Done():
	case <-w.gone:
	}
	w.mu.Lock()
	delete(w.timers, t)
	w.mu.Unlock()
	// Stopped, so a waiter that leaves early (its context ended) leaves no timer behind.
	t.Stop()
}

// heartbeat keeps the runtime out of its millisecond-granular epoll sleep while waiters
// are in their final time.Sleep: a thread that wakes every heartbeatPeriod and yields makes
// the scheduler run due timers. It exits when no waiter is left.
func (p *Pacer) heartbeat() {
	for {
		for p.fine.Load() > 0 {
			nanosleep(heartbeatPeriod)
			runtime.Gosched()
		}
		p.beating.Store(false)
		// A waiter that arrived after the last check but before the flag was cleared
		// found the heartbeat running and did not start one: take the role back.
		if p.fine.Load() == 0 || !p.beating.CompareAndSwap(false, true) {
			return
		}
	}
}

const heartbeatPeriod = 50 * time.Microsecond

// wakeMargin learns how late the kernel wakes a thread from nanosleep, as a running
// estimate of the 99th percentile of that delay: each wake-up later than the estimate
// raises it by wakeUp, each earlier one lowers it by wakeUp/99, which settles where 1% of
// wake-ups are later (a stochastic quantile estimate: no samples kept, one atomic add).
// A spinning waiter leaves its sleep that much early, so 99% of its starts are precise
// to the spin's few µs and the rest late by the excess; a machine that stalls for
// milliseconds now and then does not drag the margin up, as a mean or maximum would.
type wakeMargin struct {
	est atomic.Int64 // ns; 0 until the first observation
}

const (
	wakeUp        = 10 * time.Microsecond
	wakeDown      = wakeUp / 99
	wakeMarginMin = kernelSlack
	// wakeMarginMax is well below coarseMargin because the margin is learnt only from
	// the kernel sleeps that waiters take, and a waiter takes one only when more than the
	// margin is left after its coarse time.Sleep, which leaves at most coarseMargin (less
	// by the Go timer's own lateness). A margin near coarseMargin would stop those sleeps
	// and so never be learnt down again after a stall (TestWakeMarginRecoversAfterAStall).
	wakeMarginMax = coarseMargin / 2
)

// margin returns how early to leave a kernel sleep before a due time at rate ops/s: the
// learnt delay, at least wakeMarginMin, and at most what keeps the spin within
// spinBudget of a core at that rate. Where the budget allows less than the delay (a VM
// at thousands of ops/s) the sleep still ends after the due time, but that much sooner
// than a sleep to the due time would, and without spinning.
func (w *wakeMargin) margin(rate float64) time.Duration {
	m := max(time.Duration(w.est.Load()), wakeMarginMin)
	// Compared as floats: below ~1.6e-11 ops/s (a ramp's From may be that small) the
	// bound is past the range of a Duration, and converting it gives any value
	// (TestWakeMarginAtTinyRates).
	if b := spinBudget / rate * float64(time.Second); rate > 0 && b < float64(m) {
		m = time.Duration(b)
	}
	return m
}

// observe feeds one wake-up delay (how much later than asked a nanosleep returned). The
// step is a compare-and-swap, so that waiters observing at once cannot together carry the
// estimate past its bounds (TestWakeMarginStaysLearnable).
func (w *wakeMargin) observe(late time.Duration) {
	for {
		est := time.Duration(w.est.Load())
		next := est
		switch {
		case late > est && est < wakeMarginMax:
			next = min(est+wakeUp, wakeMarginMax)
		case late <= est && est > wakeMarginMin:
			next = max(est-wakeDown, wakeMarginMin)
		}
		if next == est || w.est.CompareAndSwap(int64(est), int64(next)) {
			return
		}
	}
}

// Backlog reports how far the workers are behind the schedule: lag is how long ago the
// oldest unclaimed due operation should have started, pending how many due operations are
// unclaimed. Both are zero in closed loop and when the workers keep up.
func (p *Pacer) Backlog() (lag time.Duration, pending int64) {
	s := p.sched.Load()
	now := p.Now()
	claimed := s.next.Load()
	if claimed >= replaced {
		return 0, 0 // being replaced: the next call sees the new schedule
	}
	pending = max(s.due(now)-claimed, 0)
	oldest := int64(0)
	if pending > 0 {
		oldest = s.slot(claimed)
	}
	if s.back.nback.Load() != 0 {
		n, at := s.back.due(s, now)
		if n > 0 && (pending == 0 || at < oldest) {
			oldest = at
		}
		pending += n
	}
	if pending == 0 {
		return 0, 0
	}
	return time.Duration(now - oldest), pending
}
