//go:build integration

package grpc

import (
	"bytes"
	"context"
	"errors"
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
	os.Exit(testserver.Main(m, testserver.KVGRPC, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "grpc", map[string]string{"target": srv.Addr()}, values).(*Driver)
}

// TestDescriptionsAndPaths: the same service read through reflection and through its
// descriptor set file; Lookup's nested value and found flag; fixed request fields.
func TestDescriptionsAndPaths(t *testing.T) {
	ctx := drivertest.Context(t)
	for _, tc := range []struct{ name, desc, imports string }{
		{"reflection", "reflection", ""},
		{"descriptor-set", testserver.KVGRPCDescriptors(srv), ""},
		{"proto-file", "testdata/ndbench/kv/v1/kv.proto", "testdata"},
	} {
		desc := tc.desc
		t.Run(tc.name, func(t *testing.T) {
			d := open(t, map[string]string{"descriptors": desc, "protoImportPaths": tc.imports,
				"writeRequest": `{"tenant": "t1"}`, "readRequest": `{"tenant": "t1"}`,
				"read": "ndbench.kv.v1.KV/Lookup", "readValue": "item.value", "readFound": "found"})
			val := []byte{0, 1, 2, 0xff, '\n'}
			if err := d.Write(ctx, "paths", val); err != nil {
				t.Fatal(err)
			}
			if v, err := d.Read(ctx, "paths"); err != nil || !bytes.Equal(v, val) {
				t.Fatalf("read = %q, %v", v, err)
			}
			if _, err := d.Read(ctx, "absent"); !errors.Is(err, driver.ErrNotFound) {
				t.Fatalf("absent key (found=false): %v", err)
			}
			// Another tenant does not see it: the fixed request field is sent.
			other := open(t, map[string]string{"descriptors": desc, "protoImportPaths": tc.imports, "readRequest": `{"tenant": "t2"}`})
			if _, err := other.Read(ctx, "paths"); !errors.Is(err, driver.ErrNotFound) {
				t.Fatalf("tenant t2 read t1's key: %v", err)
			}
		})
	}
}

// TestConfigurationErrors: a mistyped method or field fails Init, naming what the
// service offers, and a server without the method's service names the ones it has.
func TestConfigurationErrors(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   []string
	}{
		{map[string]string{"read": "ndbench.kv.v1.KV/Gett"}, []string{"read", "Get, Put, Lookup"}},
		{map[string]string{"read": "other.Svc/Get"}, []string{"read", "ndbench.kv.v1.KV"}},
		{map[string]string{"readKey": "id"}, []string{"readKey", "key, tenant"}},
		{map[string]string{"readValue": "item.value"}, []string{"readValue", "value"}},
		{map[string]string{"read": "ndbench.kv.v1.KV/Lookup", "readValue": "item.value", "readFound": "item"}, []string{"readFound", "bool"}},
		{map[string]string{"writeRequest": `{"tenantt": "x"}`}, []string{"writeRequest", "PutRequest"}},
		{map[string]string{"descriptors": "testdata/missing.proto"}, []string{"missing.proto"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v := map[string]string{"target": srv.Addr()}
		for k, x := range tc.values {
			v[k] = x
		}
		d, _, err := driver.Open(ctx, "grpc", v)
		cancel()
		if err == nil {
			_ = d.Close()
			t.Errorf("%v: accepted", tc.values)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v; want it to mention %q", tc.values, err, w)
			}
		}
	}
	// No server: Init fails within connectTimeout, unavailable.
	start := time.Now()
	_, _, err := driver.Open(context.Background(), "grpc", map[string]string{"target": "127.0.0.1:1", "connectTimeout": "300ms"})
	if err == nil || driver.Classify(err) != driver.ClassUnavailable || time.Since(start) > 5*time.Second || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("no server: %v after %v; want unavailable, saying the connection was refused", err, time.Since(start))
	}
	// TLS against a plaintext server says what failed.
	_, _, err = driver.Open(context.Background(), "grpc", map[string]string{"target": srv.Addr(), "connectTimeout": "500ms", "tls": "true", "tlsVerify": "false"})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "tls") && !strings.Contains(err.Error(), "handshake") {
		t.Fatalf("tls against plaintext: %v; want the handshake error", err)
	}
}

// TestStatusClasses: the server's status codes are counted by class.
func TestStatusClasses(t *testing.T) {
	d := open(t, nil)
	ctx := drivertest.Context(t)
	for _, tc := range []struct {
		key  string
		want driver.Class
	}{
		{"code-8-x", driver.ClassThrottled},
		{"code-14-x", driver.ClassUnavailable},
		{"code-3-x", driver.ClassRejected},
		{"code-13-x", driver.ClassOther},
	} {
		err := d.Write(ctx, tc.key, []byte("v"))
		if driver.Classify(err) != tc.want {
			t.Errorf("%s: %v, class %v; want %v", tc.key, err, driver.Classify(err), tc.want)
		}
	}
}

// TestSecretsNotInErrors: the auth metadata reaches the server but no error shows it.
func TestSecretsNotInErrors(t *testing.T) {
	d := open(t, map[string]string{"authMetadata": "authorization: Bearer s3cr3t-token"})
	ctx := drivertest.Context(t)
	err := d.Write(ctx, "code-16-x", []byte("v"))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(strings.Join(mapValues(d.ConnectionInfo()), " "), "s3cr3t") {
		t.Fatal("connection info shows the secret")
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

// TestValidationDetectsCorruption: a value changed behind the tool's back (by another
// client of the service, with the wrong bytes) fails validation.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, map[string]string{"writeRequest": `{"tenant": "validation"}`, "readRequest": `{"tenant": "validation"}`})
	// Another client: through the descriptor file, so nothing is shared with d.
	other := open(t, map[string]string{"descriptors": testserver.KVGRPCDescriptors(srv), "writeRequest": `{"tenant": "validation"}`})
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key: "valid-1",
		Change: func(ctx context.Context, key string, read []byte) error {
			return other.Write(ctx, key, drivertest.FlipByte(read, -5))
		},
	})
}

func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:    "grpc",
		Options: map[string]string{"target": srv.Addr()},
		Pause:   srv.Pause,
		Outage: &drivertest.Outage{
			Stop:          srv.Kill,
			Start:         srv.Restart,
			RecoverWithin: 10 * time.Second,
		},
	})
}

// BenchmarkGetPut: ops per client CPU-second against kvgrpcd (a separate process), half
// reads, half writes, 100-byte values, 16 × GOMAXPROCS goroutines over 4 connections.
func BenchmarkGetPut(b *testing.B) {
	d := open(b, nil)
	val := bytes.Repeat([]byte("v"), 100)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "bench" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
	}
	for _, k := range keys {
		if err := d.Write(context.Background(), k, val); err != nil {
			b.Fatal(err)
		}
	}
	testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
		k := keys[i%uint64(len(keys))]
		if i%2 == 0 {
			_, err := d.Read(ctx, k)
			return err
		}
		return d.Write(ctx, k, val)
	})
}
