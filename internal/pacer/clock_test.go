package pacer

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// readAgainstKernel reads c for d, each reading between two of the kernel's, and returns
// how far outside that bracket each reading fell (0 inside it), and whether a reading was
// ever below the one before it.
func readAgainstKernel(c Clock, d time.Duration) (off []int64, backwards int) {
	prev := int64(-1 << 63)
	for start := time.Now(); time.Since(start) < d; {
		k1 := int64(time.Since(c.base))
		n := c.Now()
		k2 := int64(time.Since(c.base))
		switch {
		case n < k1:
			off = append(off, k1-n)
		case n > k2:
			off = append(off, n-k2)
		default:
			off = append(off, 0)
		}
		if n < prev {
			backwards++
		}
		prev = n
	}
	return off, backwards
}

// TestClockKeepsTheKernelsTime reads a clock from four goroutines for over two steering
// periods and checks every reading against the kernel's clock read around it: what the
// pacer's sleeps, the runtime's timers and the deadlines handed to client libraries
// assume. Where the counter is used, it also checks that it was (the test would otherwise
// pass on the fallback alone).
func TestClockKeepsTheKernelsTime(t *testing.T) {
	c := NewClock()
	var (
		mu        sync.Mutex
		off       []int64
		backwards int
		wg        sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			o, b := readAgainstKernel(c, 3*tscPeriod)
			mu.Lock()
			off, backwards = append(off, o...), backwards+b
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(off)
	median, worst := off[len(off)/2], off[len(off)-1]
	t.Logf("%d readings, outside the kernel's bracket: median %d ns, worst %d ns; counter clock: %v",
		len(off), median, worst, c.tsc != nil)
	if median > 1000 || worst > int64(100*time.Microsecond) {
		t.Errorf("readings strayed from the kernel's clock: median %d ns, worst %d ns outside it", median, worst)
	}
	if backwards > 0 {
		t.Errorf("%d readings were below the previous one of the same goroutine", backwards)
	}
	if tscUsable() {
		if c.tsc == nil {
			t.Fatal("the kernel keeps time with the counter but the clock does not read it")
		}
		if a := c.tsc.cur.Load(); a.span == 0 || c.tsc.off.Load() {
			t.Errorf("the counter clock never left calibration or fell back (span %d, off %v)", a.span, c.tsc.off.Load())
		}
	}
}

// TestClockFallsBackToTheKernel: once the counter is found not to keep time, readings are
// the kernel's.
func TestClockFallsBackToTheKernel(t *testing.T) {
	c := NewClock()
	if c.tsc == nil {
		t.Skip("the counter is not used on this machine: the clock is the kernel's already")
	}
	c.tsc.off.Store(true)
	c.tsc.cur.Store(&tscAnchor{})
	off, backwards := readAgainstKernel(c, 20*time.Millisecond)
	if slices.Max(off) != 0 || backwards > 0 {
		t.Errorf("fallen-back readings: worst %d ns outside the kernel's, %d backwards", slices.Max(off), backwards)
	}
}

// TestAdvance drives the steering with made-up counter and kernel readings: a 2 GHz
// counter (0.5 ns a tick) whose clock starts at tick 1e9.
func TestAdvance(t *testing.T) {
	const tick0 = uint64(1e9)
	period := uint64(2 * tscPeriod) // ticks in a period
	calibrated := func(ns int64) *tscAnchor { return newAnchor(tick0, ns, 0.5, 0) }
	for _, tc := range []struct {
		name     string
		anchor   *tscAnchor
		tick     uint64
		mono     int64
		wantNS   int64
		wantNext bool  // a new anchor
		nextNS   int64 // its reading, if any
		wantOff  bool
	}{
		{name: "calibrating", anchor: &tscAnchor{tick: tick0}, tick: tick0 + 2e6, mono: 1e6, wantNS: 1e6},
		{name: "calibrated after tscCalibration", anchor: &tscAnchor{tick: tick0},
			tick: tick0 + 2e7, mono: 1e7, wantNS: 1e7, wantNext: true, nextNS: 1e7},
		{name: "a period on time", anchor: calibrated(0), tick: tick0 + period, mono: int64(tscPeriod),
			wantNS: int64(tscPeriod), wantNext: true, nextNS: int64(tscPeriod)},
		{name: "a period 50 µs behind the kernel: continuous, steered", anchor: calibrated(0),
			tick: tick0 + period, mono: int64(tscPeriod + 50*time.Microsecond),
			wantNS: int64(tscPeriod), wantNext: true, nextNS: int64(tscPeriod)},
		{name: "a period 300 µs off: the counter is not keeping time", anchor: calibrated(0),
			tick: tick0 + period, mono: int64(tscPeriod + 300*time.Microsecond), wantOff: true},
		{name: "a read before the anchor", anchor: newAnchor(tick0+period, 7e7, 0.5, 0),
			tick: tick0 + period - 10, mono: 7e7, wantNS: 7e7},
		{name: "an hour unread, 2 ms off: starts again on the kernel's clock", anchor: calibrated(0),
			tick: tick0 + uint64(2*time.Hour), mono: int64(time.Hour + 2*time.Millisecond),
			wantNS: int64(time.Hour + 2*time.Millisecond), wantNext: true, nextNS: int64(time.Hour + 2*time.Millisecond)},
		{name: "an hour unread, 10 s off", anchor: calibrated(0),
			tick: tick0 + uint64(2*time.Hour), mono: int64(time.Hour + 10*time.Second), wantOff: true},
		{name: "the counter went back", anchor: calibrated(0), tick: tick0 - 5, mono: 3e8, wantNS: 3e8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &tscClock{tick0: tick0, ns0: 0}
			ns, next, off := c.advance(tc.anchor, tc.tick, tc.mono)
			if off != tc.wantOff {
				t.Fatalf("off = %v, want %v", off, tc.wantOff)
			}
			if off {
				return
			}
			if ns != tc.wantNS {
				t.Errorf("reading %d, want %d", ns, tc.wantNS)
			}
			if (next != nil) != tc.wantNext {
				t.Fatalf("new anchor %v, want one: %v", next, tc.wantNext)
			}
			if next != nil && (next.ns != tc.nextNS || next.tick != tc.tick || next.span == 0) {
				t.Errorf("new anchor at (%d ticks, %d ns, span %d), want (%d, %d, >0)",
					next.tick, next.ns, next.span, tc.tick, tc.nextNS)
			}
		})
	}
}

