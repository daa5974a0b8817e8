//go:build race

package autotune

// raceEnabled: the race detector slows the generator several times over, so a capacity
// search would measure the instrumented client, not the store.
const raceEnabled = true
