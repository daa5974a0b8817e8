package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// Every command that finds a fleet by --discovery can reach an etcd that wants TLS, a
// client certificate or a login, and nodes served over TLS that want a client
// certificate, with the same flags as serve: a command added later with --discovery and
// without them fails here.
func TestEveryDiscoveryCommandTakesTheAccessFlags(t *testing.T) {
	var walk func(c *cobra.Command) []*cobra.Command
	walk = func(c *cobra.Command) []*cobra.Command {
		cmds := []*cobra.Command{c}
		for _, sub := range c.Commands() {
			cmds = append(cmds, walk(sub)...)
		}
		return cmds
	}
	var found []string
	for _, c := range walk(newRoot(&streams{})) {
		if c.Flags().Lookup("discovery") == nil {
			continue
		}
		found = append(found, c.CommandPath())
		for _, name := range []string{"config-etcd-ca", "config-etcd-cert", "config-etcd-key", "config-etcd-user", "discovery-prefix",
			"peer-ca", "peer-cert", "peer-key", "insecure-peers"} {
			if c.Flags().Lookup(name) == nil {
				t.Errorf("%s takes --discovery but not --%s", c.CommandPath(), name)
			}
		}
	}
	for _, want := range []string{"ndbench serve", "ndbench scenario run", "ndbench autotune"} {
		if !strings.Contains(strings.Join(found, "\n"), want) {
			t.Errorf("%s takes no --discovery; commands that do: %v", want, found)
		}
	}
}

// scenario run and autotune find a fleet registered in an etcd that serves TLS only and
// asks for client certificates, with serve's --config-etcd-* flags and --discovery-prefix;
// without a client certificate they cannot, and say how they reached etcd without showing
// the password.
func TestFleetCommandsReachEtcdOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "etcd")
	server := ca.Issue("etcd-server", "127.0.0.1")
	client := ca.Issue("ndbench-cli", "ndbench-cli")
	srv := etcdtest.NewTLS(t, etcdtest.TLS{Cert: server.Cert, Key: server.Key, ClientCA: ca.File})
	cert, err := tls.LoadX509KeyPair(client.Cert, client.Key)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	const token = "0123456789abcdefghijKLMNOPQRST"
	base, _, _, _ := startServe(t, nil, "--listen", "127.0.0.1:0", "--token", token, "--log-level", "warn")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	// The node as a serve with --discovery etcd: registers itself (TestServeDiscoveryEtcdOverTLS).
	member, _ := json.Marshal(map[string]string{"id": "node-a", "addr": u.Host})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := writer.Put(ctx, "/tls/nodes/node-a", string(member)); err != nil {
		t.Fatal(err)
	}

	sc := writeScenario(t, `
config:
  driver: {name: memory}
  workload: {readRate: 200, writeEnabled: false, numKeys: 100}
phases: [{name: p, duration: 1s}]
`)
	commands := []struct {
		name string
		args []string
	}{
		{"scenario run", []string{"scenario", "run", sc}},
		{"autotune", []string{"autotune", "--driver", "memory", "--set", "workload.writeEnabled=false", "--set", "workload.numKeys=100",
			"--percentile", "50", "--latency", "1s", "--start", "200", "--max-rate", "200",
			"--settle", "200ms", "--window", "1s", "--confirm", "1s"}},
	}
	env := []string{"NDBENCH_TOKEN=" + token}
	discover := []string{"--discovery", "etcd:" + srv.Endpoint, "--discovery-prefix", "/tls/nodes/"}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			args := append(append(append([]string{}, c.args...), discover...),
				"--config-etcd-ca", ca.File, "--config-etcd-cert", client.Cert, "--config-etcd-key", client.Key)
			code, out, errOut := ndbench(t, env, args...)
			if !strings.Contains(errOut, "fleet: 1 node(s) (node-a)") {
				t.Fatalf("the fleet in etcd over TLS not found: exit %d\n%s\n%s", code, out, errOut)
			}
			if code != 0 {
				t.Errorf("exit %d, want 0\n%s\n%s", code, out, errOut)
			}
		})
	}

	const password = "etcd-password-0123456789"
	for _, c := range commands {
		for _, tt := range []struct {
			name string
			env  []string
			args []string
			code int
			want string
		}{
			{"no client certificate", []string{"NDBENCH_ETCD_PASSWORD=" + password}, append(discover, "--config-etcd-ca", ca.File, "--config-etcd-user", "bench"), 2, "(TLS, user bench)"},
			{"password without user", []string{"NDBENCH_ETCD_PASSWORD=" + password}, discover, 2, "--config-etcd-user"},
			{"etcd flags without etcd", nil, []string{"--peers", "127.0.0.1:1", "--config-etcd-ca", ca.File}, 2, "--discovery etcd:"},
			{"certificate without key", nil, append(discover, "--config-etcd-cert", client.Cert), 2, "--config-etcd-key"},
		} {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				args := append(append([]string{}, c.args...), tt.args...)
				code, out, errOut := ndbench(t, append(tt.env, env...), args...)
				if code != tt.code || !strings.Contains(errOut, tt.want) {
					t.Errorf("exit %d, stderr %q; want %d naming %s", code, errOut, tt.code, tt.want)
				}
				if strings.Contains(out+errOut, password) || strings.Contains(out+errOut, "PRIVATE KEY") {
					t.Errorf("the output shows a secret: %s %s", out, errOut)
				}
			})
		}
	}
}

