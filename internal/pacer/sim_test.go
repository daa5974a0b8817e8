package pacer

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

var simStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// simPacer returns a pacer at rate on a simulated clock: its operations fall due only as
// the test moves the clock.
func simPacer(rate float64) (*Pacer, *clock.Sim) {
	s := clock.NewSim(simStart)
	return NewWithClock(rate, ClockOn(s)), s
}

// simWorkers runs n workers that take slots of p and hold each for service (on the
// simulated clock; 0: none), as workers calling a store would, recording what they
// were given. stop ends them and returns the slots in the order they were claimed.
type simWorkers struct {
	mu    sync.Mutex
	slots []simSlot
	stop  func() []simSlot
}

type simSlot struct{ intended, start int64 }

func runSimWorkers(t *testing.T, p *Pacer, s *clock.Sim, n int, service func(k int) time.Duration) *simWorkers {
	t.Helper()
	w := &simWorkers{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				intended, start, err := p.Acquire(ctx)
				if err != nil {
					return
				}
				w.mu.Lock()
				k := len(w.slots)
				w.slots = append(w.slots, simSlot{intended, start})
				w.mu.Unlock()
				if d := service(k); d > 0 && clock.Sleep(ctx, s, d) != nil {
					return
				}
			}
		}()
	}
	w.stop = func() []simSlot {
		cancel()
		wg.Wait()
		return w.slots
	}
	t.Cleanup(func() { w.stop() })
	return w
}

// step moves s to d after the start, with n workers, each holding one timer while it waits.
func step(t *testing.T, s *clock.Sim, d time.Duration, n int) {
	t.Helper()
	if !s.StepTo(simStart.Add(d), func() int { return n }, 10*time.Second) {
		t.Fatalf("the workers did not wait at %v", clock.Since(s, simStart))
	}
}

// TestSimulatedScheduleIsExact: 4 workers at 500/s for 10 simulated seconds start exactly
// the 5,001 operations due (operations 0..5000), each at its intended time, in order and
// without a repeat.
func TestSimulatedScheduleIsExact(t *testing.T) {
	p, s := simPacer(500)
	w := runSimWorkers(t, p, s, 4, func(int) time.Duration { return 0 })
	step(t, s, 10*time.Second, 4)
	slots := w.stop()
	if len(slots) != 5001 {
		t.Fatalf("%d operations started in 10 s at 500/s, want the 5001 due", len(slots))
	}
	for k, sl := range slots {
		if want := int64(k) * int64(2*time.Millisecond); sl.intended != want || sl.start != want {
			t.Fatalf("operation %d: intended %v, started %v; want both at %v", k, time.Duration(sl.intended), time.Duration(sl.start), time.Duration(want))
		}
	}
	if lag, pending := p.Backlog(); lag != 0 || pending != 0 {
		t.Errorf("backlog %v, %d with every due operation started", lag, pending)
	}
}

// TestSimulatedStallIsCarriedAndCaughtUp: one worker at 1000/s whose store stalls for
// 100 ms on its 11th operation (at 10 ms). The 100 slots that fall due during the stall
// stay owed, with their intended times; a rate change in the middle of the stall carries
// them, and the worker, once free, sends them at once (start = the stall's end), then
// follows the new rate from one of its intervals after the old schedule's last due slot.
func TestSimulatedStallIsCarriedAndCaughtUp(t *testing.T) {
	p, s := simPacer(1000)
	w := runSimWorkers(t, p, s, 1, func(k int) time.Duration {
		if k == 10 {
			return 100 * time.Millisecond
		}
		return 0
	})
	step(t, s, 60*time.Millisecond, 1)
	// Slots 11..60 are due and owed: the oldest is 49 ms late.
	if lag, pending := p.Backlog(); pending != 50 || lag != 49*time.Millisecond {
		t.Fatalf("backlog at 60 ms = %v, %d; want 49ms, 50", lag, pending)
	}
	p.SetRate(500)
	if carried := p.sched.Load().carryN; carried != 50 {
		t.Fatalf("the rate change carried %d slots, want the 50 owed", carried)
	}
	step(t, s, 200*time.Millisecond, 1)
	slots := w.stop()
	// 0..10 on time, 11..60 carried and sent at 110 ms, then 500/s from 62 ms (one
	// interval after the old schedule's last due slot, 60 ms): 62, 64, ..., 108 ms are
	// also overdue at 110 ms, then on time up to 200 ms.
	want := []simSlot{}
	for k := int64(0); k <= 60; k++ {
		at := k * int64(time.Millisecond)
		start := at
		if k > 10 {
			start = int64(110 * time.Millisecond)
		}
		want = append(want, simSlot{at, start})
	}
	for at := 62 * time.Millisecond; at <= 200*time.Millisecond; at += 2 * time.Millisecond {
		want = append(want, simSlot{int64(at), int64(max(at, 110*time.Millisecond))})
	}
	if len(slots) != len(want) {
		t.Fatalf("%d operations started, want %d", len(slots), len(want))
	}
	for k := range want {
		if slots[k] != want[k] {
			t.Fatalf("operation %d: intended %v started %v; want intended %v started %v", k,
				time.Duration(slots[k].intended), time.Duration(slots[k].start), time.Duration(want[k].intended), time.Duration(want[k].start))
		}
	}
}

