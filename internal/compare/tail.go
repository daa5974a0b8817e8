package compare

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/ndbench/ndbench/internal/stats"
)

// Tails (p99.5 and above) are judged from the runs' merged distributions, not from
// per-second percentiles: a second of a few hundred operations has no p99.9 of its own
// (it is that second's maximum), so a rank test over per-second p99.9 values compares
// maxima and can call a +191% tail "not significant". The whole-run figure is the
// merged histogram's; its uncertainty comes from a bootstrap over the intervals: the
// intervals of each run are resampled with replacement, merged, and the quantile taken.
const (
	// tailFrom is the lowest quantile judged as a tail. p99 stays with the rank test over
	// seconds: a second of 100 operations still has one operation above it.
	tailFrom = 0.995
	// minTail is the fewest operations beyond a quantile each run needs for it to be
	// judged at all: fewer, and its value is a handful of samples.
	minTail = 10
	// bootstrapWork bounds a bootstrap's cost (resamples × intervals); resamples stay
	// between minResamples and maxResamples.
	bootstrapWork = 2_000_000
	minResamples  = 200
	maxResamples  = 1000
)

// quantileOf is the quantile a latency metric names (0 for max and mean).
func quantileOf(name string) float64 {
	return map[string]float64{"p50": 0.5, "p95": 0.95, "p99": 0.99, "p99.5": 0.995, "p99.9": 0.999}[name]
}

// cdf is one interval's response-time distribution as its report keeps it: the known
// quantiles, joined linearly (an approximation of the interval's histogram that is exact
// at the points the report keeps).
type cdf struct {
	n      float64
	vs, ps []float64 // ascending values and their cumulative shares
}

func cdfOf(s stats.OpSummary, latency string) (cdf, bool) {
	l := s.ResponseTime
	if latency == Service {
		l = s.ServiceTime
	}
	if s.Count == 0 {
		return cdf{}, false
	}
	c := cdf{n: float64(s.Count), vs: []float64{0}, ps: []float64{0}}
	for _, pt := range []struct{ v, p float64 }{{l.P50, 0.5}, {l.P95, 0.95}, {l.P99, 0.99}, {l.P995, 0.995}, {l.P999, 0.999}, {l.Max, 1}} {
		// Percentiles of a small interval repeat; keep the distribution monotone.
		c.vs = append(c.vs, max(pt.v, c.vs[len(c.vs)-1]))
		c.ps = append(c.ps, pt.p)
	}
	return c, true
}

// at is the share of the interval's operations at or below v.
func (c cdf) at(v float64) float64 {
	i := sort.SearchFloat64s(c.vs, v)
	switch {
	case i == 0:
		return 0
	case i == len(c.vs):
		return 1
	case c.vs[i] == v:
		// The highest share at v (values repeat when percentiles coincide).
		for i+1 < len(c.vs) && c.vs[i+1] == v {
			i++
		}
		return c.ps[i]
	}
	lo, hi := c.vs[i-1], c.vs[i]
	return c.ps[i-1] + (c.ps[i]-c.ps[i-1])*(v-lo)/(hi-lo)
}

// mergedQuantile is the q quantile of the merge of the intervals idx of cs.
func mergedQuantile(cs []cdf, idx []int, q float64) float64 {
	var n, lo, hi float64
	for _, i := range idx {
		n += cs[i].n
		hi = max(hi, cs[i].vs[len(cs[i].vs)-1])
	}
	want := q * n
	for range 50 {
		mid := (lo + hi) / 2
		var below float64
		for _, i := range idx {
			below += cs[i].n * cs[i].at(mid)
		}
		if below >= want {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo <= 1e-3*hi {
			break
		}
	}
	return hi
}

// judgeTail fills m's test of a tail quantile q from the runs' intervals: "sample too
// small" when a run has fewer than minTail operations beyond q, else a bootstrap over
// the intervals of the difference of the merged quantiles.
func judgeTail(m *Metric, q float64, b, c stats.OpSummary, bi, ci []stats.OpSummary, opt Options) {
	bt, ct := float64(b.Count)*(1-q), float64(c.Count)*(1-q)
	if bt < minTail || ct < minTail {
		m.Note = fmt.Sprintf("sample too small to judge: %.0f and %.0f operations beyond %s (at least %d each needed); not tested", bt, ct, m.Name, minTail)
		return
	}
	var bc, cc []cdf
	for _, s := range bi {
		if d, ok := cdfOf(s, opt.Latency); ok {
			bc = append(bc, d)
		}
	}
	for _, s := range ci {
		if d, ok := cdfOf(s, opt.Latency); ok {
			cc = append(cc, d)
		}
	}
	m.Samples = [2]int{len(bc), len(cc)}
	if len(bc) < opt.MinIntervals || len(cc) < opt.MinIntervals {
		m.Note = fmt.Sprintf("sample too small to judge: %d and %d intervals with answers, fewer than %d; not tested", len(bc), len(cc), opt.MinIntervals)
		return
	}
	resamples := min(maxResamples, max(minResamples, bootstrapWork/(len(bc)+len(cc))))
	// A fixed seed: the same two reports always give the same verdict.
	rng := rand.New(rand.NewPCG(uint64(len(bc)), uint64(len(cc))))
	pick := func(n int, idx []int) []int {
		idx = idx[:0]
		for range n {
			idx = append(idx, rng.IntN(n))
		}
		return idx
	}
	var below, above int
	var bidx, cidx []int
	diffs := make([]float64, 0, resamples)
	for range resamples {
		bidx, cidx = pick(len(bc), bidx), pick(len(cc), cidx)
		d := mergedQuantile(cc, cidx, q) - mergedQuantile(bc, bidx, q)
		diffs = append(diffs, d)
		if d <= 0 {
			below++
		}
		if d >= 0 {
			above++
		}
	}
	p := min(1, 2*float64(min(below, above)+1)/float64(resamples+1))
	all := func(n int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	if mergedQuantile(cc, all(len(cc)), q) == mergedQuantile(bc, all(len(bc)), q) {
		p = 1 // the merged figures are the same: nothing to tell them apart
	}
	slices.Sort(diffs)
	lo, hi := diffs[int(float64(resamples)*opt.Alpha/2)], diffs[int(float64(resamples)*(1-opt.Alpha/2))-1]
	m.Tested, m.P, m.Significant = true, &p, p < opt.Alpha
	m.Note = fmt.Sprintf("tail: bootstrap over intervals (%d resamples) of the merged %s; difference %.0f..%.0f µs at %.0f%%", resamples, m.Name, lo, hi, 100*(1-opt.Alpha))
}