// scenario run and autotune drive nodes that want a client certificate (serve
// --tls-client-ca) with --peer-cert and --peer-key, as a coordinating serve does; without
// one, or with one of another CA, no node answers them (exit 2).
func TestFleetCommandsMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "fleet")
	node := ca.Issue("node", "127.0.0.1")
	coordinator := ca.Issue("coordinator", "coordinator")
	rogue := tlstest.NewCA(t, "rogue").Issue("rogue", "coordinator")
	const token = "0123456789abcdefghijKLMNOPQRST"
	base, _, _, _ := startServe(t, []string{"NDBENCH_TOKEN=" + token}, "--listen", "127.0.0.1:0", "--log-level", "error",
		"--tls-cert", node.Cert, "--tls-key", node.Key, "--tls-client-ca", ca.File)
	addr, ok := strings.CutPrefix(base, "https://")
	if !ok {
		t.Fatalf("serving on %s, want https://", base)
	}
	sc := writeScenario(t, `
config:
  driver: {name: memory}
  workload: {readRate: 200, writeEnabled: false, numKeys: 100}
phases: [{name: p, duration: 1s}]
`)
	env := []string{"NDBENCH_TOKEN=" + token}
	scenario := []string{"scenario", "run", sc, "--peers", addr, "--peer-ca", ca.File}
	autotune := []string{"autotune", "--driver", "memory", "--set", "workload.writeEnabled=false", "--set", "workload.numKeys=100",
		"--percentile", "50", "--latency", "1s", "--start", "200", "--max-rate", "200", "--settle", "200ms", "--window", "1s", "--confirm", "1s",
		"--peers", addr, "--peer-ca", ca.File}
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"scenario run with the fleet's certificate", append(scenario, "--peer-cert", coordinator.Cert, "--peer-key", coordinator.Key), 0, "fleet: 1 node(s)"},
		{"autotune with the fleet's certificate", append(autotune, "--peer-cert", coordinator.Cert, "--peer-key", coordinator.Key), 0, "fleet: 1 node(s)"},
		{"no client certificate", scenario, 2, "no node answered"},
		{"a certificate of another CA", append(scenario, "--peer-cert", rogue.Cert, "--peer-key", rogue.Key), 2, "no node answered"},
		{"certificate without key", append(scenario, "--peer-cert", coordinator.Cert), 2, "--peer-key"},
		{"certificate without a CA to call over https", []string{"scenario", "run", sc, "--peers", addr, "--peer-cert", coordinator.Cert, "--peer-key", coordinator.Key}, 2, "--peer-ca"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := ndbench(t, env, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d naming %q\n%s\n%s", code, tt.code, tt.want, out, errOut)
			}
			if strings.Contains(out+errOut, "PRIVATE KEY") || strings.Contains(out+errOut, token) {
				t.Errorf("the output shows a secret: %s %s", out, errOut)
			}
		})
	}
}
