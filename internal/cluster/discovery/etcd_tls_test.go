package discovery

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// An etcd that serves over TLS and wants client certificates: a node registers and the
// coordinator finds it with the CA and a client certificate; without them, or with a
// certificate of another CA, discovery fails in an error that says how etcd was reached
// and never shows the password.
func TestEtcdDiscoveryOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "etcd")
	server := ca.Issue("etcd-server", "127.0.0.1", "localhost")
	client := ca.Issue("ndbench-node", "ndbench-node")
	stranger := tlstest.NewCA(t, "stranger").Issue("stranger-client", "ndbench-node")
	srv := etcdtest.NewTLS(t, etcdtest.TLS{Cert: server.Cert, Key: server.Key, ClientCA: ca.File})
	pair := func(p tlstest.Pair) []tls.Certificate {
		c, err := tls.LoadX509KeyPair(p.Cert, p.Key)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{c}
	}
	good := &tls.Config{RootCAs: ca.Pool, Certificates: pair(client), MinVersion: tls.VersionTLS12}

	const password = "etcd-pass-0123456789"
	tests := []struct {
		name     string
		endpoint string
		opts     Options
		want     string // "" = registers and lists
	}{
		{"CA and client certificate", srv.Endpoint, Options{EtcdTLS: good}, ""},
		{"https endpoint", "https://" + srv.Endpoint, Options{EtcdTLS: good}, ""},
		{"plain connection with credentials", srv.Endpoint, Options{EtcdUser: "ndbench", EtcdPassword: password}, "(user ndbench)"},
		{"no client certificate", srv.Endpoint, Options{EtcdTLS: &tls.Config{RootCAs: ca.Pool}}, "(TLS)"},
		{"etcd's certificate not trusted", srv.Endpoint, Options{EtcdTLS: &tls.Config{Certificates: pair(client)}, EtcdUser: "ndbench", EtcdPassword: password}, "(TLS, user ndbench)"},
		{"client certificate of another CA", srv.Endpoint, Options{EtcdTLS: &tls.Config{RootCAs: ca.Pool, Certificates: pair(stranger)}}, "(TLS)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.EtcdPrefix = fmt.Sprintf("/tls%d/nodes/", i)
			tt.opts.EtcdDialTimeout = 2 * time.Second
			d, err := Parse("etcd:"+tt.endpoint, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer d.(*etcdSource).Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			self := Member{ID: "node-1", Addr: "127.0.0.1:8443"}
			err = d.(Registrar).Register(ctx, self)
			if tt.want != "" {
				if err == nil {
					t.Fatal("registered, want refused")
				}
				t.Logf("refused: %v", err)
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q does not say %q", err, tt.want)
				}
				for _, shown := range []string{err.Error(), d.String(), fmt.Sprintf("%v %+v %#v %s", tt.opts, tt.opts, tt.opts, tt.opts)} {
					if strings.Contains(shown, password) {
						t.Errorf("the password shows: %s", shown)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("register over TLS: %v", err)
			}
			ms, err := d.Members(ctx)
			if err != nil || len(ms) != 1 || ms[0].ID != "node-1" {
				t.Fatalf("members over TLS: %v, %v", ms, err)
			}
			if !strings.Contains(d.String(), "(TLS)") {
				t.Errorf("%q does not say etcd is reached over TLS", d.String())
			}
		})
	}
}

// Credentials given by options and in the endpoints: the same are accepted once, others
// are refused; and no spelling of the endpoints, mistyped ones included, shows the
// password in an error or in the discoverer's text.
func TestEtcdDiscoveryCredentials(t *testing.T) {
	const pw = "pw-0123456789-secret"
	tests := []struct {
		spec string
		opts Options
		want string // "" = accepted
	}{
		{"etcd:127.0.0.1:2379", Options{EtcdUser: "bench", EtcdPassword: pw}, ""},
		{"etcd:bench:" + pw + "@127.0.0.1:2379", Options{EtcdUser: "bench", EtcdPassword: pw}, ""},
		{"etcd:other:" + pw + "@127.0.0.1:2379", Options{EtcdUser: "bench", EtcdPassword: pw}, "given twice and different"},
		{"etcd:127.0.0.1:2379", Options{EtcdUser: "bench"}, "need both a user"},
		{"etcd:127.0.0.1:2379", Options{EtcdPassword: pw}, "need both a user"},
		{"etcd:htp://bench:" + pw + "@127.0.0.1:2379", Options{}, "scheme"},
		{"etcd:http://bench:" + pw + "@127.0.0.1:2379/x", Options{}, "no path"},
		{"etcd:http://bench:" + pw + "%zz@127.0.0.1:2379", Options{}, "percent-encode"},
		{"etcd:bench" + pw + "@127.0.0.1:2379", Options{}, "without a password"},
	}
	for _, tt := range tests {
		d, err := Parse(tt.spec, tt.opts)
		var shown string
		if err != nil {
			shown = err.Error()
		} else {
			shown = d.String()
			_ = d.(*etcdSource).Close()
		}
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Parse(%s): %v, want %q", driver0(tt.spec), err, tt.want)
		}
		if strings.Contains(shown, pw) || strings.Contains(fmt.Sprintf("%v %#v", tt.opts, tt.opts), pw) {
			t.Errorf("Parse(%s): the password shows: %s", driver0(tt.spec), shown)
		}
	}
}

// driver0 names a spec in a failure message without its password.
func driver0(spec string) string { return strings.ReplaceAll(spec, "pw-0123456789-secret", "***") }
