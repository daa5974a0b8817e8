package pacer

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// The learnt wake margin must settle near the 99th percentile of the kernel's wake-up
// delay, whatever the machine's typical delay is, and rare long stalls must not drag it
// up: it decides how many starts are precise (those within the margin) and what the spin
// costs (the margin minus the typical delay, per operation).
func TestWakeMarginLearnsTheDelaysP99(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay func(r *rand.Rand) time.Duration
	}{
		{"bare metal, 3-8 µs", func(r *rand.Rand) time.Duration {
			return 3*time.Microsecond + time.Duration(r.Int64N(int64(5*time.Microsecond)))
		}},
		{"VM, 40-140 µs", func(r *rand.Rand) time.Duration {
			return 40*time.Microsecond + time.Duration(r.Int64N(int64(100*time.Microsecond)))
		}},
		{"VM with 0.5% stalls of 10 ms", func(r *rand.Rand) time.Duration {
			if r.IntN(200) == 0 {
				return 10 * time.Millisecond
			}
			return 40*time.Microsecond + time.Duration(r.Int64N(int64(100*time.Microsecond)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var w wakeMargin
			samples := make([]time.Duration, 0, 50000)
			for range 50000 {
				d := tc.delay(r)
				samples = append(samples, d)
				w.observe(d)
			}
			slices.Sort(samples)
			p99 := samples[len(samples)*99/100]
			want := max(p99, wakeMarginMin)
			// Stalls are 0.5% of the samples: the margin must cover the ordinary delays,
			// not chase the stalls.
			if tc.name == "VM with 0.5% stalls of 10 ms" {
				want = 140 * time.Microsecond
			}
			got := w.margin(1)
			if got < want*8/10 || got > want*12/10+wakeUp {
				t.Fatalf("margin = %v, want about %v (the delays' p99)", got, want)
			}
		})
	}
}

// The spin after the kernel sleep lasts the margin minus the actual delay, per operation:
// at higher rates the margin shrinks so the spin stays within spinBudget of a core.
func TestWakeMarginStaysWithinTheSpinBudget(t *testing.T) {
	var w wakeMargin
	for range 2000 {
		w.observe(400 * time.Microsecond)
	}
	for _, tc := range []struct {
		rate float64
		want time.Duration
	}{
		{100, 400 * time.Microsecond},  // the learnt delay (0.04 core)
		{1000, 150 * time.Microsecond}, // the budget: 0.15 core
		{2000, 75 * time.Microsecond},
		{10000, 15 * time.Microsecond},
	} {
		got := w.margin(tc.rate)
		if d := got - tc.want; d < -wakeUp || d > wakeUp {
			t.Errorf("margin at %v/s = %v, want %v", tc.rate, got, tc.want)
		}
	}
}

// The margin is learnt only from the kernel sleeps a waiter takes, and a waiter takes one
// only when more than the margin is left after its coarse time.Sleep, i.e. less than
// coarseMargin. So however late the wake-ups of a stalled machine are, and however many
// waiters report them at once, the margin must stay well below coarseMargin: one at it
// could never be learnt down again.
func TestWakeMarginStaysLearnable(t *testing.T) {
	var w wakeMargin
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				w.observe(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if m := w.margin(1); m > wakeMarginMax || m >= coarseMargin {
		t.Fatalf("after a stall, margin = %v, want at most %v and below the coarse margin %v", m, wakeMarginMax, coarseMargin)
	}
	if est := time.Duration(w.est.Load()); est > wakeMarginMax {
		t.Fatalf("estimate = %v, past its bound %v", est, wakeMarginMax)
	}
}

// After a burst of late wake-ups (a stalled VM) the margin must come back down once
// they end: at 100/s, where the spin budget allows the largest margin, a pacer must
// still take kernel sleeps and learn from them. The test only asks that the estimate
// move at all, which one ordinary wake-up does. A loaded machine may overshoot every
// coarse sleep of a few operations (then no kernel sleep is left to take), so the test
// goes on until the estimate moves, for up to a minute of operations: a margin that
// can never be learnt down (wakeMarginMax at coarseMargin) never moves it.
func TestWakeMarginRecoversAfterAStall(t *testing.T) {
	p := New(100)
	for range 2000 {
		p.wake.observe(5 * time.Millisecond)
	}
	high := p.wake.est.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 0; ; i++ {
		if _, _, err := p.Acquire(ctx); err != nil {
			t.Fatalf("the margin stayed at %v through %d operations at 100/s: no kernel sleep was taken to learn from (%v)", time.Duration(high), i, err)
		}
		if p.wake.est.Load() < high {
			return
		}
	}
}

// The spin budget's bound on the margin, 0.15 s / rate, passes the range of a Duration
// below ~1.6e-11 ops/s, a rate a shape may well have at its anchor (a ramp from a
// positive From as small as the user likes): the margin must then be the learnt one, not
// whatever the float conversion makes of an out-of-range value (on amd64 the most
// negative Duration, which made the waiter call nanosleep in a loop with a negative time).
func TestWakeMarginAtTinyRates(t *testing.T) {
	var w wakeMargin
	for range 100 {
		w.observe(100 * time.Microsecond)
	}
	want := w.margin(0)
	for _, rate := range []float64{1e-6, 1e-11, 1e-12, 1e-300, math.SmallestNonzeroFloat64} {
		if got := w.margin(rate); got != want {
			t.Errorf("margin at %v/s = %v, want the learnt %v", rate, got, want)
		}
	}
}
