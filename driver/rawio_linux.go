//go:build linux

package driver

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// RawIO returns a connection that reads and writes nc's socket with raw system calls, or
// nc itself when it is not a plain TCP connection.
//
// Why: a read or write through net.Conn enters the system call through the runtime's
// entersyscall, and when every P was idle a moment before (a worker waiting for its
// reply, which at one connection is most of the time), entersyscall wakes the sysmon
// thread from its deep sleep; sysmon then polls every 20 µs for the next 50 ticks. At one
// connection that is a futex wake-up inside the operation's timed span and a second
// thread contending for the cores with the store, on every operation (golang/go#18236).
// The socket is non-blocking, so a raw call returns at once: a read that finds nothing
// returns EAGAIN and the goroutine parks in the netpoller exactly as net.Conn's would,
// and deadlines (Interrupt) apply as there. docs/design-notes.md has the measurements.
func RawIO(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return &rawConn{TCPConn: tc, rc: rc}
}

// rawConn is a TCP connection whose Read and Write bypass the runtime's system-call
// bookkeeping; every other method is the TCP connection's own.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// Read reads what the socket holds, waiting in the netpoller when it holds nothing.
func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	if err != nil {
		return 0, c.opError("read", err)
	}
	if errno != 0 {
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the netpoller while the socket's buffer is full.
func (c *rawConn) Write(p []byte) (int, error) {
	var n int
	var errno syscall.Errno
	if len(p) == 0 {
		return 0, nil
	}
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return n, c.opError("write", err)
	}
	if errno != 0 {
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError reports err as net.Conn's Read and Write do: a *net.OpError naming the
// operation and both ends, so errors.Is finds os.ErrDeadlineExceeded and net.ErrClosed.
func (c *rawConn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err // RawConn's own: "raw-read" and the ends
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
