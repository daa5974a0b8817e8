package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/ndbenchapi"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/stats"
)

const testToken = "test-token-0123456789abcdef"

// hitLog records which operations the tests exercised and with which statuses, for the
// coverage check in TestMain.
type hitLog struct {
	mu   sync.Mutex
	hits map[string]map[int]bool // "GET /api/v1/kv/T1" -> statuses
}

func (h *hitLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rw, r)
		h.mu.Lock()
		defer h.mu.Unlock()
		k := r.Method + " " + r.URL.Path
		if h.hits[k] == nil {
			h.hits[k] = map[int]bool{}
		}
		h.hits[k][rw.status] = true
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// hits is shared by every test of the package; only TestMain reads it.
var hits = &hitLog{hits: map[string]map[int]bool{}}

// lastDoc is the OpenAPI document the coverage check compares against.
var (
	docMu   sync.Mutex
	lastDoc *openapi3.T
)

func TestMain(m *testing.M) {
	code := m.Run()
	// Only a full run can judge coverage: with -run, most operations were skipped on purpose.
	if f := flag.Lookup("test.run"); code == 0 && (f == nil || f.Value.String() == "") {
		if missing := uncovered(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: operations not exercised by the tests:\n  %s\n", strings.Join(missing, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// uncovered lists the documented operations no test called successfully, or whose
// declared error responses no test provoked.
func uncovered() []string {
	docMu.Lock()
	doc := lastDoc
	docMu.Unlock()
	if doc == nil {
		return []string{"(no OpenAPI document was loaded: TestOpenAPIDocument did not run)"}
	}
	hits.mu.Lock()
	defer hits.mu.Unlock()
	var missing []string
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, ndbenchapi.Prefix) {
			continue // NDBench's routes: exercised by package ndbenchapi's tests, in NDBench's bodies
		}
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(path), `[^/]+`) + "$")
		for method, op := range item.Operations() {
			ok, errOK := false, false
			for k, statuses := range hits.hits {
				m, p, _ := strings.Cut(k, " ")
				if m != method || !re.MatchString(p) {
					continue
				}
				for st := range statuses {
					if st < 300 {
						ok = true
					} else if op.Responses.Value(strconv.Itoa(st)) != nil {
						errOK = true
					}
				}
			}
			if !ok {
				missing = append(missing, method+" "+path+": no successful call")
			}
			if !errOK {
				missing = append(missing, method+" "+path+": none of its declared error responses was provoked")
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// env is a server on a fresh memory-driver instance.
type env struct {
	t    testing.TB
	inst *node.Node
	srv  *Server
	ts   *httptest.Server
}

func newEnv(t testing.TB, sets ...string) *env {
	t.Helper()
	return newEnvToken(t, testToken, sets...)
}

// newEnvToken is newEnv with the given server token; "" serves without one, as a node on
// loopback does by default.
func newEnvToken(t testing.TB, token string, sets ...string) *env {
	t.Helper()
	return newEnvOpts(t, Options{Token: token, Heartbeat: 100 * time.Millisecond,
		CORSOrigins: []string{"https://ui.example.com"}, Version: "test"}, sets...)
}

// newEnvOpts serves a memory-driver node (configured with sets) with the server options
// opts, whose Instance it fills in.
func newEnvOpts(t testing.TB, opts Options, sets ...string) *env {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=memory"}, sets...)})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	opts.Instance = inst
	if opts.Agent == nil {
		// Every node serves the node side of a fleet: its routes are walked like the others.
		opts.Agent = cluster.NewAgent(inst, cluster.AgentOptions{ID: "test-node", Version: "test"})
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hits.wrap(srv.Handler()))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		srv.Close()
		ts.Close()
		_ = inst.Close()
	})
	return &env{t: t, inst: inst, srv: srv, ts: ts}
}

// call sends a request with the test token; body is JSON-encoded unless it is a string.
func (e *env) call(method, path string, body any) (int, []byte) {
	e.t.Helper()
	return e.callAs(testToken, method, path, body)
}

func (e *env) callAs(token, method, path string, body any) (int, []byte) {
	e.t.Helper()
	st, data, err := e.send(token, 10*time.Second, method, path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, data
}

// callWithin is call waiting up to patience for the answer, and returning the error of
// one that did not come rather than failing the test.
func (e *env) callWithin(patience time.Duration, method, path string, body any) (int, []byte, error) {
	e.t.Helper()
	return e.send(testToken, patience, method, path, body)
}

// send sends a request with token and waits up to patience for the whole answer.
func (e *env) send(token string, patience time.Duration, method, path string, body any) (int, []byte, error) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return resp.StatusCode, data, nil
}

// must calls and fails the test unless the status is want; it decodes the body into out.
// stream opens GET /api/v1/stats/stream with query ("" or "?intervals=1", ...) for ctx,
// checks it is an event stream, and returns a scanner over its lines; the body is closed
// when the test ends (or when ctx ends).
func (e *env) stream(t *testing.T, ctx context.Context, query string) *bufio.Scanner {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.ts.URL+"/api/v1/stats/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream%s: %d %s", query, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	return sc
}

func (e *env) must(want int, method, path string, body, out any) {
	e.t.Helper()
	st, data := e.call(method, path, body)
	if st != want {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, st, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

func (e *env) stats() StatsBody {
	e.t.Helper()
	var s StatsBody
	e.must(200, "GET", "/api/v1/stats", nil, &s)
	return s
}

func (e *env) status() node.Status {
	e.t.Helper()
	var s node.Status
	e.must(200, "GET", "/api/v1/status", nil, &s)
	return s
}

func (e *env) configVersion() uint64 {
	e.t.Helper()
	var c ConfigBody
	e.must(200, "GET", "/api/v1/config", nil, &c)
	return c.Version
}

// waitInterval polls /api/v1/stats until an interval that started at or after since
// satisfies ok, and fails after the deadline. Intervals are 1 s, so a change made at
// since is in a whole interval within 2 s; the slack covers a loaded machine.
func (e *env) waitInterval(what string, since time.Time, ok func(stats.Summary) bool) stats.Summary {
	e.t.Helper()
	// Changes apply within the next second; the wait returns as soon as one is seen, and
	// its bound only turns a change that never applies into a failure: 20 s leaves room
	// for ticks delayed by the rest of the suite on the same two cores under the race
	// detector (at a load of 20, 5 s was missed while the change had applied).
	deadline := since.Add(20 * time.Second)
	var last stats.Summary
	for time.Now().Before(deadline) {
		last = e.stats().Latest
		if !last.Start.Before(since) && ok(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	j, _ := json.Marshal(last.Ops)
	e.t.Fatalf("%s: not seen in stats within %s of the change; last interval (start %s): %s", what,
		deadline.Sub(since), last.Start.Format(time.StampMilli), j)
	return last
}

func (e *env) initMemory(opts map[string]string) {
	e.t.Helper()
	e.must(200, "POST", "/api/v1/driver/init", map[string]any{"driver": "memory", "options": opts}, nil)
}

func TestOpenAPIDocument(t *testing.T) {
	e := newEnv(t)
	st, data := e.call("GET", "/openapi.json", nil)
	if st != 200 {
		t.Fatalf("GET /openapi.json: %d %s", st, data)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("OpenAPI document does not validate: %v", err)
	}
	for _, want := range []string{"/api/v1/status", "/api/v1/stats/stream", "/api/v1/config", "/api/v1/kv/{key}", "/health"} {
		if doc.Paths.Find(want) == nil {
			t.Errorf("document lacks %s", want)
		}
	}
	docMu.Lock()
	lastDoc = doc
	docMu.Unlock()

	// Unauthenticated, the document is as protected as the rest; the docs page is
	// self-contained (no script or stylesheet from elsewhere).
	if st, _ := e.callAs("", "GET", "/openapi.json", nil); st != http.StatusUnauthorized {
		t.Errorf("GET /openapi.json without token: %d, want 401", st)
	}
	st, page := e.call("GET", "/docs", nil)
	if st != 200 || !bytes.Contains(page, []byte("/api/v1/config")) {
		t.Fatalf("GET /docs: %d %.200s", st, page)
	}
	if bytes.Contains(page, []byte("<script")) || bytes.Contains(page, []byte("src=\"http")) {
		t.Errorf("docs page loads external resources: %s", page)
	}
}

func TestErrorsAndLifecycle(t *testing.T) {
	e := newEnv(t)
	type step struct {
		name         string
		token        string
		method, path string
		body         any
		want         int
		contains     string
	}
	big := `{"values":{"workload.keyPrefix":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}}`
	steps := []step{
		{"health needs no token", "", "GET", "/health", nil, 200, `"ok"`},
		{"unknown query parameter", testToken, "GET", "/health?x=1", nil, 422, "x"},
		{"missing token", "", "GET", "/api/v1/status", nil, 401, "bearer token"},
		{"wrong token", "wrong", "GET", "/api/v1/status", nil, 401, "bearer token"},
		{"token of another length", testToken + "x", "GET", "/api/v1/config", nil, 401, "bearer token"},
		{"start before init", testToken, "POST", "/api/v1/load/start", nil, 409, "no driver is initialized"},
		{"stop before init", testToken, "POST", "/api/v1/load/stop", map[string]any{"ops": []string{"read"}}, 409, "init one first"},
		{"backfill before init", testToken, "GET", "/api/v1/backfill", nil, 409, "init"},
		{"start backfill before init", testToken, "POST", "/api/v1/backfill/start", nil, 409, "init"},
		{"stop backfill before init", testToken, "POST", "/api/v1/backfill/stop", nil, 409, "init"},
		{"shutdown before init", testToken, "POST", "/api/v1/driver/shutdown", nil, 409, "init"},
		{"kv before init", testToken, "GET", "/api/v1/kv/T1", nil, 409, "init"},
		{"kv write before init", testToken, "PUT", "/api/v1/kv/T1", map[string]any{"value": "aGk="}, 409, "init"},
		{"malformed JSON", testToken, "POST", "/api/v1/driver/init", `{"driver": "memory",`, 400, ""},
		{"malformed JSON in patch", testToken, "PATCH", "/api/v1/config", `{"values":`, 400, ""},
		{"unknown field", testToken, "POST", "/api/v1/driver/init", `{"driver":"memory","optoins":{}}`, 422, "optoins"},
		{"unknown field in load", testToken, "POST", "/api/v1/load/start", `{"opz":["read"]}`, 422, "opz"},
		{"bad op name", testToken, "POST", "/api/v1/load/stop", `{"ops":["delete"]}`, 422, "ops"},
		{"negative backfill workers", testToken, "POST", "/api/v1/backfill/start", `{"workers":-1}`, 422, "workers"},
		{"unknown driver", testToken, "POST", "/api/v1/driver/init", `{"driver":"nosuch"}`, 422, `"memory"`},
		{"bad driver option", testToken, "POST", "/api/v1/driver/init", `{"driver":"memory","options":{"shards":"0"}}`, 422, `"field":"shards"`},
		{"unknown driver option", testToken, "POST", "/api/v1/driver/init", `{"driver":"memory","options":{"nope":"1"}}`, 422, "nope"},
		{"empty patch", testToken, "PATCH", "/api/v1/config", `{"values":{}}`, 422, "values"},
		{"body too large", testToken, "PATCH", "/api/v1/config", big, 413, "limit"},
		{"bad since", testToken, "GET", "/api/v1/stats/series?since=yesterday", nil, 422, "RFC 3339"},
		{"unknown route", testToken, "GET", "/api/v1/nothing", nil, 404, "no such route"},
		{"init", testToken, "POST", "/api/v1/driver/init", `{"driver":"memory","options":{"shards":"8"}}`, 200, `"initialized":true`},
		{"init twice", testToken, "POST", "/api/v1/driver/init", `{"driver":"memory"}`, 409, "already initialized"},
		{"read missing key", testToken, "GET", "/api/v1/kv/nosuchkey", nil, 404, "not found"},
		{"write key", testToken, "PUT", "/api/v1/kv/k1", `{"value":"aGVsbG8="}`, 204, ""},
		{"write key, not base64", testToken, "PUT", "/api/v1/kv/k1", `{"value":"***"}`, 422, "value"},
		{"read key", testToken, "GET", "/api/v1/kv/k1", nil, 200, `"value":"aGVsbG8=","size":5`},
		{"start reads only", testToken, "POST", "/api/v1/load/start", `{"ops":["read"]}`, 200, `"readsRunning":true,"writesRunning":false`},
		{"start both", testToken, "POST", "/api/v1/load/start", nil, 200, `"writesRunning":true`},
		{"stop writes", testToken, "POST", "/api/v1/load/stop", `{"ops":["write"]}`, 200, `"readsRunning":true,"writesRunning":false`},
		{"stop all", testToken, "POST", "/api/v1/load/stop", `{}`, 200, `"readsRunning":false`},
		{"reset stats", testToken, "POST", "/api/v1/stats/reset", nil, 204, ""},
		{"reset with query", testToken, "POST", "/api/v1/stats/reset?all=1", nil, 422, "all"},
		{"series since", testToken, "GET", "/api/v1/stats/series?since=2000-01-01T00:00:00Z", nil, 200, `"points"`},
		{"shutdown", testToken, "POST", "/api/v1/driver/shutdown", nil, 200, `"initialized":false`},
		{"shutdown twice", testToken, "POST", "/api/v1/driver/shutdown", nil, 409, "init"},
	}
	for _, s := range steps {
		st, data := e.callAs(s.token, s.method, s.path, s.body)
		if st != s.want {
			t.Fatalf("%s: %s %s = %d, want %d; body %s", s.name, s.method, s.path, st, s.want, data)
		}
		if !bytes.Contains(data, []byte(s.contains)) {
			t.Errorf("%s: body %.300s does not contain %q", s.name, data, s.contains)
		}
		if st >= 400 {
			var p Problem
			if err := json.Unmarshal(data, &p); err != nil || p.Status != st || p.Detail == "" && len(p.Errors) == 0 {
				t.Errorf("%s: error body is not a problem with status %d: %s", s.name, st, data)
			}
			if bytes.Contains(data, []byte("goroutine ")) || bytes.Contains(data, []byte(".go:")) {
				t.Errorf("%s: error body has a stack trace: %s", s.name, data)
			}
		}
	}
}

func TestPatchOutOfRangeAppliesNothing(t *testing.T) {
	e := newEnv(t)
	before := e.configVersion()
	var p Problem
	e.must(422, "PATCH", "/api/v1/config", map[string]any{"values": map[string]string{
		"workload.readRate": "7000", "workload.readers": "-3"}}, &p)
	if len(p.Fields) != 1 || p.Fields[0].Field != "workload.readers" || p.Fields[0].Value != "-3" || p.Fields[0].Allowed == "" {
		t.Errorf("fields = %+v, want one naming workload.readers with value -3 and what is allowed", p.Fields)
	}
	if v := e.configVersion(); v != before {
		t.Errorf("config version %d after a rejected patch, want %d (unchanged)", v, before)
	}
	var c ConfigBody
	e.must(200, "GET", "/api/v1/config", nil, &c)
	for _, en := range c.Entries {
		if en.Key == "workload.readRate" && en.Value == "7000" {
			t.Errorf("readRate applied from a rejected patch: %+v", en)
		}
	}
}

func TestSecretsRedacted(t *testing.T) {
	e := newEnv(t, "drivers.redis.password=hunter2")
	st, data := e.call("GET", "/api/v1/config", nil)
	if st != 200 {
		t.Fatalf("GET /api/v1/config: %d %s", st, data)
	}
	if bytes.Contains(data, []byte("hunter2")) {
		t.Fatalf("config listing shows a secret: %s", data)
	}
	var c ConfigBody
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range c.Entries {
		if en.Key == "drivers.redis.password" {
			found = en.Secret
		}
	}
	if !found {
		t.Errorf("drivers.redis.password not listed as secret")
	}
	if len(c.WorkloadSchema) == 0 {
		t.Errorf("config has no workload schema")
	}
	// The UI's op class editor offers these: every option of a class, with its bounds.
	classOpts := map[string]driver.Option{}
	for _, o := range c.OpClassSchema {
		classOpts[o.Name] = o
	}
	for _, name := range []string{"workers", "maxWorkers", "rate", "enabled", "mix"} {
		if o, ok := classOpts[name]; !ok || !o.Live {
			t.Errorf("opClassSchema lacks live option %s: %+v", name, c.OpClassSchema)
		}
	}
	if o := classOpts["workers"]; o.Type != "int" || o.Min != "0" || o.Max != "10000" {
		t.Errorf("opClassSchema workers = %+v, want an int in [0, 10000]", o)
	}
}

func TestDriversList(t *testing.T) {
	e := newEnv(t)
	var list []DriverInfo
	e.must(200, "GET", "/api/v1/drivers", nil, &list)
	for _, d := range list {
		if d.Name == "memory" {
			for _, o := range d.Options {
				if o.Name == "errorRatio" && o.Live && o.Max == "1" {
					return
				}
			}
			t.Fatalf("memory options lack live errorRatio with max 1: %+v", d.Options)
		}
	}
	t.Fatalf("memory not among drivers %+v", list)
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		addr, token   string
		tls, insecure bool
		ok            bool
		want          string // in the error
	}{
		{addr: "127.0.0.1:8080", ok: true},
		{addr: "localhost:0", ok: true},
		{addr: "[::1]:8080", ok: true},
		{addr: "0.0.0.0:8080", want: "without a token"},
		{addr: ":8080", want: "without a token"},
		{addr: "10.1.2.3:8080", want: "without a token"},
		{addr: "10.1.2.3:8080", tls: true, want: "without a token"},
		{addr: "0.0.0.0:8080", token: "Zq9-secret-value", want: "--insecure-listen"},
		{addr: "0.0.0.0:8080", token: "Zq9-secret-value", want: "--tls-cert and --tls-key"},
		{addr: "0.0.0.0:8080", token: "Zq9-secret-value", tls: true, ok: true},
		{addr: "0.0.0.0:8080", token: "Zq9-secret-value", insecure: true, ok: true},
		{addr: "127.0.0.1:8080", token: "Zq9-secret-value", ok: true},
		{addr: "no-port", want: "want host:port"},
	}
	for _, tt := range tests {
		err := CheckListen(tt.addr, tt.token, tt.tls, tt.insecure)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListen(%q, token %v, tls %v, insecure %v) = %v, want ok %v", tt.addr, tt.token != "", tt.tls, tt.insecure, err, tt.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckListen(%q, token %v, tls %v): error %q does not say %q", tt.addr, tt.token != "", tt.tls, err, tt.want)
		}
		if err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token) {
			t.Errorf("CheckListen: error %q repeats the token", err)
		}
	}
}

func TestCORS(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		origin     string
		preflight  bool
		wantStatus int
		wantAllow  string
	}{
		{"https://ui.example.com", true, 204, "https://ui.example.com"},
		{"https://evil.example.com", true, 403, ""},
		{"https://ui.example.com", false, 200, "https://ui.example.com"},
		{"https://evil.example.com", false, 200, ""},
	}
	for _, tt := range tests {
		method := "GET"
		if tt.preflight {
			method = "OPTIONS"
		}
		req, _ := http.NewRequest(method, e.ts.URL+"/api/v1/status", nil)
		req.Header.Set("Origin", tt.origin)
		if tt.preflight {
			req.Header.Set("Access-Control-Request-Method", "PATCH")
		} else {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.wantStatus || resp.Header.Get("Access-Control-Allow-Origin") != tt.wantAllow {
			t.Errorf("%s from %s: status %d allow-origin %q, want %d %q", method, tt.origin, resp.StatusCode,
				resp.Header.Get("Access-Control-Allow-Origin"), tt.wantStatus, tt.wantAllow)
		}
	}
}

func TestBackfill(t *testing.T) {
	e := newEnv(t, "workload.numKeys=2000")
	e.initMemory(map[string]string{"serviceTime": "1ms"})
	var bs struct {
		Running bool   `json:"running"`
		Phase   string `json:"phase"`
		Total   int64  `json:"total"`
		Written int64  `json:"written"`
	}
	// 2000 keys at 1 ms each with one worker take 2 s: long enough to see it running.
	e.must(202, "POST", "/api/v1/backfill/start", map[string]any{"workers": 1}, &bs)
	if !bs.Running || bs.Total != 2000 {
		t.Fatalf("backfill after start: %+v, want running over 2000 keys", bs)
	}
	st, data := e.call("POST", "/api/v1/backfill/start", nil)
	if st != 409 || !bytes.Contains(data, []byte("already running")) {
		t.Errorf("second backfill: %d %s, want 409 already running", st, data)
	}
	e.must(200, "POST", "/api/v1/backfill/stop", nil, &bs)
	deadline := time.Now().Add(5 * time.Second)
	for bs.Running && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		e.must(200, "GET", "/api/v1/backfill", nil, &bs)
	}
	if bs.Running || bs.Phase != "stopped" || bs.Written >= 2000 {
		t.Errorf("backfill after stop: %+v, want stopped before writing every key", bs)
	}
}

