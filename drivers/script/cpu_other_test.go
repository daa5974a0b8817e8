//go:build !unix

package script

// cpuTime is not measured here: the benchmarks report ns/op only.
func cpuTime() int64 { return 0 }
