package clock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestSimFiresInOrderAtTheirInstants: timers set out of order fire in the order of their
// instants, each seeing the clock at its own instant, and only those due.
func TestSimFiresInOrderAtTheirInstants(t *testing.T) {
	s := NewSim(t0)
	var got []time.Duration
	for _, d := range []time.Duration{300, 100, 200, 500} {
		s.AfterFunc(d*time.Millisecond, func() { got = append(got, Since(s, t0)) })
	}
	s.Advance(350 * time.Millisecond)
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}; !slices.Equal(got, want) {
		t.Fatalf("fired at %v, want %v", got, want)
	}
	if now := Since(s, t0); now != 350*time.Millisecond {
		t.Errorf("clock at %v after advancing 350ms", now)
	}
	if s.Pending() != 1 {
		t.Errorf("%d timers pending, want the one at 500ms", s.Pending())
	}
}

// TestSimTimerStopAndReset: a stopped timer never fires; a reset one fires at its new
// instant from the time of the reset; a timer set by a firing one fires in the same
// Advance when it falls within it.
func TestSimTimerStopAndReset(t *testing.T) {
	s := NewSim(t0)
	stopped := s.NewTimer(time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report pending once")
	}
	reset := s.NewTimer(time.Second)
	s.Advance(500 * time.Millisecond)
	reset.Reset(time.Second) // now due at 1.5 s
	var chained time.Duration
	s.AfterFunc(time.Second, func() {
		s.AfterFunc(200*time.Millisecond, func() { chained = Since(s, t0) })
	})
	s.Advance(time.Second) // to 1.5 s: the first AfterFunc (1.5 s) and the reset timer
	select {
	case at := <-reset.C():
		if at.Sub(t0) != 1500*time.Millisecond {
			t.Errorf("reset timer fired at %v, want 1.5s", at.Sub(t0))
		}
	default:
		t.Error("reset timer did not fire at 1.5s")
	}
	select {
	case <-stopped.C():
		t.Error("a stopped timer fired")
	default:
	}
	s.Advance(time.Second)
	if chained != 1700*time.Millisecond {
		t.Errorf("chained timer fired at %v, want 1.7s", chained)
	}
}

// TestSleepWaitsForTheClockOrTheContext: Sleep on a Sim returns when the clock passes
// its end, not before; a cancelled context ends it with the context's error.
func TestSleepWaitsForTheClockOrTheContext(t *testing.T) {
	s := NewSim(t0)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), s, time.Minute) }()
	if !s.WaitTimers(1, 10*time.Second) {
		t.Fatal("Sleep set no timer")
	}
	s.Advance(59 * time.Second)
	select {
	case <-done:
		t.Fatal("Sleep returned before its minute")
	case <-time.After(20 * time.Millisecond):
	}
	s.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Sleep: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, s, time.Minute) }()
	s.WaitTimers(1, 10*time.Second)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep after cancel: %v", err)
	}
	if s.Pending() != 0 {
		t.Errorf("a cancelled Sleep left %d timers", s.Pending())
	}
}

// TestSimZeroTimerIsDueAtOnce: like time.NewTimer(0), a timer of zero fires without an
// Advance, so a loop that starts with one does not wait for the test.
func TestSimZeroTimerIsDueAtOnce(t *testing.T) {
	s := NewSim(t0)
	select {
	case at := <-s.NewTimer(0).C():
		if !at.Equal(t0) {
			t.Errorf("fired at %v", at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a zero timer did not fire")
	}
}

// TestRealIsTheSystemClock: Or(nil) is Real, whose timers fire on real time.
func TestRealIsTheSystemClock(t *testing.T) {
	c := Or(nil)
	if c != Real {
		t.Fatal("Or(nil) is not Real")
	}
	before := time.Now()
	if err := Sleep(context.Background(), c, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if time.Since(before) < time.Millisecond {
		t.Error("Real Sleep returned early")
	}
}

// TestSimNextIsTheEarliestTimer: Next names the earliest pending instant whatever the
// order the timers were set in, and reports none once they have fired or stopped.
func TestSimNextIsTheEarliestTimer(t *testing.T) {
	s := NewSim(t0)
	if _, ok := s.Next(); ok {
		t.Fatal("Next reported a timer on a fresh clock")
	}
	late := s.NewTimer(3 * time.Second)
	s.NewTimer(2 * time.Second)
	early := s.NewTimer(time.Second)
	if at, ok := s.Next(); !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("Next = %v, %v; want t0+1s", at.Sub(t0), ok)
	}
	early.Stop()
	if at, _ := s.Next(); !at.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("Next after stopping the earliest = %v; want t0+2s", at.Sub(t0))
	}
	late.Stop()
	s.Advance(2 * time.Second)
	if at, ok := s.Next(); ok {
		t.Fatalf("Next = %v after every timer fired or stopped", at.Sub(t0))
	}
}

// TestSimStepToLetsEachWaiterActAtItsInstant: a goroutine that waits 10 ms, then at once
// sets its next wait, is stepped through every one of its instants, however far the test
// moves the clock in one call; stepping by one Advance would have fired only the first.
func TestSimStepToLetsEachWaiterActAtItsInstant(t *testing.T) {
	s := NewSim(t0)
	var (
		mu   sync.Mutex
		seen []time.Duration
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for Sleep(ctx, s, 10*time.Millisecond) == nil {
			mu.Lock()
			seen = append(seen, Since(s, t0))
			mu.Unlock()
		}
	}()
	if !s.StepTo(t0.Add(55*time.Millisecond), func() int { return 1 }, 10*time.Second) {
		t.Fatal("the waiter did not park")
	}
	cancel()
	<-done
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond}
	if !slices.Equal(seen, want) {
		t.Errorf("woke at %v, want %v", seen, want)
	}
	if now := Since(s, t0); now != 55*time.Millisecond {
		t.Errorf("clock at %v after StepTo(55ms)", now)
	}
	if s.StepTo(t0.Add(time.Second), func() int { return 1 }, 50*time.Millisecond) {
		t.Error("StepTo reported a parked waiter that had gone")
	}
}

