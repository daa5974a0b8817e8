// Package tlstest makes certificates for tests: a CA of the test's own (crypto/x509, an
// ECDSA P-256 key) that issues server and client certificates for given names, written
// as PEM files in the test's temporary directory, the way an operator hands them to
// ndbench (--tls-cert, --tls-key, --peer-ca).
package tlstest

import (
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
)

// CA is a certificate authority of one test.
type CA struct {
	t    testing.TB
	dir  string
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	// File is the CA's certificate, PEM.
	File string
	// Pool holds the CA's certificate.
	Pool *x509.CertPool
}

// NewCA makes a CA named name, its certificate written to File.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &CA{t: t, dir: dir, key: key, cert: cert, File: filepath.Join(dir, name+"-ca.pem"), Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	write(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Pair is an issued certificate's files.
type Pair struct {
	Cert, Key string
	// Leaf is the certificate.
	Leaf *x509.Certificate
}

// Issue makes a certificate for names (IP addresses become IP SANs, others DNS names),
// good for servers and clients, written as base-cert.pem and base-key.pem.
func (ca *CA) Issue(base string, names ...string) Pair {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: serial(ca.t),
		Subject:      pkix.Name{CommonName: base},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tpl.IPAddresses = append(tpl.IPAddresses, ip)
		} else {
			tpl.DNSNames = append(tpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		ca.t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		ca.t.Fatal(err)
	}
	p := Pair{Cert: filepath.Join(ca.dir, base+"-cert.pem"), Key: filepath.Join(ca.dir, base+"-key.pem"), Leaf: leaf}
	write(ca.t, p.Cert, "CERTIFICATE", der)
	write(ca.t, p.Key, "PRIVATE KEY", kder)
	return p
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func write(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
