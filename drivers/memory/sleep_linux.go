package memory

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread in the kernel for d; the runtime hands the thread's
// P to other goroutines meanwhile. The kernel may delay a wake-up by the thread's timer
// slack (50 µs by default), which made a simulated 100 µs service time take 175 µs, so the
// slack is lowered first; it is per thread and goroutines move between threads, hence
// every time (one cheap syscall).
func nanosleep(d time.Duration) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(timerSlack), 0)
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}

// prSetTimerSlack is PR_SET_TIMERSLACK from linux/prctl.h.
const prSetTimerSlack = 29

// timerSlack is the wake-up slack asked of the kernel for simulated waits.
const timerSlack = 5 * time.Microsecond
