package script

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/http" // a nested driver with named operations
)

// TestHTTPHelper calls a test server from a script: answers as objects, failures
// without an answer thrown with their class, the operation's deadline ending a stalled
// request.
func TestHTTPHelper(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Got", r.Header.Get("X-Put"))
			_, _ = w.Write(append([]byte(r.Method+":"), b...))
		case "/stall":
			<-r.Context().Done()
		default:
			http.Error(w, "no", http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + l.Addr().String()
	_ = l.Close()
	d := open(t, map[string]string{"source": `
var base;
function init(config) { base = config.url; }
function read(key) {
	switch (key) {
	case "get": var r = http.get(base + "/echo"); return r.status + " " + r.text;
	case "post":
		var r = http.post(base + "/echo", bytes("hi"), {"X-Put": "yes"});
		return r.status + " " + text(r.body) + " " + r.headers["x-got"];
	case "status": var r = http.get(base + "/other"); if (r.status === 429) { fail("throttled", "server said 429"); } return "?";
	case "stall": http.get(base + "/stall"); return "?";
	case "refused": http.get(config_closed); return "?";
	}
}
var config_closed = "` + closedURL + `";
function write(key, value) {}
`, "config": `{"url": "` + srv.URL + `"}`, "callTimeout": "10m"})
	ctx := context.Background()
	for key, want := range map[string]string{"get": "200 GET:", "post": "200 POST:hi yes"} {
		if v, err := d.Read(ctx, key); err != nil || string(v) != want {
			t.Errorf("%s = %q, %v; want %q", key, v, err, want)
		}
	}
	if _, err := d.Read(ctx, "status"); driver.Classify(err) != driver.ClassThrottled {
		t.Errorf("429 judged by the script: %v (class %v), want throttled", err, driver.Classify(err))
	}
	if _, err := d.Read(ctx, "refused"); driver.Classify(err) != driver.ClassUnavailable {
		t.Errorf("refused connection: %v (class %v), want unavailable", err, driver.Classify(err))
	}
	// The server answers only once the request is given up: the deadline must end it.
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	took := within(t, "a stalled request with a 100ms deadline", func() { _, err = d.Read(tctx, "stall") })
	if driver.Classify(err) != driver.ClassTimeout {
		t.Errorf("stalled request: %v (class %v) after %v; want a timeout at the deadline", err, driver.Classify(err), took)
	}
}

// TestHTTPBodyOutlivesTheCall: net/http may still be sending a request's body after the
// answer came back, and reads it until it closes it on its own goroutine (net/http's
// RoundTripper contract). A server that refuses a request from its headers and holds the
// connection (Elasticsearch's 413 over its content length) answers while the client is
// still sending. So http.request must not hand the transport the script's own memory,
// which the script may refill at once for its next request (or the engine's value buffer,
// reused by the next operation): under -race that is a reported race between the
// transport's writer and the script.
func TestHTTPBodyOutlivesTheCall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		_, _ = bw.WriteString("HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 9\r\n\r\ntoo large")
		_ = bw.Flush()
		time.Sleep(300 * time.Millisecond) // then the connection closes under the rest
	}))
	defer srv.Close()
	d := open(t, map[string]string{"source": `
var base, ab = new ArrayBuffer(8 << 20), buf = new Uint8Array(ab);
function init(config) { base = config.url; }
function read(key) { return "?"; }
function write(key, value) {
	for (var i = 0; i < 8; i++) {
		buf.fill(i);
		var r = http.post(base + "/big", ab);
		if (r.status !== 413) { fail("other", "status " + r.status); }
	}
}
`, "config": `{"url": "` + srv.URL + `"}`})
	// A body refused this way may also end in a failed write on the closed connection.
	if err := d.Write(context.Background(), "k", []byte("v")); err != nil && driver.Classify(err) != driver.ClassUnavailable {
		t.Errorf("write: %v (class %v), want the script's 413s or a closed connection", err, driver.Classify(err))
	}
}

// TestNestedOperations calls a nested driver's named operations (the http driver's
// read1 and other1) through a store handle's op.
func TestNestedOperations(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/search/") {
			_, _ = w.Write([]byte("found " + strings.TrimPrefix(r.URL.Path, "/search/")))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	d := open(t, map[string]string{"source": `
var api;
function init(config) { api = stores.open("http", {url: config.url, read1: "GET /search/{key}", other1: "DELETE /kv/{key}", other1Status: "404=ok"}); }
function read(key) { return api.op("read1", key); }
function write(key, value) { api.op("other1", key); }
function read1(key) { return api.read(key); }
function other1(key) { api.op("nosuch", key); }
`, "config": `{"url": "` + srv.URL + `"}`})
	ctx := context.Background()
	if v, err := d.Read(ctx, "abc"); err != nil || string(v) != "found abc" {
		t.Fatalf("read through op read1 = %q, %v", v, err)
	}
	if err := d.Write(ctx, "abc", nil); err != nil {
		t.Fatalf("write through op other1: %v", err)
	}
	if _, err := d.Do(ctx, 1, "abc", nil); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read1 through a nested miss: %v, want ErrNotFound", err)
	}
	if _, err := d.Do(ctx, 5, "abc", nil); err == nil || !strings.Contains(err.Error(), `no operation "nosuch"`) {
		t.Fatalf("unknown nested operation: %v", err)
	}
}

// TestHelpers checks the small helpers.
func TestHelpers(t *testing.T) {
	d := open(t, map[string]string{"source": `
function read(key) {
	var n = randomInt(10);
	if (n < 0 || n >= 10 || n !== Math.floor(n)) { throw new Error("randomInt " + n); }
	var b = randomBytes(13);
	if (b.byteLength !== 13) { throw new Error("randomBytes " + b.byteLength); }
	var t0 = now(); sleep(20); var dt = now() - t0;
	if (dt < 15 || dt > 5000) { throw new Error("sleep(20) took " + dt); }
	if (text(bytes("héllo")) !== "héllo") { throw new Error("text/bytes"); }
	console.log("helpers", "ok", 1); console.warn("a warning");
	return bytes("ok");
}
function write(key, value) { randomInt(0); }
`})
	ctx := context.Background()
	if v, err := d.Read(ctx, "k"); err != nil || string(v) != "ok" {
		t.Fatalf("read = %q, %v", v, err)
	}
	if err := d.Write(ctx, "k", nil); err == nil || !strings.Contains(err.Error(), "randomInt(n)") {
		t.Fatalf("randomInt(0): %v, want a TypeError", err)
	}
}
