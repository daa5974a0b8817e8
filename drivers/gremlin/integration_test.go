//go:build integration

package gremlin

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.GremlinServer, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "gremlin", map[string]string{"addrs": srv.Addr()}, values).(*Driver)
}

func TestWriteReadMiss(t *testing.T) {
	d := open(t, nil)
	ctx := drivertest.Context(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	values := map[string][]byte{"rw-bin": all, "rw-empty": {}, "rw-text": []byte("hello")}
	for k, v := range values {
		if err := d.Write(ctx, k, v); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	for k, want := range values {
		got, err := d.Read(ctx, k)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read %s: %q, %v; want %q", k, got, err, want)
		}
	}
	if _, err := d.Read(ctx, "rw-never"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read of a missing key: %v, want ErrNotFound", err)
	}
}

// raw runs a script on the test server through a driver of its own: for checking and
// tampering behind the tested driver's back.
func raw(t testing.TB, script string, bindings ...any) []any {
	t.Helper()
	r := open(t, nil)
	data, err := r.submit(drivertest.Context(t), script, bindings...)
	if err != nil {
		t.Fatalf("raw script %s: %v", script, err)
	}
	return data
}

// vertices counts the vertices of key under the default label and key property.
func vertices(t testing.TB, key string) int64 {
	t.Helper()
	data := raw(t, "g.V().has(l, kp, k).count()", "l", "level1", "kp", "prop_customId", "k", key)
	if len(data) != 1 {
		t.Fatalf("count of %s: %v", key, data)
	}
	n, _ := data[0].(int64)
	return n
}

// TestUpsertKeepsOneVertex: with upsert (the default) rewriting a key updates its vertex;
// with upsert=false every write adds one, and a read returns the latest write.
func TestUpsertKeepsOneVertex(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, nil)
	for i := range 5 {
		if err := d.Write(ctx, "ups-1", []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := vertices(t, "ups-1"); n != 1 {
		t.Fatalf("5 upserts of one key left %d vertices, want 1", n)
	}
	if got, err := d.Read(ctx, "ups-1"); err != nil || !bytes.Equal(got, []byte{4}) {
		t.Fatalf("read after upserts: %v, %v; want [4]", got, err)
	}

	ins := open(t, map[string]string{"upsert": "false"})
	for i := range 5 {
		if err := ins.Write(ctx, "ins-1", []byte{byte(10 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := vertices(t, "ins-1"); n != 5 {
		t.Fatalf("5 inserts of one key left %d vertices, want 5", n)
	}
	if got, err := ins.Read(ctx, "ins-1"); err != nil || !bytes.Equal(got, []byte{14}) {
		t.Fatalf("read after inserts: %v, %v; want the latest, [14]", got, err)
	}
	// An upsert on a key with several vertices updates them all, so any of them reads
	// the latest value afterwards.
	if err := d.Write(ctx, "ins-1", []byte{99}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Driver{d, ins} {
		if got, err := r.Read(ctx, "ins-1"); err != nil || !bytes.Equal(got, []byte{99}) {
			t.Fatalf("read (upsert=%v) after an upsert over inserts: %v, %v; want [99]", r.upsert.Load(), got, err)
		}
	}
}

// TestWriteBulk: a batch is one request; a key given twice ends with its last value, with
// upserts (one vertex) and with inserts (the later vertex reads as the latest).
func TestWriteBulk(t *testing.T) {
	ctx := drivertest.Context(t)
	for _, upsert := range []string{"true", "false"} {
		p := "bulk-" + upsert + "-"
		keys := []string{p + "1", p + "2", p + "1", p + "3"}
		vals := [][]byte{[]byte("first"), {}, []byte("last"), {0, 0xff}}
		for _, serializer := range []string{"graphbinary", "graphson3"} {
			d := open(t, map[string]string{"upsert": upsert, "serializer": serializer})
			if err := d.WriteBulk(ctx, keys, vals); err != nil {
				t.Fatalf("upsert=%s %s: bulk write: %v", upsert, serializer, err)
			}
			for k, want := range map[string][]byte{p + "1": []byte("last"), p + "2": {}, p + "3": {0, 0xff}} {
				if got, err := d.Read(ctx, k); err != nil || !bytes.Equal(got, want) {
					t.Errorf("upsert=%s %s: read %s after bulk: %q, %v; want %q", upsert, serializer, k, got, err, want)
				}
			}
		}
		if n := vertices(t, p+"1"); upsert == "true" && n != 1 {
			t.Errorf("bulk upserts left %d vertices of a key, want 1", n)
		}
	}
	if err := open(t, nil).WriteBulk(ctx, []string{"x"}, nil); driver.Classify(err) != driver.ClassRejected {
		t.Errorf("mismatched bulk write: %v, want rejected", err)
	}
}

// TestValidationDetectsCorruption writes a validated value, changes one byte of the stored
// property with a raw traversal, and checks the engine's codec sees the corruption in what
// the driver reads back.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, nil)
	key := "valid-1"
	setValue := func(v string) {
		raw(t, "g.V().has(l, kp, k).property(single, vp, v).iterate()", "l", "level1", "kp", "prop_customId",
			"k", key, "vp", "metadata", "v", v)
	}
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key: key,
		Change: func(_ context.Context, _ string, read []byte) error {
			setValue(base64.StdEncoding.EncodeToString(drivertest.FlipByte(read, -5)))
			return nil
		},
	})
	// A value that is not the driver's base64 is an error naming the key, not a value.
	setValue("not base64!")
	if _, err := d.Read(drivertest.Context(t), key); err == nil || !strings.Contains(err.Error(), key) {
		t.Errorf("read of a non-base64 property: %v, want an error naming the key", err)
	}
}

// TestErrorClasses provokes the classes the server decides.
func TestErrorClasses(t *testing.T) {
	d := open(t, nil)
	ctx := drivertest.Context(t)
	_, err := d.submit(ctx, "g.V().nosuchstep()")
	if c := Classify(err); c != driver.ClassRejected {
		t.Errorf("a script error: class %v (%v), want rejected", c, err)
	}
	// The server's own evaluation timeout (598): the client waits longer than the server.
	slow := open(t, map[string]string{"timeout": "3s"})
	slow.opts.Timeouts.Request = 300 * time.Millisecond // sent as evaluationTimeout
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = slow.submitWith(sctx, 3*time.Second, "Thread.sleep(2000); 1")
	if c := Classify(err); c != driver.ClassTimeout {
		t.Errorf("a script past evaluationTimeout: class %v (%v), want timeout", c, err)
	}
	// A wrong path: the server answers HTTP but refuses the upgrade.
	// Gremlin Server's WsAndHttpChannelizer never answers an upgrade on another path, so
	// the connect timeout ends it.
	_, _, err = driver.Open(ctx, "gremlin", map[string]string{"addrs": srv.Addr(), "path": "/nope", "connectTimeout": "500ms"})
	if err == nil {
		t.Error("Init with a wrong path succeeded")
	}
	// An unknown traversal source fails Init.
	_, _, err = driver.Open(ctx, "gremlin", map[string]string{"addrs": srv.Addr(), "traversalSource": "nosuch"})
	if err == nil {
		t.Error("Init with an unknown traversal source succeeded")
	}
}

// TestSecretsNeverShown: the password is in no ConnectionInfo and no connect error.
func TestSecretsNeverShown(t *testing.T) {
	const pw = "Sup3rS3cret-pw"
	// The test server has no authentication: the driver sends no credentials until
	// challenged, so it connects and can be inspected.
	d := open(t, map[string]string{"username": "bench", "password": pw})
	for k, v := range d.ConnectionInfo() {
		if strings.Contains(v, pw) {
			t.Errorf("ConnectionInfo[%s] shows the password: %q", k, v)
		}
	}
	port := freePort(t)
	_, _, err := driver.Open(drivertest.Context(t), "gremlin", map[string]string{"addrs": "127.0.0.1:" + port, "username": "bench", "password": pw})
	if err == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	if strings.Contains(err.Error(), pw) {
		t.Errorf("error shows the password: %v", err)
	}
	if c := driver.Classify(err); c != driver.ClassUnavailable {
		t.Errorf("connect to a closed port: class %v (%v), want unavailable", c, err)
	}
	// Option errors and listings: TestPasswordNeverInOptionErrors (unit test).
}

func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestGraphSON3 runs the conformance suite with serializer=graphson3, without the checks
// that measure connection handling under load and outages (TestConformance runs those; the
// serializer only changes how messages are encoded), and a raw count through GraphSON.
func TestGraphSON3(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name: "gremlin",
		// 5s: a 1 MiB value as GraphSON is 1.4 MB of JSON to encode and parse on each side.
		Options:    map[string]string{"addrs": srv.Addr(), "timeout": "5s", "serializer": "graphson3"},
		LiveValues: map[string]string{"upsert": "false"},
		Pause:      srv.Pause,
		Skip: map[string]string{
			drivertest.CheckConcurrentUse: "run with graphbinary in TestConformance",
			drivertest.CheckOutage:        "run with graphbinary in TestConformance",
		},
	})
	d := open(t, map[string]string{"serializer": "graphson3"})
	ctx := drivertest.Context(t)
	if err := d.Write(ctx, "gs-1", []byte{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	data, err := d.submit(ctx, "g.V().has(l, kp, k).count()", "l", "level1", "kp", "prop_customId", "k", "gs-1")
	if err != nil || len(data) != 1 || data[0] != int64(1) {
		t.Fatalf("count through graphson3: %v, %v", data, err)
	}
	if _, err := d.submit(ctx, "g.V().nosuchstep()"); Classify(err) != driver.ClassRejected {
		t.Errorf("a script error through graphson3: class %v (%v), want rejected", Classify(err), err)
	}
}

// TestConformance runs the public driver conformance suite (driver/drivertest), pausing
// (SIGSTOP) and killing the shared server. It is last in the file because its outage
// check restarts the server.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:       "gremlin",
		Options:    map[string]string{"addrs": srv.Addr(), "timeout": "2s"},
		LiveValues: map[string]string{"upsert": "false"},
		Pause:      srv.Pause,
		Outage: &drivertest.Outage{
			Stop:          srv.Kill,
			Start:         srv.Restart,
			RecoverWithin: 10 * time.Second,
			Options:       map[string]string{"timeout": "1s"},
		},
	})
}
