package compare

import (
	"errors"
	"math"
	"slices"
)

// MannWhitney is the outcome of a two-sided Mann–Whitney U test of two samples.
type MannWhitney struct {
	// U is the statistic of the first sample: the number of pairs (x, y) with x > y, ties
	// counting one half. It runs from 0 to len(x)·len(y); len(x)·len(y)/2 means no shift.
	U float64 `json:"u"`
	// Z is the standard normal deviate of U (continuity- and tie-corrected), ≥ 0.
	Z float64 `json:"z"`
	// P is the two-sided p-value: the probability, if both samples came from one
	// distribution, of a U at least this far from its mean.
	P float64 `json:"p"`
}

// errEmptySample is returned when a sample has no values: nothing can be ranked.
var errEmptySample = errors.New("mann-whitney: a sample is empty")

// MannWhitneyU tests whether x and y come from the same distribution against the
// alternative that one tends to be larger (two-sided). It uses the normal approximation
// with the tie correction and a continuity correction of 0.5, as scipy.stats.mannwhitneyu
// does with method="asymptotic": per-second latency percentiles tie often (HDR values
// have 3 significant digits), and runs of 10 or more seconds are in the range where the
// approximation is good (TestMannWhitneyApproximatesExact measures it).
func MannWhitneyU(x, y []float64) (MannWhitney, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return MannWhitney{}, errEmptySample
	}
	type obs struct {
		v     float64
		first bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	n := float64(n1 + n2)
	var r1, ties float64 // rank sum of x; Σ(t³ − t) over groups of t tied values
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1].v == all[i].v {
			j++
		}
		rank := float64(i+j)/2 + 1 // the mean of ranks i+1 .. j+1
		for k := i; k <= j; k++ {
			if all[k].first {
				r1 += rank
			}
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	f1, f2 := float64(n1), float64(n2)
	u := r1 - f1*(f1+1)/2
	mean := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		// Every value is the same: no evidence of any difference.
		return MannWhitney{U: u, Z: 0, P: 1}, nil
	}
	z := max((math.Abs(u-mean)-0.5)/math.Sqrt(variance), 0)
	return MannWhitney{U: u, Z: z, P: min(math.Erfc(z/math.Sqrt2), 1)}, nil
}
