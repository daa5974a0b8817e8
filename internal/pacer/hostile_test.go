package pacer

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
)

// promptly runs f and fails the test if it has not returned within limit. The limit is a
// generous bound for a hang check (a wedged loop runs for ever), not a speed assertion.
func promptly(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
	}
}

// TestShapesAtHostileRates: whatever rate a shape is given, huge (1e18, 1e308, the
// largest float) or tiny (1e-300, the smallest float), and however long it has run, Due
// answers at once and agrees with Offset. An API PATCH of workload.readRate=1e308 once
// wedged a node: Due counted up one operation at a time towards an overflowed count,
// under the engine's lock.
func TestShapesAtHostileRates(t *testing.T) {
	shapes := map[string]Shape{
		"constant 1e18":      Constant(1e18),
		"constant 1e308":     Constant(1e308),
		"constant max float": Constant(math.MaxFloat64),
		"constant 1e-300":    Constant(1e-300),
		"constant min float": Constant(math.SmallestNonzeroFloat64),
		"ramp to 1e308":      Ramp{From: 0, To: 1e308, Over: time.Second},
		"ramp from 1e308":    Ramp{From: 1e308, To: 1, Over: time.Hour},
		"ramp of tiny rates": Ramp{From: 1e-300, To: 2e-300, Over: time.Second},
		// Built past NewSteps, which refuses rates above MaxRate: the pacer must not
		// depend on that.
		"steps through 1e308": &Steps{Rates: []float64{1, 1e308, 1e-300}, Every: time.Second, cum: []float64{0, 1, 1e308}},
		"sine around 1e308":   Sine{Mean: 1e308, Amplitude: 5e307, Period: time.Second},
	}
	durations := []time.Duration{0, 1, time.Microsecond, time.Second, time.Hour, 100 * 365 * 24 * time.Hour, math.MaxInt64}
	for name, s := range shapes {
		t.Run(name, func(t *testing.T) {
			promptly(t, 5*time.Second, "Due and Offset", func() {
				prev := int64(0)
				for _, d := range durations {
					n := s.Due(d)
					if n < prev {
						t.Errorf("Due(%v) = %d, below Due of an earlier time %d", d, n, prev)
					}
					prev = n
					if n < 1 || n > maxSlots {
						t.Errorf("Due(%v) = %d, want 1..%d (operation 0 is due at the anchor)", d, n, maxSlots)
						continue
					}
					if off := s.Offset(n - 1); off > d {
						t.Errorf("Due(%v) = %d, but operation %d is due at %v", d, n, n-1, off)
					}
					if off := s.Offset(n); n < maxSlots && off <= d {
						t.Errorf("Due(%v) = %d, but operation %d is due already at %v", d, n, n, off)
					}
				}
				for _, k := range []int64{0, 1, 1 << 20, 1 << 40, maxSlots} {
					if off := s.Offset(k); off < 0 {
						t.Errorf("Offset(%d) = %v, before the anchor", k, off)
					}
				}
			})
		})
	}
}

// TestPacerAtHostileRates: a pacer given any rate, installed, changed while operations
// are overdue, and asked for its backlog, answers each call at once; a claim returns (a
// huge rate's operations are all due) or honours its context (a tiny rate's are not).
func TestPacerAtHostileRates(t *testing.T) {
	for _, rate := range []float64{1e18, 1e308, math.MaxFloat64, 1e-300, math.SmallestNonzeroFloat64, math.Inf(1), math.NaN(), -1} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			promptly(t, 5*time.Second, "the pacer", func() {
				p := New(rate)
				time.Sleep(5 * time.Millisecond)
				for range 3 {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
					_, _, _ = p.Acquire(ctx)
					cancel()
					p.Backlog()
					_ = p.Rate()
				}
				p.SetRate(rate / 2)
				p.Backlog()
				p.SetRate(rate)
				time.Sleep(5 * time.Millisecond)
				p.Backlog()
				_, _ = p.TryAcquire(p.Now())
				p.SetRate(100)
				p.Backlog()
				p.Reset(ForRate(rate))
				p.Backlog()
			})
		})
	}
}
