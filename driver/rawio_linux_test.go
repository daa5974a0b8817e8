package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// On Linux a plain TCP connection is wrapped, so the tests beside this one exercise the
// raw system calls rather than net.Conn's own.
func TestRawIOWrapsTCPOnLinux(t *testing.T) {
	c, _ := loopbackPair(t)
	if _, ok := c.(*rawConn); !ok {
		t.Fatalf("RawIO(*net.TCPConn) = %T; want *rawConn", c)
	}
	if _, ok := c.(interface{ SetNoDelay(bool) error }); !ok {
		t.Fatal("the wrapper hides the TCP connection's own methods")
	}
}

// The system call's own errors reach the caller as net.Conn reports them.
func TestRawIOPeerReset(t *testing.T) {
	t.Run("peer reset: write error", func(t *testing.T) {
		c, s := loopbackPair(t)
		_ = s.SetLinger(0) // close with RST
		_ = s.Close()
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			_, err = c.Write([]byte("x"))
			time.Sleep(time.Millisecond)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "write" || !(errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)) {
			t.Fatalf("err = %v; want a *net.OpError for write with EPIPE or ECONNRESET", err)
		}
	})
	t.Run("peer reset: read error", func(t *testing.T) {
		c, s := loopbackPair(t)
		_ = s.SetLinger(0)
		_ = s.Close()
		time.Sleep(10 * time.Millisecond) // let the RST arrive
		_, err := c.Read(make([]byte, 8))
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" || !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("err = %v; want a *net.OpError for read with ECONNRESET", err)
		}
	})
}

// A descriptor in blocking mode (File() sets it) must not turn a raw read into one that
// blocks its thread while holding its P: the next stop-the-world would wait for it for
// ever, freezing the process. Run in a child process, so a regression fails the test
// instead of hanging the suite.
func TestRawIOBlockingDescriptor(t *testing.T) {
	if os.Getenv("NDBENCH_RAWIO_CHILD") == "1" {
		c, s := loopbackPair(t)
		f, err := c.(*rawConn).File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_ = f.Fd() // puts the shared descriptor in blocking mode
		got := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 8))
			got <- err
		}()
		time.Sleep(20 * time.Millisecond) // the read waits
		runtime.GC()                      // stops the world: every P must come back
		if _, err := s.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("read: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRawIOBlockingDescriptor$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "NDBENCH_RAWIO_CHILD=1")
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the child froze: a raw read blocked its thread on a blocking descriptor and the garbage collector waited for it")
	}
}

// RawIODialer wraps what the dial function returns and passes its errors on.
func TestRawIODialer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := RawIODialer((&net.Dialer{}).DialContext)
	nc, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, ok := nc.(*rawConn); !ok {
		t.Fatalf("dialled %T; want *rawConn", nc)
	}
	_ = ln.Close()
	if _, err := dial(context.Background(), "tcp", ln.Addr().String()); err == nil {
		t.Fatal("a dial to a closed listener succeeded")
	}
}

// WriteRead sends the request and returns the reply, also when the reply comes long after
// the send (the goroutine waits in the netpoller) and when it comes before the wait
// begins (the server answers at once): a readiness between the send and the wait is not
// lost.
func TestRawIOWriteRead(t *testing.T) {
	c, s := loopbackPair(t)
	wr, ok := c.(WriteReader)
	if !ok {
		t.Fatalf("RawIO's connection %T is not a WriteReader", c)
	}
	for _, delay := range []time.Duration{0, 0, 0, 30 * time.Millisecond, 0, time.Millisecond} {
		req := []byte(fmt.Sprintf("req after %v", delay))
		go func() {
			got := make([]byte, len(req))
			if _, err := io.ReadFull(s, got); err != nil {
				return
			}
			time.Sleep(delay)
			_, _ = s.Write(append([]byte("re:"), got...))
		}()
		buf := make([]byte, 64)
		n, err := wr.WriteRead(req, buf)
		if err != nil {
			t.Fatalf("delay %v: %v", delay, err)
		}
		// A reply may come in parts; the rest is read as Read reads.
		want := "re:" + string(req)
		for n < len(want) {
			m, err := c.Read(buf[n:])
			if err != nil {
				t.Fatalf("delay %v: the rest of the reply: %v", delay, err)
			}
			n += m
		}
		if got := string(buf[:n]); got != want {
			t.Fatalf("delay %v: reply %q, want %q", delay, got, want)
		}
	}
}

// A request larger than the socket's buffer is finished by Write while the server reads
// slowly, and its reply still read.
func TestRawIOWriteReadLargeRequest(t *testing.T) {
	c, s := loopbackPair(t)
	req := bytes.Repeat([]byte("x"), 16<<20)
	go func() {
		got := make([]byte, len(req))
		time.Sleep(20 * time.Millisecond) // the client's send finds the buffer full first
		if _, err := io.ReadFull(s, got); err != nil {
			return
		}
		_, _ = s.Write([]byte("done"))
	}()
	buf := make([]byte, 4)
	n, err := c.(WriteReader).WriteRead(req, buf)
	if err != nil {
		t.Fatal(err)
	}
	if n < len(buf) {
		m, err := io.ReadFull(c, buf[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += m
	}
	if string(buf[:n]) != "done" {
		t.Fatalf("reply %q, want done", buf[:n])
	}
}

// A past deadline set while WriteRead waits for the reply ends it as a read's timeout
// (the request went out); one set before it ends it as a write's, nothing sent; a
// closed connection's is a write's too.
func TestRawIOWriteReadErrors(t *testing.T) {
	t.Run("deadline while waiting", func(t *testing.T) {
		c, s := loopbackPair(t)
		errc := make(chan error, 1)
		go func() {
			_, err := c.(WriteReader).WriteRead([]byte("ping"), make([]byte, 16))
			errc <- err
		}()
		got := make([]byte, 4)
		if _, err := io.ReadFull(s, got); err != nil || string(got) != "ping" {
			t.Fatalf("server got %q, %v; want the request", got, err)
		}
		_ = c.SetDeadline(time.Unix(1, 0))
		var err error
		select {
		case err = <-errc:
		case <-time.After(5 * time.Second):
			t.Fatal("WriteRead did not return after its deadline passed")
		}
		var oe *net.OpError
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "read" {
			t.Fatalf("err = %v; want a read's os.ErrDeadlineExceeded", err)
		}
	})
	t.Run("deadline before", func(t *testing.T) {
		c, s := loopbackPair(t)
		_ = c.SetDeadline(time.Unix(1, 0))
		_, err := c.(WriteReader).WriteRead([]byte("ping"), make([]byte, 16))
		var oe *net.OpError
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "write" {
			t.Fatalf("err = %v; want a write's os.ErrDeadlineExceeded", err)
		}
		_ = s.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, _ := s.Read(make([]byte, 4)); n != 0 {
			t.Fatalf("the server got %d bytes of a request reported not sent", n)
		}
	})
	t.Run("closed", func(t *testing.T) {
		c, _ := loopbackPair(t)
		_ = c.Close()
		_, err := c.(WriteReader).WriteRead([]byte("ping"), make([]byte, 16))
		var oe *net.OpError
		if !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) || oe.Op != "write" {
			t.Fatalf("err = %v; want a write's net.ErrClosed", err)
		}
	})
}
