package pacer

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread in the kernel for d. Unlike time.Sleep it does not
// depend on the runtime's poller, so it is precise to the kernel's timer slack even when
// the process is otherwise idle. The runtime hands the thread's P to other goroutines
// while it sleeps if they need it.
func nanosleep(d time.Duration) {
	// The kernel may delay a sleeping thread's wake-up by its timer slack (50 µs by
	// default) to batch wake-ups. The slack is per thread and goroutines move between
	// threads, so it is set before every sleep: one cheap syscall, paid only at rates where
	// this path is taken.
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(timerSlack), 0)
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}

// prSetTimerSlack is PR_SET_TIMERSLACK from linux/prctl.h.
const prSetTimerSlack = 29

// timerSlack is the wake-up slack asked of the kernel for pacing sleeps.
const timerSlack = 5 * time.Microsecond
