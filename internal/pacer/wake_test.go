package pacer

import (
	"math/rand/v2"
	"slices"
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
