package pacer

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// readAgainstKernel reads c for d, each reading between two of the kernel's, and returns
// how far outside that bracket each reading fell (0 inside it), and how many readings
// were below the one before them.
func readAgainstKernel(c Clock, d time.Duration) (off []int64, backwards int) {
	prev := int64(math.MinInt64)
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

// TestClockKeepsTheKernelsTime reads a clock from four goroutines for three steering
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
		if a := c.tsc.cur.Load(); a.span == 0 || c.tsc.off.Load() != nil {
			t.Errorf("the counter clock never left calibration or fell back (span %d, off %v)", a.span, c.tsc.off.Load())
		}
	}
}

// TestClockFallsBackToTheKernel: once the counter is off, readings are the kernel's.
func TestClockFallsBackToTheKernel(t *testing.T) {
	c := NewClock()
	if c.tsc == nil {
		t.Skip("the counter is not used on this machine: the clock is the kernel's already")
	}
	c.tsc.off.Store(&tscFallback{})
	c.tsc.cur.Store(&tscAnchor{})
	off, backwards := readAgainstKernel(c, 20*time.Millisecond)
	if slices.Max(off) != 0 || backwards > 0 {
		t.Errorf("fallen-back readings: worst %d ns outside the kernel's, %d backwards", slices.Max(off), backwards)
	}
}

// TestClockSource: a report says what timed its operations.
func TestClockSource(t *testing.T) {
	c := NewClock()
	if !tscUsable() {
		if got := c.Source(); got != "kernel" {
			t.Fatalf("source %q where the counter is not used, want kernel", got)
		}
		return
	}
	if got := c.Source(); got != "kernel (tsc calibrating)" {
		t.Errorf("source of a new clock %q, want kernel (tsc calibrating)", got)
	}
	// Calibration ends with the first clean (counter, kernel) pair after tscCalibration,
	// which a loaded machine that deschedules the reader between the two reads may take a
	// while to give: the bound only turns "never" into a failure.
	for start := time.Now(); c.Source() != "tsc" && time.Since(start) < 10*time.Second; {
		c.Now()
	}
	if got := c.Source(); got != "tsc" {
		t.Fatalf("source of a clock read for 10 s %q, want tsc", got)
	}
	c.tsc.fallBack(c.tsc.cur.Load(), tscTicksOrdered(), c.tsc.kernel())
	if got := c.Source(); got != "kernel (tsc fell back)" {
		t.Errorf("after the fall-back the source is %q", got)
	}
}

// fakeMachine is a counter and a kernel's clock that a test moves on.
type fakeMachine struct {
	tick   uint64 // the counter now
	mono   int64  // the kernel's clock now
	wide   bool   // pairs are too wide to steer by
	usable bool   // the kernel's clocksource is the counter
	pairs  int    // pairs taken
	jitter int64  // each pair's kernel reading is this much off, alternately up and down
	// before runs inside the next pair, as another reader would between this reader's
	// pair and its load of the anchor.
	before func()
}

// clock returns a counter clock on m, created now.
func (m *fakeMachine) clock() *tscClock {
	t := &tscClock{
		kernel: func() int64 { return m.mono },
		pair: func() (uint64, int64, bool) {
			m.pairs++
			if f := m.before; f != nil {
				m.before = nil
				f()
			}
			j := m.jitter
			if m.pairs%2 == 0 {
				j = -j
			}
			return m.tick, m.mono + j, !m.wide
		},
		left: func() bool { return !m.usable },
	}
	p := tscPoint{m.tick, m.mono}
	t.cur.Store(&tscAnchor{tick: m.tick, ns: m.mono, mono: m.mono, ref: p, next: p})
	return t
}

// run moves the kernel's clock on by dt and the counter by the ticks that a counter of
// nsPerTick gives in kernel time dt·(1-kernelPPM/1e6): a kernel slewed by kernelPPM.
func (m *fakeMachine) run(dt time.Duration, nsPerTick, kernelPPM float64) {
	m.mono += int64(dt)
	m.tick += uint64(float64(dt) * (1 - kernelPPM/1e6) / nsPerTick)
}

