//go:build linux

package redis

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, server
}

// TestSpinReader: replies that come within the spin, after it (the read parks on the
// netpoller) and in pieces are read whole; the peer's close is io.EOF; a past deadline
// (the engine's Interrupt) makes a parked read return os.ErrDeadlineExceeded, and the
// reader works again once the deadline is cleared.
func TestSpinReader(t *testing.T) {
	client, server := tcpPair(t)
	r := newSpinReader(client, 50*time.Microsecond)
	if r == nil {
		t.Fatal("newSpinReader returned nil for a TCP connection")
	}
	rd := newRespReader(r)
	for _, tc := range []struct {
		name   string
		pieces []string
		delay  time.Duration
	}{
		{"at once", []string{"$5\r\nhello\r\n"}, 0},
		{"after the spin", []string{"+OK\r\n"}, 20 * time.Millisecond},
		{"in pieces", []string{"$5\r\nwor", "ld\r\n"}, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			go func() {
				for _, p := range tc.pieces {
					time.Sleep(tc.delay)
					_, _ = server.Write([]byte(p))
				}
			}()
			_, data, _, err := rd.reply()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"at once": "hello", "after the spin": "OK", "in pieces": "world"}[tc.name]
			if string(data) != want {
				t.Fatalf("read %q, want %q", data, want)
			}
		})
	}

	// Interrupt: a reader parked on an idle connection returns at once.
	done := make(chan error, 1)
	go func() { _, _, _, err := rd.reply(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	_ = client.SetDeadline(longAgoForTest)
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("interrupted read returned %v, want a deadline error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a past deadline did not interrupt the read")
	}
	_ = client.SetDeadline(time.Time{})
	_, _ = server.Write([]byte(":7\r\n"))
	if _, data, _, err := rd.reply(); err != nil || string(data) != "7" {
		t.Fatalf("after the deadline was cleared: %q, %v", data, err)
	}

	_ = server.Close()
	if _, _, _, err := rd.reply(); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
}

var longAgoForTest = time.Unix(1, 0)

// TestSpinReaderOnlyForPlainTCP: spinRead=0 and connections other than TCP (TLS wraps
// one) keep the connection's own Read.
func TestSpinReaderOnlyForPlainTCP(t *testing.T) {
	client, _ := tcpPair(t)
	if r := newSpinReader(client, 0); r != nil {
		t.Error("spinRead=0 gave a spinning reader")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if r := newSpinReader(a, time.Millisecond); r != nil {
		t.Error("a connection that is not TCP gave a spinning reader")
	}
}

// TestSpinReaderOverRawIO: mode=direct wraps its TCP connection in driver.RawIO before
// it asks for a spinning reader, and spinRead must still apply to it.
func TestSpinReaderOverRawIO(t *testing.T) {
	client, server := tcpPair(t)
	r := newSpinReader(driver.RawIO(client), 50*time.Microsecond)
	if r == nil {
		t.Fatal("newSpinReader returned nil for a TCP connection behind driver.RawIO")
	}
	go func() { _, _ = server.Write([]byte("+OK\r\n")) }()
	rd := newRespReader(r)
	if _, _, _, err := rd.reply(); err != nil {
		t.Fatalf("reply: %v", err)
	}
}
