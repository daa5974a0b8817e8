package pacer

import (
	"bytes"
	"os"
)

// tscTicks reads the time-stamp counter without ordering it against the instructions
// around it (RDTSC).
func tscTicks() uint64

// tscTicksOrdered reads the time-stamp counter once every instruction before it has
// completed (LFENCE; RDTSC), for the pairs that steer the clock.
func tscTicksOrdered() uint64

// clocksourceFile names the kernel's current clocksource.
const clocksourceFile = "/sys/devices/system/clocksource/clocksource0/current_clocksource"

// clocksource returns the kernel's current clocksource.
func clocksource() (string, error) {
	b, err := os.ReadFile(clocksourceFile)
	return string(bytes.TrimSpace(b)), err
}

// tscUsable reports whether the kernel keeps time with the time-stamp counter. It picks
// tsc only when the counter is invariant and synchronised across CPUs, and moves off it
// when its watchdog finds otherwise; anything else (kvm-clock, hpet, a hidden sysfs) and
// the clock reads the kernel's.
func tscUsable() bool {
	s, err := clocksource()
	return err == nil && s == "tsc"
}

// tscLeft reports whether the kernel has moved to another clocksource. A failed read
// (out of file descriptors, say) says nothing, so it is not taken for a move.
func tscLeft() bool {
	s, err := clocksource()
	return err == nil && s != "tsc"
}
