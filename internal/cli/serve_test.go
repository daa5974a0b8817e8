package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
	"github.com/ndbench/ndbench/internal/testserver/tlstest"

	// A driver with a path option, for the capability gate of serve --allow.
	_ "github.com/ndbench/ndbench/drivers/pebble"
)

// syncBuffer is an io.Writer the test can read while the command writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingRE = regexp.MustCompile(`serving on (https?://\S+)`)

// servePatience bounds how long startServe waits for serve to listen and for it to exit
// after its signal: a hang check, not a speed bar (a healthy serve answers in well under a
// second; under -race at load 36 one took over the old 10 s to print its address).
const servePatience = time.Minute

// startServe runs `ndbench serve` in-process and returns its base URL, its output and a
// function that stops it the way SIGTERM does (cancelling the command's context) and
// returns its exit code.
func startServe(t *testing.T, env []string, args ...string) (base string, out, errOut *syncBuffer, stop func() int) {
	t.Helper()
	out, errOut = &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	code := -1
	go func() {
		defer close(done)
		code = execute(ctx, append([]string{"serve"}, args...), &streams{out: out, err: errOut, env: env})
	}()
	stop = func() int {
		cancel()
		select {
		case <-done:
		case <-time.After(servePatience):
			t.Fatalf("serve did not exit within %v of the signal\nstdout: %s\nstderr: %s", servePatience, out, errOut)
		}
		return code
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(servePatience)
	for time.Now().Before(deadline) {
		if m := servingRE.FindStringSubmatch(out.String()); m != nil {
			return m[1], out, errOut, stop
		}
		select {
		case <-done:
			t.Fatalf("serve exited with %d before listening\nstdout: %s\nstderr: %s", code, out, errOut)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no listen address within %v\nstdout: %s\nstderr: %s", servePatience, out, errOut)
	return
}

func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestServeHeadlessWritesReportOnSignal(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "final.json")
	base, out, errOut, stop := startServe(t, nil, "--listen", "127.0.0.1:0", "--driver", "memory", "--start",
		"--set", "workload.readRate=2000", "--set", "workload.writeRate=500", "--report", rep)

	if st, body := get(t, base+"/health", ""); st != 200 || !bytes.Contains(body, []byte(`"ok"`)) {
		t.Fatalf("/health: %d %s", st, body)
	}
	var status struct {
		Driver        string `json:"driver"`
		ReadsRunning  bool   `json:"readsRunning"`
		WritesRunning bool   `json:"writesRunning"`
	}
	st, body := get(t, base+"/api/v1/status", "")
	if err := json.Unmarshal(body, &status); st != 200 || err != nil {
		t.Fatalf("/api/v1/status: %d %s", st, body)
	}
	if status.Driver != "memory" || !status.ReadsRunning || !status.WritesRunning {
		t.Errorf("status %+v, want memory with reads and writes running (--start)", status)
	}
	time.Sleep(1500 * time.Millisecond) // at least one whole interval in the report

	if code := stop(); code != 0 {
		t.Fatalf("exit %d after the signal, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out.String(), "report written to "+rep) {
		t.Errorf("output does not name the report: %s", out)
	}
	// On the signal it says what the session did, as run does, and how it exits (issue
	// 36: serve ended on Ctrl-C without a line).
	for _, want := range []string{"summary over", "read ", "write ", "serve stopped by a signal: the driver session (memory) is summarized above; exit code 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output on the signal lacks %q:\n%s", want, out)
		}
	}
	r := readReport(t, rep)
	if r.Driver.Name != "memory" || r.Ops["read"].Count == 0 || r.Ops["write"].Count == 0 {
		t.Errorf("report: driver %q, reads %d, writes %d; want memory with both", r.Driver.Name, r.Ops["read"].Count, r.Ops["write"].Count)
	}
	if r.Seconds < 1 {
		t.Errorf("report covers %.2f s, want the whole service run", r.Seconds)
	}
}

func TestServeTokenAndListenRules(t *testing.T) {
	t.Run("non-loopback without token refuses to start", func(t *testing.T) {
		code, out, errOut := ndbench(t, nil, "serve", "--listen", "0.0.0.0:0", "--driver", "memory")
		if code != 2 || !strings.Contains(errOut, "without a token") {
			t.Fatalf("exit %d, stderr %q, stdout %q; want 2 and a message asking for a token", code, errOut, out)
		}
	})
	t.Run("non-loopback with a token but without TLS refuses to start", func(t *testing.T) {
		tok := "listen-secret-0123456789abcdef"
		code, out, errOut := ndbench(t, []string{"NDBENCH_TOKEN=" + tok}, "serve", "--listen", "0.0.0.0:0", "--driver", "memory")
		if code != 2 || !strings.Contains(errOut, "without TLS") || !strings.Contains(errOut, "--tls-cert") || !strings.Contains(errOut, "--insecure-listen") {
			t.Fatalf("exit %d, stderr %q, stdout %q; want 2 and a message naming --tls-cert and --insecure-listen", code, errOut, out)
		}
		if strings.Contains(errOut+out, tok) {
			t.Errorf("the output shows the token: %s %s", errOut, out)
		}
	})
	t.Run("--insecure-listen serves plain HTTP off loopback with a warning", func(t *testing.T) {
		tok := "listen-secret-0123456789abcdef"
		_, out, errOut, stop := startServe(t, []string{"NDBENCH_TOKEN=" + tok}, "--listen", "0.0.0.0:0", "--driver", "memory", "--insecure-listen")
		if code := stop(); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
		if !strings.Contains(errOut.String(), "INSECURE") || !strings.Contains(errOut.String(), "clear text") {
			t.Errorf("no warning about plain HTTP off loopback: %s", errOut)
		}
		if strings.Contains(errOut.String()+out.String(), tok) {
			t.Errorf("the output shows the token: %s %s", errOut, out)
		}
	})
	t.Run("--tls-cert and --tls-key serve HTTPS", func(t *testing.T) {
		ca := tlstest.NewCA(t, "serve")
		pair := ca.Issue("node", "127.0.0.1")
		tok := "tls-secret-0123456789abcdef"
		base, _, _, stop := startServe(t, []string{"NDBENCH_TOKEN=" + tok}, "--listen", "127.0.0.1:0", "--driver", "memory",
			"--tls-cert", pair.Cert, "--tls-key", pair.Key)
		if !strings.HasPrefix(base, "https://") {
			t.Fatalf("serving on %s, want https://", base)
		}
		hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}}
		for _, tt := range []struct {
			token string
			want  int
		}{{"", 401}, {tok, 200}} {
			req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/status", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("GET /api/v1/status over TLS: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("GET /api/v1/status with token %v: %d, want %d", tt.token != "", resp.StatusCode, tt.want)
			}
		}
		if code := stop(); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
	})
	t.Run("--tls-cert without --tls-key refuses to start", func(t *testing.T) {
		ca := tlstest.NewCA(t, "serve")
		pair := ca.Issue("node", "127.0.0.1")
		code, _, errOut := ndbench(t, nil, "serve", "--listen", "127.0.0.1:0", "--tls-cert", pair.Cert)
		if code != 2 || !strings.Contains(errOut, "--tls-key") {
			t.Fatalf("exit %d, stderr %q; want 2 naming --tls-key", code, errOut)
		}
	})
	t.Run("token from the environment protects the API", func(t *testing.T) {
		base, _, _, stop := startServe(t, []string{"NDBENCH_TOKEN=env-secret-0123456789abcdef"}, "--listen", "127.0.0.1:0", "--driver", "memory")
		tests := []struct {
			path, token string
			want        int
		}{
			{"/health", "", 200},
			{"/api/v1/status", "", 401},
			{"/api/v1/status", "wrong", 401},
			{"/api/v1/status", "env-secret-0123456789abcdef", 200},
		}
		for _, tt := range tests {
			if st, body := get(t, base+tt.path, tt.token); st != tt.want {
				t.Errorf("GET %s with token %q: %d, want %d (%s)", tt.path, tt.token, st, tt.want, body)
			}
		}
		if code := stop(); code != 0 {
			t.Errorf("exit %d, want 0", code)
		}
	})
	t.Run("watched config file applies edits", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "ndbench.yaml")
		if err := os.WriteFile(cfg, []byte("workload:\n  readRate: 300\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		base, _, _, _ := startServe(t, nil, "--listen", "127.0.0.1:0", "--driver", "memory", "-c", cfg)
		if err := os.WriteFile(cfg, []byte("workload:\n  readRate: 700\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			_, body := get(t, base+"/api/v1/config", "")
			if bytes.Contains(body, []byte(`"key":"workload.readRate","value":"700"`)) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("edit of the config file not applied within 5 s")
	})
}

// serve --start with a backfill configured writes every key first, as `ndbench run` does,
// and starts the load after it: a load on an empty keyspace measures misses.
func TestServeStartBackfillsFirst(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"workload.backfill", []string{"--set", "workload.backfill=true"}},
		{"--backfill", []string{"--backfill"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "final.json")
			args := append([]string{"--listen", "127.0.0.1:0", "--driver", "memory", "--start",
				"--set", "workload.numKeys=3000", "--set", "workload.backfillRate=6000",
				"--set", "workload.readRate=1000", "--set", "workload.writeEnabled=false", "--report", rep}, c.args...)
			base, out, errOut, stop := startServe(t, nil, args...)

			var status struct {
				ReadsRunning bool `json:"readsRunning"`
				Backfill     *struct {
					Phase   string `json:"phase"`
					Total   int64  `json:"total"`
					Written int64  `json:"written"`
				} `json:"backfill"`
			}
			deadline := time.Now().Add(15 * time.Second)
			for !status.ReadsRunning && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				st, body := get(t, base+"/api/v1/status", "")
				if err := json.Unmarshal(body, &status); st != 200 || err != nil {
					t.Fatalf("/api/v1/status: %d %s", st, body)
				}
				if status.ReadsRunning && (status.Backfill == nil || status.Backfill.Phase != "done") {
					t.Fatalf("reads run before the backfill is done: %+v", status.Backfill)
				}
			}
			if !status.ReadsRunning {
				t.Fatalf("reads never started; backfill %+v\nstderr: %s", status.Backfill, errOut)
			}
			if b := status.Backfill; b.Total != 3000 || b.Written != 3000 {
				t.Errorf("backfill wrote %d of %d keys, want 3000 of 3000", b.Written, b.Total)
			}
			time.Sleep(1200 * time.Millisecond)
			if code := stop(); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			r := readReport(t, rep)
			rd := r.Ops["read"]
			if rd.Count == 0 || rd.Misses != 0 {
				t.Errorf("load after the backfill: %d reads, %d misses; want reads that all hit", rd.Count, rd.Misses)
			}
			if len(r.Phases) == 0 || r.Phases[0].Name != "backfill" {
				t.Errorf("report phases %+v, want the backfill first", r.Phases)
			}
		})
	}
}

