//go:build !linux

package pacer

import "time"

// nanosleep sleeps for d. Outside Linux there is no portable way to sleep a thread in the
// kernel with a chosen timer slack from Go, so it is the runtime's sleep: start lag at
// rates below 20,000/s is then the runtime's (tens of µs when busy, up to a millisecond when
// idle), and start-lag figures show it.
func nanosleep(d time.Duration) { time.Sleep(d) }