// TestSimStepToRecountsWaiters: when a waiter goes away while StepTo waits for the
// count it was given, StepTo waits for the new count instead of timing out on the old.
func TestSimStepToRecountsWaiters(t *testing.T) {
	s := NewSim(t0)
	var mu sync.Mutex
	waiters := 2
	parked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return waiters
	}
	s.NewTimer(time.Second) // the waiter that stays
	go func() {
		time.Sleep(20 * time.Millisecond) // StepTo is waiting for 2 by now, most likely
		mu.Lock()
		waiters = 1 // the second one left without setting its timer
		mu.Unlock()
	}()
	if !s.StepTo(t0.Add(10*time.Millisecond), parked, 5*time.Second) {
		t.Fatal("StepTo waited for a waiter that had gone")
	}
}

// TestSimStepToWakesOneAtATime: goroutines whose timers fall due at one instant are woken
// one at a time in the order their timers were set, each running to its next wait before
// the next one wakes, at every instant. Woken together, the order they ran in was the
// scheduler's, different from run to run.
func TestSimStepToWakesOneAtATime(t *testing.T) {
	const waiters, instants = 8, 20
	s := NewSim(t0)
	var (
		mu   sync.Mutex
		woke []int
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for id := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for Sleep(ctx, s, 10*time.Millisecond) == nil {
				mu.Lock()
				woke = append(woke, id)
				mu.Unlock()
			}
		}()
		// One at a time, so that the timers are first set in the order of the ids.
		if !s.WaitTimers(id+1, 10*time.Second) {
			t.Fatalf("waiter %d did not wait", id)
		}
	}
	if !s.StepTo(t0.Add(instants*10*time.Millisecond), func() int { return waiters }, 10*time.Second) {
		t.Fatal("the waiters did not park")
	}
	cancel()
	wg.Wait()
	var want []int
	for range instants {
		for id := range waiters {
			want = append(want, id)
		}
	}
	if !slices.Equal(woke, want) {
		t.Errorf("woke in the order %v, want the order the timers were set in at every instant: %v", woke, want)
	}
}

// TestSimJumpLeavesTimersOverdue: a jump fires nothing; the timers due meanwhile fire at
// the next step, in their order, each reading the clock after the jump, as a paused
// process's waits all end at once when it resumes.
func TestSimJumpLeavesTimersOverdue(t *testing.T) {
	s := NewSim(t0)
	var got []string
	for _, d := range []time.Duration{300, 100, 200} {
		s.AfterFunc(d*time.Millisecond, func() { got = append(got, fmt.Sprintf("%d@%v", d, Since(s, t0))) })
	}
	s.Jump(time.Second)
	if len(got) != 0 || s.Pending() != 3 {
		t.Fatalf("a jump fired %v, %d pending; want nothing fired", got, s.Pending())
	}
	if now := Since(s, t0); now != time.Second {
		t.Fatalf("clock at %v after a 1 s jump", now)
	}
	s.Advance(0)
	if want := []string{"100@1s", "200@1s", "300@1s"}; !slices.Equal(got, want) {
		t.Errorf("after the jump fired %v, want %v", got, want)
	}
}
