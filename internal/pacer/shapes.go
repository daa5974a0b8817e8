package pacer

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// The shapes below describe a rate r(t) over the time since the schedule's anchor; the
// k-th operation is due when the expected count N(t) = ∫₀ᵗ r reaches k, so a shape's
// operations arrive exactly as its rate says, with no rounding drift however long it runs.

// Ramp goes linearly from From to To ops/s over Over, then holds To.
type Ramp struct {
	From, To float64
	Over     time.Duration
}

// NewRamp returns a ramp, or an error naming what is wrong: rates must be from 0 to
// MaxRate, the final one above 0, and Over positive.
func NewRamp(from, to float64, over time.Duration) (Ramp, error) {
	switch {
	case !(from >= 0 && from <= MaxRate) || !(to >= 0 && to <= MaxRate):
		return Ramp{}, fmt.Errorf("ramp %v -> %v ops/s: rates must be from 0 to %.0f", from, to, float64(MaxRate))
	case to == 0:
		return Ramp{}, fmt.Errorf("ramp %v -> %v ops/s: the final rate must be above 0 (a rate of 0 is the closed loop)", from, to)
	case over <= 0:
		return Ramp{}, fmt.Errorf("ramp over %v: the duration must be positive", over)
	}
	return Ramp{From: from, To: to, Over: over}, nil
}

// count returns N(t) for t in seconds.
func (r Ramp) count(t float64) float64 {
	d := r.Over.Seconds()
	if t <= d {
		return r.From*t + (r.To-r.From)*t*t/(2*d)
	}
	return (r.From+r.To)*d/2 + r.To*(t-d)
}

// Offset returns the time at which N reaches k.
func (r Ramp) Offset(k int64) time.Duration {
	if k <= 0 {
		return 0
	}
	d := r.Over.Seconds()
	n := float64(k)
	if end := (r.From + r.To) * d / 2; n > end {
		return seconds(d + (n-end)/r.To)
	}
	a := (r.To - r.From) / (2 * d)
	if a == 0 {
		return seconds(n / r.From)
	}
	// a t² + From t - n = 0, the root in [0, d]; the form below stays exact when From = 0
	// and avoids cancellation when a < 0. Rounding may take the discriminant of a
	// ramp-down a hair below 0 near its end, where the root is double.
	return seconds(2 * n / (r.From + math.Sqrt(max(r.From*r.From+4*a*n, 0))))
}

// Due returns floor(N(d)) + 1 for d ≥ 0.
func (r Ramp) Due(d time.Duration) int64 { return dueOf(r.count, r.Offset, d) }

// Rate returns r(d).
func (r Ramp) Rate(d time.Duration) float64 {
	if d >= r.Over {
		return r.To
	}
	return r.From + (r.To-r.From)*d.Seconds()/r.Over.Seconds()
}

// Steps holds each Rates[i] for Every, then the last rate for ever (a staircase, as
// auto-tune and capacity tests use).
type Steps struct {
	Rates []float64
	Every time.Duration
	// cum[i] is N at the start of step i.
	cum []float64
}

// NewSteps returns a staircase, or an error naming what is wrong: at least one rate, each
// above 0 and at most MaxRate, and a positive step duration.
func NewSteps(every time.Duration, rates ...float64) (*Steps, error) {
	if len(rates) == 0 {
		return nil, fmt.Errorf("steps: at least one rate is needed")
	}
	if every <= 0 {
		return nil, fmt.Errorf("steps every %v: the duration must be positive", every)
	}
	s := &Steps{Rates: append([]float64(nil), rates...), Every: every, cum: make([]float64, len(rates))}
	for i, r := range rates {
		if !(r > 0 && r <= MaxRate) {
			return nil, fmt.Errorf("steps: rate %d is %v; each rate must be above 0 and at most %.0f", i+1, r, float64(MaxRate))
		}
		if i > 0 {
			s.cum[i] = s.cum[i-1] + rates[i-1]*every.Seconds()
		}
	}
	return s, nil
}

func (s *Steps) step(t float64) int {
	return min(int(t/s.Every.Seconds()), len(s.Rates)-1)
}

func (s *Steps) count(t float64) float64 {
	i := s.step(t)
	return s.cum[i] + s.Rates[i]*(t-float64(i)*s.Every.Seconds())
}

// Offset returns the time at which N reaches k.
func (s *Steps) Offset(k int64) time.Duration {
	n := float64(k)
	// The last step whose start count is ≤ n.
	i := sort.Search(len(s.cum), func(i int) bool { return s.cum[i] > n }) - 1
	return seconds(float64(i)*s.Every.Seconds() + (n-s.cum[i])/s.Rates[i])
}

// Due returns floor(N(d)) + 1 for d ≥ 0.
func (s *Steps) Due(d time.Duration) int64 { return dueOf(s.count, s.Offset, d) }

// Rate returns the rate of the step at d.
func (s *Steps) Rate(d time.Duration) float64 { return s.Rates[s.step(max(d.Seconds(), 0))] }

