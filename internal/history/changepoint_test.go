package history

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteQ is the divergence of z[:t] and z[t:k], straight from Matteson and James's
// definition, to check the prefix-sum computation against.
func bruteQ(z []float64, t, k int) float64 {
	x, y := z[:t], z[t:k]
	m, n := float64(len(x)), float64(len(y))
	var cross, wx, wy float64
	for _, a := range x {
		for _, b := range y {
			cross += math.Abs(a - b)
		}
	}
	for i := range x {
		for k := i + 1; k < len(x); k++ {
			wx += math.Abs(x[i] - x[k])
		}
	}
	for i := range y {
		for k := i + 1; k < len(y); k++ {
			wy += math.Abs(y[i] - y[k])
		}
	}
	e := 2/(m*n)*cross - wx/(m*(m-1)/2) - wy/(n*(n-1)/2)
	return m * n / (m + n) * e
}

func TestSplitSegmentMatchesDefinition(t *testing.T) {
	// Worked by hand: 0,0,0 | 1,1,1 has cross sum 9, no spread within: e = 2, q = 9/6·2.
	var scratch []float64
	if tau, q := splitSegment([]float64{0, 0, 0, 1, 1, 1}, 2, &scratch); tau != 3 || math.Abs(q-3) > 1e-12 {
		t.Errorf("split of 0,0,0,1,1,1 at %d q %v, want 3 and 3", tau, q)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 50 {
		n := 6 + rng.IntN(30)
		minSize := 2 + rng.IntN(3)
		z := make([]float64, n)
		for i := range z {
			z[i] = rng.NormFloat64()
			if i > n/3 && i < 2*n/3 {
				z[i] += float64(trial%3) / 2
			}
		}
		wantT, wantQ := -1, math.Inf(-1)
		for tt := minSize; tt <= n-minSize; tt++ {
			for k := tt + minSize; k <= n; k++ {
				if q := bruteQ(z, tt, k); q > wantQ {
					wantT, wantQ = tt, q
				}
			}
		}
		gotT, gotQ := splitSegment(z, minSize, &scratch)
		if gotT != wantT || math.Abs(gotQ-wantQ) > 1e-9*math.Max(1, math.Abs(wantQ)) {
			t.Fatalf("trial %d: split at %d q %v, want %d q %v", trial, gotT, gotQ, wantT, wantQ)
		}
	}
}

// nightly is the bar's synthetic series: n runs of a p99 of about 10 ms with cv noise,
// stepping up by step (0.2 = +20%) from run stepAt (1-based; 0 = no step).
func nightly(seed uint64, n, stepAt int, step, cv float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 99))
	xs := make([]float64, n)
	for i := range xs {
		level := 10.0
		if stepAt > 0 && i+1 >= stepAt {
			level *= 1 + step
		}
		xs[i] = level * (1 + cv*rng.NormFloat64())
	}
	return xs
}

// seeds is how many series without a step the false-positive test draws, stepSeeds how
// many with one the detection test draws (each significant split costs every
// permutation, so fewer); permutations are the default's, since the answers depend on them.
const (
	seeds     = 200
	stepSeeds = 100
)

