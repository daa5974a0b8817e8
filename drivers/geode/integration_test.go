//go:build integration

package geode

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
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
	os.Exit(testserver.Main(m, testserver.Geode, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

func baseURL() string { return "http://" + srv.Addr() + "/geode/v1" }

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "geode", map[string]string{"url": baseURL()}, values).(*Driver)
}

func TestWriteReadMiss(t *testing.T) {
	d := open(t, nil)
	ctx := drivertest.Context(t)
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for k, v := range map[string][]byte{"rw-bin": all, "rw-empty": {}, "rw text?#+&='*": []byte("hello")} {
		if err := d.Write(ctx, k, v); err != nil {
			t.Fatalf("write %q: %v", k, err)
		}
		if got, err := d.Read(ctx, k); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("read %q: %q, %v; want %q", k, got, err, v)
		}
	}
	if _, err := d.Read(ctx, "rw-never"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read of a missing key: %v, want ErrNotFound", err)
	}
	for _, k := range []string{"a,b", "a/b", "a;b", "a%b", `a\b`, "e-é", "..", ""} {
		if err := d.Write(ctx, k, []byte("x")); driver.Classify(err) != driver.ClassRejected {
			t.Fatalf("write of key %q: %v, want rejected", k, err)
		}
	}
	_, _, err := driver.Open(ctx, "geode", map[string]string{"url": baseURL(), "region": "nosuchregion"})
	if driver.Classify(err) != driver.ClassRejected {
		t.Fatalf("Init with a missing region: class %v (%v), want rejected", driver.Classify(err), err)
	}
}

// TestValidationDetectsCorruption writes a validated value, changes one byte of it with a
// raw REST call, and checks the engine's codec sees the corruption in what the driver
// reads back.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, nil)
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key: "valid-1",
		Change: func(ctx context.Context, key string, read []byte) error {
			body := `{"v":"` + base64.StdEncoding.EncodeToString(drivertest.FlipByte(read, -5)) + `"}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPut, baseURL()+"/ndbench/"+key, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("raw PUT: HTTP %d", resp.StatusCode)
			}
			return nil
		},
	})
}

// TestSecretsNeverShown: the password is in no error or ConnectionInfo. The test server
// has no security manager, so it ignores basic authentication.
func TestSecretsNeverShown(t *testing.T) {
	const pw = "Sup3rS3cret-pw"
	d := open(t, map[string]string{"username": "bench", "password": pw})
	for k, v := range d.ConnectionInfo() {
		if strings.Contains(v, pw) {
			t.Errorf("ConnectionInfo[%s] shows the password: %q", k, v)
		}
	}
	_, _, err := driver.Open(drivertest.Context(t), "geode", map[string]string{"url": "http://127.0.0.1:1/geode/v1", "username": "bench", "password": pw})
	if err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("connect to a closed port: %v", err)
	}
	if _, err := driver.NewOptions("geode", map[string]string{"pasword": pw}); err == nil || strings.Contains(err.Error(), pw) {
		t.Errorf("a mistyped option key: %v", err)
	}
}

// TestConformance runs the public driver conformance suite (driver/drivertest), pausing
// (SIGSTOP) and killing the shared server. It is last because its outage check restarts
// the server (a JVM start of 20-40 s).
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:    "geode",
		Options: map[string]string{"url": baseURL(), "timeout": "2s"},
		Pause:   srv.Pause,
		Outage: &drivertest.Outage{
			Stop:          srv.Kill,
			Start:         srv.Restart,
			RecoverWithin: 10 * time.Second,
			Options:       map[string]string{"timeout": "1s"},
		},
	})
}
