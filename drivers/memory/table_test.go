package memory

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"
)

// The table against a Go map, through random adds, overwrites, removes and lookups. The
// hash functions range from a good one to ones that put every key in a few homes, so runs
// are long, wrap around the end of the slots and are cut by removals (backward shift).
func TestTableAgainstMap(t *testing.T) {
	spread := func(i int) uint64 { return rand.New(rand.NewPCG(uint64(i), 7)).Uint64() }
	for _, c := range []struct {
		name        string
		hash        func(i int) uint64
		keys, steps int
	}{
		{"spread", spread, 300, 20000},
		{"16 homes", func(i int) uint64 { return uint64(i % 16) }, 300, 20000},
		{"one home at the end", func(i int) uint64 { return 1<<40 - 1 }, 300, 20000},
		{"colliding hashes", func(i int) uint64 { return uint64(i % 3) }, 300, 20000},
		// enough keys for buckets to split and the directory to double many times
		{"spread, splitting", spread, 30000, 300000},
		// keys that share every directory bit: a bucket grows past its bound instead
		{"one directory index", func(i int) uint64 { return uint64(i) & (1<<dirShift - 1) }, 3000, 30000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := newTable()
			want := map[string]byte{} // each key's value: one byte, the step that wrote it
			keys := c.keys
			check := func(step int, key string, h uint64) {
				t.Helper()
				w, ok := want[key]
				e := tab.get(h, key)
				if (e != nil) != ok || e != nil && (e.key != key || len(e.v) != 1 || e.v[0] != w) {
					t.Fatalf("step %d: get %s = %+v, want value %v (stored %v)", step, key, e, w, ok)
				}
			}
			for step := range c.steps {
				i := rng.IntN(keys)
				key, h := "k"+strconv.Itoa(i), c.hash(i)
				switch op := rng.IntN(10); {
				case op < 4: // add or overwrite
					if e := tab.get(h, key); e != nil {
						e.v = []byte{byte(step)}
					} else {
						tab.add(h, key, []byte{byte(step)})
					}
					want[key] = byte(step)
				case op < 7:
					e, ok := tab.remove(h, key)
					if w, stored := want[key]; ok != stored || ok && (e.key != key || e.v[0] != w) {
						t.Fatalf("step %d: remove %s returned %+v, %v; want value %v (stored %v)", step, key, e, ok, w, stored)
					}
					delete(want, key)
				default:
					check(step, key, h)
				}
				if tab.n != len(want) {
					t.Fatalf("step %d: %d entries, want %d", step, tab.n, len(want))
				}
			}
			// Every key is found exactly as the map has it, and each lists them all.
			for i := range keys {
				check(-1, "k"+strconv.Itoa(i), c.hash(i))
			}
			n := 0
			tab.each(func(e *entry) {
				n++
				if w, ok := want[e.key]; !ok || e.v[0] != w {
					t.Errorf("each gave %s = %v, not stored", e.key, e.v)
				}
			})
			if n != len(want) {
				t.Errorf("each gave %d entries, want %d", n, len(want))
			}
			for i, d := range tab.dir {
				b := d.b
				if 4*b.n > 3*len(b.slots) || b.depth > tab.depth || tab.dir[uint64(i)&(1<<b.depth-1)].b != b ||
					len(d.slots) != len(b.slots) || &d.slots[0] != &b.slots[0] {
					t.Fatalf("bucket at %d: %d entries in %d slots, depth %d of %d, not at its first index or slots not its own",
						i, b.n, len(b.slots), b.depth, tab.depth)
				}
			}
			t.Logf("%d entries, directory depth %d", tab.n, tab.depth)
		})
	}
}

func TestShardIsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(shard{}); n != 64 {
		t.Errorf("a shard is %d bytes, want 64: one cache line, so neighbouring shards' locks share none", n)
	}
}