// Sine oscillates around Mean by Amplitude with the given Period, starting at Mean and
// rising: r(t) = Mean + Amplitude·sin(2πt/Period) (a diurnal load, compressed).
type Sine struct {
	Mean, Amplitude float64
	Period          time.Duration
}

// NewSine returns a sine shape, or an error naming what is wrong: 0 ≤ Amplitude < Mean,
// so the rate stays above 0, Mean + Amplitude at most MaxRate, and a positive period.
func NewSine(mean, amplitude float64, period time.Duration) (Sine, error) {
	switch {
	case !(mean > 0) || mean+amplitude > MaxRate:
		return Sine{}, fmt.Errorf("sine around %v ops/s: the mean must be above 0, and the mean plus the amplitude at most %.0f", mean, float64(MaxRate))
	case !(amplitude >= 0) || amplitude >= mean:
		return Sine{}, fmt.Errorf("sine amplitude %v ops/s: must be at least 0 and below the mean %v, so the rate stays above 0", amplitude, mean)
	case period <= 0:
		return Sine{}, fmt.Errorf("sine period %v: must be positive", period)
	}
	return Sine{Mean: mean, Amplitude: amplitude, Period: period}, nil
}

func (s Sine) count(t float64) float64 {
	w := 2 * math.Pi / s.Period.Seconds()
	return s.Mean*t + s.Amplitude/w*(1-math.Cos(w*t))
}

// Offset returns the time at which N reaches k. N is strictly increasing (the rate stays
// above Mean - Amplitude > 0), so Newton's method from the mean-rate guess converges in a
// few steps; it is bracketed to stay safe.
func (s Sine) Offset(k int64) time.Duration {
	n := float64(k)
	lo := n / (s.Mean + s.Amplitude)
	hi := n / (s.Mean - s.Amplitude)
	t := n / s.Mean
	w := 2 * math.Pi / s.Period.Seconds()
	for range 50 {
		f := s.count(t) - n
		if math.Abs(f) < 1e-9 {
			break
		}
		if f > 0 {
			hi = t
		} else {
			lo = t
		}
		next := t - f/(s.Mean+s.Amplitude*math.Sin(w*t))
		if next <= lo || next >= hi {
			next = (lo + hi) / 2
		}
		t = next
	}
	return seconds(t)
}

// Due returns floor(N(d)) + 1 for d ≥ 0.
func (s Sine) Due(d time.Duration) int64 { return dueOf(s.count, s.Offset, d) }

// Rate returns r(d).
func (s Sine) Rate(d time.Duration) float64 {
	return s.Mean + s.Amplitude*math.Sin(2*math.Pi*d.Seconds()/s.Period.Seconds())
}

// seconds converts a time in seconds to a Duration, rounded up to the nanosecond so that
// an operation is never due before its count is reached.
func seconds(t float64) time.Duration { return nanos(math.Ceil(t * 1e9)) }

// nanos converts ns to a Duration within [0, maxOffset]. Converting a float beyond the
// range of int64 (the offset of a tiny rate's operations) gives an unspecified value (on
// amd64 the most negative Duration, an operation due long before its anchor), and NaN
// comes only from such overflows: it means "beyond reach" too.
func nanos(ns float64) time.Duration {
	switch {
	case ns < 0:
		return 0
	case ns < maxOffset:
		return time.Duration(ns)
	}
	return maxOffset
}

// dueOf returns how many operations are due by d given N and its inverse Offset: the
// number of k with Offset(k) ≤ d, at most maxSlots. floor(N(d)) + 1 is the first guess,
// and Offset settles it exactly despite floating point. The guess is off by one or two at
// ordinary rates; at rates where many operations share one nanosecond, or N overflows, it
// may be off by any amount, so the correction gallops and bisects instead of stepping:
// O(log maxSlots) calls of Offset at worst, whatever the rate and however long the shape
// has run (a loop of single steps here once wedged a node given workload.readRate=1e308).
func dueOf(count func(float64) float64, offset func(int64) time.Duration, d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	var n int64
	switch est := math.Floor(count(d.Seconds())); {
	case est >= maxSlots-1:
		n = maxSlots
	case est >= 0:
		n = int64(est) + 1
	default: // NaN or negative: no usable guess
		n = 0
	}
	above := func(k int64) bool { return k >= maxSlots || offset(k) > d }
	if n > 0 && above(n-1) {
		// Too many: gallop down to a k that is due (or -1), then bisect.
		hi, step := n-1, int64(1)
		lo := hi - step
		for lo >= 0 && above(lo) {
			hi, step = lo, step*2
			lo = hi - step
		}
		return firstAbove(max(lo, -1), hi, above)
	}
	if above(n) {
		return n
	}
	// Too few: gallop up to a k that is not due yet (or maxSlots), then bisect.
	lo, step := n, int64(1)
	hi := min(lo+step, maxSlots)
	for !above(hi) {
		lo, step = hi, step*2
		hi = min(lo+step, maxSlots)
	}
	return firstAbove(lo, hi, above)
}

// firstAbove returns the least k in (lo, hi] with above(k), given that above is monotone,
// above(hi) holds and above(lo) does not (or lo is -1).
func firstAbove(lo, hi int64, above func(int64) bool) int64 {
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if above(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
