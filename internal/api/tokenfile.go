package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// TokenGrace is how long a replaced token stays valid after a rotation: long enough for
// every member of a fleet to pick up the new file (each polls it every
// TokenPollInterval) before calls signed with the old one are refused.
const TokenGrace = 30 * time.Second

// TokenPollInterval is how often WatchTokenFile looks at the token file's modification
// time and size.
const TokenPollInterval = 3 * time.Second

// reloadSignal returns the channel of the signal that asks for a reload (SIGHUP on Unix,
// none elsewhere) and how to stop it; tests replace it.
var reloadSignal = osReloadSignal

// maxTokenFile bounds what a token file read may hold: a token is a line.
const maxTokenFile = 4 << 10

// tokens holds the server's token as hashes: the current one and, for TokenGrace after a
// rotation, the one it replaced.
type tokens struct {
	now func() time.Time

	mu       sync.Mutex
	cur      [sha256.Size]byte
	prev     [sha256.Size]byte
	prevTill time.Time // zero: no previous token
}

// check compares got with the current token and, within the grace, the previous one.
// Both comparisons always run, on hashes, in constant time, so neither which one matched
// nor a token's length leaks through timing.
func (t *tokens) check(got string) bool {
	sum := sha256.Sum256([]byte(got))
	t.mu.Lock()
	cur, prev, till := t.cur, t.prev, t.prevTill
	t.mu.Unlock()
	okCur := subtle.ConstantTimeCompare(sum[:], cur[:])
	okPrev := subtle.ConstantTimeCompare(sum[:], prev[:])
	if !till.IsZero() && !t.now().Before(till) {
		okPrev = 0
	}
	return okCur|okPrev == 1
}

// set makes tok current; the one it replaces stays valid for TokenGrace. It reports
// whether tok was not already the current one.
func (t *tokens) set(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	defer t.mu.Unlock()
	if sum == t.cur {
		return false
	}
	t.prev, t.prevTill, t.cur = t.cur, t.now().Add(TokenGrace), sum
	return true
}

// SetToken replaces the server's token without a restart, after the checks of
// CheckToken; the previous token keeps working for TokenGrace so the members of a fleet
// can roll to the new one. A server started without a token cannot be given one (it
// listens on loopback, unauthenticated): that needs a restart.
func (s *Server) SetToken(tok string) error {
	_, err := s.setToken(tok)
	return err
}

func (s *Server) setToken(tok string) (changed bool, err error) {
	if s.opts.Token == "" {
		return false, errors.New("api: the server was started without a token; restart it with one to require it")
	}
	if tok == "" {
		return false, errors.New("api: the new token is empty; a token cannot be removed from a running server")
	}
	if err := CheckToken(tok); err != nil {
		return false, fmt.Errorf("api: new token: %w", err)
	}
	changed = s.tokens.set(tok)
	if changed && s.opts.TokenChanged != nil {
		s.opts.TokenChanged(tok)
	}
	return changed, nil
}

// ReadTokenFile reads a token file: its first line, without the line end (so `openssl
// rand -base64 24 > file` works), checked by CheckToken. The error names the file,
// never its contents.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if len(b) > maxTokenFile {
		return "", fmt.Errorf("token file %s: more than %d bytes; it should hold the token alone", path, maxTokenFile)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSuffix(tok, "\r")
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty: %s", path, tokenHowTo)
	}
	if err := CheckToken(tok); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return tok, nil
}

// ReloadTokenFile reads path and makes its token the server's (SetToken). A file that
// fails the checks changes nothing: the token in force stays.
func (s *Server) ReloadTokenFile(path string) error {
	_, err := s.reloadTokenFile(path)
	return err
}

func (s *Server) reloadTokenFile(path string) (changed bool, err error) {
	tok, err := ReadTokenFile(path)
	if err != nil {
		return false, err
	}
	return s.setToken(tok)
}

// WatchTokenFile reloads the token from path when its modification time or size
// changes (looked at every interval; TokenPollInterval when 0) and, on Unix, on SIGHUP,
// until ctx ends. A reload that fails is logged (without the token) and the token in
// force stays.
func (s *Server) WatchTokenFile(ctx context.Context, path string, interval time.Duration) {
	if interval <= 0 {
		interval = TokenPollInterval
	}
	stamp := func() (time.Time, int64) {
		fi, err := os.Stat(path)
		if err != nil {
			return time.Time{}, -1
		}
		return fi.ModTime(), fi.Size()
	}
	// The first look always reads the file: it may have changed since the caller read
	// the token it started with. Reading an unchanged token changes nothing.
	mod, size := time.Time{}, int64(-2)
	hup, stop := reloadSignal()
	defer stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	reload := func(why string) {
		changed, err := s.reloadTokenFile(path)
		if err != nil {
			s.log.Warn("token not reloaded; the token in force stays", "why", why, "err", err)
			return
		}
		if !changed {
			return
		}
		s.log.Info("token reloaded; the previous one stays valid for the grace", "why", why, "file", path, "grace", TokenGrace)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			mod, size = stamp()
			reload("signal")
		case <-tick.C:
			if m, n := stamp(); n >= 0 && (!m.Equal(mod) || n != size) {
				mod, size = m, n
				reload("file changed")
			}
		}
	}
}