// TestServeAllow: serve --allow is the operator's consent to what API callers may set
// beyond the store; without it the API refuses a path and names the flag, with it the
// same change applies, and an unknown capability is a usage error naming the allowed ones.
func TestServeAllow(t *testing.T) {
	t.Run("unknown capability", func(t *testing.T) {
		code, _, errOut := ndbench(t, nil, "serve", "--listen", "127.0.0.1:0", "--allow", "paths,shell")
		if code != 2 || !strings.Contains(errOut, `--allow: unknown capability "shell"; allowed: script, http-targets, paths`) {
			t.Fatalf("exit %d, stderr %q; want 2 naming the allowed capabilities", code, errOut)
		}
	})
	patchPath := func(t *testing.T, base string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body := strings.NewReader(`{"values": {"drivers.pebble.path": "/var/tmp/elsewhere"}}`)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, base+"/api/v1/config", body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range []struct {
		args []string
		want int
	}{
		{nil, http.StatusForbidden},
		{[]string{"--allow", "script", "--allow", "paths"}, http.StatusOK},
	} {
		base, _, _, _ := startServe(t, nil, append([]string{"--listen", "127.0.0.1:0", "--driver", "memory"}, tt.args...)...)
		st, body := patchPath(t, base)
		if st != tt.want || st == http.StatusForbidden && !strings.Contains(body, "ndbench serve --allow=paths") {
			t.Errorf("serve %q: PATCH of a path: %d %s; want %d (naming --allow=paths when refused)", tt.args, st, body, tt.want)
		}
	}
}

// serve --config-etcd reaches an etcd that wants TLS and client certificates with
// --config-etcd-ca, --config-etcd-cert and --config-etcd-key.
func TestServeConfigEtcdOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "etcd")
	server := ca.Issue("etcd-server", "127.0.0.1")
	client := ca.Issue("ndbench-node", "ndbench-node")
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
	if _, err := writer.Put(context.Background(), "/tls/node1/workload.readRate", "777"); err != nil {
		t.Fatal(err)
	}
	base, _, _, stop := startServe(t, nil, "--listen", "127.0.0.1:0", "--driver", "memory",
		"--config-etcd", srv.Endpoint, "--config-prefix", "/tls/node1/",
		"--config-etcd-ca", ca.File, "--config-etcd-cert", client.Cert, "--config-etcd-key", client.Key)
	if _, body := get(t, base+"/api/v1/config", ""); !bytes.Contains(body, []byte(`"key":"workload.readRate","value":"777"`)) {
		t.Errorf("readRate from etcd over TLS not in the configuration: %s", body)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}

	const password = "etcd-password-0123456789"
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"user without password", nil, []string{"--config-etcd-user", "bench"}, "NDBENCH_ETCD_PASSWORD"},
		{"password without user", []string{"NDBENCH_ETCD_PASSWORD=" + password}, nil, "--config-etcd-user"},
		{"certificate without key", nil, []string{"--config-etcd-cert", client.Cert}, "--config-etcd-key"},
		{"CA file that holds no certificate", nil, []string{"--config-etcd-ca", client.Key}, "--config-etcd-ca"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--config-etcd", srv.Endpoint, "--config-prefix", "/tls/node1/"}, tt.args...)
			code, out, errOut := ndbench(t, tt.env, args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %s", code, errOut, tt.want)
			}
			if strings.Contains(out+errOut, password) || strings.Contains(out+errOut, "PRIVATE KEY") {
				t.Errorf("the output shows a secret: %s %s", out, errOut)
			}
		})
	}
}

