package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// serveTLS serves a memory node with token and certs on a real loopback listener and
// returns its https base URL.
func serveTLS(t *testing.T, token string, certs *CertFiles) string {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	srv, err := New(Options{Instance: inst, Token: token, Certs: certs, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
		_ = inst.Close()
	})
	return "https://" + ln.Addr().String()
}

// httpsGet sends GET url with the token over a fresh connection that trusts pool, and
// returns the status and the certificate the server presented.
func httpsGet(t *testing.T, pool *x509.CertPool, url, token string) (int, *x509.Certificate, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.TLS.PeerCertificates[0], nil
}

func TestServeTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "api")
	pair := ca.Issue("node", "127.0.0.1", "localhost")
	certs, err := LoadCertFiles(pair.Cert, pair.Key)
	if err != nil {
		t.Fatal(err)
	}
	base := serveTLS(t, testToken, certs)

	tests := []struct {
		path, token string
		want        int
	}{
		{"/health", "", 200},
		{"/api/v1/status", "", 401},
		{"/api/v1/status", "wrong-token-0123456789abcdef", 401},
		{"/api/v1/status", testToken, 200},
		{"/metrics", "", 401},
	}
	for _, tt := range tests {
		st, cert, err := httpsGet(t, ca.Pool, base+tt.path, tt.token)
		if err != nil {
			t.Fatalf("GET %s over TLS: %v", tt.path, err)
		}
		if st != tt.want {
			t.Errorf("GET %s with token %v: %d, want %d", tt.path, tt.token != "", st, tt.want)
		}
		if cert.SerialNumber.Cmp(pair.Leaf.SerialNumber) != 0 {
			t.Errorf("GET %s: served certificate %v, want the one of --tls-cert", tt.path, cert.Subject)
		}
	}

	// A client that does not trust the CA refuses the server; plain http gets no API.
	if _, _, err := httpsGet(t, x509.NewCertPool(), base+"/health", ""); err == nil {
		t.Errorf("a client without the CA accepted the server's certificate")
	}
	resp, err := http.Get("http://" + strings.TrimPrefix(base, "https://") + "/api/v1/status")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || bytes.Contains(b, []byte(`"driver"`)) {
			t.Errorf("plain http to the TLS listener: %d %s, want 400 and no API answer", resp.StatusCode, b)
		}
	}
}

// A renewed certificate written over the files is served from the next handshake, without
// a restart; a broken pair written over them changes nothing.
func TestServeTLSReloadsCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "api")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	install := func(p tlstest.Pair) {
		t.Helper()
		for src, dst := range map[string]string{p.Cert: certFile, p.Key: keyFile} {
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := ca.Issue("first", "127.0.0.1")
	install(first)
	certs, err := LoadCertFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go certs.Watch(ctx, 10*time.Millisecond, slog.New(slog.NewTextHandler(&logs, nil)))
	base := serveTLS(t, testToken, certs)

	served := func() *x509.Certificate {
		t.Helper()
		_, cert, err := httpsGet(t, ca.Pool, base+"/health", "")
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	waitServed := func(want *x509.Certificate) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for served().SerialNumber.Cmp(want.SerialNumber) != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("certificate %v not served within 10 s of its files; logs:\n%s", want.Subject, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitServed(first.Leaf)

	second := ca.Issue("second", "127.0.0.1")
	install(second)
	waitServed(second.Leaf)

	// A key that does not match the certificate: the second pair stays in force.
	third := ca.Issue("third", "127.0.0.1")
	b, err := os.ReadFile(third.Cert)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "not reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning for a certificate that does not match its key; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := served(); got.SerialNumber.Cmp(second.Leaf.SerialNumber) != 0 {
		t.Errorf("after a broken pair, served %v, want %v to stay", got.Subject, second.Leaf.Subject)
	}
	key, _ := os.ReadFile(keyFile)
	if strings.Contains(logs.String(), strings.TrimSpace(string(key))) || strings.Contains(logs.String(), "PRIVATE KEY") {
		t.Errorf("the log shows the private key:\n%s", logs.String())
	}
}

func TestLoadCertFilesErrors(t *testing.T) {
	ca := tlstest.NewCA(t, "api")
	a := ca.Issue("a", "127.0.0.1")
	b := ca.Issue("b", "127.0.0.1")
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a PEM file"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cert, key string
		want            []string
	}{
		{"no key", a.Cert, "", []string{"--tls-cert", "--tls-key"}},
		{"no cert", "", a.Key, []string{"--tls-cert", "--tls-key"}},
		{"missing file", filepath.Join(dir, "none.pem"), a.Key, []string{"none.pem", "no such file"}},
		{"key of another certificate", a.Cert, b.Key, []string{a.Cert, b.Key, "does not match"}},
		{"garbage key", a.Cert, garbage, []string{garbage}},
		{"key as certificate", a.Key, a.Key, []string{a.Key}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadCertFiles(tt.cert, tt.key)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			for _, f := range []string{a.Key, b.Key} {
				k, _ := os.ReadFile(f)
				body := strings.Split(strings.TrimSpace(string(k)), "\n")[1]
				if strings.Contains(err.Error(), body) || strings.Contains(err.Error(), "PRIVATE KEY-----") {
					t.Errorf("error %q shows a private key", err)
				}
			}
		})
	}
}

