package driver

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
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
// A raw call holds its P only for the copy: it never blocks, because it passes
// MSG_DONTWAIT whatever mode the descriptor is in (File puts it in blocking mode). A
// read that finds nothing returns EAGAIN and the goroutine parks in the netpoller exactly
// as net.Conn's would, and deadlines (Interrupt) apply as there. docs/design-notes.md
// has the measurements.
func RawIO(nc net.Conn) net.Conn {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	c := &rawConn{TCPConn: tc}
	// Bound once: a closure or method value per call would cost allocations on every
	// operation.
	c.r.call, c.r.fn = rc.Read, c.recv
	c.w.call, c.w.fn = rc.Write, c.send
	c.wr.call, c.wr.fn = rc.Read, c.sendRecv
	return c
}

// rawConn is a TCP connection whose Read and Write bypass the runtime's system-call
// bookkeeping; every other method is the TCP connection's own.
type rawConn struct {
	*net.TCPConn
	r, w rawOp
	// wr is WriteRead's read, run under r's lock: its req is the request, sent is how
	// much of it went out, and werr the send's failure.
	wr    rawOp
	req   []byte
	sent  int
	begun bool
	werr  syscall.Errno
}

// WriteRead sends req and waits for the reply without first trying a read that
// would find nothing: the send is made inside the RawConn's Read, after the netpoller's
// readiness for the descriptor was reset (prepareRead), so a reply arriving at any time
// after it is seen, and the goroutine parks at once. Read after Write tries a receive
// first, which right after a send finds nothing (EAGAIN) nearly always: a system call
// per operation for nothing (0.9 of the 1.8 receives per operation of the postgres
// pair in docs/performance.md). Waiting before that first read is unsafe with Write
// and Read apart: the reset that Read's wait starts with would clear a readiness that
// came between the send and the wait, and the reply would be waited for until the
// deadline. A request that does not fit the socket's buffer at once is finished by
// Write, and its reply read by Read.
func (c *rawConn) WriteRead(req, p []byte) (int, error) {
	if len(req) == 0 || len(p) == 0 {
		if _, err := c.Write(req); err != nil {
			return 0, err
		}
		return c.Read(p)
	}
	raceWrite(req)
	c.r.mu.Lock() // a read, as Read's: the read lock orders it with them
	c.req, c.sent, c.begun, c.werr = req, 0, false, 0
	n, errno, err := c.wr.run(p)
	sent, werr, begun := c.sent, c.werr, c.begun
	c.req = nil
	c.r.mu.Unlock()
	switch {
	case !begun && err != nil:
		// Closed, or past a deadline, before anything was sent.
		return 0, c.opError("write", err)
	case werr != 0:
		return 0, c.opError("write", os.NewSyscallError("write", werr))
	case sent < len(req):
		// The socket's buffer was full: Write waits for room, Read for the reply.
		if _, err := c.Write(req[sent:]); err != nil {
			return 0, err
		}
		return c.Read(p)
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	raceRead(p[:n])
	return n, nil
}

// sendRecv is WriteRead's function for the RawConn's Read: on its first call it sends
// the request and asks to wait; on the later ones, once the netpoller saw the socket
// readable, it receives.
func (c *rawConn) sendRecv(fd uintptr) bool {
	if c.begun {
		return receive(fd, &c.wr)
	}
	c.begun = true
	// Writes stay whole: a Write of another goroutine is not interleaved with this one.
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	for c.sent < len(c.req) {
		rest := c.req[c.sent:]
		r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch {
		case e == syscall.EINTR:
		case e == syscall.EAGAIN:
			return true // WriteRead finishes with Write and Read
		case e != 0:
			c.werr = e
			return true
		case r == 0:
			return true
		default:
			c.sent += int(r)
		}
	}
	return false
}

// rawOp is the state of one direction's call, kept in the connection so that the
// function handed to RawConn needs no closure. net.Conn allows concurrent Reads (and
// Writes); mu serialises them around the state.
type rawOp struct {
	mu    sync.Mutex
	p     []byte
	n     int
	errno syscall.Errno
	call  func(func(fd uintptr) bool) error // the RawConn's Read or Write
	fn    func(fd uintptr) bool             // the system calls on p
}

// run calls fn on p through the RawConn, which waits in the netpoller whenever fn says
// it must, and returns what fn got done.
func (o *rawOp) run(p []byte) (n int, errno syscall.Errno, err error) {
	o.mu.Lock()
	o.p, o.n, o.errno = p, 0, 0
	err = o.call(o.fn)
	n, errno = o.n, o.errno
	o.p = nil
	o.mu.Unlock()
	return n, errno, err
}

func (c *rawConn) recv(fd uintptr) bool { return receive(fd, &c.r) }

// receive makes one receive into o.p, riding out interrupts: false when there is
// nothing to read yet (the RawConn then waits for readability and calls again).
func receive(fd uintptr, o *rawOp) bool {
	p := o.p
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		o.n, o.errno = int(r), e
		return true
	}
}

func (c *rawConn) send(fd uintptr) bool {
	p := c.w.p
	for c.w.n < len(p) {
		rest := p[c.w.n:]
		r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch {
		case e == syscall.EINTR:
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			c.w.errno = e
			return true
		case r == 0:
			// As os and net do: a write that moves nothing and reports nothing would
			// otherwise loop here for ever, holding its P.
			return true
		default:
			c.w.n += int(r)
		}
	}
	return true
}

// Read reads what the socket holds, waiting in the netpoller when it holds nothing.
func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return c.TCPConn.Read(p) // net.Conn's answers: closed, past deadline, or (0, nil)
	}
	n, errno, err := c.r.run(p)
	if err != nil {
		return 0, c.opError("read", err)
	}
	if errno != 0 {
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	raceRead(p[:n])
	return n, nil
}

// Write writes all of p, waiting in the netpoller while the socket's buffer is full.
func (c *rawConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return c.TCPConn.Write(p)
	}
	raceWrite(p)
	n, errno, err := c.w.run(p)
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	case n < len(p):
		return n, c.opError("write", io.ErrUnexpectedEOF)
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
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
