//go:build unix

package testserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadyWaitsWhileTheStartProgresses: a server whose start takes longer than its
// readyTimeout but keeps logging (Cassandra on a machine at load 30: still initialising
// after 120 s, a line every second or less) is waited for; one that logs nothing for its
// readyTimeout (a hang) fails after it, saying so. With a fixed bound the slow start failed.
func TestReadyWaitsWhileTheStartProgresses(t *testing.T) {
	const readyTimeout = 2 * time.Second
	for _, tc := range []struct {
		name, script string
		wantErr      string
	}{
		{"slow, logging", "i=0; while [ $i -lt 40 ]; do echo starting $i; i=$((i+1)); sleep 0.1; done; touch ready; exec sleep 60", ""},
		{"silent", "exec sleep 60", "no progress for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var dir string
			s, err := start(ctx, "fake", spec{
				command: func(s *Server) (*exec.Cmd, error) {
					dir = s.Dir
					return exec.Command("sh", "-c", tc.script), nil
				},
				ready: func(context.Context, string) error {
					if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
						return errors.New("not yet")
					}
					return nil
				},
				readyTimeout: readyTimeout,
				stopSignal:   syscall.SIGTERM,
				stopTimeout:  time.Second,
			})
			if s != nil {
				defer s.Stop()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("a start that logs as it goes, past its readyTimeout (%v): %v", readyTimeout, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("a start that logs nothing: %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
