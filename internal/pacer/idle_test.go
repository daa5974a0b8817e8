package pacer

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Many workers at a low rate each hold a slot far ahead (10,000 connections at 2,000
// ops/s: up to 5 s). An idle worker must cost next to nothing while it waits: one wake-up
// for its slot, not one every recheck. Here 2,000 waiters hold slots 3 to 5 s ahead and
// none falls due in the measured second; waking every 20 ms cost 2,000 × 50 wake-ups
// a second, over 100 ms of CPU (more under -race), where one timer each costs none.
func TestFarSlotsDoNotWakeTheirWaiters(t *testing.T) {
	if _, ok := processCPU(); !ok {
		t.Skip("no process CPU time on this platform")
	}
	const waiters = 2000
	p := New(0)
	p.ResetAt(Constant(1000), p.Now()+int64(3*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := p.Acquire(ctx); err == nil {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	// Every waiter has claimed its slot once the counter reached them all.
	for p.sched.Load().next.Load() < waiters {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	cpu0, _ := processCPU()
	time.Sleep(time.Second)
	cpu1, _ := processCPU()
	cancel()
	wg.Wait()
	cpu := cpu1 - cpu0
	t.Logf("%d waiters, CPU %v in the measured second", waiters, cpu)
	if got != 0 {
		t.Errorf("%d slots started before their time", got)
	}
	if cpu > 60*time.Millisecond {
		t.Errorf("%d waiters of slots 3-5 s ahead cost %v of CPU in a second: they wake before their slots", waiters, cpu)
	}
}

// A waiter of a slot far ahead learns of a rate change at once: the slot went with the old
// schedule, and it gets one of the new (here due at once), without sleeping out the old.
func TestRateChangeWakesAFarWaiter(t *testing.T) {
	p := New(0.1) // slot 0 now, slot 1 in 10 s
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := p.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		if _, _, err := p.Acquire(ctx); err == nil {
			got <- time.Now()
		}
	}()
	for p.sched.Load().next.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	changed := time.Now()
	p.Reset(Constant(1000))
	select {
	case at := <-got:
		if d := at.Sub(changed); d > 5*time.Second {
			t.Errorf("the waiter started %v after the change, as if it had slept out its old slot", d)
		}
	case <-time.After(9 * time.Second):
		t.Fatal("the waiter slept through the rate change")
	}
	// And a cancelled caller leaves at once, too.
	p.Reset(Constant(0.1))
	if _, _, err := p.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { _, _, err := p.Acquire(cctx); left <- err }()
	time.Sleep(20 * time.Millisecond)
	ccancel()
	select {
	case err := <-left:
		if err == nil {
			t.Error("a cancelled caller got a slot 10 s ahead")
		}
	case <-time.After(9 * time.Second):
		t.Fatal("a cancelled caller slept on")
	}
}

// TestFarWaitersLeaveWithTheirContext: a waiter whose slot is far off leaves as soon as
// its context ends (a stop), not after a further recheck-long sleep on its way out. The
// waiters are stopped one after the other; while each is on its way out, the stacks of
// the pacer's waiters are read again and again, and none may be asleep in time.Sleep
// inside Acquire. It once slept recheck (20 ms) there: 200 waiters stopped one by one
// took 6.8 s. Judged by where the waiter is, not by how long the stops took, which a
// loaded machine stretches (the old bar, half the sleeps' sum, was a wall-clock bound).
// The slots are an hour ahead: a waiter that only left at its slot fails at the patience.
func TestFarWaitersLeaveWithTheirContext(t *testing.T) {
	const waiters = 200
	p := New(0)
	p.ResetAt(Constant(1), p.Now()+int64(time.Hour)) // every slot an hour or more ahead
	var cancels []context.CancelFunc
	var dones []chan struct{}
	for range waiters {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		cancels, dones = append(cancels, cancel), append(dones, done)
		go func() {
			defer close(done)
			if _, _, err := p.Acquire(ctx); err == nil {
				t.Error("a slot an hour ahead was handed out")
			}
		}()
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for p.sched.Load().next.Load() < waiters {
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	looks := 0
	for i := range waiters {
		cancels[i]()
		patience := time.Now().Add(time.Minute)
	out:
		for {
			select {
			case <-dones[i]:
				break out
			default:
			}
			if g := sleepingInAcquire(buf); g != "" {
				t.Fatalf("waiter %d, its context ended, sleeps on its way out of Acquire:\n%s", i, g)
			}
			looks++
			if time.Now().After(patience) {
				t.Fatalf("waiter %d has not left a minute after its context ended; its slot is an hour away", i)
			}
			runtime.Gosched()
		}
	}
	t.Logf("%d waiters stopped one after the other; their stacks read %d times on the way", waiters, looks)
}

// sleepingInAcquire returns the stack of a goroutine asleep in time.Sleep within
// Pacer.Acquire, or "" when there is none.
func sleepingInAcquire(buf []byte) string {
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "pacer.(*Pacer).Acquire(") && strings.Contains(g, "time.Sleep(") {
			return g
		}
	}
	return ""
}
