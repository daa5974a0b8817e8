package driver

import "testing"

// forgetRegistered removes the named drivers from the registry when t ends, so the tests
// that register fixed names pass again under go test -count=N, which is how a flake is
// hunted (they failed "already registered" from the second count on).
func forgetRegistered(t testing.TB, names ...string) {
	t.Cleanup(func() {
		registryMu.Lock()
		defer registryMu.Unlock()
		for _, n := range names {
			delete(registry, n)
		}
	})
}