func TestEDivisiveFindsTheStep(t *testing.T) {
	for _, cv := range []float64{0.03, 0.05} {
		missed := 0
		for seed := range uint64(stepSeeds) {
			xs := nightly(seed, 30, 21, 0.2, cv)
			r, err := Check(xs, true, ChangePointOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The step must be found at run 21 ± 1, as the regression the newest run is in.
			found := r.Regressed && r.ChangePoints[r.Cause].Index+1 >= 20 && r.ChangePoints[r.Cause].Index+1 <= 22
			if !found {
				missed++
				if missed <= 3 {
					t.Logf("cv %.2f seed %d: change points %+v", cv, seed, r.ChangePoints)
				}
			}
		}
		t.Logf("cv %.2f: step at run 21 found (±1, as a regression) in %d of %d series", cv, stepSeeds-missed, stepSeeds)
		// With 3% noise the step is 6-7 standard deviations: never missed. With 5% a few
		// series have runs 19-20 high enough by chance that the split moves to run 19.
		if allowed := map[float64]int{0.03: 0, 0.05: stepSeeds / 100}[cv]; missed > allowed {
			t.Errorf("cv %.2f: the +20%% step at run 21 was missed or misplaced in %d of %d series; allowed %d", cv, missed, stepSeeds, allowed)
		}
	}
}

func TestEDivisiveFalsePositiveRate(t *testing.T) {
	for _, cv := range []float64{0.03, 0.05} {
		flagged, regressed := 0, 0
		for seed := range uint64(seeds) {
			xs := nightly(1000+seed, 30, 0, 0, cv)
			r, err := Check(xs, true, ChangePointOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.ChangePoints) > 0 {
				flagged++
			}
			if r.Regressed {
				regressed++
			}
		}
		rate := float64(flagged) / seeds
		t.Logf("cv %.2f: a change point in %d of %d series without a step (false-positive rate %.1f%%); check fails %d of them",
			cv, flagged, seeds, 100*rate, regressed)
		// The bar is 95% of series clean; alpha 0.01 should give about 1%.
		if rate > 0.05 {
			t.Errorf("cv %.2f: false-positive rate %.1f%% over %d series, want at most 5%%", cv, 100*rate, seeds)
		}
	}
}

func TestCheckDirection(t *testing.T) {
	up := nightly(3, 30, 21, 0.2, 0.03)
	down := nightly(3, 30, 21, -0.2, 0.03)
	for _, tc := range []struct {
		name    string
		xs      []float64
		worseUp bool
		want    bool
	}{
		{"latency up is a regression", up, true, true},
		{"latency down is not", down, true, false},
		{"throughput down is a regression", down, false, true},
		{"throughput up is not", up, false, false},
		{"flat", nightly(4, 30, 0, 0, 0.03), true, false},
	} {
		r, err := Check(tc.xs, tc.worseUp, ChangePointOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Regressed != tc.want {
			t.Errorf("%s: regressed %v (change points %+v), want %v", tc.name, r.Regressed, r.ChangePoints, tc.want)
		}
	}
	// A regression partly undone: still a regression, named at its start.
	partly := append(nightly(9, 20, 11, 0.3, 0.02), nightly(10, 10, 0, 0.15, 0.02)...)
	for i := 20; i < 30; i++ {
		partly[i] *= 1.15
	}
	if r, _ := Check(partly, true, ChangePointOptions{}); !r.Regressed || len(r.ChangePoints) != 2 || r.ChangePoints[r.Cause].Index != 10 {
		t.Errorf("+30%% at 11, back to +15%% at 21: regressed %v with %+v (cause %d), want a regression caused at index 10", r.Regressed, r.ChangePoints, r.Cause)
	}
	// A regression that was fixed: the newest runs are after an improvement.
	fixed := append(nightly(5, 20, 11, 0.2, 0.03), nightly(6, 10, 0, 0, 0.03)...)
	if r, _ := Check(fixed, true, ChangePointOptions{}); r.Regressed || len(r.ChangePoints) != 2 || r.Cause != 0 {
		t.Errorf("step up at 11, back down at 21: regressed %v with %+v, want two change points and no regression", r.Regressed, r.ChangePoints)
	}
}

func TestEDivisiveReproducible(t *testing.T) {
	xs := nightly(8, 30, 15, 0.08, 0.04)
	a, _ := EDivisive(xs, ChangePointOptions{Seed: 42})
	b, _ := EDivisive(xs, ChangePointOptions{Seed: 42})
	if len(a) != len(b) {
		t.Fatalf("same seed: %+v then %+v", a, b)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed: %+v then %+v", a, b)
		}
	}
}

func TestCheckBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		opt  ChangePointOptions
		want string
	}{
		{"too short", []float64{1, 2, 3, 4, 5}, ChangePointOptions{}, "too few runs"},
		{"alpha", nightly(1, 10, 0, 0, 0.1), ChangePointOptions{Alpha: 1.5}, "alpha 1.5: allowed: between 0 and 1"},
		{"min size", nightly(1, 10, 0, 0, 0.1), ChangePointOptions{MinSize: 1}, "min size 1: allowed: 2 or more"},
		{"permutations", nightly(1, 10, 0, 0, 0.1), ChangePointOptions{Permutations: -1}, "permutations -1: allowed: 1 or more"},
		{"NaN", []float64{1, 2, 3, math.NaN(), 5, 6}, ChangePointOptions{}, "point 3 is NaN"},
	} {
		if _, err := Check(tc.xs, true, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
