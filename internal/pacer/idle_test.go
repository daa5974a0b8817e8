package pacer

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Many workers at a low rate each hold a slot far ahead (10,000 connections at 2,000
// ops/s: up to 5 s). An idle worker must cost next to nothing while it waits: one wake-up
// for its slot, not one every recheck. Waking every 20 ms cost 2,000 waiters 246 ms of CPU
// a second (e454bc8). Judged by where the waiters are, not by the CPU of a measured
// second, which a loaded machine and -race move (the old bar, 60 ms a second, was a
// bound on the machine): looked at again and again, every waiter sleeps on its one timer
// (waitLong), none in time.Sleep nor on its way between two sleeps. What they cost is
// BenchmarkFarSlotsIdle's.
func TestFarSlotsDoNotWakeTheirWaiters(t *testing.T) {
	const waiters, looks = 2000, 20
	p := New(0)
	// Every slot an hour or more ahead: none may be handed out while the test looks.
	p.ResetAt(Constant(1000), p.Now()+int64(time.Hour))
	stop := farWaiters(t, p, waiters)
	buf := make([]byte, 64<<20)
	// Each reaches its timer once it has been scheduled after its claim: a loaded machine
	// takes its time, a minute's patience.
	for end := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		inTimer, other := waitersAt(buf)
		if inTimer == waiters {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d waiters of slots an hour ahead asleep on their timer after a minute; one elsewhere:\n%s", inTimer, waiters, other)
		}
	}
	for look := range looks {
		time.Sleep(10 * time.Millisecond)
		inTimer, other := waitersAt(buf)
		if inTimer != waiters || other != "" {
			t.Fatalf("look %d: %d of %d waiters of slots an hour ahead asleep on their timer; one elsewhere:\n%s", look, inTimer, waiters, other)
		}
	}
	if got := stop(); got != 0 {
		t.Errorf("%d slots an hour ahead were handed out", got)
	}
}

// farWaiters starts n goroutines waiting in p.Acquire and returns once each has claimed
// its slot; stop ends them and returns how many got a slot.
func farWaiters(t testing.TB, p *Pacer, n int) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var got atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := p.Acquire(ctx); err == nil {
				got.Add(1)
			}
		}()
	}
	// Every waiter has claimed its slot once the counter reached them all.
	for end := time.Now().Add(time.Minute); p.sched.Load().next.Load() < int64(n); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			cancel()
			t.Fatalf("%d of %d waiters claimed a slot within a minute", p.sched.Load().next.Load(), n)
		}
	}
	return func() int { cancel(); wg.Wait(); return int(got.Load()) }
}

// waitersAt reads every goroutine's stack and returns how many are in Pacer.Acquire asleep
// in waitLong's select, and the stack of one in Acquire anywhere else ("" if none). A
// waiter on its way into waitLong (between its claim and its timer) counts as elsewhere.
func waitersAt(buf []byte) (inTimer int, other string) {
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if !strings.Contains(g, "pacer.(*Pacer).Acquire(") {
			continue
		}
		if strings.Contains(g, "[select") && strings.Contains(g, "pacer.(*Pacer).waitLong(") {
			inTimer++
		} else if other == "" {
			other = g
		}
	}
	return inTimer, other
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
