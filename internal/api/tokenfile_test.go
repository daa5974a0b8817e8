package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for the token grace.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const rotatedToken = "rotated-token-9f8e7d6c5b4a3210"

// TestTokenRotation: a new token from the token file works at once; the one it replaced
// keeps working for TokenGrace (so a fleet can roll), then is refused. A file holding a
// weak token changes nothing, and its error does not show the token.
func TestTokenRotation(t *testing.T) {
	e := newEnv(t)
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	e.srv.tokens.now = clk.now
	path := filepath.Join(t.TempDir(), "token")
	status := func(tok string) int {
		st, _ := e.callAs(tok, http.MethodGet, "/api/v1/status", nil)
		return st
	}

	if err := os.WriteFile(path, []byte(rotatedToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.ReloadTokenFile(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after      time.Duration
		old, fresh int
	}{
		{0, 200, 200},
		{TokenGrace - time.Second, 200, 200},
		{TokenGrace, 401, 200},
	} {
		clk.add(tc.after - (clk.now().Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
		if got := status(testToken); got != tc.old {
			t.Errorf("%v after the rotation, the old token: %d, want %d", tc.after, got, tc.old)
		}
		if got := status(rotatedToken); got != tc.fresh {
			t.Errorf("%v after the rotation, the new token: %d, want %d", tc.after, got, tc.fresh)
		}
	}

	for _, bad := range []string{"", "\n", "short-token\n", strings.Repeat("ab", 20) + "\n", strings.Repeat("x", 5000)} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		err := e.srv.ReloadTokenFile(path)
		if err == nil {
			t.Errorf("token file %.20q: reloaded", bad)
		} else if strings.TrimSpace(bad) != "" && strings.Contains(err.Error(), strings.TrimSpace(bad)[:8]) {
			t.Errorf("token file %.20q: the error %q shows the token", bad, err)
		}
		if status(rotatedToken) != 200 || status(testToken) != 401 {
			t.Errorf("token file %.20q: a refused reload changed the tokens in force", bad)
		}
	}
	if err := e.srv.ReloadTokenFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing token file reloaded")
	}
}

// TestTokenCannotBeAddedOrRemovedLive: a server started without a token listens on
// loopback unauthenticated; giving it one, or taking one away, needs a restart.
func TestTokenCannotBeAddedOrRemovedLive(t *testing.T) {
	if err := newEnvToken(t, "").srv.SetToken(rotatedToken); err == nil {
		t.Error("a token was set on a server started without one")
	}
	if err := newEnv(t).srv.SetToken(""); err == nil {
		t.Error("the token was removed from a running server")
	}
}

// TestWatchTokenFile: an edit of the token file is picked up by the watcher, and logged
// without the token.
func TestWatchTokenFile(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	e.srv.log = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.WatchTokenFile(ctx, path, 10*time.Millisecond) }()
	defer func() { cancel(); <-done }()

	// A new size is a change even where the file system's clock is coarse.
	if err := os.WriteFile(path, []byte(rotatedToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !e.srv.tokens.check(rotatedToken) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not pick up the new token")
		}
		time.Sleep(10 * time.Millisecond)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "token reloaded") || strings.Contains(logs.String(), rotatedToken) || strings.Contains(logs.String(), testToken) {
		t.Errorf("log %q: want the reload said, without a token", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestTokenReloadOnSignal: the reload signal (SIGHUP on Unix) re-reads the token file even
// when its modification time and size did not change (an edit within the file system's
// clock tick, to a token of the same length).
func TestTokenReloadOnSignal(t *testing.T) {
	sig := make(chan os.Signal, 1)
	old := reloadSignal
	reloadSignal = func() (<-chan os.Signal, func()) { return sig, func() {} }
	defer func() { reloadSignal = old }()
	e := newEnv(t)
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(testToken), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.srv.WatchTokenFile(ctx, path, time.Hour) }()
	defer func() { cancel(); <-done }()

	same := strings.Repeat("Z", len(testToken)-4) + "q9w8"
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(same), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	sig <- os.Interrupt // any value: the channel stands for SIGHUP
	deadline := time.Now().Add(10 * time.Second)
	for !e.srv.tokens.check(same) {
		if time.Now().After(deadline) {
			t.Fatal("the signal did not reload the token file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