// TestServeSaysItStopped: a serve without a driver session says, on the signal, that it
// stopped and had nothing to summarize, and exits 0.
func TestServeSaysItStopped(t *testing.T) {
	_, out, errOut, stop := startServe(t, nil, "--listen", "127.0.0.1:0")
	if code := stop(); code != 0 {
		t.Fatalf("exit %d after the signal, want 0\n%s\n%s", code, out, errOut)
	}
	if want := "serve stopped by a signal: no driver session was open, so there is nothing to summarize; exit code 0"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

// send makes a JSON request and returns the status and body.
func send(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// A driver named with --driver is listed as the flag's, also after the API changed other
// keys and after a connect (the UI's, or --start's) that names the same driver again.
func TestServeDriverFlagStaysItsSource(t *testing.T) {
	sourceOf := func(t *testing.T, base, key string) string {
		t.Helper()
		st, body := get(t, base+"/api/v1/config", "")
		var cfg struct {
			Entries []struct{ Key, Value, Source string } `json:"entries"`
		}
		if err := json.Unmarshal(body, &cfg); st != 200 || err != nil {
			t.Fatalf("GET /api/v1/config: %d %s", st, body)
		}
		for _, e := range cfg.Entries {
			if e.Key == key {
				return e.Value + " (" + e.Source + ")"
			}
		}
		t.Fatalf("GET /api/v1/config lists no %s: %s", key, body)
		return ""
	}
	for _, tt := range []struct {
		name string
		args []string
		init bool // connect over the API, as the UI's Connect does
	}{
		{"connect over the API", nil, true},
		{"--start", []string{"--start"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, _, _, _ := startServe(t, nil, append([]string{"--listen", "127.0.0.1:0", "--driver", "memory"}, tt.args...)...)
			if got := sourceOf(t, base, "driver.name"); got != "memory (flag --driver)" {
				t.Fatalf("driver.name before any change: %s, want memory (flag --driver)", got)
			}
			if tt.init {
				if st, body := send(t, http.MethodPost, base+"/api/v1/driver/init", `{"driver":"memory"}`); st != 200 {
					t.Fatalf("POST /api/v1/driver/init: %d %s", st, body)
				}
			}
			if st, body := send(t, http.MethodPatch, base+"/api/v1/config", `{"values":{"workload.readRate":"1000"}}`); st != 200 {
				t.Fatalf("PATCH /api/v1/config: %d %s", st, body)
			}
			if got := sourceOf(t, base, "driver.name"); got != "memory (flag --driver)" {
				t.Errorf("driver.name after the API's changes: %s, want memory (flag --driver)", got)
			}
			if got := sourceOf(t, base, "workload.readRate"); got != "1000 (api)" {
				t.Errorf("workload.readRate: %s, want 1000 (api)", got)
			}
		})
	}
}

// serve --discovery etcd: reaches an etcd that wants TLS and client certificates with the
// same flags as --config-etcd: the node registers itself there. Without a client
// certificate it cannot, and says how it reached etcd without showing the password.
func TestServeDiscoveryEtcdOverTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "etcd")
	server := ca.Issue("etcd-server", "127.0.0.1")
	client := ca.Issue("ndbench-node", "ndbench-node")
	srv := etcdtest.NewTLS(t, etcdtest.TLS{Cert: server.Cert, Key: server.Key, ClientCA: ca.File})
	cert, err := tls.LoadX509KeyPair(client.Cert, client.Key)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: ca.Pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	const token = "0123456789abcdefghijKLMNOPQRST"
	fleet := []string{"serve", "--listen", "127.0.0.1:0", "--driver", "memory", "--token", token,
		"--discovery", "etcd:" + srv.Endpoint, "--discovery-prefix", "/tls/nodes/", "--node-id", "node-a", "--advertise", "127.0.0.1:18443"}
	_, _, errOut, stop := startServe(t, nil, append(fleet[1:], "--config-etcd-ca", ca.File, "--config-etcd-cert", client.Cert, "--config-etcd-key", client.Key)...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := reader.Get(ctx, "/tls/nodes/node-a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Errorf("the node's registration over TLS: %v, %v\n%s", resp, err, errOut)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}

	const password = "etcd-password-0123456789"
	for _, tt := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no client certificate", []string{"NDBENCH_ETCD_PASSWORD=" + password}, []string{"--config-etcd-ca", ca.File, "--config-etcd-user", "bench"}, "(TLS, user bench)"},
		{"password without user", []string{"NDBENCH_ETCD_PASSWORD=" + password}, nil, "--config-etcd-user"},
		{"credentials twice", []string{"NDBENCH_ETCD_PASSWORD=" + password}, []string{"--config-etcd-user", "bench", "--discovery", "etcd:other:" + password + "@" + srv.Endpoint}, "given twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := ndbench(t, tt.env, append(fleet, tt.args...)...)
			if code == 0 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want an error naming %s", code, errOut, tt.want)
			}
			if strings.Contains(out+errOut, password) || strings.Contains(out+errOut, "PRIVATE KEY") {
				t.Errorf("the output shows a secret: %s %s", out, errOut)
			}
		})
	}
}
