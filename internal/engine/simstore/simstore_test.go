package simstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestOperationsTakeTheirSimulatedTime: an operation returns once the clock has moved by
// its service time, plus the rest of a stall it arrived in; a write is read back; a
// cancelled operation returns its context's error and leaves no timer behind. The cases
// run in order of time: a simulated clock never goes back.
func TestOperationsTakeTheirSimulatedTime(t *testing.T) {
	clk := clock.NewSim(t0)
	s := New(clk, 2*time.Millisecond)
	s.StallEvery, s.StallFor = time.Second, 300*time.Millisecond
	for _, tc := range []struct {
		at, want time.Duration
	}{
		{0, 2 * time.Millisecond},                         // no stall
		{700 * time.Millisecond, 302 * time.Millisecond},  // arrives as a stall starts
		{1900 * time.Millisecond, 102 * time.Millisecond}, // arrives in its last 100 ms
		{2500 * time.Millisecond, 2 * time.Millisecond},   // between stalls
		{2699 * time.Millisecond, 2 * time.Millisecond},   // just before the next one
	} {
		clk.Set(t0.Add(tc.at))
		done := make(chan error, 1)
		go func() { done <- s.Write(context.Background(), "k", []byte("v")) }()
		if !clk.WaitTimers(1, 10*time.Second) {
			t.Fatalf("write at %v set no timer", tc.at)
		}
		next, _ := clk.Next()
		if got := next.Sub(t0.Add(tc.at)); got != tc.want {
			t.Errorf("write at %v takes %v, want %v", tc.at, got, tc.want)
		}
		clk.Set(next)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan []byte, 1)
	go func() {
		v, _ := s.Read(context.Background(), "k")
		got <- v
	}()
	clk.WaitTimers(1, 10*time.Second)
	clk.Advance(time.Second)
	if v := <-got; string(v) != "v" {
		t.Errorf("read back %q, want v", v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Read(ctx, "missing")
		errc <- err
	}()
	clk.WaitTimers(1, 10*time.Second)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
	if n := clk.Pending(); n != 0 {
		t.Errorf("%d timers left behind by a cancelled read", n)
	}
	s.Service, s.StallEvery = 0, 0
	if _, err := s.Read(context.Background(), "missing"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a missing key: %v, want driver.ErrNotFound", err)
	}
}

// TestCapacityQueuesFirstInFirstOut: at 1,000 ops/s of capacity and a 2 ms service time,
// three operations arriving at once take 2, 3 and 4 ms (each waits for the slot of the
// one before), and one arriving after the queue emptied takes its 2 ms alone.
func TestCapacityQueuesFirstInFirstOut(t *testing.T) {
	clk := clock.NewSim(t0)
	s := New(clk, 2*time.Millisecond)
	s.Capacity = 1000
	for _, tc := range []struct {
		at   time.Duration
		n    int
		want []time.Duration
	}{
		{0, 3, []time.Duration{2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}},
		{time.Second, 1, []time.Duration{2 * time.Millisecond}},
	} {
		clk.Set(t0.Add(tc.at))
		done := make(chan error, tc.n)
		for i := range tc.n {
			go func() { done <- s.Write(context.Background(), "k", []byte("v")) }()
			// One at a time, so the queue's order is the test's.
			if !clk.WaitTimers(i+1, 10*time.Second) {
				t.Fatalf("write %d at %v set no timer", i, tc.at)
			}
		}
		for _, want := range tc.want {
			next, ok := clk.Next()
			if !ok {
				t.Fatalf("no timer left at %v; want one ending %v after", tc.at, want)
			}
			if got := next.Sub(t0.Add(tc.at)); got != want {
				t.Errorf("a write arriving at %v ends %v after, want %v", tc.at, got, want)
			}
			clk.Set(next)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
}
