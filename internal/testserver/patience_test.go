package testserver

import (
	"testing"
	"time"
)

func TestPatientlyTellsReturnedFromStuck(t *testing.T) {
	ran := false
	if !Patiently(func() { ran = true }) || !ran {
		t.Errorf("a function that returns at once: Patiently false or f not run (ran %v)", ran)
	}
	// A stuck function (it waits on a channel no one closes until the check is over) is
	// reported as not returned; the short patience keeps the test from waiting a minute.
	release := make(chan struct{})
	defer close(release)
	if returnsWithin(func() { <-release }, 10*time.Millisecond) {
		t.Error("a function that never returns was reported as returned")
	}
}
