package pacer

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
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
// slope toward it, so readings stay within a few hundred nanoseconds of time.Since (the
// kernel's own wander against the counter; for up to two seconds after NTP changes the
// kernel's rate, that change over one period), and deadlines handed to client libraries
// and the runtime's timers agree with it. It falls back to the kernel's clock for good if
// the counter stops keeping the kernel's time, or the kernel stops using it. An unordered read
// may be taken up to the CPU's reorder window (~100 instructions) early or late, tens of
// nanoseconds, below the microsecond that latencies are recorded in.
//
// A clock can instead read a clock.Clock (ClockOn): a test gives the pacer and the engine a
// clock.Sim, and their schedules, waits and latencies then follow simulated time.
type Clock struct {
	base time.Time
	tsc  *tscClock // nil where the counter is not used
	// src is the time source of a clock built by ClockOn, nil otherwise. It is tested
	// after tsc, so that the counter clock's read does not pay for it.
	src *source
}

// source is the time source of a clock built by ClockOn: behind a pointer, so the clock
// stays small where it is copied into every operation's path.
type source struct{ c clock.Clock }

// NewClock returns a clock starting at zero now.
func NewClock() Clock {
	c := Clock{base: time.Now()}
	if tscUsable() {
		c.tsc = newTSCClock(c.base)
	}
	return c
}

// ClockOn returns a clock that reads c: nanoseconds since c's instant now. A pacer on it
// waits with c's timers, so on a clock.Sim its operations fall due only as the test
// advances the simulated time. A nil c, or clock.Real, gives NewClock: the real clock is
// read the fast way.
func ClockOn(c clock.Clock) Clock {
	if c == nil || c == clock.Real {
		return NewClock()
	}
	return Clock{base: c.Now(), src: &source{c}}
}

// Now returns the nanoseconds since the clock was created.
func (c Clock) Now() int64 {
	if t := c.tsc; t != nil {
		return t.read(tscTicks())
	}
	return c.other()
}

// other reads a clock that does not read the counter. It is a function of its own so that
// Now, on the counter's path, keeps the code it had before clocks could have a source:
// with the source's read inline, Now saved every word of the clock to its stack first.
func (c Clock) other() int64 {
	if c.src != nil {
		return int64(c.src.c.Now().Sub(c.base))
	}
	return int64(time.Since(c.base))
}

// Source says what the clock reads now: "tsc" (the time-stamp counter, steered to the
// kernel's clock), "kernel", "kernel (tsc calibrating)" in a counter clock's first
// 10 ms (or for as long as no clean pair could be taken), "kernel (tsc fell back)" once
// the counter was found not to keep the kernel's time, or "simulated" for a clock made by
// ClockOn. Reports carry it, so that figures from two machines can be told apart by how
// they were timed.
func (c Clock) Source() string {
	switch {
	case c.src != nil:
		return "simulated"
	case c.tsc == nil:
		return "kernel"
	case c.tsc.off.Load() != nil:
		return "kernel (tsc fell back)"
	case c.tsc.cur.Load().span == 0:
		return "kernel (tsc calibrating)"
	}
	return "tsc"
}

// Time converts a reading of Now back to wall-clock time.
func (c Clock) Time(ns int64) time.Time { return c.base.Add(time.Duration(ns)) }

