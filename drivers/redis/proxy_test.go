package redis

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func TestIsHello(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"*2\r\n$5\r\nhello\r\n$1\r\n3\r\n", true},
		{"*1\r\n$5\r\nHELLO\r\n", true},
		{"*4\r\n$5\r\nhello\r\n$1\r\n3\r\n$4\r\nauth\r\n$4\r\n*a\r\n\r\n", true}, // an argument holding CR LF *
		{"*3\r\n$5\r\nhello\r\n$1\r\n3\r\n", false},                              // fewer arguments than announced
		{"*5\r\n$5\r\nhello\r\n$1\r\n3\r\n$4\r\nauth\r\n$7\r\ndefault\r\n$6\r\n\r\n*pw!\r\n", true},
		{"*2\r\n$5\r\nhello\r\n$1\r\n3\r\n*1\r\n$4\r\nping\r\n", false}, // a pipeline
		{"*1\r\n$4\r\nping\r\n", false},
		{"*2\r\n$3\r\nget\r\n$5\r\nhello\r\n", false},
		{"", false},
		{"*x\r\n", false},
		{"*1\r\n$9\r\nhello\r\n", false},
	} {
		if got := isHello([]byte(tc.in)); got != tc.want {
			t.Errorf("isHello(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestProxyConnAnswersHello checks that the first HELLO never reaches the server and is
// refused locally, and that everything after it passes through unchanged.
func TestProxyConnAnswersHello(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := &proxyConn{Conn: client}
	defer c.Close()
	_ = client.SetDeadline(time.Now().Add(5 * time.Second))
	_ = server.SetDeadline(time.Now().Add(5 * time.Second))

	if _, err := c.Write([]byte("*2\r\n$5\r\nhello\r\n$1\r\n3\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(helloRefusal))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != helloRefusal {
		t.Fatalf("reply to HELLO = %q, %v; want the local refusal", buf, err)
	}
	ping := "*1\r\n$4\r\nping\r\n"
	go func() {
		b := make([]byte, len(ping))
		if _, err := io.ReadFull(server, b); err != nil || string(b) != ping {
			t.Errorf("server got %q, %v; want only the PING", b, err)
		}
		_, _ = server.Write([]byte("+PONG\r\n"))
	}()
	if _, err := c.Write([]byte(ping)); err != nil {
		t.Fatal(err)
	}
	buf = make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
		t.Fatalf("reply to PING = %q, %v", buf, err)
	}
}

func TestProxyErrorClass(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want driver.Class
		ok   bool
	}{
		{"ERR Connection refused", driver.ClassUnavailable, true},
		{"ERR Connection reset by peer", driver.ClassUnavailable, true},
		{"ERR Host is down", driver.ClassUnavailable, true},
		{"ERR Connection timed out", driver.ClassTimeout, true},
		{"ERR unknown command 'foo'", 0, false},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", 0, false},
	} {
		got, ok := proxyErrorClass(tc.msg)
		if got != tc.want || ok != tc.ok {
			t.Errorf("proxyErrorClass(%q) = %v, %v; want %v, %v", tc.msg, got, ok, tc.want, tc.ok)
		}
	}
}
