//go:build !race

package autotune

// raceEnabled: see race_on_test.go.
const raceEnabled = false
