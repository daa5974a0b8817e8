package http

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func TestTemplateExpand(t *testing.T) {
	v := &vars{key: "a b/é", value: []byte{0, '+', 'z'}, seq: 42, op: "read1"}
	for _, tc := range []struct {
		tmpl   string
		escape bool
		want   string
	}{
		{"/kv/{key}", true, "/kv/a%20b%2F%C3%A9"},
		{"/kv/{key}", false, "/kv/a b/é"},
		{"/q?v={value}&n={seq}&op={op}", true, "/q?v=%00%2Bz&n=42&op=read1"},
		{`{"k":"{key}","v":"{value64}"}`, false, `{"k":"a b/é","v":"ACt6"}`},
		{"/b64/{value64}", true, "/b64/ACt6"},
		{"{unknown}{key", false, "{unknown}{key"},
		{"{{key}}", false, "{a b/é}"},
		{"static", true, "static"},
		{"", false, ""},
	} {
		got := string(compile(tc.tmpl).expand(nil, v, tc.escape))
		if got != tc.want {
			t.Errorf("expand(%q, escape=%v) = %q, want %q", tc.tmpl, tc.escape, got, tc.want)
		}
	}
}

func TestStatusTable(t *testing.T) {
	for _, tc := range []struct {
		slot  int // 0 read, 1 write, 6 other1, 8 delete
		spec  string
		code  int
		want  outcome
		isErr bool
	}{
		{0, "", 200, outOK, false},
		{0, "", 299, outOK, false},
		{0, "", 404, outMiss, false},
		{1, "", 404, outRejected, false},
		{6, "", 404, outRejected, false},
		{0, "", 429, outThrottled, false},
		{0, "", 503, outUnavailable, false},
		{0, "", 504, outTimeout, false},
		{0, "", 408, outTimeout, false},
		{0, "", 400, outRejected, false},
		{0, "", 302, outRejected, false},
		{0, "404=rejected", 404, outRejected, false},
		{0, "500-599=throttled, 503=other", 503, outOther, false},
		{0, "500-599=throttled, 503=other", 502, outThrottled, false},
		{1, "404=ok", 404, outOK, false},
		{1, "404=miss", 0, 0, true},
		{8, "", 404, outMiss, false}, // delete: nothing to delete is a miss
		{8, "404=ok", 404, outOK, false},
		{8, "410=miss", 410, outMiss, false},
		{6, "404=miss", 0, 0, true}, // other1: a miss means nothing to an op of kind other
		{0, "99=ok", 0, 0, true},
		{0, "600=ok", 0, 0, true},
		{0, "500-400=ok", 0, 0, true},
		{0, "404", 0, 0, true},
		{0, "404=fine", 0, 0, true},
	} {
		o := &op{kind: slots[tc.slot].kind}
		err := o.parseStatuses(tc.spec)
		if (err != nil) != tc.isErr {
			t.Errorf("%s slot %q: err %v, want error %v", slots[tc.slot].name, tc.spec, err, tc.isErr)
			continue
		}
		if err == nil && o.statuses[tc.code] != tc.want {
			t.Errorf("%s slot %q: status %d = %v, want %v", slots[tc.slot].name, tc.spec, tc.code, o.statuses[tc.code], tc.want)
		}
	}
}

