//go:build linux && race

package driver

import (
	"runtime"
	"unsafe"
)

// rawIOSync orders, for the race detector, each raw write before the reads that follow
// it, as package syscall's own ioSync does for its Read and Write: raw system calls carry
// none of that bookkeeping, and without it data handed between goroutines through a
// socket shows as a race, and a real race on an I/O buffer does not.
var rawIOSync byte

// raceWrite tells the race detector that a socket write reads p and publishes what was
// done before it.
func raceWrite(p []byte) {
	runtime.RaceReleaseMerge(unsafe.Pointer(&rawIOSync))
	runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p))
}

// raceRead tells the race detector that a socket read wrote p and observes what writes
// published.
func raceRead(p []byte) {
	runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p))
	runtime.RaceAcquire(unsafe.Pointer(&rawIOSync))
}
