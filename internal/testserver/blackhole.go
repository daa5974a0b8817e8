package testserver

import (
	"net"
	"sync"
	"testing"
)

// BlackHole returns the address of a listener on 127.0.0.1 that accepts connections and
// never answers, as a stopped process or a wedged server does once the kernel has
// completed the handshake: a client's set-up after the connect (TLS, AUTH, STARTUP)
// waits until its own bound. The listener and the connections it holds are closed when t
// ends.
func BlackHole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("black hole: %v", err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
