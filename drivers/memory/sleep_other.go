//go:build !linux

package memory

import "time"

// nanosleep waits for d with the runtime's own timers. The precise kernel sleep with a
// lowered timer slack (sleep_linux.go) uses prctl, which only Linux has; elsewhere the
// runtime's timers are already fine-grained (kqueue on macOS and the BSDs takes a
// nanosecond timeout, Windows gets high-resolution waitable timers), so a simulated wait
// overshoots by the scheduler's wake-up latency rather than by a millisecond tick.
func nanosleep(d time.Duration) { time.Sleep(d) }
