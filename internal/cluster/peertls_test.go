package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

const peerTestToken = "peer-test-token-0123456789abcdef"

func testCoordinator(t *testing.T, tlsCfg *tls.Config, insecure bool) *Coordinator {
	t.Helper()
	disc, err := discovery.Parse("static:127.0.0.1:1", discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Self: discovery.Member{ID: "coord"}, Discovery: disc, Token: peerTestToken, Config: snap,
		TLS: tlsCfg, InsecurePeers: insecure})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestIdentityName(t *testing.T) {
	for id, want := range map[string]string{
		"127.0.0.1:8080":        "127.0.0.1",
		"[::1]:8080":            "::1",
		"node-a.fleet.internal": "node-a.fleet.internal",
		"ndbench-0":             "ndbench-0",
		"ndbench-0.svc:8443":    "ndbench-0.svc",
	} {
		if got := IdentityName(id); got != want {
			t.Errorf("IdentityName(%q) = %q, want %q", id, got, want)
		}
	}
}

// Plain http reaches a node on loopback only, unless --insecure-peers; the refusal names
// the flags that lift it, and never the token.
func TestPeerRefusesPlainHTTPOffLoopback(t *testing.T) {
	tests := []struct {
		addr     string
		tls      bool
		insecure bool
		want     string // "" = not refused
	}{
		{addr: "127.0.0.1:8080"},
		{addr: "localhost:8080"},
		{addr: "[::1]:8080"},
		{addr: "10.0.0.5:8080", want: "--insecure-peers"},
		{addr: "node-a.example:8080", want: "--peer-ca"},
		{addr: "http://10.0.0.5:8080", want: "plain http off loopback"},
		{addr: "10.0.0.5:8080", insecure: true},
		{addr: "10.0.0.5:8080", tls: true},
		{addr: "https://10.0.0.5:8080", want: "--peer-ca"},
		{addr: "https://10.0.0.5:8080", tls: true},
		{addr: "ftp://10.0.0.5:21", tls: true, want: "allowed: http, https"},
	}
	for _, tt := range tests {
		var cfg *tls.Config
		if tt.tls {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c := testCoordinator(t, cfg, tt.insecure)
		p := c.newPeer(discovery.Member{ID: tt.addr, Addr: tt.addr})
		switch {
		case tt.want == "" && p.refused != nil:
			t.Errorf("%s (tls %v, insecure %v): refused: %v", tt.addr, tt.tls, tt.insecure, p.refused)
		case tt.want != "" && p.refused == nil:
			t.Errorf("%s (tls %v, insecure %v): not refused, want an error saying %q", tt.addr, tt.tls, tt.insecure, tt.want)
		case tt.want != "" && !strings.Contains(p.refused.Error(), tt.want):
			t.Errorf("%s: refused with %q, want it to say %q", tt.addr, p.refused, tt.want)
		}
		if p.refused != nil {
			err := p.call(context.Background(), http.MethodPost, "/api/v1/cluster/beat", BeatRequest{}, nil)
			if err == nil || strings.Contains(err.Error(), peerTestToken) {
				t.Errorf("%s: call of a refused peer: %v", tt.addr, err)
			}
		}
		if wantTLS := tt.tls && !strings.HasPrefix(tt.addr, "http://") && !strings.HasPrefix(tt.addr, "ftp:"); wantTLS != strings.HasPrefix(p.base, "https://") && p.refused == nil {
			t.Errorf("%s (tls %v): called at %s", tt.addr, tt.tls, p.base)
		}
	}
}

// A node is accepted over TLS only with a certificate of the fleet's CA that names its
// identity: a certificate of the same CA for another node does not pass for it.
func TestPeerTLSChecksTheNodesIdentity(t *testing.T) {
	ca := tlstest.NewCA(t, "fleet")
	other := tlstest.NewCA(t, "other")
	var mu sync.Mutex
	var auth []string
	serve := func(p tlstest.Pair) string {
		t.Helper()
		cert, err := tls.LoadX509KeyPair(p.Cert, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			auth = append(auth, r.Header.Get("Authorization"))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"x"}`))
		}))
		ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ts.StartTLS()
		t.Cleanup(ts.Close)
		return strings.TrimPrefix(ts.URL, "https://")
	}
	nodeA := serve(ca.Issue("node-a", "node-a", "127.0.0.1"))
	nodeB := serve(ca.Issue("node-b", "node-b"))
	stranger := serve(other.Issue("stranger", "node-a", "127.0.0.1"))

	tests := []struct {
		name, id, addr string
		roots          *x509.CertPool
		want           string // "" = accepted
	}{
		{"its own certificate, by id", "node-a", nodeA, ca.Pool, ""},
		{"its own certificate, by address", nodeA, nodeA, ca.Pool, ""},
		{"another node's certificate", "node-a", nodeB, ca.Pool, `not valid for its identity "node-a"`},
		{"a certificate without the address", nodeB, nodeB, ca.Pool, `not valid for its identity "127.0.0.1"`},
		{"a certificate of another CA", "node-a", stranger, ca.Pool, "not trusted"},
		{"no CA given: the system's", "node-a", nodeA, nil, "not trusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testCoordinator(t, &tls.Config{RootCAs: tt.roots, MinVersion: tls.VersionTLS12}, false)
			p := c.newPeer(discovery.Member{ID: tt.id, Addr: tt.addr})
			if p.refused != nil {
				t.Fatalf("refused: %v", p.refused)
			}
			var resp BeatResponse
			err := p.call(context.Background(), http.MethodPost, "/api/v1/cluster/beat", BeatRequest{}, &resp)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("accepted, want refused (%s)", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), peerTestToken) {
				t.Errorf("error %q shows the token", err)
			}
		})
	}
	// The token went only to the nodes that proved who they are.
	mu.Lock()
	defer mu.Unlock()
	if len(auth) != 2 {
		t.Errorf("%d calls reached a server, want 2 (the accepted ones)", len(auth))
	}
}

// SetToken changes the token of the next call: the fleet's token rotates without a
// restart of the coordinator.
func TestCoordinatorSetToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer ts.Close()
	c := testCoordinator(t, nil, false)
	addr := strings.TrimPrefix(ts.URL, "http://")
	p := c.newPeer(discovery.Member{ID: addr, Addr: addr})
	rotated := "rotated-token-0123456789abcdef"
	if err := p.call(context.Background(), http.MethodGet, "/", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.SetToken(""); err == nil {
		t.Error("SetToken(\"\") accepted")
	}
	if err := c.SetToken(rotated); err != nil {
		t.Fatal(err)
	}
	if err := p.call(context.Background(), http.MethodGet, "/", nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Bearer " + peerTestToken, "Bearer " + rotated}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tokens sent %q, want %q", got, want)
	}
}
