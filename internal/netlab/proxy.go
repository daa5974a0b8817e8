package netlab

import (
	"net"
	"sync"
	"testing"
	"time"
)

// delayProxy listens on host and forwards each connection to target, every chunk read
// delivered d after it was read, in order, in both directions; it stops when t ends.
func delayProxy(t testing.TB, host, target string, d time.Duration) string {
	t.Helper()
	return Proxy(t, host, target, func(dst, src net.Conn) { delayCopy(dst, src, d) })
}

// Proxy listens on host and forwards each connection to target, each direction through
// copy (which must return when either connection is closed); it returns the address it
// listens on. When t ends it stops listening, closes every connection and waits for the
// copies. A test's own link (one that can be cut, say) is a copy function.
func Proxy(t testing.TB, host, target string, copy func(dst, src net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("netlab: proxy to %s: %v", target, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				_ = in.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, in, out)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); copy(out, in) }()
			go func() { defer wg.Done(); copy(in, out) }()
		}
	}()
	return ln.Addr().String()
}

// delayCopy copies src to dst, each chunk written d after it was read; it closes dst's
// writing side when src ends, and both when either fails.
func delayCopy(dst, src net.Conn, d time.Duration) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{time.Now().Add(d), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			_ = src.Close()
			break
		}
	}
	for range q { // the reader may be blocked on a full queue
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
