package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver/tlstest"
)

// A node served with a token and TLS, coordinating a fleet, refuses every route of its
// API, of the NDBench API and of its fleet view to a caller without the token, with a
// wrong one, or with one a character off (401); only /health (for probes) and the login
// (which checks the token itself) answer without it. The routes are the node's own
// OpenAPI document, so a route added later is walked too.
func TestServeTLSRefusesEveryRouteWithoutAValidToken(t *testing.T) {
	ca := tlstest.NewCA(t, "serve")
	pair := ca.Issue("node", "127.0.0.1")
	const token = "routes-secret-0123456789abcdefXYZ"
	base, _, _, _ := startServe(t, []string{"NDBENCH_TOKEN=" + token}, "--listen", "127.0.0.1:0", "--driver", "memory",
		"--tls-cert", pair.Cert, "--tls-key", pair.Key, "--peer-ca", ca.File, "--peers", "127.0.0.1:1", "--log-level", "error")
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("serving on %s, want https://", base)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}}}
	call := func(method, path, tok string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}

	st, body := call(http.MethodGet, "/openapi.json", token)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); st != 200 || err != nil {
		t.Fatalf("GET /openapi.json with the token: %d %v %.300s", st, err, body)
	}
	if st, body := call(http.MethodGet, "/api/v1/status", token); st != 200 {
		t.Fatalf("GET /api/v1/status with the token: %d %.300s", st, body)
	}
	param := regexp.MustCompile(`\{[^}]*\}`)
	type route struct{ method, path string }
	var routes []route
	for path, ops := range doc.Paths {
		for m := range ops {
			switch m = strings.ToUpper(m); m {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead:
				routes = append(routes, route{m, param.ReplaceAllString(path, "x")})
			}
		}
	}
	if len(routes) < 40 {
		t.Fatalf("the OpenAPI document lists %d operations; want the node's and NDBench's routes", len(routes))
	}
	for _, p := range []string{"/openapi.json", "/openapi.yaml", "/docs", "/metrics"} {
		routes = append(routes, route{http.MethodGet, p})
	}
	t.Logf("%d routes, each with and without the /fleet prefix", len(routes))
	wrong := token[:len(token)-1] + "Q"
	for _, prefix := range []string{"", "/fleet"} {
		for _, r := range routes {
			for _, tok := range []string{"", "not-the-token-0123456789abcdefXYZ", wrong} {
				want := http.StatusUnauthorized
				switch {
				case prefix != "":
				case r.path == "/health":
					want = http.StatusOK
				case r.method == http.MethodPost && r.path == "/api/v1/session":
					want = http.StatusBadRequest // checks the token in its body, which is missing
				}
				if st, body := call(r.method, prefix+r.path, tok); st != want {
					t.Errorf("%s %s%s with token %q: %d, want %d (%.200s)", r.method, prefix, r.path, tok, st, want, body)
				}
			}
		}
	}
}
