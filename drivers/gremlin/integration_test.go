//go:build integration

package gremlin

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/testserver"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.GremlinServer, func(s *testserver.Server) { srv = s }))
}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	v := map[string]string{"addrs": srv.Addr()}
	for k, x := range values {
		v[k] = x
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, _, err := driver.Open(ctx, "gremlin", v)
	if err != nil {
		t.Fatalf("open gremlin driver with %v: %v", values, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d.(*Driver)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWriteReadMiss(t *testing.T) {
	d := open(t, nil)
	ctx := ctxT(t)
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