const (
	// tscPeriod is how often a counter clock reads the kernel's clock to stay with it.
	// Each time costs one (counter, kernel) pair, ~100 ns, a few times a second.
	tscPeriod = 100 * time.Millisecond
	// tscCalibration is how long a new clock reads the kernel's clock while it measures
	// the counter's rate for its first period; later periods measure it over a longer
	// baseline (tscBaseline).
	tscCalibration = 10 * time.Millisecond
	// tscSlew is the most a period's slope departs from the measured rate to close the
	// gap to the kernel's clock: 250 µs per period, the most a period may end off.
	tscSlew = 2.5e-3
	// tscBaseline is how many periods the counter's rate is measured over, at least and
	// (twice) at most. Over one period the kernel's clock wanders ±1.5 ppm against the
	// counter on the project's VMs (its NTP adjustments), which would put readings
	// ±150 ns off; over a second or two it is ±0.15 ppm, and a change in the kernel's
	// rate (NTP slewing it) is followed within two seconds, the steering closing the gap
	// meanwhile.
	tscBaseline = 10
	// tscMaxErr is how far from the kernel's clock a period may end before the counter is
	// taken not to keep the kernel's time (a frequency change the kernel did not tell us
	// of, a counter reset, the kernel slewing faster than ~2,500 ppm): the clock then
	// reads the kernel's for good.
	tscMaxErr = 250 * time.Microsecond
	// tscGapSlack is the drift allowed per nanosecond since the anchor when nobody read
	// the clock for over two periods: the rate's error and the kernel's own slewing (NTP,
	// up to 500 ppm) accumulate over the gap.
	tscGapSlack = 1e-3
	// tscRecheck is how many periods go by between reads of the kernel's clocksource: if
	// the kernel moved off the counter (its watchdog found it unstable), so does the clock.
	tscRecheck = tscBaseline
	// tscMinRate and tscMaxRate bound a calibrated rate, in ns per tick: a counter of
	// 50 MHz to 20 GHz, ten times either side of what x86 counters run at.
	tscMinRate, tscMaxRate = 0.05, 20
	// tscPairWidth is the widest a (counter, kernel) pair may be, in ticks, to steer by:
	// ~1.6 µs at 2.6 GHz, where an undisturbed pair is ~100 ticks wide.
	tscPairWidth = 1 << 12
)

// tscClock is the counter state that a clock and its copies share.
type tscClock struct {
	cur atomic.Pointer[tscAnchor]
	// off, once set, is for good: the counter does not keep the kernel's time.
	off atomic.Pointer[tscFallback]
	// The kernel's clock, a (counter, kernel) pair and whether the kernel has left the
	// counter for another clocksource; tests replace them to drive the clock through
	// what a machine rarely does.
	kernel func() int64
	pair   func() (tick uint64, ns int64, ok bool)
	left   func() bool
}

// tscAnchor is one period's line from counter ticks to clock readings. A new anchor
// starts on the line of the one before (the clock stays continuous and monotonic), except
// after a gap in which nobody read the clock.
type tscAnchor struct {
	tick uint64  // counter at the anchor
	ns   int64   // reading at the anchor
	mono int64   // the kernel's clock at the anchor
	mult uint64  // ns per tick in 32.32 fixed point, steered toward the kernel's clock
	rate float64 // ns per tick as measured, unsteered
	// ref is the (counter, kernel) pair the rate is measured from, 1-2 s back once the
	// clock is that old; next is the pair that becomes ref tscBaseline periods on.
	ref, next tscPoint
	// span is how many ticks past tick the anchor is used before the kernel's clock is
	// read again; 0 while the clock calibrates or once it has fallen back.
	span uint64
	n    int  // periods since calibration
	dead bool // the clock has fallen back: no line to read or to follow
}

// deadAnchor is a fallen-back clock's anchor. Its span of 0 sends every reading to slow,
// which finds the fall-back; advance refuses to follow it.
var deadAnchor = &tscAnchor{dead: true}

// tscFallback is a clock that has fallen back to the kernel's. Its line may have been
// ahead of the kernel's clock when it did; readings keep that lead (up to twice
// tscMaxErr) and run it down at tscSlew, so the clock does not go back.
type tscFallback struct {
	at   int64 // the kernel's clock when the clock fell back
	lead int64 // how far ahead of it the line was
}

func (f *tscFallback) now(mono int64) int64 {
	return mono + max(0, f.lead-int64(float64(mono-f.at)*tscSlew))
}