// TestOptionErrors: bad operation options are field errors naming the option, found
// when options are built, long before Init.
func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		field  string
	}{
		{map[string]string{"read": "GET"}, "read"},
		{map[string]string{"read": "G ET /x"}, "read"},
		{map[string]string{"read": "GET kv/{key}"}, "read"},
		{map[string]string{"read": "GET http://{key}.example/"}, "read"},
		{map[string]string{"read": "GET /kv/{value}"}, "read"},
		{map[string]string{"read1": "POST /q", "read1Body": "{value}"}, "read1Body"},
		{map[string]string{"readHeaders": "no colon"}, "readHeaders"},
		{map[string]string{"readStatus": "404=nope"}, "readStatus"},
		{map[string]string{"writeCheck": "body"}, "writeCheck"},
		{map[string]string{"other1": "DELETE /kv/{key}", "other1Check": "json:x"}, "other1Check"},
		{map[string]string{"delete": "DELETE /kv/{key}", "deleteCheck": "body"}, "deleteCheck"},
		{map[string]string{"delete": "DELETE /kv/{key}", "deleteBody": "{value64}"}, "deleteBody"},
		{map[string]string{"delete": "DELETE /kv/{value}"}, "delete"},
		{map[string]string{"readCheck": "xml:x"}, "readCheck"},
		{map[string]string{"url": "ftp://h/"}, "url"},
		{map[string]string{"url": "http://u:pw@h/"}, "url"},
		{map[string]string{"url": "", "read": "GET /kv/{key}"}, "read"},
		{map[string]string{"headers": "X"}, "headers"},
		{map[string]string{"protocol": "h3"}, "protocol"},
		{map[string]string{"engine": "curl"}, "engine"},
		// fasthttp speaks HTTP/1.1 only: asked for HTTP/2 it must refuse, not downgrade.
		{map[string]string{"engine": "fasthttp", "protocol": "h2"}, "engine"},
	} {
		_, err := driver.NewOptions("http", tc.values)
		fes, ok := driver.AsFieldErrors(err)
		if !ok || !containsField(fes, tc.field) {
			t.Errorf("options %v: %v, want a field error for %s", tc.values, err, tc.field)
		}
	}
	if _, err := driver.NewOptions("http", map[string]string{"url": "", "read": "GET http://h:1/kv/{key}", "write": "PUT https://h/x/{key}"}); err != nil {
		t.Errorf("absolute URLs without a base URL: %v", err)
	}
}

func containsField(fes driver.FieldErrors, field string) bool {
	for _, fe := range fes {
		if fe.Field == field {
			return true
		}
	}
	return false
}

// TestSecretsRedacted: the auth header, also a malformed one, and the password never
// appear in option errors or in the options as shown.
func TestSecretsRedacted(t *testing.T) {
	const secret = "S3CRET-token"
	_, err := driver.NewOptions("http", map[string]string{"authHeader": "Bearer " + secret})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("malformed authHeader: %v; want an error without the value", err)
	}
	opts, err := driver.NewOptions("http", map[string]string{"authHeader": "Authorization: Bearer " + secret, "password": secret, "username": "u"})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range driver.Values(opts, true) {
		if strings.Contains(v, secret) {
			t.Errorf("option %s shown as %q", k, v)
		}
	}
}

// server is an in-process service for the unit tests: it records what it got and
// answers with the status and body the test sets.
type server struct {
	mu     sync.Mutex
	got    []string // method, URI and body of each request
	hdr    http.Header
	status int
	body   string
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, r.Method+" "+r.RequestURI+" "+string(b))
	s.hdr = r.Header.Clone()
	status, body := s.status, s.body
	s.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// engines are the client engines every behaviour test runs with: both must send the
// same requests and read answers the same way.
var engines = []string{engineFast, engineNetHTTP}

func TestRequestsOnTheWire(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) { testRequestsOnTheWire(t, engine) })
	}
}