// syncBuf is a buffer a logger writes to while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With ClientCAs, a node answers only clients presenting a certificate of those CAs
// (health probes excepted): none is refused with 401 before the token counts, one of
// another CA fails the handshake, one of the CA gets the API with the token.
func TestServeMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "fleet")
	pair := ca.Issue("node", "127.0.0.1")
	coord := ca.Issue("coordinator", "coordinator")
	rogue := tlstest.NewCA(t, "rogue").Issue("rogue", "coordinator")
	certs, err := LoadCertFiles(pair.Cert, pair.Key)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	defer inst.Close()
	if _, err := New(Options{Instance: inst, Token: testToken, ClientCAs: ca.Pool, Version: "test"}); err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("client CAs without a certificate to serve: %v, want an error naming --tls-cert", err)
	}
	srv, err := New(Options{Instance: inst, Token: testToken, Certs: certs, ClientCAs: ca.Pool, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	base := "https://" + ln.Addr().String()

	get := func(client *tlstest.Pair, path, token string) (int, string, error) {
		cfg := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
		if client != nil {
			c, err := tls.LoadX509KeyPair(client.Cert, client.Key)
			if err != nil {
				t.Fatal(err)
			}
			// Presented whatever CAs the server names: Go's client would otherwise
			// send no certificate of another CA at all.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
		}
		tr := &http.Transport{TLSClientConfig: cfg}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	tests := []struct {
		name   string
		client *tlstest.Pair
		path   string
		token  string
		want   int // 0 = the connection fails
	}{
		{"no certificate, health probe", nil, "/health", "", 200},
		{"no certificate, with the token", nil, "/api/v1/status", testToken, 401},
		{"no certificate, metrics", nil, "/metrics", testToken, 401},
		{"the fleet CA's certificate, with the token", &coord, "/api/v1/status", testToken, 200},
		{"the fleet CA's certificate, no token", &coord, "/api/v1/status", "", 401},
		{"another CA's certificate", &rogue, "/api/v1/status", testToken, 0},
		{"another CA's certificate, health probe", &rogue, "/health", "", 0},
	}
	for _, tt := range tests {
		st, body, err := get(tt.client, tt.path, tt.token)
		switch {
		case tt.want == 0 && err == nil:
			t.Errorf("%s: %d %s, want the handshake refused", tt.name, st, body)
		case tt.want != 0 && err != nil:
			t.Errorf("%s: %v, want %d", tt.name, err, tt.want)
		case st != tt.want:
			t.Errorf("%s: %d %s, want %d", tt.name, st, body, tt.want)
		case tt.client == nil && st == 401 && !strings.Contains(body, "--tls-client-ca"):
			t.Errorf("%s: refusal %s does not name --tls-client-ca", tt.name, body)
		}
	}
}
