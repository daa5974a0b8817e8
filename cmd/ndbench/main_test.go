package main

import (
	"runtime/debug"
	"testing"
	"time"
)

// TestStartupGC checks that start-up runs at the raised target and that the target in
// force before is put back when the window ends, and that a GOGC of the user's is left
// alone.
func TestStartupGC(t *testing.T) {
	orig := debug.SetGCPercent(150)
	defer debug.SetGCPercent(orig)

	var window time.Duration
	var restore func()
	startupGC(func(string) string { return "" }, func(d time.Duration, f func()) { window, restore = d, f })
	if got := debug.SetGCPercent(startupGCPercent); got != startupGCPercent {
		t.Errorf("GC percent during start-up = %d, want %d", got, startupGCPercent)
	}
	if window != startupGCWindow || restore == nil {
		t.Fatalf("restore scheduled after %v (func set: %v), want after %v", window, restore != nil, startupGCWindow)
	}
	restore()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GC percent after start-up = %d, want the one before (150)", got)
	}

	scheduled := false
	startupGC(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}, func(time.Duration, func()) { scheduled = true })
	if got := debug.SetGCPercent(150); got != 150 || scheduled {
		t.Errorf("with GOGC set: GC percent = %d (want 150, untouched), restore scheduled: %v", got, scheduled)
	}
}
