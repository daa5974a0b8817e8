// Package simstore is a key-value store on simulated time, the model that the logic tests
// of the engine and of what drives it run against: every operation takes a set service
// time on a clock.Sim, and the store can stall periodically, as the memory driver's
// stallEvery/stallFor do on real time. A test then knows what the store does at every
// instant, so the counts and latencies it asserts are exact, and a loaded machine cannot
// change them.
package simstore

import (
	"context"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
)

// Store implements driver.Driver on a simulated clock. Set its fields before the engine
// runs (SetService changes the service time while it runs); it is safe for concurrent use.
type Store struct {
	// Service is how long every operation takes.
	Service time.Duration
	// Frozen, when set, says which keys are on a frozen backend: an operation on one
	// never gets an answer; it fails with context.DeadlineExceeded at its context's
	// deadline (the op timeout), as behind a proxy whose backend was paused.
	Frozen func(key string) bool
	// StallEvery and StallFor: each period of StallEvery, counted from the clock's reading
	// when the store was made, ends with a stall of StallFor; an operation arriving
	// during one waits for its end, then its service time. 0 means no stalls.
	StallEvery, StallFor time.Duration
	// Capacity, when above 0, is how many operations a second the store serves: above it
	// they queue first in, first out for a service slot, as behind a single server (the
	// memory driver's capacity), and then take their service time. A pool that sends
	// more waits longer in the store, without the store answering any faster.
	Capacity float64

	clk   *clock.Sim
	start time.Time

	mu   sync.Mutex
	data map[string][]byte
	// nextFree is when the next service slot is free, with Capacity set.
	nextFree time.Time
	// waits holds the context of every operation waiting in the store, for Abandoned.
	waits map[*waiter]struct{}
}

// waiter is an operation waiting in the store, by its context.
type waiter struct{ ctx context.Context }

// frozenFor is how long an operation on a frozen key without a deadline waits.
const frozenFor = 24 * time.Hour

// New returns an empty store on clk whose operations take service.
func New(clk *clock.Sim, service time.Duration) *Store {
	return &Store{Service: service, clk: clk, start: clk.Now(), data: map[string][]byte{},
		waits: map[*waiter]struct{}{}}
}

// Init does nothing: the store is ready when made.
func (s *Store) Init(context.Context, any) error { return nil }

// Close does nothing.
func (s *Store) Close() error { return nil }

// wait holds an operation for as long as the store takes at the current instant, or until
// ctx ends (an op timeout, the engine closing). Its timer is stopped on the way out, so a
// test that counts pending timers never counts one of an operation that has returned.
func (s *Store) wait(ctx context.Context, key string) error {
	if s.Frozen != nil && s.Frozen(key) {
		// Held on the simulated clock until the operation's deadline, where the store
		// gives up on it: a wait woken by the context instead would run while its timer
		// is still pending, and a test stepping the clock could step past it.
		d := frozenFor
		if dl, ok := ctx.Deadline(); ok {
			d = dl.Sub(s.clk.Now())
		}
		if err := clock.Sleep(ctx, s.clk, d); err != nil {
			return err
		}
		return context.DeadlineExceeded
	}
	s.mu.Lock()
	d := s.Service
	if s.Capacity > 0 {
		now := s.clk.Now()
		slot := now
		if s.nextFree.After(now) {
			slot = s.nextFree
		}
		s.nextFree = slot.Add(time.Duration(float64(time.Second) / s.Capacity))
		d += slot.Sub(now)
	}
	s.mu.Unlock()
	if s.StallEvery > 0 {
		into := s.clk.Now().Sub(s.start) % s.StallEvery
		if into >= s.StallEvery-s.StallFor {
			d += s.StallEvery - into
		}
	}
	w := &waiter{ctx}
	s.mu.Lock()
	s.waits[w] = struct{}{}
	s.mu.Unlock()
	// Sleep has stopped its timer when it returns, so an operation leaves waits only
	// once its timer is gone: Abandoned never undercounts the timers that are left.
	err := clock.Sleep(ctx, s.clk, d)
	s.mu.Lock()
	delete(s.waits, w)
	s.mu.Unlock()
	return err
}

// Abandoned returns how many operations still wait in the store although their context
// has ended (an op timeout, a hard stop). Each still holds its store timer until its
// goroutine runs and stops it, so for that moment the clock counts one timer more than
// the goroutines that really wait: a test stepping the clock with clock.Sim.StepTo adds
// Abandoned to the timers it expects, or it may step while that goroutine is about to
// start its next wait, and the next operation starts late on the simulated clock.
func (s *Store) Abandoned() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for w := range s.waits {
		if w.ctx.Err() != nil {
			n++
		}
	}
	return n
}

// SetService changes how long operations take from now on; those already in the store
// keep the time they were given.
func (s *Store) SetService(d time.Duration) {
	s.mu.Lock()
	s.Service = d
	s.mu.Unlock()
}

// Read returns the value last written at key, or driver.ErrNotFound.
func (s *Store) Read(ctx context.Context, key string) ([]byte, error) {
	if err := s.wait(ctx, key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.data[key]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return v, nil
}

// Write stores a copy of value at key.
func (s *Store) Write(ctx context.Context, key string, value []byte) error {
	if err := s.wait(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = append([]byte(nil), value...)
	return nil
}
