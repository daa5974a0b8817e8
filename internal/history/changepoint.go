package history

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// ChangePointOptions tune EDivisive. The zero value takes the defaults.
type ChangePointOptions struct {
	// Alpha is the significance level of each permutation test (default 0.01): a change
	// point is kept when at most this fraction of shuffled series split as well.
	Alpha float64
	// Permutations is how many shuffles each test draws (default 199).
	Permutations int
	// MinSize is the fewest points a segment may have (default 3, at least 2): a change
	// point is found once this many runs follow it.
	MinSize int
	// Seed makes the permutations, and so the answer, reproducible (default 1).
	Seed uint64
}

// Defaults of ChangePointOptions.
const (
	DefaultAlpha        = 0.01
	DefaultPermutations = 199
	DefaultMinSize      = 3
)

func (o ChangePointOptions) withDefaults() (ChangePointOptions, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MinSize == 0 {
		o.MinSize = DefaultMinSize
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, fmt.Errorf("alpha %v: allowed: between 0 and 1 exclusive", o.Alpha)
	case o.Permutations < 1:
		return o, fmt.Errorf("permutations %d: allowed: 1 or more", o.Permutations)
	case o.MinSize < 2:
		return o, fmt.Errorf("min size %d: allowed: 2 or more", o.MinSize)
	}
	return o, nil
}

// ChangePoint is a point of a series where its distribution changed.
type ChangePoint struct {
	// Index is the first point of the new segment.
	Index int
	// Q is the divergence statistic of the split; P its permutation p-value.
	Q float64
	P float64
	// Before and After are the means of the segments either side (between the
	// neighbouring change points).
	Before float64
	After  float64
}

// EDivisive finds the change points of xs with the E-divisive means method (Matteson and
// James, "A Nonparametric Approach for Multiple Change Point Analysis of Multivariate
// Data", JASA 2014), as MongoDB's performance CI (Daly et al., ICPE 2020) and Apache
// Otava (Hunter) use it: split the segment where the energy divergence between the points
// before and after is largest, keep the split when a permutation test finds it
// significant, and repeat on the segments until a split is not. The divergence uses
// |x−y| (exponent 1) and compares each split's left part with the rest of its segment.
// The answer is in index order.
func EDivisive(xs []float64, opt ChangePointOptions) ([]ChangePoint, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("point %d is %v: a series must be finite", i, x)
		}
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6e6462656e6368)) // "ndbench"
	bounds := []int{0, len(xs)}                              // segment boundaries, sorted
	var found []ChangePoint
	work := make([]float64, len(xs))
	var scratch []float64
	// A test stops as soon as its p-value must exceed alpha: most tests fail fast.
	stopAt := int(math.Floor(opt.Alpha*float64(opt.Permutations+1) + 1e-9))
	for {
		tau, q := bestSplit(xs, bounds, opt.MinSize, &scratch)
		if tau < 0 {
			break
		}
		// Permutation test: shuffle within each segment (the hypothesis is that each
		// segment has one distribution) and see how often a split as strong turns up.
		copy(work, xs)
		atLeast := 0
		for range opt.Permutations {
			for s := 0; s+1 < len(bounds); s++ {
				seg := work[bounds[s]:bounds[s+1]]
				rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
			}
			if _, pq := bestSplit(work, bounds, opt.MinSize, &scratch); pq >= q {
				atLeast++
				if atLeast >= stopAt {
					break
				}
			}
		}
		p := float64(atLeast+1) / float64(opt.Permutations+1)
		if p > opt.Alpha {
			break
		}
		found = append(found, ChangePoint{Index: tau, Q: q, P: p})
		bounds = append(bounds, tau)
		sort.Ints(bounds)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].Index < found[j].Index })
	for i := range found {
		lo, hi := 0, len(xs)
		if i > 0 {
			lo = found[i-1].Index
		}
		if i+1 < len(found) {
			hi = found[i+1].Index
		}
		found[i].Before = mean(xs[lo:found[i].Index])
		found[i].After = mean(xs[found[i].Index:hi])
	}
	return found, nil
}

// bestSplit returns the split with the largest divergence over the segments of xs that
// bounds delimits, and that divergence; tau is -1 when no segment can be split into two
// of at least minSize points. scratch is reused between calls.
func bestSplit(xs []float64, bounds []int, minSize int, scratch *[]float64) (tau int, q float64) {
	tau, q = -1, math.Inf(-1)
	for s := 0; s+1 < len(bounds); s++ {
		lo, hi := bounds[s], bounds[s+1]
		if hi-lo < 2*minSize {
			continue
		}
		if t, sq := splitSegment(xs[lo:hi], minSize, scratch); sq > q {
			tau, q = lo+t, sq
		}
	}
	if tau < 0 {
		return -1, 0
	}
	return tau, q
}

