package pacer

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func mustSteps(t *testing.T, every time.Duration, rates ...float64) *Steps {
	t.Helper()
	s, err := NewSteps(every, rates...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestShapesAreConsistent checks every shape's three views against each other and against
// its rate: operation k is due exactly at Offset(k), offsets never go back, and the number
// due by T is the integral of the rate over [0, T] (±1).
func TestShapesAreConsistent(t *testing.T) {
	integral := func(s Shape, T time.Duration) float64 {
		const steps = 20000
		dt := T.Seconds() / steps
		var n float64
		for i := range steps {
			n += s.Rate(time.Duration((float64(i) + 0.5) * dt * 1e9))
		}
		return n * dt
	}
	shapes := map[string]Shape{
		"constant":       Constant(1000),
		"ramp up":        Ramp{From: 100, To: 5000, Over: 2 * time.Second},
		"ramp down":      Ramp{From: 5000, To: 100, Over: 2 * time.Second},
		"ramp from zero": Ramp{From: 0, To: 2000, Over: time.Second},
		"steps":          mustSteps(t, 500*time.Millisecond, 1000, 4000, 250, 2000),
		"sine":           Sine{Mean: 2000, Amplitude: 1500, Period: time.Second},
	}
	for name, s := range shapes {
		t.Run(name, func(t *testing.T) {
			prev := time.Duration(-1)
			for k := int64(0); k < 12000; k += 7 {
				off := s.Offset(k)
				if off < prev {
					t.Fatalf("Offset(%d) = %v before the previous %v", k, off, prev)
				}
				prev = off
				if got := s.Due(off); got != k+1 && s.Offset(k+1) != off {
					t.Fatalf("Due(Offset(%d) = %v) = %d, want %d", k, off, got, k+1)
				}
				if off > 0 {
					if got := s.Due(off - 1); got > k {
						t.Fatalf("Due(Offset(%d) - 1ns) = %d: operation %d due early", k, got, k)
					}
				}
			}
			for _, T := range []time.Duration{100 * time.Millisecond, 1300 * time.Millisecond, 3 * time.Second} {
				want := integral(s, T)
				if got := float64(s.Due(T)); math.Abs(got-want) > 1.5 {
					t.Errorf("Due(%v) = %.0f, want the rate's integral %.1f", T, got, want)
				}
			}
		})
	}
}

func TestShapeConstructorsNameTheProblem(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := NewRamp(-1, 10, time.Second); return err }(), "from 0 to 1000000000"},
		{func() error { _, err := NewRamp(10, 1e308, time.Second); return err }(), "from 0 to 1000000000"},
		{func() error { _, err := NewRamp(math.NaN(), 10, time.Second); return err }(), "from 0 to 1000000000"},
		{func() error { _, err := NewRamp(10, math.Inf(1), time.Second); return err }(), "from 0 to 1000000000"},
		{func() error { _, err := NewRamp(10, 0, time.Second); return err }(), "final rate must be above 0"},
		{func() error { _, err := NewRamp(1, 10, 0); return err }(), "duration must be positive"},
		{func() error { _, err := NewSteps(time.Second); return err }(), "at least one rate"},
		{func() error { _, err := NewSteps(time.Second, 10, 0); return err }(), "rate 2 is 0"},
		{func() error { _, err := NewSteps(time.Second, 10, 1e18); return err }(), "at most 1000000000"},
		{func() error { _, err := NewSteps(time.Second, math.NaN()); return err }(), "rate 1 is NaN"},
		{func() error { _, err := NewSteps(0, 10); return err }(), "duration must be positive"},
		{func() error { _, err := NewSine(100, 100, time.Second); return err }(), "below the mean"},
		{func() error { _, err := NewSine(0, 0, time.Second); return err }(), "mean must be"},
		{func() error { _, err := NewSine(1e9, 1, time.Second); return err }(), "at most 1000000000"},
		{func() error { _, err := NewSine(math.Inf(1), 1, time.Second); return err }(), "at most 1000000000"},
		{func() error { _, err := NewSine(100, 10, 0); return err }(), "period"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one saying %q", tc.err, tc.want)
		}
	}
}

// TestPacerFollowsARamp: the pacer hands out a ramp's operations at the ramp's times.
func TestPacerFollowsARamp(t *testing.T) {
	p := New(0)
	r := Ramp{From: 1000, To: 3000, Over: 200 * time.Millisecond}
	p.SetShape(r)
	anchor := p.sched.Load().anchor
	end := anchor + int64(300*time.Millisecond)
	n := int64(0)
	for {
		intended, start, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if intended > end {
			break
		}
		if want := anchor + int64(r.Offset(n)); intended != want {
			t.Fatalf("op %d intended %d, want %d", n, intended, want)
		}
		if start < intended {
			t.Fatalf("op %d started early", n)
		}
		n++
	}
	// Exactly the ops whose offset is within the first 300 ms, however late they ran.
	if want := r.Due(300 * time.Millisecond); n != want {
		t.Fatalf("%d ops in the ramp's first 300 ms, want %d", n, want)
	}
}
