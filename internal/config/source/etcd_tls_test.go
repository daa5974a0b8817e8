package source

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// An etcd that serves its clients over TLS and wants their certificates: the source
// reads and watches it with the CA and a client certificate, and is refused without
// either, in an error that shows no password.
func TestEtcdOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "etcd")
	server := ca.Issue("etcd-server", "127.0.0.1", "localhost")
	client := ca.Issue("ndbench-node", "ndbench-node")
	stranger := tlstest.NewCA(t, "stranger")
	strangerClient := stranger.Issue("stranger-client", "ndbench-node")
	srv := etcdtest.NewTLS(t, etcdtest.TLS{Cert: server.Cert, Key: server.Key, ClientCA: ca.File})

	pair := func(p tlstest.Pair) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(p.Cert, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	good := &tls.Config{RootCAs: ca.Pool, Certificates: pair(client), MinVersion: tls.VersionTLS12}
	writer, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, TLS: good, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	const prefix = "/tls/node1/"
	if _, err := writer.Put(context.Background(), prefix+"workload.readRate", "1234"); err != nil {
		t.Fatalf("put over TLS: %v", err)
	}

	const password = "etcd-pass-0123456789"
	tests := []struct {
		name   string
		access EtcdAccess
		want   string // "" = opens and reads
	}{
		{"CA and client certificate", EtcdAccess{TLS: good}, ""},
		{"https endpoint scheme too", EtcdAccess{TLS: good}, ""},
		{"plain connection", EtcdAccess{Username: "ndbench", Password: password}, "(user ndbench)"},
		{"no client certificate", EtcdAccess{TLS: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}, "TLS settings match etcd's"},
		{"etcd's certificate not trusted", EtcdAccess{TLS: &tls.Config{Certificates: pair(client), MinVersion: tls.VersionTLS12}, Username: "ndbench", Password: password}, "(TLS, user ndbench)"},
		{"client certificate of another CA", EtcdAccess{TLS: &tls.Config{RootCAs: ca.Pool, Certificates: pair(strangerClient), MinVersion: tls.VersionTLS12}}, "TLS settings match etcd's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, err := config.Load(config.Sources{Sets: []string{"driver.name=fake-kv"}})
			if err != nil {
				t.Fatal(err)
			}
			store := config.NewStore(snap)
			endpoint := srv.Endpoint
			if strings.HasPrefix(tt.name, "https") {
				endpoint = "https://" + endpoint
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src, err := OpenEtcd(ctx, store, EtcdOptions{Endpoints: []string{endpoint}, Prefix: prefix, Access: tt.access, Timeout: 3 * time.Second})
			if tt.want != "" {
				if err == nil {
					_ = src.Close()
					t.Fatal("opened, want refused")
				}
				t.Logf("refused: %v", err)
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q does not say %q", err, tt.want)
				}
				for _, shown := range []string{err.Error(), fmt.Sprintf("%v %+v %#v", tt.access, tt.access, tt.access)} {
					if strings.Contains(shown, password) {
						t.Errorf("the password shows: %s", shown)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenEtcd over TLS: %v", err)
			}
			defer src.Close()
			if got := store.Current().Config.Workload.ReadRate; got != 1234 {
				t.Fatalf("readRate %v after opening, want 1234 from etcd", got)
			}
			go func() { _ = src.Run(ctx) }()
			if _, err := writer.Put(context.Background(), prefix+"workload.readRate", "4321"); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for store.Current().Config.Workload.ReadRate != 4321 {
				if time.Now().After(deadline) {
					t.Fatalf("a change in etcd did not apply over TLS within 10 s: readRate %v", store.Current().Config.Workload.ReadRate)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := writer.Put(context.Background(), prefix+"workload.readRate", "1234"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEtcdAccessNeverShowsThePassword(t *testing.T) {
	a := EtcdAccess{TLS: &tls.Config{MinVersion: tls.VersionTLS12}, Username: "bench", Password: "pw-0123456789-secret"}
	for _, s := range []string{a.String(), fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), fmt.Sprintf("%v", &a)} {
		if strings.Contains(s, "pw-0123456789-secret") {
			t.Errorf("shown: %s", s)
		}
		if !strings.Contains(s, "bench") || !strings.Contains(s, "TLS") {
			t.Errorf("%q does not say how etcd is reached (TLS, user bench)", s)
		}
	}
}
