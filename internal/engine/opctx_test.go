package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/pacer"
)

func TestOpContextLifecycle(t *testing.T) {
	clock := pacer.NewClock()
	run, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	c := newOpContext(run, clock)
	defer c.close()

	// An operation that ends in time.
	start := clock.Now()
	c.begin(start, time.Second)
	if d, ok := c.Deadline(); !ok || d.Before(time.Now()) {
		t.Fatalf("deadline %v, %v: want one in the future", d, ok)
	}
	if c.Err() != nil {
		t.Fatal("fresh operation already done")
	}
	if c.end() {
		t.Fatal("an operation that ended in time counted as timed out")
	}
	if _, ok := c.Deadline(); ok {
		t.Fatal("deadline left armed after end")
	}

	// An operation the watchdog expires: Done closes, hooks of derived contexts run.
	start = clock.Now()
	c.begin(start, time.Millisecond)
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	c.expire(start+int64(time.Millisecond), start+int64(2*time.Millisecond))
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after expiry")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v after expiry", c.Err())
	}
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("derived context not cancelled by the expiry")
	}
	if !c.end() {
		t.Fatal("expired operation not reported as timed out")
	}

	// The next operation starts clean.
	c.begin(clock.Now(), time.Second)
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
	c.begin(clock.Now(), time.Hour)
	cancelRun()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hard stop did not cancel the operation")
	}
}

func TestOpContextStopClearsHooks(t *testing.T) {
	c := newOpContext(context.Background(), pacer.NewClock())
	defer c.close()
	c.begin(c.clock.Now(), time.Second)
	stop := c.AfterFunc(func() {})
	if !c.hooked.Load() || !stop() || c.hooked.Load() {
		t.Fatal("stop did not take the hook back off the fast path")
	}
	c.end()
}

// TestOpContextFireNeverLandsOnTheNextOperation races the watchdog's expiry against
// operations ending right at their deadline: an operation either ends first (not timed out)
// or is expired (timed out, seen by end); the next one never starts expired.
func TestOpContextFireNeverLandsOnTheNextOperation(t *testing.T) {
	c := newOpContext(context.Background(), pacer.NewClock())
	defer c.close()
	for i := 0; i < 5000; i++ {
		start := c.clock.Now()
		c.begin(start, time.Microsecond)
		d := start + int64(time.Microsecond)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); c.expire(d, d) }()
		timedOut := c.end()
		wg.Wait()
		if !timedOut && c.fired.Load() {
			t.Fatalf("iteration %d: fired after the operation ended without noticing", i)
		}
		c.begin(c.clock.Now(), time.Hour)
		if c.Err() != nil {
			t.Fatalf("iteration %d: the next operation started expired", i)
		}
		c.end()
	}
}