// metricValue returns the value of the sample with exactly these labels.
func metricValue(t *testing.T, text, name, labels string) float64 {
	t.Helper()
	prefix := name + "{" + labels + "} "
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s%s: %v", name, labels, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s{%s} not exposed", name, labels)
	return 0
}

func TestStreamAndMetrics(t *testing.T) {
	e := newEnv(t, "workload.readRate=1000", "workload.writeRate=200", "workload.readers=3", "workload.writers=2")
	e.initMemory(nil)
	e.must(200, "POST", "/api/v1/load/start", nil, nil)

	t.Run("stream", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sc := e.stream(t, ctx, "")
		var events []stats.Summary
		heartbeats, event := 0, ""
		for len(events) < 2 && sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ": heartbeat"):
				heartbeats++
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var s stats.Summary
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &s); err != nil {
					t.Fatalf("event data is not a summary: %v: %s", err, line)
				}
				if event != "interval" {
					t.Errorf("data under event %q, want interval", event)
				}
				events = append(events, s)
			}
		}
		if len(events) < 2 {
			t.Fatalf("got %d events before the stream ended (%v)", len(events), sc.Err())
		}
		if events[1].Ops["read"].Count == 0 || events[1].Ops["read"].Workers != 3 || !events[1].Start.Equal(events[0].End) {
			t.Errorf("events do not follow each other with reads by 3 workers: %+v then %+v", events[0], events[1])
		}
		if heartbeats == 0 {
			t.Errorf("no heartbeat comment within two intervals (heartbeat every 100ms)")
		}
	})

	t.Run("stream with encoded intervals", func(t *testing.T) {
		// intervals=1 adds each interval encoded for merging, in sequence without gaps,
		// its histograms decoding to its counts.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sc := e.stream(t, ctx, "?intervals=1")
		var got []stats.EncodedInterval
		event := ""
		for len(got) < 3 && sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || event != "encoded" {
				continue
			}
			var iv stats.EncodedInterval
			if err := json.Unmarshal([]byte(data), &iv); err != nil {
				t.Fatalf("encoded event: %v", err)
			}
			if len(got) > 0 && iv.Seq != got[len(got)-1].Seq+1 {
				t.Fatalf("encoded seq %d after %d: a gap or a repeat", iv.Seq, got[len(got)-1].Seq)
			}
			got = append(got, iv)
		}
		if len(got) < 3 {
			t.Fatalf("%d encoded intervals before the stream ended (%v)", len(got), sc.Err())
		}
		for _, enc := range got {
			iv, err := enc.Decode()
			if err != nil {
				t.Fatal(err)
			}
			r := iv.Op("read")
			if r == nil || r.Successes+r.Misses == 0 || r.Response.TotalCount() != r.Successes+r.Misses {
				t.Errorf("encoded interval %d: read series %+v", enc.Seq, r)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		_, data := e.call("GET", "/metrics", nil)
		text := string(data)
		reads := metricValue(t, text, "ndbench_ops_total", `op="read",result="success"`) + metricValue(t, text, "ndbench_ops_total", `op="read",result="miss"`)
		if reads < 500 {
			t.Errorf("ndbench_ops_total for reads = %v after more than a second at 1000/s", reads)
		}
		if w := metricValue(t, text, "ndbench_workers", `op="read"`); w != 3 {
			t.Errorf("ndbench_workers{op=read} = %v, want 3", w)
		}
		if r := metricValue(t, text, "ndbench_target_rate", `op="write"`); r != 200 {
			t.Errorf("ndbench_target_rate{op=write} = %v, want 200", r)
		}
		p99 := metricValue(t, text, "ndbench_latency_seconds", `op="read",quantile="0.99",type="response"`)
		if p99 <= 0 || p99 > 1 {
			t.Errorf("read p99 response time = %v s, want a positive fraction of a second", p99)
		}
		if v := metricValue(t, text, "ndbench_errors_total", `class="timeout",op="read"`); v != 0 {
			t.Errorf("read timeouts = %v on a healthy store", v)
		}
		// The driver's own counters: the memory store's key count, read when scraped.
		// Writes keep adding keys, so the scrape sees no more than the driver reports after it.
		if keys, now := metricValue(t, text, "ndbench_driver_stat", `driver="memory",name="keys"`), e.inst.Status().DriverStats["keys"]; keys <= 0 || keys > float64(now) {
			t.Errorf("ndbench_driver_stat{name=keys} = %v, driver reports %d", keys, now)
		}
		// A reset of the stats starts a new cumulative span, but counters never go down.
		e.must(204, "POST", "/api/v1/stats/reset", nil, nil)
		_, data = e.call("GET", "/metrics", nil)
		after := metricValue(t, string(data), "ndbench_ops_total", `op="read",result="success"`) + metricValue(t, string(data), "ndbench_ops_total", `op="read",result="miss"`)
		if after < reads {
			t.Errorf("ndbench_ops_total for reads went down after a stats reset: %v -> %v", reads, after)
		}
		if c := e.stats().Cumulative.Ops["read"].Count; float64(c) >= after {
			t.Errorf("cumulative reads %d not reset (counter %v)", c, after)
		}
	})

	t.Run("histograms", func(t *testing.T) {
		var h HistogramsBody
		e.must(200, "GET", "/api/v1/stats/histograms", nil, &h)
		var series SeriesBody
		e.must(200, "GET", "/api/v1/stats/series", nil, &series)
		if len(series.Points) == 0 {
			t.Errorf("series has no points while running")
		}
		hd, err := stats.DecodeHistogram(h.Ops["read"].ResponseTime)
		if err != nil {
			t.Fatalf("decode read histogram: %v", err)
		}
		if hd.TotalCount() != h.Ops["read"].Count {
			t.Errorf("decoded histogram has %d values, body says %d", hd.TotalCount(), h.Ops["read"].Count)
		}
	})

	t.Run("intervals", func(t *testing.T) {
		// The first read starts the node encoding; a reader then resumes from next and
		// gets each interval once, with histograms that decode to its counts.
		var first stats.IntervalsPage
		e.must(200, "GET", "/api/v1/stats/intervals", nil, &first)
		deadline := time.Now().Add(10 * time.Second)
		var got []stats.EncodedInterval
		next := first.Next
		for len(got) < 2 && time.Now().Before(deadline) {
			time.Sleep(300 * time.Millisecond)
			var p stats.IntervalsPage
			e.must(200, "GET", fmt.Sprintf("/api/v1/stats/intervals?since=%d", next), nil, &p)
			if p.Missed != 0 {
				t.Fatalf("missed %d intervals reading every 300 ms", p.Missed)
			}
			for _, iv := range p.Intervals {
				if iv.Seq != next {
					t.Fatalf("interval seq %d, want %d (a gap or a repeat)", iv.Seq, next)
				}
				next++
				got = append(got, iv)
			}
		}
		if len(got) < 2 {
			t.Fatalf("%d intervals in 10 s", len(got))
		}
		for _, enc := range got {
			iv, err := enc.Decode()
			if err != nil {
				t.Fatal(err)
			}
			r := iv.Op("read")
			if r == nil {
				t.Fatalf("interval %d has no read series", enc.Seq)
			}
			if r.Successes+r.Misses == 0 || r.Response.TotalCount() != r.Successes+r.Misses {
				t.Errorf("interval %d: %d reads answered, response histogram holds %d", enc.Seq, r.Successes+r.Misses, r.Response.TotalCount())
			}
		}
	})
}