// TestSteeringClosesTheGap starts a clock 200 µs behind the kernel's and follows it
// period by period: the gap closes at the slew rate and stays closed, and readings never
// go back.
func TestSteeringClosesTheGap(t *testing.T) {
	const tick0, rate = uint64(1e9), 0.5 // 2 GHz
	c := &tscClock{tick0: tick0, ns0: 0}
	kernel := func(tick uint64) int64 { return int64(float64(tick-tick0) * rate) }
	a := newAnchor(tick0+2e7, kernel(tick0+2e7)-200_000, rate, 0)
	prev := a.ns
	var gaps []int64
	for range 6 {
		tick := a.tick + a.span + 1000
		// A reading inside the span, on the old line, then the period's end.
		if mid := a.at(a.tick + a.span/2); mid < prev {
			t.Fatalf("reading %d below the previous %d", mid, prev)
		}
		ns, next, off := c.advance(a, tick, kernel(tick))
		if off || next == nil {
			t.Fatalf("off %v, next %v", off, next)
		}
		if ns < prev {
			t.Fatalf("reading %d below the previous %d", ns, prev)
		}
		gaps = append(gaps, kernel(tick)-ns)
		a, prev = next, ns
	}
	t.Logf("gap to the kernel's clock, period by period (ns): %v", gaps)
	// The first anchor was not steered; each one after closes at most tscSlew of a period.
	step := int64(tscSlew * float64(tscPeriod))
	if gaps[0] < 199_000 || gaps[1] < 200_000-step-1000 || gaps[1] > 200_000-step+1000 {
		t.Errorf("the gap did not close at the slew rate (%d ns a period): %v", step, gaps)
	}
	if last := gaps[len(gaps)-1]; last < -1000 || last > 1000 {
		t.Errorf("gap after six periods %d ns, want within 1 µs", last)
	}
}

func BenchmarkClockNow(b *testing.B) {
	b.Run("clock", func(b *testing.B) {
		c := NewClock()
		time.Sleep(2 * tscCalibration)
		var s int64
		for b.Loop() {
			s += c.Now()
		}
		_ = s
	})
	b.Run("kernel", func(b *testing.B) {
		base := time.Now()
		var s time.Duration
		for b.Loop() {
			s += time.Since(base)
		}
		_ = s
	})
}
