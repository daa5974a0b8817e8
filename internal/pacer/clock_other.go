//go:build !(linux && amd64)

package pacer

// Outside Linux on amd64 the clock reads the kernel's (time.Since): these are never called.

func tscTicks() uint64        { return 0 }
func tscTicksOrdered() uint64 { return 0 }
func tscUsable() bool         { return false }
func tscLeft() bool           { return true }