func TestEveryRouteNeedsToken(t *testing.T) {
	e := newEnv(t)
	n := 0
	for path, item := range e.srv.OpenAPI().Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			n++
			p := strings.ReplaceAll(path, "{key}", "T1")
			st, data := e.callAs("", op.Method, p, nil)
			want := http.StatusUnauthorized
			switch {
			case path == "/health":
				want = http.StatusOK
			case public(op.Method, path):
				// The login checks the token itself (TestSessionCookieFlow); without a
				// body it is a bad request.
				want = http.StatusBadRequest
			}
			if st != want {
				t.Errorf("%s %s without token: %d, want %d (%s)", op.Method, p, st, want, data)
			}
		}
	}
	if n < 19 {
		t.Errorf("only %d operations documented", n)
	}
	for _, p := range []string{"/metrics", "/docs", "/openapi.yaml"} {
		if st, _ := e.callAs("", "GET", p, nil); st != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", p, st)
		}
	}
}

func TestNDBenchRoutesMounted(t *testing.T) {
	e := newEnv(t)
	if st, _ := e.callAs("", "GET", "/REST/ndbench/driver/status", nil); st != http.StatusUnauthorized {
		t.Errorf("NDBench route without token: %d, want 401", st)
	}
	if st, data := e.call("GET", "/REST/ndbench/config/list", nil); st != 200 || !bytes.Contains(data, []byte("readRate")) {
		t.Errorf("GET /REST/ndbench/config/list: %d %.200s", st, data)
	}
}

