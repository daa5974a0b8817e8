package testserver

import "time"

// Patience is how long Patiently waits: long enough that no machine, however loaded, takes
// it to end an operation that honours its deadline, short enough that one which does not
// fails the test instead of hanging the run.
const Patience = time.Minute

// Patiently runs f and reports whether it returned within Patience. Tests of deadlines
// against real servers use it instead of a wall-clock bound: whether an operation was
// stopped by its deadline is judged by what it returned (its error class), and the
// patience only turns one that is never stopped (a deadline not enforced, a Close that
// waits on a stopped node) into a failure. f keeps running after a false return; the
// caller fails the test, and f's goroutine ends with the process.
func Patiently(f func()) bool {
	return returnsWithin(f, Patience)
}

func returnsWithin(f func(), patience time.Duration) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	t := time.NewTimer(patience)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
