package keydist

import (
	"slices"
	"testing"
)

// forgetRegistered removes the named distributions and their aliases from the registry
// when t ends, so the tests that register fixed names pass again under go test -count=N
// (they failed "name is taken" from the second count on).
func forgetRegistered(t testing.TB, forget ...string) {
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for alias, canonical := range names {
			if slices.Contains(forget, canonical) {
				delete(names, alias)
			}
		}
		defs = slices.DeleteFunc(defs, func(d Definition) bool { return slices.Contains(forget, d.Name) })
	})
}