func TestBrowserAttacksRefused(t *testing.T) {
	e := newEnv(t)
	// A cross-site form post carries no token only when the server has none; either way a
	// non-allowlisted origin must not change state.
	tests := []struct {
		name, origin, site string
		want               int
	}{
		{"cross-site post", "https://evil.example.com", "cross-site", http.StatusForbidden},
		{"allowlisted origin", "https://ui.example.com", "cross-site", http.StatusConflict},
		{"same origin", "", "same-origin", http.StatusConflict},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/load/start", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Sec-Fetch-Site", tt.site)
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}

	// Without a token, a request for another host name (DNS rebinding) is refused.
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	defer inst.Close()
	srv, err := New(Options{Instance: inst})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "evil.example.com": 403} {
		req := httptest.NewRequest("GET", "/api/v1/status", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s without token: %d, want %d", host, rec.Code, want)
		}
	}
}

// A failing store's messages reach GET /api/v1/stats, by op class and failure class.
func TestStatsExplainFailures(t *testing.T) {
	e := newEnv(t, "workload.readRate=200", "workload.writeEnabled=false")
	e.initMemory(map[string]string{"errorRatio": "1", "errorClass": "rejected"})
	since := time.Now()
	e.must(200, "POST", "/api/v1/load/start", nil, nil)
	e.waitInterval("failed reads", since, func(s stats.Summary) bool { return s.Ops["read"].Errors > 0 })
	got := e.stats().Errors["read"]
	if len(got) != 1 || got[0].Class != "rejected" || !strings.Contains(got[0].Message, "injected failure") ||
		got[0].Count == 0 || got[0].Last.Before(got[0].First) {
		t.Fatalf("errors[read] = %+v, want one rejected \"injected failure\" message with a count", got)
	}
	if _, ok := e.stats().Errors["write"]; ok {
		t.Errorf("writes did not run but have messages")
	}
}

