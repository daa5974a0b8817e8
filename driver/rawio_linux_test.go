package driver

import (
	"net"
	"testing"
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
	var _ net.Conn = c
}
