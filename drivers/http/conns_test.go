package http

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestConnectionsOpenedAtInit: with connections=N, Init opens N keep-alive connections
// and one worker's requests then go over each in turn, so a node holds more connections
// than it has requests in flight, and none of them idles out.
func TestConnectionsOpenedAtInit(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	opened := 0
	perConn := map[string]int{} // the client's address and port -> requests
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		perConn[r.RemoteAddr]++
		mu.Unlock()
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	ts.Start()
	defer ts.Close()
	d, _, err := driver.Open(context.Background(), "http", map[string]string{
		"url": ts.URL, "protocol": "http1", "readCheck": "none", "connections": fmt.Sprint(n),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Init returns once the client's connects are done; the server counts each when its
	// accept loop gets to it, which may be a moment later.
	count := func() int { mu.Lock(); defer mu.Unlock(); return opened }
	for deadline := time.Now().Add(10 * time.Second); count() < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if got := count(); got != n {
		t.Errorf("after Init: %d connections opened, want %d", got, n)
	}
	for i := range 3 * n {
		if _, err := d.Read(context.Background(), fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != n || len(perConn) != n {
		t.Errorf("after %d reads one at a time: %d connections opened, %d used; want %d and %d", 3*n, opened, len(perConn), n, n)
	}
	for c, k := range perConn {
		if k != 3 {
			t.Errorf("connection %s carried %d requests, want 3 (each in turn): %v", c, k, perConn)
		}
	}
}

func TestConnectionsErrors(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"connections": "10", "engine": "nethttp"}, "engine fasthttp"},
		{map[string]string{"connections": "10", "protocol": "h2"}, "engine fasthttp"},
		{map[string]string{"connections": "10", "maxConnsPerHost": "4"}, "maxConnsPerHost (4)"},
		{map[string]string{"connections": "-1"}, "connections"},
		{map[string]string{"connections": "10", "keepAlive": "false"}, "keepAlive=false"},
	} {
		_, err := driver.NewOptions("http", tc.values)
		fes, ok := driver.AsFieldErrors(err)
		if !ok || !containsField(fes, "connections") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("options %v: %v, want a field error for connections saying %q", tc.values, err, tc.want)
		}
	}
	// Nothing listening: Init fails, naming the option and how far it got.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, _, err = driver.Open(context.Background(), "http", map[string]string{"url": "http://" + addr, "connections": "3"})
	if err == nil || !strings.Contains(err.Error(), "connections=3") || !strings.Contains(err.Error(), "0 opened") {
		t.Errorf("Init with connections=3 and no server: %v, want an error naming connections=3 and 0 opened", err)
	}
}
