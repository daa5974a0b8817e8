package memory

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// The table against a Go map, through random adds, overwrites, removes and lookups. The
// hash functions range from a good one to ones that put every key in a few homes, so runs
// are long, wrap around the end of the slots and are cut by removals (backward shift).
func TestTableAgainstMap(t *testing.T) {
	for _, c := range []struct {
		name string
		hash func(i int) uint64
	}{
		{"spread", func(i int) uint64 { return rand.New(rand.NewPCG(uint64(i), 7)).Uint64() }},
		{"16 homes", func(i int) uint64 { return uint64(i % 16) }},
		{"one home at the end", func(i int) uint64 { return 1<<40 - 1 }},
		{"colliding hashes", func(i int) uint64 { return uint64(i % 3) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := newTable()
			want := map[string]*entry{}
			const keys = 300
			for step := range 20000 {
				i := rng.IntN(keys)
				key, h := "k"+strconv.Itoa(i), c.hash(i)
				switch op := rng.IntN(10); {
				case op < 4: // add or overwrite
					if e := tab.get(h, key); e != nil {
						e.v = []byte{byte(step)}
					} else {
						e := &entry{key: key, v: []byte{byte(step)}}
						tab.add(h, e)
						want[key] = e
					}
				case op < 7:
					got := tab.remove(h, key)
					if got != want[key] {
						t.Fatalf("step %d: remove %s returned %p, want %p", step, key, got, want[key])
					}
					delete(want, key)
				default:
					if got := tab.get(h, key); got != want[key] {
						t.Fatalf("step %d: get %s = %p, want %p", step, key, got, want[key])
					}
				}
				if tab.n != len(want) {
					t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(want))
				}
			}
			// Every key is found exactly where the map has it, and each lists them all.
			for i := range keys {
				key := "k" + strconv.Itoa(i)
				if got := tab.get(c.hash(i), key); got != want[key] {
					t.Fatalf("get %s = %p, want %p", key, got, want[key])
				}
			}
			n := 0
			tab.each(func(e *entry) {
				n++
				if want[e.key] != e {
					t.Errorf("each gave %s, not stored", e.key)
				}
			})
			if n != len(want) || 4*tab.n > 3*len(tab.slots) {
				t.Errorf("each gave %d entries, want %d; %d of %d slots used", n, len(want), tab.n, len(tab.slots))
			}
		})
	}
}
