//go:build !linux

package netlab

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"testing"
	"time"
)

// Lab is a network of namespaces; on this system there is none (Linux only).
type Lab struct{}

// Host is one namespace of a Lab.
type Host struct {
	// Name is the namespace's name, Addr its IPv4 address.
	Name, Addr string
}

// New skips t (fails it under CI=true): network namespaces are Linux's.
func New(t testing.TB, n int) *Lab {
	t.Helper()
	unavailable(t, "network namespaces are Linux's")
	return nil
}

// Hosts returns the lab's hosts.
func (l *Lab) Hosts() []*Host { return nil }

// Gateway returns the test process's address on the lab's network.
func (l *Lab) Gateway() string { return "" }

// Command returns name run with args inside the host's namespace.
func (h *Host) Command(name string, args ...string) *exec.Cmd { return exec.Command(name, args...) }

// Cut drops the host's packets in direction d.
func (h *Host) Cut(d Direction) error { return errUnsupported }

// DialContext connects to addr from inside the host's namespace.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return nil, errUnsupported
}

// Heal undoes every cut of the host.
func (h *Host) Heal() error { return errUnsupported }

// errUnsupported is what a lab's operations return where there are no labs.
var errUnsupported = errors.New("netlab: network namespaces are Linux's")

// DelayProxy is not available either.
func (l *Lab) DelayProxy(t testing.TB, target string, d time.Duration) string {
	t.Helper()
	unavailable(t, "network namespaces are Linux's")
	return ""
}
