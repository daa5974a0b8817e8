//go:build integration

package testserver

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestServers checks the whole life cycle a test relies on, for every store: start, answer
// the store's protocol, Kill makes it unreachable, Restart brings it back on the same
// address, Stop removes the directory and can be repeated.
func TestServers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(context.Context) (*Server, error)
		ready func(context.Context, string) error
	}{
		{"redis", Redis, redisReady},
		{"redis-cluster", RedisCluster, redisClusterReady},
		{"memcached", Memcached, memcachedReady},
		{"postgres", Postgres, postgresReady},
		{"cassandra", Cassandra, cassandraReady},
		{"nginx", Nginx, httpReady},
		{"kvhttp", KVHTTP, httpReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			s, err := tc.start(ctx)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			defer s.Stop()
			if s.Host != "127.0.0.1" || s.Port == 0 || s.Name != tc.name {
				t.Fatalf("server = %+v, want name %s on 127.0.0.1 with a port", s, tc.name)
			}
			if got := s.DSN(); (tc.name == "postgres") != (got != "") {
				t.Errorf("DSN() = %q", got)
			}
			pid := s.PID()
			if pid <= 0 {
				t.Fatalf("PID() = %d after start", pid)
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
				t.Fatalf("process %d not found: %v", pid, err)
			}
			if err := tc.ready(ctx, s.Addr()); err != nil {
				t.Fatalf("server does not answer after start: %v", err)
			}

			addr := s.Addr()
			if err := s.Kill(); err != nil {
				t.Fatalf("Kill: %v", err)
			}
			if s.PID() != 0 {
				t.Errorf("PID() = %d after Kill, want 0", s.PID())
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Fatalf("%s still accepts connections after Kill", addr)
			}
			if _, err := os.Stat(s.Dir); err != nil {
				t.Fatalf("Kill removed the data dir: %v", err)
			}

			if err := s.Restart(ctx); err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if s.Addr() != addr {
				t.Errorf("Restart moved the server from %s to %s", addr, s.Addr())
			}
			if s.PID() == 0 || s.PID() == pid {
				t.Errorf("PID() = %d after Restart (was %d)", s.PID(), pid)
			}
			if err := tc.ready(ctx, s.Addr()); err != nil {
				t.Fatalf("server does not answer after Restart: %v", err)
			}
			log, err := os.ReadFile(s.LogPath())
			if err != nil {
				t.Fatalf("read server log: %v", err)
			}
			// Restart may take more than one attempt (PostgreSQL refuses to start while its
			// killed helpers still hold shared memory), so at least two starts.
			if n := strings.Count(string(log), "=== testserver:"); n < 2 {
				t.Errorf("server log shows %d starts, want the start and the restart:\n%s", n, s.LogTail())
			}

			dir := s.Dir
			if err := s.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("data dir %s still there after Stop (stat: %v)", dir, err)
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still accepts connections after Stop", addr)
			}
			if err := s.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			if err := s.Restart(ctx); err == nil {
				t.Errorf("Restart after Stop succeeded, want an error")
			}
		})
	}
}
