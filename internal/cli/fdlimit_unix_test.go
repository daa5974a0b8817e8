//go:build unix

package cli

import (
	"runtime"
	"testing"
)

// The note says ndbench runs with the soft limit raised to the hard one: Go's syscall
// package does that at start (Go 1.19 and later; since Go 1.22 to one below the hard limit,
// so that a change by prlimit can be told apart; on macOS up to kern.maxfilesperproc).
func TestFileLimitRaisedToHard(t *testing.T) {
	soft, hard, ok := fileLimit()
	if !ok {
		t.Fatal("RLIMIT_NOFILE could not be read")
	}
	if runtime.GOOS == "linux" && hard < 1<<20 && soft < hard-1 {
		t.Errorf("RLIMIT_NOFILE soft %d, hard %d: Go should have raised the soft limit to the hard one", soft, hard)
	}
}
