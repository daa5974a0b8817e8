// Package netlab makes small networks of Linux network namespaces for tests: hosts with
// addresses of their own on one bridge, whose links a test cuts (both ways or one way),
// heals and delays while the processes on them live. The fleet's tests run a coordinator
// and its nodes each on its own host, so that a partition is a real one: packets dropped,
// connections that hang, not a process that dies.
//
// A lab needs root and iproute2 (`ip`, `tc`): where namespaces cannot be made the test
// is skipped, but it fails instead when CI=true, so CI never passes by skipping. Every
// namespace is removed when the test ends, failed or not; names carry the test process's
// id, so a run that crashed leaves nothing that blocks the next, and the next removes it.
package netlab

import (
	"fmt"
	"os"
	"testing"
)

// Direction says which way a cut drops packets, seen from the host whose link is cut.
type Direction int

// The ways a link is cut.
const (
	// Both drops everything to and from the host: its link is down.
	Both Direction = iota
	// In drops what the host would receive; what it sends still arrives.
	In
	// Out drops what the host sends; what is sent to it still arrives.
	Out
)

func (d Direction) String() string {
	switch d {
	case Both:
		return "both ways"
	case In:
		return "inbound"
	case Out:
		return "outbound"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// unavailable skips t because namespaces cannot be made here, or fails it under CI=true:
// CI runs on machines where they can, so a skip there would hide a broken setup.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("netlab: network namespaces cannot be made (%s), and CI=true needs them", why)
	}
	t.Skipf("netlab: network namespaces cannot be made here (%s); run as root on Linux with iproute2", why)
}
