//go:build integration

package cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// secureNode starts `ndbench serve` with args (its address is given to args).
func secureNode(t *testing.T, args func(self string) []string) *testserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := testserver.Ndbench(ctx, ndbenchBin, args)
	if err != nil {
		t.Fatalf("start ndbench: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s log:\n%s", s.Addr(), s.LogTail())
		}
		_ = s.Stop()
	})
	return s
}

// memberState is what the fleet view says of one member.
type memberState struct {
	ID        string `json:"id"`
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// fleetMembers asks the coordinator at base (http:// or https://) for its members.
func fleetMembers(t *testing.T, hc *http.Client, base, tok string) []memberState {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/fleet/api/v1/fleet/members", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET fleet members: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET fleet members: %d %s", resp.StatusCode, b)
	}
	var body struct {
		Members []memberState `json:"members"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatal(err)
	}
	return body.Members
}

// waitMembers polls the members until ok says they are as wanted.
func waitMembers(t *testing.T, hc *http.Client, base, tok string, within time.Duration, ok func(map[string]memberState) bool) map[string]memberState {
	t.Helper()
	end := time.Now().Add(within)
	for {
		ms := map[string]memberState{}
		for _, m := range fleetMembers(t, hc, base, tok) {
			ms[m.ID] = m
		}
		if ok(ms) {
			return ms
		}
		if time.Now().After(end) {
			t.Fatalf("fleet members not as wanted after %v: %+v", within, ms)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ownLog is what the process wrote, without the harness's line that shows its command
// line (where a test passes --token).
func ownLog(s *testserver.Server) string {
	var keep []string
	for _, l := range strings.Split(s.LogTail(), "\n") {
		if !strings.HasPrefix(l, "=== testserver:") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func tlsClient(pool *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// A fleet over TLS: the coordinator calls its nodes over https, checks that each node's
// certificate is the fleet CA's and names the node; a process with a certificate of the
// same CA for another name, at a node's address, does not join.
func TestFleetOverTLSChecksNodeIdentities(t *testing.T) {
	ca := tlstest.NewCA(t, "fleet")
	nodeCert := ca.Issue("node", "127.0.0.1")
	// A valid certificate of the fleet's CA, for another name than the address it serves.
	rogueCert := ca.Issue("rogue", "localhost", "node-x")
	base := []string{"--token", token, "--log-level", "info"}
	withCert := func(p tlstest.Pair) []string {
		return append(append([]string{}, base...), "--tls-cert", p.Cert, "--tls-key", p.Key)
	}
	n1 := secureNode(t, func(string) []string { return withCert(nodeCert) })
	n2 := secureNode(t, func(string) []string { return withCert(nodeCert) })
	rogue := secureNode(t, func(string) []string { return withCert(rogueCert) })
	coord := secureNode(t, func(self string) []string {
		return append(withCert(nodeCert), "--peer-ca", ca.File, "--coordinate",
			"--peers", strings.Join([]string{self, n1.Addr(), n2.Addr(), rogue.Addr()}, ","))
	})
	hc := tlsClient(ca.Pool)
	url := "https://" + coord.Addr()
	ms := waitMembers(t, hc, url, token, 30*time.Second, func(ms map[string]memberState) bool {
		return ms[coord.Addr()].Health == "alive" && ms[n1.Addr()].Health == "alive" && ms[n2.Addr()].Health == "alive" &&
			ms[rogue.Addr()].LastError != ""
	})
	r := ms[rogue.Addr()]
	if r.Health == "alive" || !strings.Contains(r.LastError, `not valid for its identity "127.0.0.1"`) {
		t.Errorf("the node with another name's certificate: %+v; want it kept out for its identity", r)
	}
	// A little later it still has not joined (the refusal is not a transient error).
	time.Sleep(2 * time.Second)
	ms = waitMembers(t, hc, url, token, time.Second, func(map[string]memberState) bool { return true })
	if h := ms[rogue.Addr()].Health; h == "alive" {
		t.Errorf("the rogue node joined: %+v", ms[rogue.Addr()])
	}
	// Plain http to a TLS node gets no API.
	resp, err := http.Get("http://" + coord.Addr() + "/api/v1/status")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain http to a TLS node: %d, want 400", resp.StatusCode)
		}
	}
	for _, s := range []*testserver.Server{coord, n1, n2, rogue} {
		if strings.Contains(ownLog(s), token) {
			t.Errorf("node %s logged the token:\n%s", s.Addr(), ownLog(s))
		}
	}
}

// Without TLS, a peer off loopback is refused, named with the flags that would allow it;
// --insecure-peers allows it with a warning.
func TestFleetRefusesPlainHTTPPeerOffLoopback(t *testing.T) {
	const offLoopback = "192.0.2.1:9" // TEST-NET-1: never dialled when refused
	args := func(extra ...string) func(string) []string {
		return func(self string) []string {
			return append([]string{"--token", token, "--log-level", "info", "--coordinate", "--peers", self + "," + offLoopback}, extra...)
		}
	}
	coord := secureNode(t, args())
	hc := &http.Client{Timeout: 10 * time.Second}
	ms := waitMembers(t, hc, "http://"+coord.Addr(), token, 20*time.Second, func(ms map[string]memberState) bool {
		return ms[coord.Addr()].Health == "alive" && ms[offLoopback].LastError != ""
	})
	if e := ms[offLoopback].LastError; !strings.Contains(e, "plain http off loopback") || !strings.Contains(e, "--insecure-peers") || !strings.Contains(e, "--peer-ca") {
		t.Errorf("the off-loopback peer's error %q does not say why it was refused and which flags allow it", e)
	}
	if !strings.Contains(coord.LogTail(), "fleet member refused") {
		t.Errorf("the refusal is not logged:\n%s", coord.LogTail())
	}

	insecure := secureNode(t, args("--insecure-peers"))
	ms = waitMembers(t, hc, "http://"+insecure.Addr(), token, 20*time.Second, func(ms map[string]memberState) bool {
		return ms[insecure.Addr()].Health == "alive" && ms[offLoopback].LastError != ""
	})
	if e := ms[offLoopback].LastError; strings.Contains(e, "plain http off loopback") {
		t.Errorf("with --insecure-peers the peer is still refused: %q", e)
	}
	if !strings.Contains(insecure.LogTail(), "INSECURE: --insecure-peers") {
		t.Errorf("no warning for --insecure-peers:\n%s", insecure.LogTail())
	}
}

// The coordinator's calls to its nodes follow its --token-file: a fleet's token rotates
// without restarting the coordinator.
func TestFleetCoordinatorTokenRotatesFromFile(t *testing.T) {
	oldToken, newToken := "old-fleet-token-0123456789abcdef", "new-fleet-token-0123456789abcdef"
	node := secureNode(t, func(string) []string { return []string{"--token", newToken, "--log-level", "info"} })
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(oldToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	coord := secureNode(t, func(self string) []string {
		return []string{"--token-file", file, "--log-level", "info", "--coordinate", "--peers", self + "," + node.Addr()}
	})
	hc := &http.Client{Timeout: 10 * time.Second}
	url := "http://" + coord.Addr()
	ms := waitMembers(t, hc, url, oldToken, 20*time.Second, func(ms map[string]memberState) bool {
		return ms[coord.Addr()].Health == "alive" && ms[node.Addr()].LastError != ""
	})
	if ms[node.Addr()].Health == "alive" {
		t.Fatalf("the node with another token is alive: %+v", ms[node.Addr()])
	}
	if err := os.WriteFile(file, []byte(newToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The file is looked at every 3 s; then the next beat carries the new token. The old
	// one asks meanwhile: it stays valid for the grace.
	waitMembers(t, hc, url, oldToken, 20*time.Second, func(ms map[string]memberState) bool {
		return ms[coord.Addr()].Health == "alive" && ms[node.Addr()].Health == "alive"
	})
	fleetMembers(t, hc, url, newToken)
	for _, s := range []*testserver.Server{coord, node} {
		for _, tok := range []string{oldToken, newToken} {
			if strings.Contains(ownLog(s), tok) {
				t.Errorf("node %s logged a token:\n%s", s.Addr(), ownLog(s))
			}
		}
	}
}

// Mutual TLS: nodes with --tls-client-ca answer only a client presenting a certificate of
// the fleet's CA. A coordinator presenting its --peer-cert runs its fleet; one presenting
// another CA's certificate, or none, is refused by every node and gets no member; a node
// whose certificate is another CA's does not join either.
func TestFleetMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "fleet")
	nodeCert := ca.Issue("node", "127.0.0.1")
	coordCert := ca.Issue("coordinator", "coordinator")
	other := tlstest.NewCA(t, "other")
	strangerCert := other.Issue("stranger", "coordinator", "127.0.0.1")
	node := func(p tlstest.Pair, more ...string) []string {
		return append([]string{"--token", token, "--log-level", "info", "--tls-cert", p.Cert, "--tls-key", p.Key, "--tls-client-ca", ca.File}, more...)
	}
	n1 := secureNode(t, func(string) []string { return node(nodeCert) })
	n2 := secureNode(t, func(string) []string { return node(nodeCert) })
	rogue := secureNode(t, func(string) []string { return node(strangerCert) })
	coord := secureNode(t, func(self string) []string {
		return node(nodeCert, "--peer-ca", ca.File, "--peer-cert", coordCert.Cert, "--peer-key", coordCert.Key, "--coordinate",
			"--peers", strings.Join([]string{self, n1.Addr(), n2.Addr(), rogue.Addr()}, ","))
	})
	// The test's own client presents the coordinator's certificate: the coordinator's
	// API wants one too.
	pair, err := tls.LoadX509KeyPair(coordCert.Cert, coordCert.Key)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
	url := "https://" + coord.Addr()
	ms := waitMembers(t, hc, url, token, 30*time.Second, func(ms map[string]memberState) bool {
		return ms[coord.Addr()].Health == "alive" && ms[n1.Addr()].Health == "alive" && ms[n2.Addr()].Health == "alive" &&
			ms[rogue.Addr()].LastError != ""
	})
	if r := ms[rogue.Addr()]; r.Health == "alive" || !strings.Contains(r.LastError, "not trusted") {
		t.Errorf("the node with another CA's certificate: %+v; want it kept out as not trusted", r)
	}

	// Without a client certificate, the API refuses even the right token.
	if st, _ := getStatus(t, tlsClient(ca.Pool), "https://"+n1.Addr()+"/api/v1/status"); st != http.StatusUnauthorized {
		t.Errorf("a client without a certificate, with the token: %d, want 401", st)
	}

	// Coordinators the nodes do not trust: a certificate of another CA (its --tls-cert
	// serves, --peer-cert is presented), and none (it serves plain http on loopback, so it
	// has no certificate to present by default).
	for _, tt := range []struct {
		name string
		args []string
		url  string
	}{
		{"another CA's certificate", []string{"--tls-cert", nodeCert.Cert, "--tls-key", nodeCert.Key,
			"--peer-cert", strangerCert.Cert, "--peer-key", strangerCert.Key}, "https://"},
		{"no certificate", nil, "http://"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bad := secureNode(t, func(self string) []string {
				return append([]string{"--token", token, "--log-level", "info",
					"--peer-ca", ca.File, "--coordinate", "--peers", strings.Join([]string{n1.Addr(), n2.Addr()}, ",")}, tt.args...)
			})
			first := waitMembers(t, tlsClient(ca.Pool), tt.url+bad.Addr(), token, 30*time.Second, func(ms map[string]memberState) bool {
				return ms[n1.Addr()].LastError != "" && ms[n2.Addr()].LastError != ""
			})
			t.Logf("the untrusted coordinator's first error: %s", first[n1.Addr()].LastError)
			time.Sleep(2 * time.Second)
			ms := waitMembers(t, tlsClient(ca.Pool), tt.url+bad.Addr(), token, time.Second, func(map[string]memberState) bool { return true })
			for _, id := range []string{n1.Addr(), n2.Addr()} {
				if ms[id].Health == "alive" {
					t.Errorf("node %s answered a coordinator with %s: %+v", id, tt.name, ms[id])
				}
			}
			t.Logf("members of the untrusted coordinator: %+v", ms)
		})
	}
}

// getStatus GETs url with the fleet's token.
func getStatus(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