// TestClockOnAFakeMachine drives a counter clock through what machines do: a steady
// counter, the kernel's readings jittering and slewed by NTP, a counter that resets or jumps (also
// while the clock calibrates), a clocksource the kernel leaves, pairs interrupted, a
// clock nobody reads for an hour. Every reading must be at least the one before it (also
// when the clock falls back from a line that was ahead), within reach of the kernel's
// clock, and the clock must fall back exactly when the counter stops keeping the kernel's
// time.
func TestClockOnAFakeMachine(t *testing.T) {
	const rate = 0.5 // ns per tick: a 2 GHz counter
	type step struct {
		dur   time.Duration // how long this step runs
		every time.Duration // how often the clock is read in it (default 1 ms)
		ppm   float64       // the kernel's slew during it
		event func(*fakeMachine)
	}
	jump := func(to func(uint64) uint64) step {
		return step{event: func(m *fakeMachine) { m.tick = to(m.tick) }}
	}
	for _, tc := range []struct {
		name    string
		steps   []step
		wantOff bool
		maxErr  time.Duration // the most a reading may be from the kernel's, after calibration
		endErr  time.Duration // the most at the end
	}{
		{name: "steady", steps: []step{{dur: 3 * time.Second}},
			maxErr: 100, endErr: 100},
		// Against the counter the kernel's readings wander ±150 ns from pair to pair on the
		// project's VMs: a rate measured over one period (±3 ppm) put readings up to
		// 3.2 µs off here, one measured over 1-2 s up to 0.9 µs, early on.
		{name: "pairs jitter ±150 ns", steps: []step{{event: func(m *fakeMachine) { m.jitter = 150 }}, {dur: 4 * time.Second}},
			maxErr: 1500, endErr: 400},
		{name: "the kernel slewed by 500 ppm", steps: []step{{dur: time.Second}, {dur: 3 * time.Second, ppm: 500}},
			maxErr: 60 * time.Microsecond, endErr: time.Microsecond},
		{name: "the kernel slewed by 2000 ppm", steps: []step{{dur: time.Second}, {dur: 3 * time.Second, ppm: 2000}},
			maxErr: 210 * time.Microsecond, endErr: time.Microsecond},
		{name: "the kernel slewed by 5000 ppm", steps: []step{{dur: time.Second}, {dur: 2 * time.Second, ppm: 5000}},
			wantOff: true, maxErr: 600 * time.Microsecond, endErr: 0},
		// Read every 10 µs: a fall-back that stepped to the kernel's clock, 250-500 µs
		// behind the line, would go back.
		{name: "the kernel slewed by -5000 ppm: the line was ahead when the clock fell back",
			steps:   []step{{dur: time.Second}, {dur: 2 * time.Second, every: 10 * time.Microsecond, ppm: -5000}},
			wantOff: true, maxErr: 600 * time.Microsecond, endErr: 0},
		{name: "the counter reset", steps: []step{{dur: time.Second}, jump(func(uint64) uint64 { return 1000 }),
			{dur: time.Second}}, wantOff: true, maxErr: 100, endErr: 0},
		{name: "the counter jumped ahead", steps: []step{{dur: time.Second}, jump(func(t uint64) uint64 { return t + 2e9 }),
			{dur: time.Second}}, wantOff: true, maxErr: 2 * tscMaxErr, endErr: 0},
		{name: "the counter reset while the clock calibrated", steps: []step{{dur: 5 * time.Millisecond},
			jump(func(uint64) uint64 { return 1000 }), {dur: time.Second}}, wantOff: true, maxErr: 100, endErr: 0},
		{name: "the counter jumped a minute ahead while the clock calibrated", steps: []step{{dur: 5 * time.Millisecond},
			jump(func(t uint64) uint64 { return t + 12e10 }), {dur: time.Second}}, wantOff: true, maxErr: 100, endErr: 0},
		// The rate is 17% off, within what a counter may run at: the first line, as short
		// as the calibration, ends ~2 ms off, and the clock falls back there.
		{name: "the counter jumped 2 ms ahead while the clock calibrated", steps: []step{{dur: 5 * time.Millisecond},
			jump(func(t uint64) uint64 { return t + 4e6 }), {dur: time.Second}}, wantOff: true, maxErr: 2 * time.Millisecond, endErr: 0},
		{name: "the kernel left the counter", steps: []step{{dur: time.Second}, {event: func(m *fakeMachine) { m.usable = false }},
			{dur: 2 * time.Second}}, wantOff: true, maxErr: 100, endErr: 0},
		// Past its span a line is read without a pair for up to another period.
		{name: "pairs interrupted for 90 ms", steps: []step{{dur: time.Second},
			{event: func(m *fakeMachine) { m.wide = true }}, {dur: 90 * time.Millisecond, ppm: 50},
			{event: func(m *fakeMachine) { m.wide = false }}, {dur: 3 * time.Second}},
			maxErr: 10 * time.Microsecond, endErr: 100},
		{name: "pairs interrupted for a second", steps: []step{{dur: time.Second},
			{event: func(m *fakeMachine) { m.wide = true }}, {dur: time.Second, ppm: -500},
			{event: func(m *fakeMachine) { m.wide = false }}, {dur: time.Second}},
			wantOff: true, maxErr: 150 * time.Microsecond, endErr: 0},
		// 7 ms off after the hour: the new line starts on the kernel's clock rather than
		// steering the gap away over three seconds. The rate, measured across the hour,
		// is 2 ppm off until the baseline has moved past it (200 ns at a period's end).
		{name: "unread for an hour, the rate 2 ppm off", steps: []step{{dur: time.Second},
			{event: func(m *fakeMachine) { m.run(time.Hour, rate, 2) }}, {dur: 3 * time.Second}},
			maxErr: time.Microsecond, endErr: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeMachine{tick: 1e9, mono: 5e6, usable: true}
			c := m.clock()
			prev, worst, last := int64(math.MinInt64), int64(0), int64(0)
			read := func() {
				ns := c.read(m.tick)
				if ns < prev {
					t.Fatalf("at kernel %d ns the reading %d is below the one before, %d", m.mono, ns, prev)
				}
				prev, last = ns, ns-m.mono
				if m.mono > 5e6+int64(tscCalibration) {
					worst = max(worst, int64(math.Abs(float64(last))))
				}
			}
			for _, s := range tc.steps {
				if s.event != nil {
					s.event(m)
					read()
				}
				every := cmp.Or(s.every, time.Millisecond)
				for range s.dur / every {
					m.run(every, rate, s.ppm)
					read()
				}
			}
			if off := c.off.Load() != nil; off != tc.wantOff {
				t.Fatalf("fell back: %v, want %v", off, tc.wantOff)
			}
			if worst > int64(tc.maxErr) || math.Abs(float64(last)) > float64(tc.endErr) {
				t.Errorf("readings up to %d ns from the kernel's (want ≤ %d), %d at the end (want ≤ %d)",
					worst, tc.maxErr, last, tc.endErr)
			}
			t.Logf("%d pairs; worst %d ns from the kernel's, %d at the end", m.pairs, worst, last)
		})
	}
}

