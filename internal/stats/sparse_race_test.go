//go:build race

package stats

// Under the race detector, which slows the old path's histogram walks ~10-fold, the
// random equivalence tests (TestDrainMatchesOldPath, TestCollectorMatchesOldPath) run
// fewer and smaller sets, so that CI's race stage stays short: the sets kept still draw
// hundreds of values of each range, leave shards empty and use them again after a swap,
// and every set has an empty interval and (the collector's) a reset by construction.
// The plain run keeps the full count.
const (
	drainSeeds      = 4
	collectorSeeds  = 2
	maxRandomValues = 1000
)