func testRequestsOnTheWire(t *testing.T, engine string) {
	s := &server{status: 200, body: `{"data":{"items":[{"id":"k1"}]}}`}
	ts := httptest.NewServer(s)
	defer ts.Close()
	d, _, err := driver.Open(context.Background(), "http", map[string]string{
		"engine":     engine,
		"url":        ts.URL + "/api/",
		"headers":    "X-Common: 1 | Accept: application/json",
		"authHeader": "Authorization: Bearer tok",
		"read1":      "GET /search?q={key}",
		"read1Check": "json:data.items.0.id",
		"write1":     "POST /docs/{key}",
		"write1Body": `{"v":"{value64}","n":{seq}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	info := d.(*Driver).ConnectionInfo()
	if got := info["engine"]; got != engine {
		t.Errorf("ConnectionInfo engine = %q, want %q", got, engine)
	}
	if runtime.GOOS != "windows" && !strings.Contains(info["openFilesLimit"], "RLIMIT_NOFILE") {
		t.Errorf("ConnectionInfo openFilesLimit = %q, want the limit of connections", info["openFilesLimit"])
	}
	ctx := context.Background()
	got, err := d.(*Driver).Do(ctx, 0, "k 1", nil)
	if err != nil || string(got) != "k1" {
		t.Errorf("read1 = %q, %v; want the JSON field k1", got, err)
	}
	if _, err := d.(*Driver).Do(ctx, 2, "k1", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(ctx, "k2"); err != nil || string(got) != s.body {
		t.Errorf("read = %q, %v; want the body", got, err)
	}
	want := []string{
		"GET /api/search?q=k%201 ",
		`POST /api/docs/k1 {"v":"aGk=","n":1}`,
		"GET /api/kv/k2 ",
	}
	if strings.Join(s.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(s.got, "\n"), strings.Join(want, "\n"))
	}
	if s.hdr.Get("X-Common") != "1" || s.hdr.Get("Authorization") != "Bearer tok" || s.hdr.Get("Accept") != "application/json" {
		t.Errorf("headers of the last request: %v", s.hdr)
	}
	s.body = `{"data":{}}`
	if _, err := d.(*Driver).Do(ctx, 0, "k", nil); err == nil || !strings.Contains(err.Error(), `no field "items"`) {
		t.Errorf("json check on a body without the field: %v", err)
	}
	s.status, s.body = 404, "gone"
	if _, err := d.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("404 on read: %v, want a miss", err)
	}
}

// TestResponseSizeLimit: an answer above maxResponseSize fails, with or without a
// Content-Length.
func TestResponseSizeLimit(t *testing.T) {
	big := strings.Repeat("x", 2000)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/kv/chunked" {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		_, _ = io.WriteString(w, big)
	}))
	defer ts.Close()
	for _, engine := range engines {
		d, _, err := driver.Open(context.Background(), "http", map[string]string{"url": ts.URL, "maxResponseSize": "1000", "engine": engine})
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"sized", "chunked"} {
			if _, err := d.Read(context.Background(), key); err == nil || !strings.Contains(err.Error(), "maxResponseSize") {
				t.Errorf("%s: read of 2000 bytes (%s) with maxResponseSize=1000: %v", engine, key, err)
			}
		}
		d.Close()
	}
}

// BenchmarkRead measures one GET against an in-process server from parallel goroutines;
// allocs/op is the driver's and net/http's client side plus the server's, so compare it
// between versions of the driver, not with other drivers.
func BenchmarkRead(b *testing.B) {
	value := strings.Repeat("v", 100)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, value)
	}))
	defer ts.Close()
	d, _, err := driver.Open(context.Background(), "http", map[string]string{"url": ts.URL})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := d.Read(ctx, "bench"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkExpandURL(b *testing.B) {
	t := compile("/kv/{key}?n={seq}")
	v := &vars{key: "key-000123", seq: 99}
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = t.expand(buf[:0], v, true)
	}
}

// TestWriteAfterServerClosedIdleConnection: a server that closes kept-alive connections
// idle for 50 ms (as Node.js does after 5 s) must not fail the next write. net/http
// notices the close while the connection is idle; fasthttp notices when it sends, and
// sends again on a new connection.
func TestWriteAfterServerClosedIdleConnection(t *testing.T) {
	s := &server{status: 204}
	ts := httptest.NewUnstartedServer(s)
	ts.Config.IdleTimeout = 50 * time.Millisecond
	ts.Start()
	defer ts.Close()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			d, _, err := driver.Open(context.Background(), "http", map[string]string{"url": ts.URL, "engine": engine})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for i := 0; i < 3; i++ {
				if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
					t.Errorf("write %d, after the server closed the idle connection: %v", i, err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			s.mu.Lock()
			ct := s.hdr.Get("Content-Type")
			s.mu.Unlock()
			if ct != "" {
				t.Errorf("write sent Content-Type %q; want none unless configured", ct)
			}
		})
	}
}

// TestKeepAliveOff: keepAlive=false opens a connection per request with either engine.
func TestKeepAliveOff(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(200)
	}))
	defer ts.Close()
	for _, engine := range engines {
		for _, keepAlive := range []string{"true", "false"} {
			mu.Lock()
			clear(conns)
			mu.Unlock()
			d, _, err := driver.Open(context.Background(), "http", map[string]string{"url": ts.URL, "engine": engine, "keepAlive": keepAlive})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				if _, err := d.Read(context.Background(), "k"); err != nil {
					t.Fatalf("%s keepAlive=%s: %v", engine, keepAlive, err)
				}
			}
			d.Close()
			mu.Lock()
			n := len(conns)
			mu.Unlock()
			if want := map[string]int{"true": 1, "false": 5}[keepAlive]; n != want {
				t.Errorf("%s keepAlive=%s: 5 sequential reads used %d connections, want %d", engine, keepAlive, n, want)
			}
		}
	}
}
