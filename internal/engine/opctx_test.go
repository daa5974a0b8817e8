package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
)

func TestOpContextLifecycle(t *testing.T) {
	clock := pacer.NewClock()
	run, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	s := newOpSlot(run, clock, nil)
	defer s.close()

	// An operation that ends in time: its context is then cancelled for good, as
	// context.WithTimeout's is after cancel.
	c := s.begin(clock.Now(), time.Second)
	if d, ok := c.Deadline(); !ok || d.Before(time.Now()) {
		t.Fatalf("deadline %v, %v: want one in the future", d, ok)
	}
	if c.Err() != nil {
		t.Fatal("fresh operation already done")
	}
	done := c.Done()
	if c.end() {
		t.Fatal("an operation that ended in time counted as timed out")
	}
	select {
	case <-done:
	default:
		t.Fatal("Done not closed once the operation ended")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err after end = %v, want context.Canceled", c.Err())
	}

	// An operation the watchdog expires: Done closes, hooks of derived contexts run, and
	// the error stays DeadlineExceeded after the operation ends.
	start := clock.Now()
	c = s.begin(start, time.Millisecond)
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	c.expire(start + int64(2*time.Millisecond))
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after expiry")
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("derived context not cancelled by the expiry")
	}
	if !c.end() {
		t.Fatal("expired operation not reported as timed out")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) || !errors.Is(child.Err(), context.DeadlineExceeded) {
		t.Fatalf("after end: Err = %v, child Err = %v; want DeadlineExceeded for both", c.Err(), child.Err())
	}

	// The next operation starts clean.
	c = s.begin(clock.Now(), time.Second)
	if c.Err() != nil {
		t.Fatal("next operation inherited the expiry")
	}
	select {
	case <-c.Done():
		t.Fatal("next operation's Done already closed")
	default:
	}
	c.end()

	// A hard stop of the run cancels the operation in flight.
	c = s.begin(clock.Now(), time.Hour)
	cancelRun()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hard stop did not cancel the operation")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Fatalf("Err after a hard stop = %v", c.Err())
	}
	c.end()
	// An operation begun after the hard stop is done from the start.
	if c = s.begin(clock.Now(), time.Hour); c.Err() == nil {
		t.Fatal("operation begun after a hard stop is not cancelled")
	}
}

func TestOpContextAfterFuncStop(t *testing.T) {
	s := newOpSlot(context.Background(), pacer.NewClock(), nil)
	defer s.close()
	c := s.begin(s.clock.Now(), time.Second)
	ran := make(chan struct{}, 1)
	stop := c.AfterFunc(func() { ran <- struct{}{} })
	if !stop() || stop() {
		t.Fatal("stop: want true once, then false")
	}
	c.end()
	select {
	case <-ran:
		t.Fatal("a stopped hook ran")
	case <-time.After(20 * time.Millisecond):
	}
	// A hook registered on an ended context runs at once, like context.AfterFunc's.
	c.AfterFunc(func() { ran <- struct{}{} })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("hook on an ended context did not run")
	}
}

// TestOpContextStateIsFinal races the watchdog's expiry against operations ending right at
// their deadline, with a derived context and a goroutine keeping the context after the
// call, as pgx and gocql do: exactly one of end and expire wins, whatever a holder sees
// afterwards never changes, and every waiter on Done is released.
func TestOpContextStateIsFinal(t *testing.T) {
	s := newOpSlot(context.Background(), pacer.NewClock(), nil)
	defer s.close()
	var waiters sync.WaitGroup
	for i := 0; i < 5000; i++ {
		start := s.clock.Now()
		c := s.begin(start, time.Microsecond)
		child, cancel := context.WithCancel(c)
		waiters.Add(1)
		go func() { defer waiters.Done(); <-c.Done() }()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); c.expire(start + int64(time.Microsecond)) }()
		timedOut := c.end()
		wg.Wait()
		want := context.Canceled
		if timedOut {
			want = context.DeadlineExceeded
		}
		<-child.Done()
		if c.Err() != want || child.Err() != want {
			t.Fatalf("iteration %d: timedOut=%v, Err=%v, child Err=%v", i, timedOut, c.Err(), child.Err())
		}
		cancel()
		if n := s.begin(s.clock.Now(), time.Hour); n.Err() != nil {
			t.Fatalf("iteration %d: the next operation started done", i)
		} else {
			n.end()
		}
	}
	released := make(chan struct{})
	go func() { waiters.Wait(); close(released) }()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("goroutines waiting on an ended operation's Done were never released")
	}
}

// keeper is a driver that treats the context the way pgx and gocql do: it registers an
// AfterFunc whose hook reads Err, derives a cancellable context, and leaves a goroutine
// waiting on Done after the call returns. Its operations end around the op timeout, so the
// watchdog's fires race their ends.
type keeper struct {
	delay    time.Duration
	inflight sync.WaitGroup // goroutines still holding an operation's context
	nilErr   atomic.Int64   // hooks that ran and saw no error: an inconsistent context
	calls    atomic.Int64
}

func (*keeper) Init(context.Context, any) error { return nil }
func (*keeper) Close() error                    { return nil }

func (k *keeper) Write(ctx context.Context, key string, _ []byte) error {
	_, err := k.Read(ctx, key)
	return err
}

func (k *keeper) Read(ctx context.Context, _ string) ([]byte, error) {
	k.calls.Add(1)
	stop := context.AfterFunc(ctx, func() {
		if ctx.Err() == nil {
			k.nilErr.Add(1)
		}
	})
	defer stop()
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	k.inflight.Add(1)
	go func() { defer k.inflight.Done(); <-ctx.Done() }()
	t := time.NewTimer(k.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return []byte("v"), nil
	case <-child.Done():
		return nil, child.Err()
	}
}

// TestHookRegisteringDriversAtTheDeadline is issue 8's first defect: with the reused
// per-worker context, a hook that ran after the operation ended saw a reset error and the
// context package panicked ("missing cancel error"), crashing the process, and goroutines
// waiting on Done after the call hung forever. Thousands of operations end right at their
// deadline here; the process must survive, every hook must see an error, and every
// goroutine holding a context must be released.
func TestHookRegisteringDriversAtTheDeadline(t *testing.T) {
	k := &keeper{delay: 2 * time.Millisecond}
	w := testWorkload(t, nil)
	w.Readers, w.Writers = 16, 16
	w.OpTimeout = 2 * time.Millisecond
	e := newEngine(t, k, w)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for k.calls.Load() < 5000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	e.Collector().Tick(time.Now())
	s := e.Collector().Cumulative()
	if k.calls.Load() < 5000 {
		t.Fatalf("only %d operations in 20 s", k.calls.Load())
	}
	if n := k.nilErr.Load(); n != 0 {
		t.Errorf("%d hooks ran on a context whose Err was nil", n)
	}
	if s.Ops["read"].Failures[driver.ClassTimeout.String()] == 0 {
		t.Error("no timeouts counted: the operations did not race the deadline")
	}
	released := make(chan struct{})
	go func() { k.inflight.Wait(); close(released) }()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("goroutines that kept an operation's context were never released")
	}
}
