//go:build !unix

package engine

import "time"

// processCPU returns 0: the benchmarks then report no CPU-time figures.
func processCPU() time.Duration { return 0 }
