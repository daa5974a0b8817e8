package gremlin

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ndbench/ndbench/driver"
)

func TestRegisteredSchema(t *testing.T) {
	def, ok := driver.Lookup("gremlin")
	if !ok {
		t.Fatal("driver gremlin is not registered")
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]driver.Option{}
	for _, o := range schema {
		got[o.Name] = o
	}
	for name, def := range map[string]string{
		"addrs": "127.0.0.1:8182", "path": "/gremlin", "traversalSource": "g", "vertexLabel": "level1",
		"keyProperty": "prop_customId", "valueProperty": "metadata", "upsert": "true", "poolSize": "8",
		"maxMessageSize": "2MiB", "serializer": "graphbinary", "username": "", "password": "", "tls": "false", "timeout": "5s", "connectTimeout": "5s",
	} {
		if o, ok := got[name]; !ok {
			t.Errorf("option %s missing from schema", name)
		} else if o.Default != def {
			t.Errorf("option %s: default %q, want %q", name, o.Default, def)
		}
	}
	if !got["password"].Secret {
		t.Error("password must be secret")
	}
	if !got["upsert"].Live {
		t.Error("upsert must be live")
	}
}

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]string
		badOpts []string // option names expected in field errors; empty means valid
	}{
		{"defaults", nil, nil},
		{"two servers", map[string]string{"addrs": "a:8182,b:8182"}, nil},
		{"address without port", map[string]string{"addrs": "janus"}, []string{"addrs"}},
		{"no address", map[string]string{"addrs": ""}, []string{"addrs"}},
		{"relative path", map[string]string{"path": "gremlin"}, []string{"path"}},
		{"empty label", map[string]string{"vertexLabel": " "}, []string{"vertexLabel"}},
		{"empty traversal source", map[string]string{"traversalSource": ""}, []string{"traversalSource"}},
		{"same key and value property", map[string]string{"keyProperty": "p", "valueProperty": "p"}, []string{"valueProperty"}},
		{"reserved property", map[string]string{"valueProperty": writtenAtProperty}, []string{"keyProperty"}},
		{"pool size zero", map[string]string{"poolSize": "0"}, []string{"poolSize"}},
		{"message size too small", map[string]string{"maxMessageSize": "1KiB"}, []string{"maxMessageSize"}},
		{"timeout too short", map[string]string{"timeout": "1ms"}, []string{"timeout"}},
		{"key file without cert", map[string]string{"tlsKeyFile": "/k.pem"}, []string{"tlsCertFile"}},
		{"upsert off", map[string]string{"upsert": "false"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := driver.NewOptions("gremlin", tt.values)
			if len(tt.badOpts) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("want field errors for %v, got %v", tt.badOpts, err)
			}
			for _, want := range tt.badOpts {
				found := false
				for _, fe := range fes {
					found = found || (fe.Field == want && fe.Allowed != "")
				}
				if !found {
					t.Errorf("no field error naming %s with the allowed values in %v", want, fes)
				}
			}
		})
	}
}

