package pacer

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Clock is a monotonic clock in nanoseconds since its creation. Pacers that share a clock
// give times that can be compared and subtracted across them. Copies share their state.
//
// Every operation reads it at least twice (its start and its end). The kernel's clock
// (time.Since: a vDSO call that orders its counter read with LFENCE or RDTSCP) costs ~20 ns
// on the project's machines, and the ordering also stops the CPU from overlapping the read
// with the operation around it: with the memory store the two reads were a third of the
// engine's CPU per operation. Where the kernel itself keeps time with the CPU's time-stamp
// counter (Linux on amd64 with clocksource tsc, which the kernel picks only when the counter
// runs at a constant rate and in step on every CPU), a clock reads the counter directly,
// unordered, and scales it (~8 ns). It is a faster way to read the kernel's clock, not a
// clock of its own: every tscPeriod it reads the kernel's clock again and steers its
// slope toward it, so readings stay within a microsecond of time.Since (deadlines handed to
// client libraries and the runtime's timers agree with it), and it falls back to the
// kernel's clock for good if the counter stops keeping the kernel's time. An unordered read
// may be taken up to the CPU's reorder window (~100 instructions) early or late, tens of
// nanoseconds, below the microsecond that latencies are recorded in.
type Clock struct {
	base time.Time
	tsc  *tscClock // nil where the counter is not used
}

// NewClock returns a clock starting at zero now.
func NewClock() Clock {
	c := Clock{base: time.Now()}
	if tscUsable() {
		c.tsc = newTSCClock(c.base)
	}
	return c
}

// Now returns the nanoseconds since the clock was created.
func (c Clock) Now() int64 {
	if t := c.tsc; t != nil {
		a := t.cur.Load()
		if d := tscTicks() - a.tick; d < a.span {
			return a.ns + scale(d, a.mult)
		}
		return t.slow(c.base)
	}
	return int64(time.Since(c.base))
}

// Time converts a reading of Now back to wall-clock time.
func (c Clock) Time(ns int64) time.Time { return c.base.Add(time.Duration(ns)) }

const (
	// tscPeriod is how often a counter clock reads the kernel's clock to stay with it.
	// Each time costs one kernel read (~20 ns, a few per second).
	tscPeriod = 100 * time.Millisecond
	// tscCalibration is how long a new clock measures the counter's rate, reading the
	// kernel's clock meanwhile: two (counter, kernel) pairs ~30 ns wide, 10 ms apart, give
	// the rate within ~3 ppm, and every later period refines it on a longer baseline.
	tscCalibration = 10 * time.Millisecond
	// tscSlew is the most a period's slope departs from the measured rate to close the
	// gap to the kernel's clock: 100 µs per period. The gap in steady state is the rate's
	// error over one period, nanoseconds.
	tscSlew = 1e-3
	// tscMaxErr is how far from the kernel's clock a reading may be found, at a regular
	// period, before the counter is taken not to keep the kernel's time (a frequency change
	// the kernel did not tell us of, a counter reset): the clock then reads the kernel's.
	tscMaxErr = 250 * time.Microsecond
	// tscGapSlack is the drift allowed per nanosecond since the anchor when nothing read
	// the clock for over two periods: the rate's error and the kernel's own slewing (NTP
	// at up to 500 ppm) accumulate over the gap.
	tscGapSlack = 1e-3
)

// tscClock is the counter state that a clock and its copies share.
type tscClock struct {
	cur atomic.Pointer[tscAnchor]
	off atomic.Bool // the counter does not keep the kernel's time: read the kernel's clock
	// tick0 and ns0 are a (counter, clock) pair taken at creation; the rate is measured
	// from them.
	tick0 uint64
	ns0   int64
}

// tscAnchor is one period's line from counter ticks to clock readings. A new anchor
// starts on the line of the one before (the clock stays continuous and monotonic), except
// after a gap in which nobody read the clock.
type tscAnchor struct {
	tick uint64  // counter at the anchor
	ns   int64   // reading at the anchor
	mult uint64  // ns per tick in 32.32 fixed point, steered toward the kernel's clock
	rate float64 // ns per tick as measured, unsteered
	// span is how many ticks past tick the anchor is used before the kernel's clock is
	// read again; 0 while the clock calibrates or once it has fallen back.
	span uint64
}

func newTSCClock(base time.Time) *tscClock {
	tick, ns, ok := tscPair(base)
	if !ok {
		return nil
	}
	t := &tscClock{tick0: tick, ns0: ns}
	t.cur.Store(&tscAnchor{tick: tick, ns: ns})
	return t
}

