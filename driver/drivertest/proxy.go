package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// ProxyBackend describes one backend behind a proxy (twemproxy, Dynomite, Envoy) that a
// driver talks through, for ProxyBackendOutage.
type ProxyBackend struct {
	// Kill stops the backend at once; Restart starts it again on the same address.
	Kill    func() error
	Restart func(context.Context) error
	// Pause stops the backend answering (SIGSTOP) until resume is called.
	Pause func() (resume func(), err error)
	// Dead are keys the proxy maps to this backend, Alive keys it maps to the others; each
	// was written with its own name as value.
	Dead, Alive []string
	// FailWithin bounds how long an operation on a dead key may take to fail: the proxy's
	// backend timeout plus slack.
	FailWithin time.Duration
}

// ProxyBackendOutage kills the backend, then stalls it, and checks what a user would:
// operations on its keys fail within FailWithin as unavailable (killed) or timeout
// (stalled), keys on the other backends keep working, and every key works again soon
// after the backend is back (the proxy reconnects on the next request).
func ProxyBackendOutage(t *testing.T, d driver.Driver, b ProxyBackend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	check := func(t *testing.T, state string, want driver.Class) {
		t.Helper()
		classes := map[driver.Class]int{}
		for _, key := range b.Dead {
			for _, op := range []func(context.Context) error{
				func(ctx context.Context) error { _, err := d.Read(ctx, key); return err },
				func(ctx context.Context) error { return d.Write(ctx, key, []byte(key)) },
			} {
				octx, cancel := context.WithTimeout(ctx, 3*time.Second)
				start := time.Now()
				err := op(octx)
				took := time.Since(start)
				cancel()
				if err == nil {
					t.Errorf("%s: operation on %s (the backend's key) succeeded", state, key)
					continue
				}
				c := driver.Classify(err)
				classes[c]++
				if took > b.FailWithin {
					t.Errorf("%s: operation on %s took %v to fail, want at most %v", state, key, took.Round(time.Millisecond), b.FailWithin)
				}
				if c != want {
					t.Errorf("%s: operation on %s failed as %v, want %v: %v", state, key, c, want, err)
				}
			}
		}
		for _, key := range b.Alive {
			if got, err := d.Read(ctx, key); err != nil || string(got) != key {
				t.Errorf("%s: read %s on a live backend = %q, %v", state, key, got, err)
			}
		}
		t.Logf("%s: failures by class on the backend's %d keys: %v", state, len(b.Dead), classes)
	}
	recovered := func(t *testing.T, state string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for _, key := range b.Dead {
			for {
				err := d.Write(ctx, key, []byte(key))
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s, write %s still fails 5s later: %v", state, key, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		for _, key := range append(append([]string(nil), b.Dead...), b.Alive...) {
			if got, err := d.Read(ctx, key); err != nil || string(got) != key {
				t.Errorf("after %s: read %s = %q, %v", state, key, got, err)
			}
		}
	}

	t.Run("Killed", func(t *testing.T) {
		if err := b.Kill(); err != nil {
			t.Fatal(err)
		}
		check(t, "backend killed", driver.ClassUnavailable)
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := b.Restart(rctx); err != nil {
			t.Fatal(err)
		}
		recovered(t, "restart of the backend")
	})
	t.Run("Stalled", func(t *testing.T) {
		resume, err := b.Pause()
		if err != nil {
			t.Fatal(err)
		}
		resumed := false
		defer func() {
			if !resumed {
				resume()
			}
		}()
		check(t, "backend stalled", driver.ClassTimeout)
		resume()
		resumed = true
		recovered(t, "resume of the backend")
	})
}
