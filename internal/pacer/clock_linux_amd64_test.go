package pacer

import (
	"os"
	"strings"
	"testing"
)

// TestTSCUsableFollowsTheKernel: the counter is used exactly when the kernel's
// clocksource is tsc.
func TestTSCUsableFollowsTheKernel(t *testing.T) {
	b, err := os.ReadFile(clocksourceFile)
	if err != nil {
		if tscUsable() {
			t.Fatalf("no clocksource to read (%v), yet the counter is taken as usable", err)
		}
		return
	}
	want := strings.TrimSpace(string(b)) == "tsc"
	if got := tscUsable(); got != want {
		t.Errorf("clocksource %q: usable %v, want %v", strings.TrimSpace(string(b)), got, want)
	}
}
