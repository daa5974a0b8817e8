package api

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/web"
)

// sessionCall sends a request with a session cookie (and no bearer token), as a browser
// does; body is sent as JSON when not empty.
func (e *env) sessionCall(method, path, cookie, body string) *http.Response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	e.t.Cleanup(cancel)
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: cookie})
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// login opens a session and returns the cookie the server set.
func (e *env) login(token string) (*http.Response, *http.Cookie) {
	e.t.Helper()
	resp := e.sessionCall("POST", "/api/v1/session", "", `{"token":"`+token+`"}`)
	for _, c := range resp.Cookies() {
		if c.Name == SessionCookie {
			return resp, c
		}
	}
	return resp, nil
}

// TestSessionCookieFlow: a browser exchanges the token for an HttpOnly, SameSite=Strict
// cookie holding a session id (not the token), which then authorizes the API and the
// event stream; logout ends it; an unknown or expired session is 401; the token is never
// echoed.
func TestSessionCookieFlow(t *testing.T) {
	e := newEnv(t)
	if r := e.sessionCall("GET", "/api/v1/status", "", ""); r.StatusCode != 401 {
		t.Fatalf("no credentials: %d, want 401", r.StatusCode)
	}
	resp, c := e.login(testToken)
	body := readAll(t, resp)
	if resp.StatusCode != 204 || c == nil {
		t.Fatalf("login: %d, cookie %v, body %s", resp.StatusCode, c, body)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP, with a max age", c)
	}
	if strings.Contains(c.Value, testToken) || len(c.Value) < 40 {
		t.Errorf("cookie value %q: want a random session id, not the token", c.Value)
	}
	if strings.Contains(body, testToken) || strings.Contains(resp.Header.Get("Set-Cookie"), testToken) {
		t.Error("the login response echoes the token")
	}
	if r := e.sessionCall("GET", "/api/v1/status", c.Value, ""); r.StatusCode != 200 {
		t.Fatalf("with the cookie: %d, want 200", r.StatusCode)
	}
	// EventSource cannot send headers: the stream must take the cookie.
	if r := e.sessionCall("GET", "/api/v1/stats/stream", c.Value, ""); r.StatusCode != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream with the cookie: %d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	if r := e.sessionCall("GET", "/api/v1/status", "made-up-session-id", ""); r.StatusCode != 401 {
		t.Errorf("unknown session: %d, want 401", r.StatusCode)
	}
	// The token itself in the cookie is not a session.
	if r := e.sessionCall("GET", "/api/v1/status", testToken, ""); r.StatusCode != 401 {
		t.Errorf("token as the cookie: %d, want 401", r.StatusCode)
	}
	out := e.sessionCall("DELETE", "/api/v1/session", c.Value, "")
	if out.StatusCode != 204 {
		t.Fatalf("logout: %d", out.StatusCode)
	}
	for _, k := range out.Cookies() {
		if k.Name == SessionCookie && (k.MaxAge >= 0 || k.Value != "") {
			t.Errorf("logout cookie %+v: want it cleared", k)
		}
	}
	if r := e.sessionCall("GET", "/api/v1/status", c.Value, ""); r.StatusCode != 401 {
		t.Errorf("after logout: %d, want 401", r.StatusCode)
	}
	if r := e.sessionCall("DELETE", "/api/v1/session", "", ""); r.StatusCode != 401 {
		t.Errorf("logout without a session: %d, want 401", r.StatusCode)
	}
}

// TestSessionExpires: a session past its expiry no longer authorizes anything.
func TestSessionExpires(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.srv.sessions.mu.Lock()
	e.srv.sessions.now = func() time.Time { return now }
	e.srv.sessions.mu.Unlock()
	_, c := e.login(testToken)
	if c == nil {
		t.Fatal("no cookie")
	}
	if r := e.sessionCall("GET", "/api/v1/status", c.Value, ""); r.StatusCode != 200 {
		t.Fatalf("fresh session: %d", r.StatusCode)
	}
	e.srv.sessions.mu.Lock()
	e.srv.sessions.now = func() time.Time { return now.Add(SessionTTL + time.Second) }
	e.srv.sessions.mu.Unlock()
	if r := e.sessionCall("GET", "/api/v1/status", c.Value, ""); r.StatusCode != 401 {
		t.Errorf("expired session: %d, want 401", r.StatusCode)
	}
}

// TestLoginBackoff: a wrong token is 401 and makes the next attempt wait (429 with
// Retry-After), even with the right token, so guessing is slow; the wrong token is not
// echoed. After the wait the right token works and resets the count.
func TestLoginBackoff(t *testing.T) {
	e := newEnv(t)
	resp, c := e.login("wrong-guess-42")
	if body := readAll(t, resp); resp.StatusCode != 401 || c != nil || strings.Contains(body, "wrong-guess-42") {
		t.Fatalf("wrong token: %d, cookie %v, body %s", resp.StatusCode, c, body)
	}
	resp, c = e.login(testToken)
	if resp.StatusCode != 429 || c != nil || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("right token during the wait: %d (Retry-After %q), want 429", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	time.Sleep(150 * time.Millisecond)
	if resp, c = e.login(testToken); resp.StatusCode != 204 || c == nil {
		t.Fatalf("after the wait: %d", resp.StatusCode)
	}
	// Waits double and are capped.
	ss := newSessions()
	var waits []time.Duration
	for range 12 {
		ss.result(false)
		waits = append(waits, ss.notUntil.Sub(ss.now()))
	}
	if waits[0] > 110*time.Millisecond || waits[1] < 190*time.Millisecond || waits[11] > loginBackoffMax || waits[11] < loginBackoffMax-time.Second {
		t.Errorf("waits %v", waits)
	}
}

// TestLoginPage: a browser without a session asking a token-protected node for the UI
// gets the login page (no instance data), and its assets; the API stays 401.
func TestLoginPage(t *testing.T) {
	e := newEnvUI(t)
	r := e.sessionCall("GET", "/", "", "")
	page := readAll(t, r)
	if r.StatusCode != 401 || !strings.Contains(page, `data-role="login"`) || strings.Contains(page, "ndbench-instances") {
		t.Fatalf("GET / without a session: %d\n%s", r.StatusCode, page)
	}
	if r := e.sessionCall("GET", "/ui/static/login.js", "", ""); r.StatusCode != 200 {
		t.Errorf("login script: %d", r.StatusCode)
	}
	if r := e.sessionCall("GET", "/api/v1/config", "", ""); r.StatusCode != 401 {
		t.Errorf("API without a session: %d", r.StatusCode)
	}
	_, c := e.login(testToken)
	r = e.sessionCall("GET", "/", c.Value, "")
	if page := readAll(t, r); r.StatusCode != 200 || !strings.Contains(page, "ndbench-instances") {
		t.Errorf("GET / with a session: %d", r.StatusCode)
	}
}

// newEnvUI is newEnv with the web UI mounted, as `ndbench serve` runs it.
func newEnvUI(t *testing.T) *env {
	t.Helper()
	return newEnvOpts(t, Options{Token: testToken, Version: "test", UI: web.Handler(web.Options{})})
}
