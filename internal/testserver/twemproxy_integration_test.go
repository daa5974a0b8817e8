//go:build integration

package testserver

import (
	"context"
	"testing"
	"time"
)

// TestTwemproxyPool starts twemproxy in front of two backends of each protocol, checks it
// forwards, survives a kill and restart of the proxy, and that Stop leaves no process behind.
func TestTwemproxyPool(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
		start func(context.Context) (*Server, error)
		ready func(context.Context, string) error
	}{
		{"redis", true, Redis, twemproxyRedisReady},
		{"memcached", false, Memcached, twemproxyMemcacheReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p, err := StartTwemproxyPool(ctx, TwemproxyConfig{Redis: tc.redis}, 2, tc.start)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			var pids []int
			for _, s := range append([]*Server{p.Proxy}, p.Backends...) {
				if s.PID() == 0 {
					t.Fatalf("%s on %s is not running", s.Name, s.Addr())
				}
				pids = append(pids, s.PID())
			}
			if err := tc.ready(ctx, p.Proxy.Addr()); err != nil {
				t.Fatalf("request through the proxy: %v", err)
			}
			if err := p.Proxy.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := tc.ready(ctx, p.Proxy.Addr()); err == nil {
				t.Fatal("the proxy answered after Kill")
			}
			if err := p.Proxy.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tc.ready(ctx, p.Proxy.Addr()); err != nil {
				t.Fatalf("request through the restarted proxy: %v", err)
			}
			pids = append(pids, p.Proxy.PID())
			if err := p.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			if anyAlive(pids) {
				t.Errorf("processes %v still alive after Stop", pids)
			}
			if err := p.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
		})
	}
}
