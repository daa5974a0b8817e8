// Package etcdtest runs a one-member etcd inside a test process (go.etcd.io/etcd's embed
// package), on free loopback ports with its data in the test's temporary directory: the
// real etcd server code, without a binary to install. Tests of the etcd configuration
// source, the API's live configuration and fleet discovery share it.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Start runs etcd until the test ends and returns its client endpoint (host:port) and a
// client, closed at the end of the test too.
func Start(t testing.TB) (string, *clientv3.Client) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "ndbench-test"
	cfg.Dir = t.TempDir()
	// Its shutdown logs errors about closed listeners; a failed start shows through
	// StartEtcd and e.Err instead.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true // test data: speed over durability
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd not ready after 30 s")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.Host}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return client.Host, c
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
