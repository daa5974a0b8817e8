//go:build integration

package http

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// TestTLS runs the KV service over HTTPS with a self-signed certificate: the driver
// verifies it with tlsCAFile, negotiates HTTP/2 by ALPN unless told http1, passes the
// conformance suite, and refuses the server without the CA (a configuration error, not
// an outage).
func TestTLS(t *testing.T) {
	cert, key := writeSelfSigned(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := testserver.KVHTTPTLS(ctx, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	base := "https://" + s.Addr()
	for _, tc := range []struct{ protocol, engine, want string }{
		{"auto", "auto", "HTTP/2.0"},
		{"h2", "auto", "HTTP/2.0"},
		{"http1", engineFast, "HTTP/1.1"},
		{"http1", engineNetHTTP, "HTTP/1.1"},
	} {
		d := open(t, map[string]string{"url": base, "tlsCAFile": cert, "protocol": tc.protocol, "engine": tc.engine})
		if err := d.Write(ctx, "tls-"+tc.protocol, []byte("v")); err != nil {
			t.Fatalf("protocol %s, engine %s: %v", tc.protocol, tc.engine, err)
		}
		if got, err := d.Read(ctx, "tls-"+tc.protocol); err != nil || string(got) != "v" {
			t.Errorf("protocol %s, engine %s: read %q, %v", tc.protocol, tc.engine, got, err)
		}
		if got := d.ConnectionInfo()["negotiated"]; got != tc.want {
			t.Errorf("protocol %s, engine %s over TLS negotiated %q, want %s", tc.protocol, tc.engine, got, tc.want)
		}
	}
	drivertest.Run(t, drivertest.Harness{
		Name:    "http",
		Options: map[string]string{"url": base, "tlsCAFile": cert},
		Pause:   s.Pause,
	})
	for _, engine := range []string{"auto", engineFast} {
		d := open(t, map[string]string{"url": base, "engine": engine})
		_, err = d.Read(ctx, "k")
		if err == nil || driver.Classify(err) != driver.ClassOther {
			t.Errorf("engine %s: read from a server whose CA is not trusted: %v (class %v), want a failure of class other", engine, err, driver.Classify(err))
		}
	}
}

func writeSelfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ndbench-test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
