package clock

import (
	"slices"
	"sync"
	"time"
)

// Sim is a simulated clock: its time moves only when Advance (or Set) is called, and the
// timers due on the way fire in order of their instants, each with the clock reading its
// instant, before Advance returns. Tests of code that waits in another goroutine use
// WaitTimers to let that code reach its wait before advancing.
type Sim struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*simTimer
	seq     uint64
	changed chan struct{} // closed and replaced whenever the set of timers changes
}

// NewSim returns a simulated clock reading start.
func NewSim(start time.Time) *Sim {
	return &Sim{now: start, changed: make(chan struct{})}
}

// Now returns the simulated instant.
func (s *Sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// NewTimer returns a timer that fires when the clock has been advanced by d.
func (s *Sim) NewTimer(d time.Duration) Timer {
	t := &simTimer{s: s, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// AfterFunc calls f in the goroutine that advances the clock past d from now.
func (s *Sim) AfterFunc(d time.Duration, f func()) Timer {
	t := &simTimer{s: s, f: f}
	t.Reset(d)
	return t
}

// Advance moves the clock on by d, firing every timer due on the way in order.
func (s *Sim) Advance(d time.Duration) {
	s.mu.Lock()
	to := s.now.Add(d)
	s.mu.Unlock()
	s.Set(to)
}

// Jump moves the clock on by d firing nothing: the timers due meanwhile are overdue, and
// fire at the next Set, Advance or StepTo, each reading the clock as it is then, late.
// It is a paused process (SIGSTOP, a stalled VM): none of its goroutines ran while its
// time went on, and on resuming every wait due meanwhile ends at once.
func (s *Sim) Jump(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d > 0 {
		s.now = s.now.Add(d)
	}
}

// Set moves the clock to instant to (never back), firing every timer due on the way.
func (s *Sim) Set(to time.Time) {
	for s.fireFirst(to) {
	}
	s.mu.Lock()
	if to.After(s.now) {
		s.now = to
	}
	s.mu.Unlock()
}

// fireFirst fires the first pending timer due by to, first by instant and among those
// of one instant by the order they were set in, with the clock moved to its instant. It
// reports false, moving nothing, when no timer is due by to.
func (s *Sim) fireFirst(to time.Time) bool {
	s.mu.Lock()
	i := -1
	for j, t := range s.timers {
		if t.at.After(to) {
			continue
		}
		if i < 0 || t.at.Before(s.timers[i].at) || t.at.Equal(s.timers[i].at) && t.seq < s.timers[i].seq {
			i = j
		}
	}
	if i < 0 {
		s.mu.Unlock()
		return false
	}
	t := s.timers[i]
	s.timers = slices.Delete(s.timers, i, i+1)
	if t.at.After(s.now) {
		s.now = t.at
	}
	now := s.now
	s.notify()
	s.mu.Unlock()
	// Outside the lock: f and the receiver may read the clock or set timers.
	if t.f != nil {
		t.f()
	} else {
		select {
		case t.c <- now:
		default: // as with time.Timer, an unread value is not queued twice
		}
	}
	return true
}

// Pending returns how many timers are waiting to fire.
func (s *Sim) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.timers)
}

// Next returns the instant of the earliest pending timer, and false when none is pending.
// A test that steps the clock from one event to the next (rather than by a fixed amount)
// lets the code under test act at each instant before time moves on, as it would on a
// real clock whose goroutines keep up.
func (s *Sim) Next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.timers) == 0 {
		return time.Time{}, false
	}
	next := s.timers[0].at
	for _, t := range s.timers[1:] {
		if t.at.Before(next) {
			next = t.at
		}
	}
	return next, true
}

// StepTo moves the clock to until one event at a time, so that code running in other
// goroutines acts at every instant it waits for, as it would on a real clock that it keeps
// up with. Before each step it waits for parked() timers to be pending: parked says how
// many timers the code under test holds when all its goroutines wait (say, one per
// worker and one per background loop), and is asked again at each step because that
// number may change (a pool grows). It then fires the one earliest pending timer, or
// moves to until when that is earlier. It returns once the code has parked at until, or
// false if it did not park within real time patience at some step (the code is stuck, or
// parked counts more timers than it sets).
//
// Timers due at one instant fire one at a time, in the order they were set, each only
// once the code has parked again after the one before: the goroutine each wakes runs to
// its next wait alone. Woken together, which of them ran first was up to the Go
// scheduler, and the code's outcome with it (an engine check at the instant a worker's
// read times out saw the timeout or not), so a run on the simulated clock was not the
// same run every time.
//
// The count is only as good as the code's timers: a goroutine must hold one timer while it
// waits and none while it runs. One woken otherwise (its context cancelled) runs while its
// timer is still pending until it stops it, and StepTo may step meanwhile; the pacer
// stops its waiters' timers itself before a rate change returns for that reason.
func (s *Sim) StepTo(until time.Time, parked func() int, patience time.Duration) bool {
	for {
		if !s.waitParked(parked, patience) {
			return false
		}
		if !s.fireFirst(until) {
			s.Set(until)
			return true
		}
	}
}

// waitParked waits up to patience for parked() timers to be pending. parked is asked
// again every recount: a goroutine that exits meanwhile lowers it, and a wait for the
// old count would never end.
func (s *Sim) waitParked(parked func() int, patience time.Duration) bool {
	const recount = time.Millisecond
	deadline := time.Now().Add(patience)
	for {
		n := parked()
		if s.WaitTimers(n, min(recount, time.Until(deadline))) && parked() == n {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// WaitTimers blocks until at least n timers are pending or real time d has passed, and
// reports whether they are. It is how a test knows that the code under test, in its own
// goroutine, has reached the wait that the next Advance is meant to end.
func (s *Sim) WaitTimers(n int, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, ch := len(s.timers) >= n, s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// notify wakes WaitTimers; s.mu is held.
func (s *Sim) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

type simTimer struct {
	s   *Sim
	c   chan time.Time
	f   func()
	at  time.Time
	seq uint64
}

func (t *simTimer) C() <-chan time.Time { return t.c }

func (t *simTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.remove()
}

func (t *simTimer) Reset(d time.Duration) bool {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	was := t.remove()
	if d <= 0 {
		// Due now, as time.NewTimer(0) is: the waiter needs no Advance to go on.
		if t.f != nil {
			go t.f()
		} else {
			select {
			case t.c <- s.now:
			default:
			}
		}
		return was
	}
	s.seq++
	t.at, t.seq = s.now.Add(d), s.seq
	s.timers = append(s.timers, t)
	s.notify()
	return was
}

// remove takes t out of the pending timers; s.mu is held.
func (t *simTimer) remove() bool {
	for i, o := range t.s.timers {
		if o == t {
			t.s.timers = append(t.s.timers[:i], t.s.timers[i+1:]...)
			t.s.notify()
			return true
		}
	}
	return false
}
