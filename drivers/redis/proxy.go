package redis

// What RESP proxies (twemproxy, Dynomite) need from the driver beyond what Redis does:
// proxyConn (option proxy=true, for go-redis's modes; mode=direct never sends HELLO)
// and proxyErrorClass (always: the proxies' own ERR replies for a failed backend).

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/ndbench/ndbench/driver"
)

// helloRefusal is the reply proxyConn gives in place of the proxy. It is an ERR reply, so
// go-redis takes it as "HELLO not supported" and carries on in RESP2.
const helloRefusal = "-ERR unknown command 'HELLO' (answered by ndbench: RESP proxies close the connection on HELLO)\r\n"

// proxyConn answers a HELLO written as the connection's first command itself and passes
// everything else through (goredisDialer puts it over every connection with proxy=true).
// go-redis v9 sends HELLO first on every new connection. twemproxy (and Dynomite, derived
// from it) close the client connection on any command they do not know, HELLO included,
// and go-redis falls back to RESP2 only on an error reply, not on a closed connection:
// without this every connection through such a proxy fails with EOF (redis/go-redis#2616).
type proxyConn struct {
	net.Conn

	mu      sync.Mutex
	checked bool   // the first write has been looked at
	pending []byte // the refusal, until read
}

// Write swallows a first command that is HELLO and queues its refusal for Read.
func (c *proxyConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if !c.checked {
		c.checked = true
		if isHello(b) {
			c.pending = append(c.pending, helloRefusal...)
			c.mu.Unlock()
			return len(b), nil
		}
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// Read returns the queued refusal before anything from the proxy.
func (c *proxyConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(b)
}

// isHello reports whether b is exactly one RESP command whose name is HELLO, as go-redis
// writes it: "*N\r\n$5\r\nhello\r\n..." (any case). Anything else, a pipeline starting
// with HELLO included, is not touched.
func isHello(b []byte) bool {
	n, rest, ok := respLine(b, '*')
	if !ok || n < 1 {
		return false
	}
	for i := 0; i < n; i++ {
		size, after, ok := respLine(rest, '$')
		if !ok || size < 0 || len(after) < size+2 || string(after[size:size+2]) != "\r\n" {
			return false
		}
		if i == 0 && !strings.EqualFold(string(after[:size]), "hello") {
			return false
		}
		rest = after[size+2:]
	}
	return len(rest) == 0
}

// respLine parses "<kind><integer>\r\n" at the start of b.
func respLine(b []byte, kind byte) (int, []byte, bool) {
	if len(b) == 0 || b[0] != kind {
		return 0, nil, false
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return 0, nil, false
	}
	n, err := strconv.Atoi(string(b[1:i]))
	if err != nil {
		return 0, nil, false
	}
	return n, b[i+2:], true
}

// proxyErrorClass classifies the error replies a RESP proxy makes up itself when a backend
// fails: twemproxy and Dynomite answer "ERR " followed by the C library's text for the
// backend connection's errno. serverClass counts every ERR as rejected, which tells a user
// the request was bad when a backend was down; its ERR case would consult this first.
func proxyErrorClass(msg string) (driver.Class, bool) {
	text, ok := strings.CutPrefix(msg, "ERR ")
	if !ok {
		return 0, false
	}
	switch text {
	case "Connection timed out":
		return driver.ClassTimeout, true
	case "Connection refused", "Connection reset by peer", "Host is down", "No route to host",
		"Network is unreachable", "Broken pipe":
		return driver.ClassUnavailable, true
	}
	return 0, false
}
