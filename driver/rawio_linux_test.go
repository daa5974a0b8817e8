package driver

import (
	"context"
	"errors"
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