// TestSimulatedRampFollowsItsShape: a ramp from 100/s to 1000/s over a second, then
// flat, makes exactly the operations its Due counts, each started at its Offset.
func TestSimulatedRampFollowsItsShape(t *testing.T) {
	ramp, err := NewRamp(100, 1000, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, s := simPacer(0)
	p.Reset(ramp)
	w := runSimWorkers(t, p, s, 2, func(int) time.Duration { return 0 })
	for _, at := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		step(t, s, at, 2)
		w.mu.Lock()
		got := int64(len(w.slots))
		w.mu.Unlock()
		if want := ramp.Due(at); got != want {
			t.Errorf("%d operations by %v, want the ramp's %d", got, at, want)
		}
	}
	for k, sl := range w.stop() {
		if want := int64(ramp.Offset(int64(k))); sl.intended != want || sl.start != want {
			t.Fatalf("operation %d: intended %v started %v, want both %v", k, time.Duration(sl.intended), time.Duration(sl.start), time.Duration(want))
		}
	}
}

// TestSimulatedRateChangeWakesTheWaiter: a waiter holding a slot a second ahead moves to
// the new schedule the moment the rate changes, without the clock moving, and takes the
// new schedule's first slot at its time.
func TestSimulatedRateChangeWakesTheWaiter(t *testing.T) {
	p, s := simPacer(1) // op 0 now, op 1 in 1 s
	if _, _, err := p.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := make(chan simSlot, 1)
	go func() {
		in, start, _ := p.Acquire(context.Background())
		got <- simSlot{in, start}
	}()
	if !s.WaitTimers(1, 10*time.Second) {
		t.Fatal("the waiter did not wait")
	}
	p.SetRate(1000)
	// The waiter's timer for the old slot is gone before SetRate returns; the waiter may
	// already wait for its slot on the new schedule.
	if next, ok := s.Next(); s.Pending() > 1 || ok && !next.Equal(simStart.Add(time.Millisecond)) {
		t.Fatalf("%d timers pending right after the rate change, the first at %v; the waiter's for 1 s must be gone", s.Pending(), next.Sub(simStart))
	}
	// The new schedule starts one interval of the new rate after the old one's last due
	// slot (op 0, at 0): at 1 ms.
	if !s.StepTo(simStart.Add(time.Millisecond), func() int { return 0 }, time.Second) {
		t.Fatal("StepTo")
	}
	select {
	case sl := <-got:
		if sl.intended != int64(time.Millisecond) || sl.start != sl.intended {
			t.Errorf("after the change: intended %v started %v, want both 1ms", time.Duration(sl.intended), time.Duration(sl.start))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not move to the new schedule")
	}
}

// TestClockOnReadsItsSource: a clock on a Sim reads the simulated time since it was made
// and says so; on nil or clock.Real it is the counter clock.
func TestClockOnReadsItsSource(t *testing.T) {
	s := clock.NewSim(simStart)
	c := ClockOn(s)
	s.Advance(1500 * time.Microsecond)
	if got := c.Now(); got != int64(1500*time.Microsecond) {
		t.Errorf("Now = %v after advancing 1.5ms", time.Duration(got))
	}
	if !c.Time(c.Now()).Equal(simStart.Add(1500 * time.Microsecond)) {
		t.Errorf("Time(Now) = %v, want the simulated instant", c.Time(c.Now()))
	}
	if c.Source() != "simulated" {
		t.Errorf("Source = %q, want simulated", c.Source())
	}
	for _, real := range []clock.Clock{nil, clock.Real} {
		if r := ClockOn(real); r.src != nil || r.Source() == "simulated" {
			t.Errorf("ClockOn(%v) is %q, want the counter clock", real, r.Source())
		}
	}
}

// TestSimulatedCutWorkerGivesItsSlotBack: 4 workers at 500/s, each waiting for the slot it
// claimed; two of them are cut (their contexts end, as when a pool shrinks) while they wait.
// The slots they held are sent by the others, so the 2 s still start exactly the 1,001
// operations due, each once, in order of intended start; before, the cut workers' two
// slots were lost, counted neither as sent nor as dropped.
func TestSimulatedCutWorkerGivesItsSlotBack(t *testing.T) {
	for _, cut := range [][]int{{3}, {0, 2}, {1, 2, 3}} {
		p, s := simPacer(500)
		var mu sync.Mutex
		var slots []int64
		cancels := make([]context.CancelFunc, 4)
		var wg sync.WaitGroup
		for i := range cancels {
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i] = cancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					intended, _, err := p.Acquire(ctx)
					if err != nil {
						return
					}
					mu.Lock()
					slots = append(slots, intended)
					mu.Unlock()
				}
			}()
		}
		step(t, s, time.Second+time.Millisecond, 4)
		for _, i := range cut {
			cancels[i]()
		}
		// The cut workers leave at once; the rest wait again.
		step(t, s, 2*time.Second, 4-len(cut))
		if lag, pending := p.Backlog(); lag != 0 || pending != 0 {
			t.Errorf("cut %v: backlog %v, %d with every due operation started", cut, lag, pending)
		}
		for _, c := range cancels {
			c()
		}
		wg.Wait()
		slices.Sort(slots)
		if len(slots) != 1001 {
			t.Fatalf("cut %v: %d operations started in 2 s at 500/s, want the 1001 due", cut, len(slots))
		}
		for k, at := range slots {
			if want := int64(k) * int64(2*time.Millisecond); at != want {
				t.Fatalf("cut %v: operation %d intended at %v, want %v", cut, k, time.Duration(at), time.Duration(want))
			}
		}
	}
}
