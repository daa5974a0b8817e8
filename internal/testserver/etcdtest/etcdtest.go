// Package etcdtest runs a one-member etcd inside a test process (go.etcd.io/etcd's embed
// package), on free loopback ports with its data in the test's temporary directory: the
// real etcd server code, without a binary to install. Tests of the etcd configuration
// source, the API's live configuration and fleet discovery share it.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is an embedded etcd. It can be stopped and started again on the same ports and
// data (an outage), and is stopped when the test ends.
type Server struct {
	t   testing.TB
	cfg *embed.Config
	e   *embed.Etcd
	// Endpoint is the client address, host:port.
	Endpoint string
}

// New starts an etcd for the test. Its ports were free a moment before etcd binds them,
// and on a busy machine another process may take one in between: it then tries again on
// new ports, a few times, rather than failing the test on someone else's bind.
func New(t testing.TB) *Server {
	t.Helper()
	return newServer(t, nil)
}

// TLS is what an etcd serving its clients over TLS uses: its certificate and key (PEM
// files) and, when ClientCA is set, the CA a client's certificate must chain to (clients
// without one are refused).
type TLS struct {
	Cert, Key, ClientCA string
}

// NewTLS starts an etcd for the test that serves its clients over TLS only (Endpoint
// then takes https); Client does not reach it, the test makes its own with its
// certificates.
func NewTLS(t testing.TB, tlsFiles TLS) *Server {
	t.Helper()
	return newServer(t, &tlsFiles)
}

func newServer(t testing.TB, tlsFiles *TLS) *Server {
	t.Helper()
	var err error
	for range 5 {
		var s *Server
		if s, err = tryNew(t, tlsFiles); err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("start etcd: %v", err)
	return nil
}

func tryNew(t testing.TB, tlsFiles *TLS) (*Server, error) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "ndbench-test"
	cfg.Dir = t.TempDir()
	// Its shutdown logs errors about closed listeners; a failed start shows through
	// StartEtcd and e.Err instead.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // test data: speed over durability
	// bcrypt's least cost (4) for users' passwords: the default (10) costs seconds per
	// authentication under the race detector on a busy machine, past a client's deadline.
	cfg.BcryptCost = 4
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	if tlsFiles != nil {
		client.Scheme = "https"
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = tlsFiles.Cert, tlsFiles.Key
		cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.ClientCertAuth = tlsFiles.ClientCA, tlsFiles.ClientCA != ""
	}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{t: t, cfg: cfg, Endpoint: client.Host}
	t.Cleanup(s.Stop)
	s.e = e
	s.waitReady()
	return s, nil
}

// Restart starts a stopped server again on its ports and data, and waits until it serves.
func (s *Server) Restart() {
	s.t.Helper()
	e, err := embed.StartEtcd(s.cfg)
	if err != nil {
		s.t.Fatalf("start etcd: %v", err)
	}
	s.e = e
	s.waitReady()
}

// waitReady waits until the started server serves.
func (s *Server) waitReady() {
	s.t.Helper()
	select {
	case <-s.e.Server.ReadyNotify():
	case err := <-s.e.Err():
		s.t.Fatalf("etcd failed: %v", err)
	case <-time.After(30 * time.Second):
		s.t.Fatal("etcd not ready after 30 s")
	}
}

// Stop stops the server; stopping a stopped one does nothing.
func (s *Server) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Start runs etcd until the test ends and returns its client endpoint and a client.
func Start(t testing.TB) (string, *clientv3.Client) {
	t.Helper()
	s := New(t)
	return s.Endpoint, s.Client()
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