// scale returns d ticks in ns at mult (32.32 fixed point).
func scale(d, mult uint64) int64 {
	hi, lo := bits.Mul64(d, mult)
	return int64(hi<<32 | lo>>32)
}

// slow is a reading past the current anchor's span: it reads the kernel's clock and moves
// the anchor on.
func (t *tscClock) slow(base time.Time) int64 {
	if t.off.Load() {
		return int64(time.Since(base))
	}
	a := t.cur.Load()
	if a.span == 0 {
		// Calibrating: the kernel's clock until the rate can be measured.
		if mono := int64(time.Since(base)); mono-t.ns0 < int64(tscCalibration) {
			return mono
		}
	}
	tick, mono, ok := tscPair(base)
	if !ok {
		// The thread was interrupted between the reads: the pair is too wide to steer
		// by. The line is still good for a while, and the next reading tries again.
		if a.span == 0 {
			return mono
		}
		return a.at(tick)
	}
	ns, next, off := t.advance(a, tick, mono)
	if off {
		t.off.Store(true)
		t.cur.Store(&tscAnchor{})
		return mono
	}
	if next != nil {
		// Readers that raced here computed equivalent anchors; the first one stays.
		t.cur.CompareAndSwap(a, next)
	}
	return ns
}

// at returns the reading at tick on a's line. Past its span the slope is the measured
// rate, so a clock left unread for a while does not carry a period's steering along.
func (a *tscAnchor) at(tick uint64) int64 {
	d := tick - a.tick
	if int64(d) < 0 {
		// An unordered read taken before another CPU installed a: the anchor's own
		// reading is the closest one that keeps the clock monotonic.
		return a.ns
	}
	if d <= a.span {
		return a.ns + scale(d, a.mult)
	}
	return a.ns + scale(a.span, a.mult) + int64(float64(d-a.span)*a.rate)
}

// advance returns the reading for the pair (tick, mono) taken past a's span, and the
// anchor that follows a (nil: keep a). off reports that the counter no longer keeps the
// kernel's time.
func (t *tscClock) advance(a *tscAnchor, tick uint64, mono int64) (ns int64, next *tscAnchor, off bool) {
	elapsed := mono - t.ns0
	if tick <= t.tick0 || elapsed <= 0 {
		return mono, nil, false // cannot measure a rate yet (or the counter went back)
	}
	rate := float64(elapsed) / float64(tick-t.tick0)
	if a.span == 0 {
		if elapsed < int64(tscCalibration) {
			return mono, nil, false
		}
		return mono, newAnchor(tick, mono, rate, 0), false
	}
	if int64(tick-a.tick) < 0 {
		return a.ns, nil, false
	}
	ours := a.at(tick)
	gap := float64(tick-a.tick) * rate
	errNs := mono - ours
	limit := float64(tscMaxErr)
	if gap > 2*float64(tscPeriod) {
		limit += gap * tscGapSlack
	}
	if math.Abs(float64(errNs)) > limit {
		return mono, nil, true
	}
	if gap > 2*float64(tscPeriod) {
		// Nobody read the clock for a while, so no reading is near enough to notice a
		// step: start the new line on the kernel's clock.
		return mono, newAnchor(tick, mono, rate, 0), false
	}
	return ours, newAnchor(tick, ours, rate, errNs), false
}

// newAnchor returns an anchor at (tick, ns) whose slope closes errNs (the kernel's clock
// minus ours) over one period, as far as tscSlew allows.
func newAnchor(tick uint64, ns int64, rate float64, errNs int64) *tscAnchor {
	steer := max(-tscSlew, min(tscSlew, float64(errNs)/float64(tscPeriod)))
	return &tscAnchor{
		tick: tick,
		ns:   ns,
		mult: uint64(rate * (1 + steer) * (1 << 32)),
		rate: rate,
		span: uint64(float64(tscPeriod) / rate),
	}
}

// tscPairWidth is the widest a (counter, kernel) pair may be, in ticks, for the clock to
// steer by it: ~20 µs at 3 GHz, where an undisturbed pair is ~100 ticks wide.
const tscPairWidth = 1 << 16

// tscPair reads the counter and the kernel's clock together: the tightest of three
// ordered counter reads around a kernel read. ok is false when all three were
// interrupted (preempted, a host's steal).
func tscPair(base time.Time) (tick uint64, ns int64, ok bool) {
	width := uint64(math.MaxUint64)
	for range 3 {
		t1 := tscTicksOrdered()
		m := int64(time.Since(base))
		t2 := tscTicksOrdered()
		if w := t2 - t1; w < width {
			width, tick, ns = w, t1+w/2, m
		}
	}
	return tick, ns, width <= tscPairWidth
}
