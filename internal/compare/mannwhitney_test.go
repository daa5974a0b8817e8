package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMannWhitneyKnownValues checks U, z and p against values worked out by hand (ranks,
// tie term, continuity correction) and, for the first, against scipy's documentation:
// scipy.stats.mannwhitneyu([19,22,16,29,24], [20,11,17,12], method="asymptotic") gives
// statistic 17.0, pvalue 0.11134688653314041.
func TestMannWhitneyKnownValues(t *testing.T) {
	tests := []struct {
		name string
		x, y []float64
		u, z float64
		p    float64
	}{
		// mean 10, variance 5·4·10/12 = 16.667, z = (7 − 0.5)/4.0825.
		{"scipy docs, no ties", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 1.5921683328090657, 0.11134688653314041},
		// Ranks: 1→1, 2s→3, 3s→6, 4s→9, 5s→11.5, 6→13; R1 = 28, U = 28 − 21 = 7; mean 21;
		// tie term 3·(27−3) + (8−2) = 78; variance 42/12·(14 − 78/156) = 47.25;
		// z = (14 − 0.5)/6.8739 = 1.96396.
		{"ties", []float64{1, 2, 2, 3, 3, 4}, []float64{2, 3, 4, 4, 5, 5, 6}, 7, 1.9639610121239315, 0.04953461343562674},
		// Every x below every y: U = 0, mean 12.5, variance 25·11/12; z = 12/4.7871.
		{"complete separation 5/5", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0, 2.5067, 0.012185},
		// Swapping the samples gives U' = n1·n2 − U and the same p.
		{"swapped", []float64{20, 11, 17, 12}, []float64{19, 22, 16, 29, 24}, 3, 1.5921683328090657, 0.11134688653314041},
		{"one value each", []float64{1}, []float64{2}, 0, 0, 1},
		{"all equal", []float64{5, 5, 5}, []float64{5, 5}, 3, 0, 1},
	}
	for _, tt := range tests {
		got, err := MannWhitneyU(tt.x, tt.y)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got.U != tt.u || math.Abs(got.Z-tt.z) > 1e-4 || math.Abs(got.P-tt.p) > 1e-5 {
			t.Errorf("%s: got U=%v z=%.6f p=%.8f, want U=%v z=%.6f p=%.8f", tt.name, got.U, got.Z, got.P, tt.u, tt.z, tt.p)
		}
	}
	if _, err := MannWhitneyU(nil, []float64{1}); err == nil {
		t.Error("an empty sample gave no error")
	}
}

// TestMannWhitneyIdenticalAndShifted: the same sample twice is never significant; the
// same sample shifted by much more than its spread always is, from 5 values each on.
func TestMannWhitneyIdenticalAndShifted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{5, 10, 30, 60} {
		x := make([]float64, n)
		for i := range x {
			x[i] = 1000 + rng.NormFloat64()*50
		}
		same, _ := MannWhitneyU(x, x)
		if same.P < 0.9 {
			t.Errorf("n=%d: identical samples: p=%.4f, want ~1", n, same.P)
		}
		y := make([]float64, n)
		for i := range y {
			y[i] = x[i] * 1.2 // a 20% regression, far beyond the 5% spread
		}
		shifted, _ := MannWhitneyU(x, y)
		if shifted.P >= 0.05 {
			t.Errorf("n=%d: samples shifted by 20%%: p=%.4f, want < 0.05", n, shifted.P)
		}
	}
}

// TestMannWhitneyFalsePositiveRate: over many pairs of samples from one distribution,
// about alpha of them come out significant at alpha, not more (the test is not
// anti-conservative at the sizes compare sees: 10 to 60 intervals).
func TestMannWhitneyFalsePositiveRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const trials = 2000
	for _, n := range []int{10, 30} {
		hits := 0
		for range trials {
			x, y := make([]float64, n), make([]float64, n)
			for i := range x {
				// Skewed, like latency, and rounded to 3 significant digits like HDR
				// values, so ties occur.
				x[i] = math.Round(math.Exp(rng.NormFloat64()) * 100)
				y[i] = math.Round(math.Exp(rng.NormFloat64()) * 100)
			}
			if r, _ := MannWhitneyU(x, y); r.P < 0.05 {
				hits++
			}
		}
		if rate := float64(hits) / trials; rate > 0.065 || rate < 0.03 {
			t.Errorf("n=%d: %.3f of same-distribution pairs significant at 0.05", n, rate)
		}
	}
}

// TestMannWhitneyApproximatesExact compares the normal approximation with the exact
// permutation p-value (every way to split the pooled values into groups of n1 and n2) for
// small samples with ties: the approximation the tool uses must be close where it is used.
func TestMannWhitneyApproximatesExact(t *testing.T) {
	x := []float64{3, 5, 5, 8, 9, 12, 13, 15}
	y := []float64{7, 10, 11, 14, 16, 17, 17, 20}
	got, err := MannWhitneyU(x, y)
	if err != nil {
		t.Fatal(err)
	}
	exact := exactP(x, y)
	if math.Abs(got.P-exact) > 0.01 {
		t.Errorf("asymptotic p=%.4f, exact p=%.4f", got.P, exact)
	}
}

// exactP is the two-sided permutation p-value of U: the share of splits of the pooled
// values into groups of len(x) and len(y) whose U is at least as far from its mean as the
// observed one.
func exactP(x, y []float64) float64 {
	pool := append(append([]float64{}, x...), y...)
	obs, _ := MannWhitneyU(x, y)
	mean := float64(len(x)*len(y)) / 2
	far, total := 0, 0
	in := make([]bool, len(pool))
	var pick func(start, left int)
	pick = func(start, left int) {
		if left == 0 {
			var a, b []float64
			for i, v := range pool {
				if in[i] {
					a = append(a, v)
				} else {
					b = append(b, v)
				}
			}
			r, _ := MannWhitneyU(a, b)
			total++
			if math.Abs(r.U-mean) >= math.Abs(obs.U-mean)-1e-9 {
				far++
			}
			return
		}
		for i := start; i <= len(pool)-left; i++ {
			in[i] = true
			pick(i+1, left-1)
			in[i] = false
		}
	}
	pick(0, len(x))
	return float64(far) / float64(total)
}