func newTSCClock(base time.Time) *tscClock {
	kernel := func() int64 { return int64(time.Since(base)) }
	t := &tscClock{
		kernel: kernel,
		pair:   func() (uint64, int64, bool) { return pairFrom(tscTicksOrdered, kernel) },
		left:   tscLeft,
	}
	tick, ns, ok := t.pair()
	if !ok {
		return nil
	}
	p := tscPoint{tick, ns}
	t.cur.Store(&tscAnchor{tick: tick, ns: ns, mono: ns, ref: p, next: p})
	return t
}

// read returns the reading at the counter's tick.
func (t *tscClock) read(tick uint64) int64 {
	a := t.cur.Load()
	if d := tick - a.tick; d < a.span {
		return a.ns + scale(d, a.mult)
	}
	return t.slow()
}

// scale returns d ticks in ns at mult (32.32 fixed point).
func scale(d, mult uint64) int64 {
	hi, lo := bits.Mul64(d, mult)
	return int64(hi<<32 | lo>>32)
}

// at returns the reading at tick on a's line. Past its span the slope is the measured
// rate, so a clock left unread for a while does not carry a period's steering along.
// Before the anchor (a pair taken before another reader moved the line on) it is the
// anchor's reading: later than the pair, but never below a reading of the line before,
// which the anchor continues.
func (a *tscAnchor) at(tick uint64) int64 {
	d := tick - a.tick
	switch {
	case int64(d) < 0:
		return a.ns
	case d <= a.span:
		return a.ns + scale(d, a.mult)
	}
	return a.ns + scale(a.span, a.mult) + int64(float64(d-a.span)*a.rate)
}

// slow is a reading the current anchor cannot give: past its span, before it, while
// calibrating, or after the fall-back.
func (t *tscClock) slow() int64 {
	if f := t.off.Load(); f != nil {
		return f.now(t.kernel())
	}
	a := t.cur.Load()
	if a.span == 0 && !a.dead {
		if mono := t.kernel(); mono-a.mono < int64(tscCalibration) {
			return mono // calibrating: the kernel's clock until the rate can be measured
		}
	}
	tick, mono, ok := t.pair()
	// Loaded again after the pair: another reader may have moved the line on meanwhile,
	// or fallen back (it stores off before the dead anchor, so off is set by now).
	a = t.cur.Load()
	switch {
	case a.dead:
		return t.off.Load().now(mono)
	case !ok && a.span == 0:
		return mono
	case !ok:
		// Interrupted between the reads: the pair is too wide to steer by. The line is
		// good for a while yet; past two periods unchecked it is not trusted any more.
		if d := tick - a.tick; int64(d) > 0 && d > 2*a.span {
			return t.fallBack(a, tick, mono)
		}
		return a.at(tick)
	}
	ns, next, off := advance(a, tick, mono)
	if off {
		return t.fallBack(a, tick, mono)
	}
	if next == nil {
		return ns
	}
	return t.install(a, next, ns, tick, mono)
}

// install makes next the line after a and returns the reading ns at tick. If another
// reader installed its line first, perhaps from an earlier pair, the reading is on that
// line, which the readers after this one use.
func (t *tscClock) install(a, next *tscAnchor, ns int64, tick uint64, mono int64) int64 {
	if t.cur.CompareAndSwap(a, next) {
		// The clocksource is re-read by the one reader whose line is installed, after
		// it is: a read between the pair and the swap would hold the new line back.
		if next.n%tscRecheck == 0 && t.left() {
			return t.fallBack(next, tick, mono)
		}
		return ns
	}
	if b := t.cur.Load(); !b.dead {
		return b.at(tick)
	}
	return t.off.Load().now(mono)
}

// fallBack turns the counter off for good and returns the reading at the kernel's mono.
func (t *tscClock) fallBack(a *tscAnchor, tick uint64, mono int64) int64 {
	f := &tscFallback{at: mono}
	if a.span != 0 {
		// The lead is capped: a counter that jumped a second ahead would otherwise make
		// the clock read a second ahead for the next thousand.
		f.lead = max(0, min(2*int64(tscMaxErr), a.at(tick)-mono))
	}
	// off before the dead anchor: a reader that finds the dead anchor finds off.
	t.off.CompareAndSwap(nil, f)
	t.cur.Store(deadAnchor)
	return t.off.Load().now(mono)
}

