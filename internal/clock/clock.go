// Package clock makes time an input. Code whose logic depends on time (a warm-up that
// ends, a phase that lasts, a shape applied at an instant, a step judged after a window)
// takes a Clock; production passes Real, tests pass a Sim and move it on with Advance,
// so that the logic is checked exactly and at once instead of against a wall clock that a
// loaded machine stretches.
//
// It is the clock of instants and timers. The pacers' nanosecond counter clock
// (pacer.Clock) is a different thing: a faster read of the kernel's clock for latencies,
// which stays real.
package clock

import (
	"context"
	"time"
)

// Clock is what time-dependent logic reads and waits on.
type Clock interface {
	// Now returns the current instant.
	Now() time.Time
	// NewTimer returns a timer that sends the instant on its channel once d has passed.
	NewTimer(d time.Duration) Timer
	// AfterFunc calls f once d has passed (in its own goroutine on Real, in the
	// advancing goroutine on Sim).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending event of a Clock.
type Timer interface {
	// C is the channel the firing instant is sent on (nil for AfterFunc timers).
	C() <-chan time.Time
	// Stop cancels the timer; it reports whether the timer was pending.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was pending.
	Reset(d time.Duration) bool
}

// Since returns the time passed on c since t.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until returns the time on c until t.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep waits d on c, or until ctx ends, whose error it then returns.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// Or returns c, or Real when c is nil: the zero value of a struct that holds a Clock
// runs on real time.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Real is the system's clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
