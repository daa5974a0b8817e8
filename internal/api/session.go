package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// Browser sessions on a token-protected node. A browser cannot add an Authorization
// header to a page load or to an EventSource, so the UI exchanges the token once for a
// cookie. The cookie holds a random session id, never the token: a leaked cookie dies
// with its session (logout or expiry) and tells nothing about the token.
const (
	// SessionCookie is the name of the session cookie.
	SessionCookie = "ndbench_session"
	// SessionTTL is how long a session lasts after login; the user logs in again after.
	SessionTTL = 12 * time.Hour
	// maxSessions bounds the session table; the oldest session makes room for a new one.
	maxSessions = 1024
	// loginBackoffMax caps the wait after failed logins (see sessions.allow).
	loginBackoffMax = 30 * time.Second
)

// sessions is the server-side table of browser sessions, keyed by the SHA-256 of the
// session id (so the table holds nothing a cookie could be made from), with the
// per-process count of failed logins.
type sessions struct {
	mu       sync.Mutex
	expiry   map[[sha256.Size]byte]time.Time
	failures int       // failed logins since the last success
	notUntil time.Time // no login is judged before this
	now      func() time.Time
}

func newSessions() *sessions {
	return &sessions{expiry: map[[sha256.Size]byte]time.Time{}, now: time.Now}
}

// create adds a session and returns its id (32 random bytes, base64url).
func (ss *sessions) create() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := ss.now()
	if len(ss.expiry) >= maxSessions {
		var oldest [sha256.Size]byte
		var oldestT time.Time
		for k, t := range ss.expiry {
			if !t.After(now) {
				delete(ss.expiry, k)
				continue
			}
			if oldestT.IsZero() || t.Before(oldestT) {
				oldest, oldestT = k, t
			}
		}
		if len(ss.expiry) >= maxSessions {
			delete(ss.expiry, oldest)
		}
	}
	ss.expiry[sha256.Sum256([]byte(id))] = now.Add(SessionTTL)
	return id, nil
}

// valid tells whether id names a live session; an expired one is removed.
func (ss *sessions) valid(id string) bool {
	if id == "" {
		return false
	}
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	exp, ok := ss.expiry[k]
	if ok && !exp.After(ss.now()) {
		delete(ss.expiry, k)
		return false
	}
	return ok
}

// remove ends a session; an unknown id is not an error.
func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.expiry, sha256.Sum256([]byte(id)))
}

// allow reports whether a login attempt may be judged now, and if not, how long to wait.
// Every failure doubles the wait before the next attempt (100 ms, 200 ms, ... up to
// loginBackoffMax) for the whole process, so guessing the token costs about two tries a
// minute once a few have failed, however many connections the guesser opens. The cost
// is that a guesser also delays the real user's login by at most loginBackoffMax;
// requests with the bearer token and existing sessions are not affected.
func (ss *sessions) allow() (bool, time.Duration) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if wait := ss.notUntil.Sub(ss.now()); wait > 0 {
		return false, wait
	}
	return true, 0
}

// result records a judged login attempt.
func (ss *sessions) result(ok bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ok {
		ss.failures, ss.notUntil = 0, time.Time{}
		return
	}
	ss.failures++
	wait := loginBackoffMax
	if ss.failures <= 9 {
		wait = min(loginBackoffMax, 100*time.Millisecond<<(ss.failures-1))
	}
	ss.notUntil = ss.now().Add(wait)
}

// checkToken compares a presented token with the server's (and, for TokenGrace after a
// rotation, the previous one), as hashes in constant time, so neither its content nor
// its length leaks through timing.
func (s *Server) checkToken(got string) bool { return s.tokens.check(got) }

// sessionFrom returns the session id a request's cookie carries, or "".
func sessionFrom(r *http.Request) string {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// LoginRequest is the body of POST /api/v1/session.
type LoginRequest struct {
	Token string `json:"token" minLength:"1" maxLength:"4096" doc:"The node's token (--token or NDBENCH_TOKEN); never echoed or logged"`
}

type loginIn struct {
	Body LoginRequest
	tls  bool
}

// Resolve notes whether the request came over TLS: the cookie is then marked Secure, and
// over plain HTTP (loopback, or behind a proxy that terminates TLS) it cannot be.
func (in *loginIn) Resolve(ctx huma.Context) []error {
	in.tls = ctx.TLS() != nil
	return nil
}

type sessionOut struct {
	SetCookie http.Cookie `header:"Set-Cookie" doc:"The session cookie: HttpOnly, SameSite=Strict, Path=/, Secure over TLS"`
}

type logoutIn struct {
	Session string `cookie:"ndbench_session" doc:"The session to end (sent by the browser)"`
	tls     bool
}

// Resolve notes whether the request came over TLS (see loginIn.Resolve).
func (in *logoutIn) Resolve(ctx huma.Context) []error {
	in.tls = ctx.TLS() != nil
	return nil
}

func sessionCookie(value string, maxAge int, secure bool) http.Cookie {
	return http.Cookie{Name: SessionCookie, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// sessionRoutes registers login and logout. Login needs no credentials (it checks the
// token itself) but declares changesState, so a page on another site cannot log a
// browser in; logout needs the session (or the token) like any other route.
func (s *Server) sessionRoutes() {
	register(s, changesState, huma.Operation{OperationID: "create-session", Method: http.MethodPost, Path: "/api/v1/session", Tags: []string{"service"},
		Summary:       "Log a browser in (token for a session cookie)",
		Description:   "Exchanges the node's token for an HttpOnly, SameSite=Strict session cookie (`" + SessionCookie + "`) holding a random session id, valid for " + SessionTTL.String() + ". Browsers need it because a page load or an EventSource cannot send an Authorization header. After a wrong token, further attempts wait (429 with Retry-After), doubling per failure up to " + loginBackoffMax.String() + ". On a node without a token the cookie is issued for any token and is not needed.",
		DefaultStatus: http.StatusNoContent},
		append(slices.Clone(bodyErrs), http.StatusUnauthorized, http.StatusTooManyRequests), func(_ context.Context, in *loginIn) (*sessionOut, error) {
			if s.opts.Token != "" {
				if ok, wait := s.sessions.allow(); !ok {
					p := newProblem(http.StatusTooManyRequests, "too many failed logins; retry in "+wait.Round(time.Millisecond).String())
					return nil, huma.ErrorWithHeaders(p, http.Header{"Retry-After": {strconv.Itoa(int(wait/time.Second) + 1)}})
				}
				ok := s.checkToken(in.Body.Token)
				s.sessions.result(ok)
				if !ok {
					return nil, newProblem(http.StatusUnauthorized, "wrong token")
				}
			}
			id, err := s.sessions.create()
			if err != nil {
				return nil, err
			}
			return &sessionOut{SetCookie: sessionCookie(id, int(SessionTTL/time.Second), in.tls)}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "delete-session", Method: http.MethodDelete, Path: "/api/v1/session", Tags: []string{"service"},
		Summary:       "Log a browser out",
		Description:   "Ends the session named by the cookie (it no longer authenticates anything) and clears the cookie.",
		DefaultStatus: http.StatusNoContent},
		nil, func(_ context.Context, in *logoutIn) (*sessionOut, error) {
			s.sessions.remove(in.Session)
			return &sessionOut{SetCookie: sessionCookie("", -1, in.tls)}, nil
		})
}