// tscPoint is a (counter, kernel's clock) pair.
type tscPoint struct {
	tick uint64
	mono int64
}

// advance returns the reading for the pair (tick, mono), taken where a's line could not
// give it, and the anchor that follows a (nil: keep a). off reports that the counter does
// not keep the kernel's time.
func advance(a *tscAnchor, tick uint64, mono int64) (ns int64, next *tscAnchor, off bool) {
	d := int64(tick - a.tick)
	switch {
	case a.dead:
		return mono, nil, true
	case a.span == 0 && d <= 0:
		return mono, nil, true // the counter went back
	case a.span == 0 && mono-a.mono < int64(tscCalibration):
		return mono, nil, false
	case a.span == 0:
		// A counter that jumped while the clock calibrated gives a rate no x86 counter
		// has (they run at 0.5-5 GHz); a smaller error shows at the end of the first
		// line, which is as short as the calibration for that reason.
		if rate := float64(mono-a.mono) / float64(d); rate < tscMinRate || rate > tscMaxRate {
			return mono, nil, true
		}
		return mono, a.follow(tick, mono, mono), false
	}
	// How far the kernel's clock is from where the counter says it should be, and how
	// far it may be.
	gap := math.Abs(float64(d) * a.rate)
	limit := float64(tscMaxErr)
	if gap > 2*float64(tscPeriod) {
		limit += gap * tscGapSlack
	}
	if expect := a.mono + int64(float64(d)*a.rate); math.Abs(float64(mono-expect)) > limit {
		return mono, nil, true
	}
	if d < 0 || uint64(d) <= a.span {
		return a.at(tick), nil, false // another reader moved the line on meanwhile
	}
	if gap > 2*float64(tscPeriod) {
		// Nobody read the clock for a while, so no reading is near enough to notice a
		// step: start the new line on the kernel's clock.
		return mono, a.follow(tick, mono, mono), false
	}
	ours := a.at(tick)
	return ours, a.follow(tick, ours, mono), false
}

// follow returns the anchor after a at (tick, ns), the kernel's clock there being mono:
// the rate measured from a's reference pair, and a slope that closes the gap to the
// kernel's clock over one period, as far as tscSlew allows. The first line after the
// calibration spans only tscCalibration, so that a rate measured wrong is found soon.
func (a *tscAnchor) follow(tick uint64, ns, mono int64) *tscAnchor {
	n := &tscAnchor{tick: tick, ns: ns, mono: mono, n: a.n + 1, ref: a.ref, next: a.next}
	if n.n%tscBaseline == 0 {
		n.ref, n.next = a.next, tscPoint{tick, mono}
	}
	n.rate = float64(mono-n.ref.mono) / float64(tick-n.ref.tick)
	steer := max(-tscSlew, min(tscSlew, float64(mono-ns)/float64(tscPeriod)))
	n.mult = uint64(n.rate * (1 + steer) * (1 << 32))
	period := tscPeriod
	if n.n == 1 {
		period = tscCalibration
	}
	n.span = uint64(float64(period) / n.rate)
	return n
}

// pairFrom reads the counter (ordered) and the kernel's clock together: the tightest of
// up to five ordered counter reads around a kernel read. ok is false when every attempt
// was interrupted (preempted, a host's steal).
func pairFrom(ordered func() uint64, kernel func() int64) (tick uint64, ns int64, ok bool) {
	width := uint64(math.MaxUint64)
	for range 5 {
		t1 := ordered()
		m := kernel()
		t2 := ordered()
		if w := t2 - t1; w < width {
			width, tick, ns = w, t1+w/2, m
		}
		if width <= tscPairWidth/4 {
			break
		}
	}
	return tick, ns, width <= tscPairWidth
}