// TestClockFallBackRace: a reader that took its pair while another reader fell back
// gives the fall-back's reading and leaves the clock fallen back, rather than following
// the dead anchor as if it were calibrating (a line with a near-zero rate that the fast
// path would have trusted for hours).
func TestClockFallBackRace(t *testing.T) {
	m := &fakeMachine{tick: 1e9, mono: int64(24 * time.Hour), usable: true}
	c := m.clock()
	for range 300 {
		m.run(time.Millisecond, 0.5, 0)
		c.read(m.tick)
	}
	m.run(tscPeriod, 0.5, 0) // the next reading goes to slow
	m.before = func() { c.fallBack(c.cur.Load(), m.tick, m.mono) }
	if got := c.read(m.tick); got != m.mono {
		t.Errorf("reading %d, want the kernel's %d", got, m.mono)
	}
	if c.off.Load() == nil || !c.cur.Load().dead {
		t.Fatalf("the clock is no longer fallen back: off %v, anchor %+v", c.off.Load(), c.cur.Load())
	}
	m.run(10*time.Second, 0.5, 0)
	if got := c.read(m.tick); got != m.mono {
		t.Errorf("ten seconds later the reading is %d, the kernel's %d", got, m.mono)
	}
}

// TestClockCASLoserReadsTheWinnersLine: of two readers past the span, the one whose
// line lost the swap reads the line that won, though that came from an earlier pair, and
// leaves it in place: its next reading, on that line, is then not below this one.
func TestClockCASLoserReadsTheWinnersLine(t *testing.T) {
	m := &fakeMachine{tick: 1e9, mono: 5e6, usable: true}
	c := m.clock()
	for range 250 {
		m.run(time.Millisecond, 0.5, -500) // the kernel slower than the rate: lines steer down
		c.read(m.tick)
	}
	a := c.cur.Load()
	// The winner paired 10 ms before the loser and swapped first; its pair read the
	// kernel 200 µs later than the loser's will (a wide pair), so its line steers up.
	m.run(time.Duration(a.rate*float64(a.span))+time.Millisecond, 0.5, -500)
	won := a.follow(m.tick, a.at(m.tick), m.mono+200_000)
	c.cur.Store(won)
	m.run(10*time.Millisecond, 0.5, -500)
	ns, next, off := advance(a, m.tick, m.mono)
	if off || next == nil {
		t.Fatalf("the loser built no line: off %v", off)
	}
	got := c.install(a, next, ns, m.tick, m.mono)
	if c.cur.Load() != won {
		t.Fatal("the loser's line replaced the winner's")
	}
	if want := won.at(m.tick); got != want || got == ns {
		t.Errorf("the loser read %d, the winner's line says %d (its own line %d)", got, want, ns)
	}
	if next := c.read(m.tick + 1); next < got {
		t.Errorf("the next reading %d is below the loser's %d", next, got)
	}
}

