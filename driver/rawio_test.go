package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// loopbackPair returns both ends of a real TCP connection on 127.0.0.1: the client end
// through RawIO, and the server end as accepted.
func loopbackPair(t *testing.T) (client net.Conn, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	client = RawIO(nc)
	t.Cleanup(func() { _ = client.Close(); _ = sc.Close() })
	return client, sc.(*net.TCPConn)
}

func TestRawIORoundTrip(t *testing.T) {
	c, s := loopbackPair(t)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "PING\r\n" {
		t.Fatalf("server read %q, %v; want PING", got, err)
	}
	if _, err := s.Write([]byte("+PONG\r\n")); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, 7)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "+PONG\r\n" {
		t.Fatalf("client read %q, %v; want +PONG", got, err)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("empty read = %d, %v; want 0, nil", n, err)
	}
}

// A write larger than both sockets' buffers, to a peer that reads only later, must wait
// for room (EAGAIN, then the netpoller) and deliver every byte in order.
func TestRawIOWriteWaitsForRoom(t *testing.T) {
	c, s := loopbackPair(t)
	// Fixed buffers (no autotuning) far smaller than the write, but not so small that
	// the transfer crawls on delayed acknowledgements.
	if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
		_ = tc.SetWriteBuffer(64 << 10)
	}
	_ = s.SetReadBuffer(64 << 10)
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := c.Write(want)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("Write returned (%d, %v) before the peer read anything: the buffers held 4 MiB, so the test proves nothing", r.n, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(s, got); err != nil {
		t.Fatalf("server read: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write did not return after the peer read everything")
	}
	if r.err != nil || r.n != len(want) {
		t.Fatalf("Write = %d, %v; want %d, nil", r.n, r.err, len(want))
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes that arrived differ from those written")
	}
}

// A past deadline, set from another goroutine while a read waits (the engine's
// Interrupt), must end the read with an error that errors.Is finds as
// os.ErrDeadlineExceeded, reported like net.Conn's own.
func TestRawIODeadlineInterruptsRead(t *testing.T) {
	c, _ := loopbackPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 16))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	_ = c.SetDeadline(time.Unix(1, 0))
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not return after its deadline passed")
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v; want os.ErrDeadlineExceeded", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Addr == nil || oe.Addr.String() != c.RemoteAddr().String() {
		t.Fatalf("err = %#v; want a *net.OpError for read from %s", err, c.RemoteAddr())
	}
	// Clearing the deadline makes the connection usable again (PipelineConn.Retry).
	_ = c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatalf("write after clearing the deadline: %v", err)
	}
}

func TestRawIOEnds(t *testing.T) {
	t.Run("peer closes: EOF", func(t *testing.T) {
		c, s := loopbackPair(t)
		_ = s.Close()
		if _, err := c.Read(make([]byte, 8)); err != io.EOF {
			t.Fatalf("err = %v; want io.EOF", err)
		}
	})
	t.Run("closed locally: net.ErrClosed", func(t *testing.T) {
		c, _ := loopbackPair(t)
		_ = c.Close()
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read: err = %v; want net.ErrClosed", err)
		}
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write: err = %v; want net.ErrClosed", err)
		}
	})
	t.Run("closed locally: zero-length calls say so too", func(t *testing.T) {
		c, _ := loopbackPair(t)
		_ = c.Close()
		if _, err := c.Read(nil); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read: err = %v; want net.ErrClosed", err)
		}
		if _, err := c.Write(nil); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write: err = %v; want net.ErrClosed", err)
		}
	})
}

// A deadline that passes while a write waits for room must end the write with the bytes
// already sent counted, and a timeout (the engine's Interrupt of a batch stuck on a
// server that stopped reading).
func TestRawIODeadlineInterruptsWrite(t *testing.T) {
	// A write that starts after its deadline rightly writes nothing, and on a loaded
	// machine (CI, with other test binaries beside it) the goroutine can be descheduled
	// past the deadline before it writes: such an attempt is retried. A write that is
	// never interrupted, or never writes, fails every attempt. The 4 MiB are allocated
	// before the deadline is set (zeroed under -race, inside the 50 ms, they were part of
	// why all 3 attempts of a unit run at load 35 wrote nothing), and the deadline is
	// 200 ms: it is how long each attempt blocks, the server never reading.
	buf := make([]byte, 4<<20)
	for attempt := 1; ; attempt++ {
		c, s := loopbackPair(t)
		if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok {
			_ = tc.SetWriteBuffer(64 << 10)
		}
		_ = s.SetReadBuffer(64 << 10)
		_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Write(buf) // the server never reads
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("err = %v; want a timeout", err)
		}
		if n == 0 && attempt < 5 {
			t.Logf("attempt %d wrote nothing before its deadline; again", attempt)
			continue
		}
		if n <= 0 || n >= 4<<20 {
			t.Fatalf("n = %d; want the part that fitted in the buffers, more than 0 and less than all", n)
		}
		return
	}
}

// Reads and writes at once, in both directions (pgconn reads in the background while it
// writes): every byte arrives, in order, under the race detector too.
func TestRawIODuplex(t *testing.T) {
	c, s := loopbackPair(t)
	const size = 2 << 20
	pattern := func(i int) byte { return byte(i*13 + i>>9) }
	send := func(w io.Writer) error {
		buf := make([]byte, 32<<10)
		for off := 0; off < size; off += len(buf) {
			for i := range buf {
				buf[i] = pattern(off + i)
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}
	check := func(r io.Reader) error {
		got := make([]byte, size)
		if _, err := io.ReadFull(r, got); err != nil {
			return err
		}
		for i, b := range got {
			if b != pattern(i) {
				return fmt.Errorf("byte %d is %d, want %d", i, b, pattern(i))
			}
		}
		return nil
	}
	errs := make(chan error, 4)
	go func() { errs <- send(c) }()
	go func() { errs <- send(s) }()
	go func() { errs <- check(c) }()
	go func() { errs <- check(s) }()
	for range 4 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the transfer did not finish")
		}
	}
}

func TestRawIOLeavesOtherConnsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := RawIO(a); got != a {
		t.Fatalf("RawIO(net.Pipe) = %T; want the pipe itself", got)
	}
}