// TestStartHonoursWarmup: with workload.warmup set, a start from the API runs the load at
// once but the figures (GET /api/v1/stats cumulative) begin after the warm-up; the status
// says until when; stopping every class during a warm-up cancels it.
func TestStartHonoursWarmup(t *testing.T) {
	e := newEnv(t, "workload.readRate=500", "workload.writeRate=100", "workload.warmup=700ms")
	e.initMemory(nil)
	var st node.Status
	started := time.Now()
	e.must(200, "POST", "/api/v1/load/start", nil, &st)
	if st.WarmingUpUntil.Before(started.Add(600*time.Millisecond)) || st.WarmingUpUntil.After(time.Now().Add(700*time.Millisecond)) {
		t.Fatalf("warmingUpUntil %v after a start at %v with warmup 700ms", st.WarmingUpUntil, started)
	}
	// Starting a class while the load runs is no new warm-up.
	st = node.Status{}
	e.must(200, "POST", "/api/v1/load/start", map[string]any{"ops": []string{"read"}}, &st)
	if !st.WarmingUpUntil.IsZero() && st.WarmingUpUntil.After(started.Add(800*time.Millisecond)) {
		t.Errorf("a second start moved the warm-up to %v", st.WarmingUpUntil)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = node.Status{} // an absent field leaves the old value when decoding
		e.must(200, "GET", "/api/v1/status", nil, &st)
		if st.WarmingUpUntil.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the warm-up never ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The cumulative figures restart and grow by whole intervals: wait for the first after
	// the warm-up (a fixed sleep saw none when the machine was slow to tick).
	var s StatsBody
	for deadline := time.Now().Add(20 * time.Second); ; {
		e.must(200, "GET", "/api/v1/stats", nil, &s)
		if (s.Cumulative.Start.After(started.Add(650*time.Millisecond)) && s.Cumulative.Ops["read"].Count > 0) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !s.Cumulative.Start.After(started.Add(650 * time.Millisecond)) {
		t.Errorf("cumulative figures start at %v, %v after the load started; want the warm-up excluded", s.Cumulative.Start, s.Cumulative.Start.Sub(started))
	}
	// The reads counted are at most those the schedule (500/s) held over the span the
	// figures cover, however long the machine took: the ~350 of the warm-up are not among
	// them. A fixed bound (900 in "~1 s") failed when a loaded machine's polling saw the
	// warm-up's end late.
	measured := s.Cumulative.End.Sub(s.Cumulative.Start).Seconds()
	if rd := s.Cumulative.Ops["read"]; rd.Count == 0 || float64(rd.Count) > 500*measured+100 {
		t.Errorf("cumulative reads %d over the %.2f s the figures cover at 500/s; want only those after the warm-up", rd.Count, measured)
	}

	// A stop during a warm-up cancels it: the figures do not reset later.
	e.must(200, "POST", "/api/v1/load/stop", nil, nil)
	st = node.Status{}
	e.must(200, "POST", "/api/v1/load/start", nil, &st)
	if st.WarmingUpUntil.IsZero() {
		t.Fatal("a start from idle began no warm-up")
	}
	st = node.Status{}
	e.must(200, "POST", "/api/v1/load/stop", nil, &st)
	if !st.WarmingUpUntil.IsZero() {
		t.Errorf("warm-up still pending after every class stopped: %v", st.WarmingUpUntil)
	}
	e.must(200, "GET", "/api/v1/stats", nil, &s)
	before := s.Cumulative.Start
	time.Sleep(900 * time.Millisecond)
	e.must(200, "GET", "/api/v1/stats", nil, &s)
	if !s.Cumulative.Start.Equal(before) {
		t.Errorf("a cancelled warm-up still reset the figures: start %v, was %v", s.Cumulative.Start, before)
	}
}
