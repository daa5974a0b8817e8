//go:build !race

package stats

// How much of the random equivalence tests (TestDrainMatchesOldPath,
// TestCollectorMatchesOldPath) runs without the race detector.
const (
	drainSeeds      = 16
	collectorSeeds  = 8
	maxRandomValues = 3000
)