// splitSegment returns the split t of z with the largest scaled energy divergence, as
// Matteson and James define it: for every t and
// every end k of the right part (each part at least minSize long), with X = z[:t] and
// Y = z[t:k],
//
//	q(t, k) = m·n/(m+n) · ( 2/(m·n) Σ|xi−yj| − 2/(m(m−1)) Σ_{i<l}|xi−xl| − 2/(n(n−1)) Σ_{j<l}|yj−yl| )
//
// and it returns the t of the largest. Letting the right part end before the segment's
// end is what finds a bump in the middle (a regression later fixed), which a split
// against the whole rest would dilute. Prefix sums of the distances make it O(len(z)²).
func splitSegment(z []float64, minSize int, scratch *[]float64) (int, float64) {
	n := len(z)
	if cap(*scratch) < n*n {
		*scratch = make([]float64, n*n)
	}
	// pre[k*n+j] = Σ_{i<j} |z_i − z_k|, for j ≤ k.
	pre := (*scratch)[:n*n]
	for k := range n {
		row := pre[k*n : k*n+n]
		row[0] = 0
		for j := 1; j <= k; j++ {
			row[j] = row[j-1] + math.Abs(z[j-1]-z[k])
		}
	}
	best, bestQ := -1, math.Inf(-1)
	var left float64 // Σ_{i<l<t} |z_i − z_l|
	for t := 1; t < n; t++ {
		left += pre[(t-1)*n+t-1]
		if t < minSize || n-t < minSize {
			continue
		}
		m := float64(t)
		var cross, right float64
		for k := t; k < n; k++ {
			// Point k joins the right part.
			cross += pre[k*n+t]
			right += pre[k*n+k] - pre[k*n+t]
			nk := float64(k - t + 1)
			if k-t+1 < minSize {
				continue
			}
			e := 2*cross/(m*nk) - 2*left/(m*(m-1)) - 2*right/(nk*(nk-1))
			if q := m * nk / (m + nk) * e; q > bestQ {
				best, bestQ = t, q
			}
		}
	}
	return best, bestQ
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Regression is the verdict of Check on a trend.
type Regression struct {
	// ChangePoints are all the series' change points, in time order.
	ChangePoints []ChangePoint
	// Regressed is true when the newest point lies in a regression: Cause made the
	// figure worse, and the newest segment (after the last change point) is still worse
	// than the segment before Cause.
	Regressed bool
	// Cause indexes ChangePoints: the latest change point that made the figure worse
	// (-1 when none did).
	Cause int
	// Newest is the mean of the newest segment; Baseline the mean of the segment before
	// Cause.
	Newest   float64
	Baseline float64
}

// ErrTooShort is returned by Check for a series too short to split.
var ErrTooShort = errors.New("too few runs to find a change point")

// Check finds the change points of a figure's trend and says whether the newest run
// lies in a regression: after a change point that made the figure worse (higher when
// worseUp, lower otherwise) and not undone since, so that a later smaller change (a
// partial fix, or noise the test took for a change) does not hide it. A change point
// needs opt.MinSize runs on either side, so a regression shows from the MinSize-th run
// that has it.
func Check(values []float64, worseUp bool, opt ChangePointOptions) (Regression, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return Regression{Cause: -1}, err
	}
	if len(values) < 2*o.MinSize {
		return Regression{Cause: -1}, fmt.Errorf("%w: %d runs; need at least %d (twice the minimum segment of %d)", ErrTooShort, len(values), 2*o.MinSize, o.MinSize)
	}
	cps, err := EDivisive(values, o)
	if err != nil {
		return Regression{Cause: -1}, err
	}
	worse := func(a, b float64) bool { // a worse than b
		if worseUp {
			return a > b
		}
		return a < b
	}
	r := Regression{ChangePoints: cps, Cause: -1, Newest: mean(values)}
	if len(cps) == 0 {
		return r, nil
	}
	r.Newest = cps[len(cps)-1].After
	for i := len(cps) - 1; i >= 0; i-- {
		if worse(cps[i].After, cps[i].Before) {
			r.Cause = i
			r.Baseline = cps[i].Before
			r.Regressed = worse(r.Newest, r.Baseline)
			break
		}
	}
	return r, nil
}
