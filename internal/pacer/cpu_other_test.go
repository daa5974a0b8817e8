//go:build !unix

package pacer

import "time"

// processCPU cannot read the process's CPU time here; the benchmark then leaves out its
// cores figure.
func processCPU() (time.Duration, bool) { return 0, false }