func TestInitRejectsBadOptionsWithoutConnecting(t *testing.T) {
	opts, err := driver.NewOptions("gremlin", nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.(*Options).Path = "nope"
	d := &Driver{}
	defer d.Close()
	if _, ok := driver.AsFieldErrors(d.Init(context.Background(), opts)); !ok {
		t.Fatal("Init with a bad path: want field errors")
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want driver.Class
	}{
		{&statusError{code: statusTooManyRequests}, driver.ClassThrottled},
		{&statusError{code: statusServerTimeout}, driver.ClassTimeout},
		{&statusError{code: statusTemporary}, driver.ClassUnavailable},
		{&statusError{code: statusEvaluation, message: "No signature of method: nosuchstep()"}, driver.ClassRejected},
		{&statusError{code: statusEvaluation, message: "Conflict: element modified in another transaction"}, driver.ClassThrottled},
		{&statusError{code: statusEvaluation, message: "org.janusgraph.diskstorage.locking.PermanentLockingException: Local lock contention"}, driver.ClassThrottled},
		{&statusError{code: statusUnauthorized}, driver.ClassRejected},
		{&statusError{code: statusServerError}, driver.ClassOther},
		{errClosed, driver.ClassUnavailable},
		{websocket.ErrBadHandshake, driver.ClassRejected},
		{&websocket.CloseError{Code: websocket.CloseAbnormalClosure}, driver.ClassUnavailable},
		{context.DeadlineExceeded, driver.ClassTimeout},
	} {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// reply encodes a response message as Gremlin Server sends it.
func reply(id requestID, status int32, msg string, data ...any) []byte {
	b := []byte{0x81, 0}
	b = append(b, id[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(status))
	if msg == "" {
		b = append(b, 1)
	} else {
		b = appendBareString(append(b, 0), msg)
	}
	b = binary.BigEndian.AppendUint32(b, 0) // status attributes
	b = binary.BigEndian.AppendUint32(b, 0) // meta
	b = append(b, gbList, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	for _, v := range data {
		b, _ = appendValue(b, v)
	}
	return b
}

func TestDecodeResponse(t *testing.T) {
	id := newIDSource().next()
	r, err := decodeResponse(reply(id, 200, "", "abc", int64(7), kv{"k", "v"}, nil, []any{"x", int32(3), true}))
	if err != nil {
		t.Fatal(err)
	}
	if r.id != id || r.status != 200 || len(r.data) != 5 || r.data[0] != "abc" || r.data[1] != int64(7) || r.data[3] != nil {
		t.Fatalf("decoded %+v", r)
	}
	if l, ok := r.data[4].([]any); !ok || len(l) != 3 || l[0] != "x" || l[1] != int64(3) || l[2] != true {
		t.Errorf("list: %#v", r.data[4])
	}
	if m, ok := r.data[2].(map[string]any); !ok || m["k"] != "v" {
		t.Errorf("map: %#v", r.data[2])
	}
	r, err = decodeResponse(reply(id, 597, "boom"))
	if err != nil || r.status != 597 || r.message != "boom" {
		t.Fatalf("error reply: %+v, %v", r, err)
	}
	// Every truncation of a valid message is an error, never a panic.
	full := reply(id, 200, "m", "abc", kv{"k", int64(1)})
	for n := range len(full) {
		if _, err := decodeResponse(full[:n]); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", n, len(full))
		}
	}
	if _, err := decodeResponse(append(reply(id, 200, "")[:len(reply(id, 200, ""))-6], 0x99, 0)); err == nil ||
		!strings.Contains(err.Error(), "0x99") {
		t.Errorf("unknown type: %v, want an error naming the type code", err)
	}
}

func TestRequestIDsAreUUIDv4(t *testing.T) {
	s := newIDSource()
	a, b := s.next(), s.next()
	if a == b {
		t.Fatal("two ids are equal")
	}
	if a[6]>>4 != 4 || a[8]>>6 != 2 {
		t.Errorf("id %x is not a version-4 variant-1 UUID", a)
	}
}

// fakeServer is a Gremlin Server stand-in speaking enough GraphBinary to check the
// driver's SASL handshake and its handling of replies that never come.
func fakeServer(t *testing.T, handle func(ws *websocket.Conn, id requestID, op string, args map[string]any)) string {
	t.Helper()
	up := websocket.Upgrader{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			id, op, args, err := decodeRequest(msg)
			if err != nil {
				t.Errorf("fake server: %v", err)
				return
			}
			handle(ws, id, op, args)
		}
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// decodeRequest parses what appendRequest wrote.
func decodeRequest(msg []byte) (requestID, string, map[string]any, error) {
	var id requestID
	d := &decoder{b: msg}
	n, err := d.byte1()
	if err != nil {
		return id, "", nil, err
	}
	if _, err := d.take(int(n) + 1); err != nil { // MIME type, version
		return id, "", nil, err
	}
	p, err := d.take(16)
	if err != nil {
		return id, "", nil, err
	}
	copy(id[:], p)
	op, err := d.bareString()
	if err != nil {
		return id, "", nil, err
	}
	if _, err := d.bareString(); err != nil {
		return id, "", nil, err
	}
	args, err := d.bareMap(0)
	return id, op, args, err
}

func TestSASLPlain(t *testing.T) {
	const user, pw = "bench", "s3cret:pw"
	addr := fakeServer(t, func(ws *websocket.Conn, id requestID, op string, args map[string]any) {
		switch op {
		case "eval":
			// Challenge every request on an unauthenticated connection, as Gremlin Server does.
			_ = ws.WriteMessage(websocket.BinaryMessage, reply(id, statusAuthenticate, ""))
		case "authentication":
			want := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pw))
			if args["sasl"] == want && args["saslMechanism"] == "PLAIN" {
				_ = ws.WriteMessage(websocket.BinaryMessage, reply(id, statusSuccess, "", int64(0)))
			} else {
				_ = ws.WriteMessage(websocket.BinaryMessage, reply(id, statusUnauthorized, "Username and/or password are incorrect"))
			}
		}
	})
	cfg := &dialConfig{url: "ws://" + addr + "/gremlin", addr: addr, username: user, password: pw,
		timeout: 2 * time.Second, ids: newIDSource(), maxMessage: 64 << 10, writePool: &writePool{}, codec: codecs["graphbinary"]}
	c, err := dial(context.Background(), cfg)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	c.close(errClosed)
	cfg.password = "wrong"
	_, err = dial(context.Background(), cfg)
	if Classify(err) != driver.ClassRejected || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: class %v (%v), want rejected without the password", Classify(err), err)
	}
}

// TestDeadlineWithoutReply: a server that never answers cannot hold an operation past its
// context, and the late reply of a call that gave up is dropped without harm.
func TestDeadlineWithoutReply(t *testing.T) {
	release := make(chan struct{})
	addr := fakeServer(t, func(ws *websocket.Conn, id requestID, op string, args map[string]any) {
		if args["gremlin"] == pingScript {
			_ = ws.WriteMessage(websocket.BinaryMessage, reply(id, statusSuccess, "", int64(0)))
			return
		}
		<-release // stall, then answer late
		_ = ws.WriteMessage(websocket.BinaryMessage, reply(id, statusSuccess, "", base64.StdEncoding.EncodeToString([]byte("late"))))
	})
	d, _, err := driver.Open(context.Background(), "gremlin", map[string]string{"addrs": addr, "poolSize": "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = d.Read(ctx, "k")
	if el := time.Since(t0); el > time.Second || driver.Classify(err) != driver.ClassTimeout {
		t.Fatalf("read on a stalled server: %v after %v, want timeout at 200ms", err, el)
	}
	close(release)
	time.Sleep(100 * time.Millisecond) // the late reply arrives and finds no caller
	g := d.(*Driver)
	if got, err := g.submit(context.Background(), pingScript); err != nil || len(got) != 1 {
		t.Fatalf("the connection after a late reply: %v, %v", got, err)
	}
}

// TestPasswordNeverInOptionErrors: a mistyped key or a bad value beside the password
// yields errors and listings without it.
func TestPasswordNeverInOptionErrors(t *testing.T) {
	const pw = "Sup3rS3cret-pw"
	for _, values := range []map[string]string{
		{"pasword": pw},                   // a mistyped key
		{"Password": pw},                  // wrong case
		{"password": pw, "poolSize": "0"}, // a bad value beside the password
		{"password": pw, "addrs": "nohost"},
	} {
		_, err := driver.NewOptions("gremlin", values)
		if err == nil {
			t.Errorf("options with keys %d accepted", len(values))
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("option error shows the password: %v", err)
		}
	}
	opts, err := driver.NewOptions("gremlin", map[string]string{"password": pw, "username": "u"})
	if err != nil {
		t.Fatal(err)
	}
	if v := driver.Values(opts, true)["password"]; v != driver.Redacted {
		t.Errorf("Values(redact) password = %q", v)
	}
	if s := fmt.Sprintf("%v %+v %#v", opts, opts, opts); strings.Contains(s, pw) {
		t.Errorf("printing the options shows the password: %s", s)
	}
}

func TestGraphSON(t *testing.T) {
	id := newIDSource().next()
	msg, err := appendGraphSONRequest(nil, id, "eval", "", "gremlin", "g.V(x)", "bindings", kv{"x", int64(7), "s", "a\"b\x00é"})
	if err != nil {
		t.Fatal(err)
	}
	if int(msg[0]) != len(graphSON3Mime) || string(msg[1:1+len(graphSON3Mime)]) != graphSON3Mime {
		t.Fatalf("no MIME header: %q", msg)
	}
	var m map[string]any
	if err := json.Unmarshal(msg[1+len(graphSON3Mime):], &m); err != nil {
		t.Fatalf("request is not JSON: %v: %s", err, msg)
	}
	want := `{"requestId":{"@type":"g:UUID","@value":"` + id.String() + `"},"op":"eval","processor":"","args":{"@type":"g:Map","@value":["gremlin","g.V(x)","bindings",{"@type":"g:Map","@value":["x",{"@type":"g:Int64","@value":7},"s","a\"b\u0000é"]}]}}`
	if got := string(msg[1+len(graphSON3Mime):]); got != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
	// A reply as Gremlin Server 3.7 sends it.
	reply := `{"requestId":"` + id.String() + `","status":{"message":"","code":200,"attributes":{"@type":"g:Map","@value":[]}},` +
		`"result":{"data":{"@type":"g:List","@value":[{"@type":"g:Int64","@value":12},"txt",{"@type":"g:Map","@value":["k",{"@type":"g:Double","@value":1.5}]}]},"meta":{"@type":"g:Map","@value":[]}}}`
	r, err := decodeGraphSONResponse([]byte(reply))
	if err != nil {
		t.Fatal(err)
	}
	if r.id != id || r.status != 200 || len(r.data) != 3 || r.data[0] != int64(12) || r.data[1] != "txt" {
		t.Fatalf("decoded %+v", r)
	}
	if mm, ok := r.data[2].(map[string]any); !ok || mm["k"] != 1.5 {
		t.Errorf("map: %#v", r.data[2])
	}
	if _, err := decodeGraphSONResponse([]byte(`{"requestId":"x","status":{"code":200}}`)); err == nil {
		t.Error("a bad request id decoded")
	}
	if _, err := decodeGraphSONResponse([]byte(`{"result":{"data":{"@type":"g:Vertex","@value":{}}}}`)); err == nil ||
		!strings.Contains(err.Error(), "g:Vertex") {
		t.Errorf("unknown type: %v, want an error naming it", err)
	}
}
