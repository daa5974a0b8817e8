//go:build linux

package redis

import (
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

// spinReader reads a TCP connection through its raw descriptor so that mode=direct can
// poll for a reply for a bounded time before the goroutine parks (spinRead). A parked
// goroutine runs again only after the runtime's netpoller has seen the socket readable
// and a P is free; a reply that arrives within the spin is read at once instead. Once
// the spin is over the read waits for the netpoller as net.Conn.Read does, and deadlines
// (the engine's Interrupt) apply as they do there: RawConn.Read checks them.
type spinReader struct {
	rc   syscall.RawConn
	spin time.Duration
	addr net.Addr // for the errors, as net.Conn reports them
}

// newSpinReader returns a reader of nc that spins for up to spin before parking, or nil
// when nc offers no descriptor of its own (TLS reads stay with crypto/tls). A TCP
// connection behind driver.RawIO offers its descriptor; the spin's reads are the
// runtime's system calls, not RawIO's, since a spinning worker keeps its P anyway.
func newSpinReader(nc net.Conn, spin time.Duration) io.Reader {
	sc, ok := nc.(syscall.Conn)
	if !ok || spin <= 0 {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &spinReader{rc: rc, spin: spin, addr: nc.RemoteAddr()}
}

// Read reads what is there, spinning (with runtime.Gosched between tries, so other
// workers run) for up to r.spin before waiting for the netpoller.
func (r *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno error
	first := true
	err := r.rc.Read(func(fd uintptr) bool {
		var start time.Time
		for {
			n, errno = syscall.Read(int(fd), p)
			switch {
			case errno == syscall.EINTR:
				continue
			case errno != syscall.EAGAIN:
				return true
			case !first:
				// Woken by the netpoller for a readiness already consumed: wait again.
				return false
			case start.IsZero():
				start = time.Now()
			case time.Since(start) >= r.spin:
				first = false
				return false
			}
			runtime.Gosched()
		}
	})
	if err != nil {
		return 0, err // deadline, closed: already a *net.OpError
	}
	if errno != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: r.addr, Err: os.NewSyscallError("read", errno)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