// TestClockSlowKeepsTheCurrentLine: a reader whose pair was taken while another reader
// moved the line on gives a reading on the new line and leaves that line in place.
func TestClockSlowKeepsTheCurrentLine(t *testing.T) {
	m := &fakeMachine{tick: 1e9, mono: 5e6, usable: true}
	c := m.clock()
	for range 250 { // calibrated, two periods on, steering a 30 µs gap
		m.run(time.Millisecond, 0.5, 0)
		c.read(m.tick)
	}
	m.mono += 30_000
	for range 150 {
		m.run(time.Millisecond, 0.5, 0)
		c.read(m.tick)
	}
	a := c.cur.Load()
	m.tick = a.tick + a.span + 10
	stalePair := m.tick
	var b *tscAnchor
	m.before = func() {
		// Another reader, later, moves the line on first.
		m.tick += 5000
		m.run(0, 0.5, 0)
		b = a.follow(m.tick, a.at(m.tick), m.mono)
		c.cur.Store(b)
		m.tick = stalePair
	}
	got := c.slow()
	if c.cur.Load() != b {
		t.Fatal("a reader with a stale pair replaced the line another reader had moved on to")
	}
	if got != b.ns {
		t.Errorf("reading %d, want the current line's at its anchor, %d", got, b.ns)
	}
}

// TestPairFrom: the tightest pair is kept, its counter reading is the midpoint, and a
// pair every attempt of which was interrupted is refused.
func TestPairFrom(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reads    []uint64 // ordered counter reads, two per attempt
		wantTick uint64
		wantOK   bool
	}{
		{"tight at once", []uint64{100, 200}, 150, true},
		{"the tightest of five", []uint64{0, 9000, 10000, 12000, 20000, 20400, 30000, 38000, 40000, 41000}, 20200, true},
		{"every attempt interrupted", []uint64{0, 9000, 10000, 19000, 20000, 29000, 30000, 39000, 40000, 49000}, 4500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			ordered := func() uint64 { i++; return tc.reads[i-1] }
			kernel := func() int64 { return int64(tc.reads[i-1]) * 2 }
			tick, ns, ok := pairFrom(ordered, kernel)
			if tick != tc.wantTick || ok != tc.wantOK {
				t.Errorf("pair (%d, %d, %v), want counter %d, ok %v", tick, ns, ok, tc.wantTick, tc.wantOK)
			}
		})
	}
}

// TestAnchorAt: on the steered slope within the span, the measured rate past it, and the
// anchor's own reading before it.
func TestAnchorAt(t *testing.T) {
	// Steered +500 ppm, a period of 2e8 ticks.
	a := &tscAnchor{tick: 1e9, ns: 7e8, mono: 7e8, rate: 0.5, mult: 2148557390 /* 0.5·1.0005·2³² */, span: 2e8}
	for _, tc := range []struct {
		name string
		tick uint64
		want int64
	}{
		{"at the anchor", 1e9, 7e8},
		{"half a period on, steered", 1e9 + 1e8, 7e8 + 50_025_000},
		{"a period and a second on, steered then measured", 1e9 + 2e8 + 2e9, 7e8 + 100_050_000 + 1e9},
		{"before the anchor", 1e9 - 1e6, 7e8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.at(tc.tick); math.Abs(float64(got-tc.want)) > 1 {
				t.Errorf("at(%d) = %d, want %d", tc.tick, got, tc.want)
			}
		})
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
