package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"github.com/ndbench/ndbench/driver"
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
				if (e != nil) != ok || e != nil && (tab.a.key(e.loc) != key || len(tab.value(e)) != 1 || tab.value(e)[0] != w) {
					t.Fatalf("step %d: get %s = %+v, want value %v (stored %v)", step, key, e, w, ok)
				}
			}
			for step := range c.steps {
				i := rng.IntN(keys)
				key, h := "k"+strconv.Itoa(i), c.hash(i)
				switch op := rng.IntN(10); {
				case op < 4: // add or overwrite
					if e := tab.get(h, key); e != nil {
						tab.set(e, key, []byte{byte(step)})
					} else {
						tab.add(h, key, []byte{byte(step)})
					}
					want[key] = byte(step)
				case op < 7:
					v, ok := tab.remove(h, key)
					if w, stored := want[key]; ok != stored || ok && v[0] != w {
						t.Fatalf("step %d: remove %s returned %v, %v; want value %v (stored %v)", step, key, v, ok, w, stored)
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
			tab.each(func(key string, v []byte) {
				n++
				if w, ok := want[key]; !ok || v[0] != w {
					t.Errorf("each gave %s = %v, not stored", key, v)
				}
			})
			if n != len(want) {
				t.Errorf("each gave %d entries, want %d", n, len(want))
			}
			checkTable(t, &tab)
			checkArena(t, &tab)
			t.Logf("%d entries, directory depth %d, %d slabs", tab.n, tab.depth(), len(tab.a.slabs))
		})
	}
}

func TestShardIsACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(shard{}); n != 64 {
		t.Errorf("a shard is %d bytes, want 64: one cache line, so neighbouring shards' locks share none", n)
	}
}

// checkTable fails t unless tab keeps its invariants: every bucket at most 3/4 full and at
// its directory indexes with its own slots and control bytes; a used slot's control byte
// is its hash's tag and an empty slot holds nothing; and every entry is reachable, with
// no empty slot between its home and its slot (a lookup stops at the first empty one).
func checkTable(t *testing.T, tab *table) {
	t.Helper()
	n := 0
	for i, d := range tab.dir {
		b := d.b
		if 4*b.n > 3*len(b.slots) || b.depth > tab.depth() || tab.dir[uint64(i)&(1<<b.depth-1)].b != b ||
			len(d.slots) != len(b.slots) || &d.slots[0] != &b.slots[0] ||
			len(d.ctrl) != len(b.slots) || len(b.ctrl) != len(b.slots) || &d.ctrl[0] != &b.ctrl[0] {
			t.Fatalf("bucket at %d: %d entries in %d slots, depth %d of %d, not at its first index or slots not its own",
				i, b.n, len(b.slots), b.depth, tab.depth())
		}
		if uint64(i) >= 1<<b.depth {
			continue
		}
		used := 0
		mask := uint64(len(b.slots) - 1)
		for j, c := range b.ctrl {
			e := b.slots[j]
			if c == 0 {
				if !isEmpty(e) {
					t.Fatalf("bucket at %d: empty slot %d holds %+v", i, j, e)
				}
				continue
			}
			used++
			if c != tagOf(e.hash) {
				t.Fatalf("bucket at %d: slot %d's control byte %#x, want %#x", i, j, c, tagOf(e.hash))
			}
			for k := home(e.hash) & mask; k != uint64(j); k = (k + 1) & mask {
				if b.ctrl[k] == 0 {
					t.Fatalf("bucket at %d: %s in slot %d, but slot %d between its home %d and it is empty", i, tab.a.key(e.loc), j, k, home(e.hash)&mask)
				}
			}
			if tab.get(e.hash, tab.a.key(e.loc)) != &b.slots[j] {
				t.Fatalf("bucket at %d: %s in slot %d is not found there", i, tab.a.key(e.loc), j)
			}
		}
		if used != b.n {
			t.Fatalf("bucket at %d: %d slots used, counted %d", i, used, b.n)
		}
		n += used
	}
	if n != tab.n {
		t.Fatalf("%d entries in the buckets, counted %d", n, tab.n)
	}
}

// A stored value comes back with its bytes and length, capacity its length (an append to
// it cannot write into the arena), never nil (ReadBulk tells an empty value from a missing
// key by it), whether it shares a slab or has one of its own; and a value handed out
// never changes, through overwrites, removals and the compactions they cause.
func TestTableValues(t *testing.T) {
	tab := newTable()
	sizes := []int{0, 1, 7, 8, 9, 100, bigRecord - recHeader - 2, bigRecord, 3 * maxSlab}
	fill := func(size int, b byte) []byte { return bytes.Repeat([]byte{b}, size) }
	hash := func(i int) uint64 { return uint64(i+1) * 0x9e3779b97f4a7c15 }
	held := map[int][]byte{} // size -> the slice read back after writing it
	for i, size := range sizes {
		key := "k" + strconv.Itoa(size)
		v := fill(size, byte(i+1))
		tab.add(hash(i), key, v)
		clear(v) // the caller reuses its buffer
		got := tab.value(tab.get(hash(i), key))
		if got == nil || len(got) != size || cap(got) != size || !bytes.Equal(got, fill(size, byte(i+1))) {
			t.Fatalf("value of %d bytes: nil %v, len %d, cap %d", size, got == nil, len(got), cap(got))
		}
		held[size] = got
	}
	// Overwrite and remove everything many times over, so that every slab is compacted
	// or dropped.
	for round := range 50 {
		for i, size := range sizes {
			key := "k" + strconv.Itoa(size)
			if round%7 == 3 {
				tab.remove(hash(i), key)
				tab.add(hash(i), key, fill(size, byte(round)))
			} else {
				tab.set(tab.get(hash(i), key), key, fill(size, byte(round)))
			}
		}
		checkArena(t, &tab)
	}
	for i, size := range sizes {
		if !bytes.Equal(held[size], fill(size, byte(i+1))) {
			t.Errorf("value of %d bytes read before the overwrites changed", size)
		}
		if got := tab.value(tab.get(hash(i), "k"+strconv.Itoa(size))); !bytes.Equal(got, fill(size, 49)) {
			t.Errorf("value of %d bytes after the overwrites: %d bytes, not the last written", size, len(got))
		}
	}
	if len(tab.a.slabs)-len(tab.a.free) > 4 {
		t.Errorf("%d slabs in use for %d values", len(tab.a.slabs)-len(tab.a.free), len(sizes))
	}
}

// checkArena fails t unless tab's arena keeps its invariants: every entry's record is
// live, holds the entry's hash and is counted in its slab; no slab but the current one
// and the one sealed last is at most half live; nothing is left to compact; and dropped
// slabs are free to reuse.
func checkArena(t *testing.T, tab *table) {
	t.Helper()
	a := tab.a
	live := make([]int, len(a.slabs))
	seen := map[*bucket]bool{}
	for _, d := range tab.dir {
		if seen[d.b] {
			continue // the directory lists a bucket at every index of its bits
		}
		seen[d.b] = true
		for j, c := range d.b.ctrl {
			if c == 0 {
				continue
			}
			e := d.b.slots[j]
			id, off := int(e.loc>>32), int(uint32(e.loc))
			s := a.slabs[id]
			if s.buf == nil || off+recHeader > s.used {
				t.Fatalf("entry %x points past its slab %d (%d bytes used)", e.hash, id, s.used)
			}
			r := s.buf[off:]
			k := binary.LittleEndian.Uint32(r[8:])
			if k&deadBit != 0 || binary.LittleEndian.Uint64(r) != e.hash {
				t.Fatalf("entry %x: its record is dead (%v) or has hash %x", e.hash, k&deadBit != 0, binary.LittleEndian.Uint64(r))
			}
			live[id] += recSize(int(k), tab.valueLen(&e))
		}
	}
	total := 0
	for _, n := range live {
		total += n
	}
	if a.live != total {
		t.Errorf("the arena counts %d live bytes, its entries take %d", a.live, total)
	}
	free := map[uint32]bool{}
	for _, id := range a.free {
		free[id] = true
	}
	for id, s := range a.slabs {
		switch {
		case s.buf == nil:
			if !free[uint32(id)] {
				t.Errorf("slab %d dropped but not free", id)
			}
		case free[uint32(id)]:
			t.Errorf("slab %d in use and free", id)
		case s.live != live[id]:
			t.Errorf("slab %d counts %d live bytes, its entries take %d", id, s.live, live[id])
		case id != a.cur && id != a.prev && 2*s.live <= len(s.buf):
			t.Errorf("slab %d of %d bytes has %d live and stays", id, len(s.buf), s.live)
		}
	}
	if len(a.pending) != 0 {
		t.Errorf("%d slabs left to compact", len(a.pending))
	}
}

// At a small keyspace every write overwrites a key, and the slabs fill and are sealed over
// and over, each holding the latest record of nearly every key when it is sealed.
// Compaction should copy a record only when its key went unwritten while a whole slab
// more was written, a small part of the bytes written: when a slab was compacted as it
// was sealed, it copied 29% of them at 16 keys per shard (1,000 keys in 64 shards).
func TestSmallKeyspaceCompactsLittle(t *testing.T) {
	for _, keys := range []int{16, 1000} {
		t.Run("keys="+strconv.Itoa(keys), func(t *testing.T) {
			tab := newTable()
			hash := func(k int) uint64 { return rand.New(rand.NewPCG(uint64(k), 9)).Uint64() }
			key := func(k int) string { return "T" + strconv.Itoa(k) }
			v := make([]byte, 100)
			for k := range keys {
				tab.add(hash(k), key(k), v)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			written := 0
			for range 200_000 {
				k := rng.IntN(keys)
				tab.set(tab.get(hash(k), key(k)), key(k), v)
				written += recSize(len(key(k)), len(v))
			}
			checkArena(t, &tab)
			if tab.a.moved > written/50 {
				t.Errorf("compaction copied %d bytes for %d written (%.1f%%), want at most 2%%",
					tab.a.moved, written, 100*float64(tab.a.moved)/float64(written))
			}
			t.Logf("compaction copied %d bytes for %d written", tab.a.moved, written)
		})
	}
}

// isEmpty reports whether e holds nothing, so it keeps no key or value alive.
func isEmpty(e entry) bool { return e == (entry{}) }

// The probe sequence's edges, in a new table's single bucket of minSlots (8) slots, where
// a key's home is its hash's low 3 bits. Hashes that differ only above the home share its
// run; hashes that differ in bits tagShift.. differ in their tags too.
func TestTableProbeEdges(t *testing.T) {
	const otherTag = 1 << tagShift
	type op struct {
		remove bool
		key    string
		hash   uint64
	}
	add := func(key string, h uint64) op { return op{key: key, hash: h} }
	del := func(key string, h uint64) op { return op{remove: true, key: key, hash: h} }
	for _, c := range []struct {
		name   string
		ops    []op
		slots  map[string]int    // where each stored key must sit
		misses map[string]uint64 // keys that must not be found, with their hashes
	}{
		{
			name:   "a run wraps around the end",
			ops:    []op{add("a", 6), add("b", 6), add("c", 7), add("d", 6)},
			slots:  map[string]int{"a": 6, "b": 7, "c": 0, "d": 1},
			misses: map[string]uint64{"e": 7, "f": 6 | otherTag, "g": 1},
		},
		{
			name:   "a delete inside a run moves the rest back",
			ops:    []op{add("a", 5), add("b", 5), add("c", 6), add("d", 5), del("b", 5)},
			slots:  map[string]int{"a": 5, "c": 6, "d": 7},
			misses: map[string]uint64{"b": 5, "e": 6},
		},
		{
			name:   "a delete leaves an entry at its home",
			ops:    []op{add("a", 1), add("b", 1), add("c", 3), del("a", 1)},
			slots:  map[string]int{"b": 1, "c": 3},
			misses: map[string]uint64{"a": 1, "d": 2},
		},
		{
			name:   "an entry moves back across the wrap",
			ops:    []op{add("a", 7), add("b", 7), add("c", 0), del("a", 7)},
			slots:  map[string]int{"b": 7, "c": 0},
			misses: map[string]uint64{"a": 7, "d": 0},
		},
		{
			name:   "an entry may not move back before its home",
			ops:    []op{add("a", 2), add("b", 3), add("c", 3), add("d", 2), del("a", 2)},
			slots:  map[string]int{"b": 3, "c": 4, "d": 2},
			misses: map[string]uint64{"a": 2},
		},
		{
			name:   "keys of one hash are told apart by their bytes",
			ops:    []op{add("a", 3), add("b", 3), add("c", 3), del("a", 3)},
			slots:  map[string]int{"b": 3, "c": 4},
			misses: map[string]uint64{"a": 3, "d": 3},
		},
		{
			name: "the same tag, another hash: a miss reads the entries and ends at an empty slot",
			ops:  []op{add("a", 2), add("b", 3)},
			// "a"'s bytes with another hash of the same home and tag: not the stored key
			slots:  map[string]int{"a": 2, "b": 3},
			misses: map[string]uint64{"x": 2 | 1<<20, "a": 2 | 1<<20},
		},
		{
			name:   "delete the only entry of a full run's last slot",
			ops:    []op{add("a", 0), add("b", 0), add("c", 0), add("d", 0), add("e", 0), add("f", 0), del("f", 0)},
			slots:  map[string]int{"a": 0, "b": 1, "c": 2, "d": 3, "e": 4},
			misses: map[string]uint64{"f": 0, "g": 5},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			tab := newTable()
			for _, o := range c.ops {
				if o.remove {
					if _, ok := tab.remove(o.hash, o.key); !ok {
						t.Fatalf("remove %s: not found", o.key)
					}
				} else {
					tab.add(o.hash, o.key, []byte(o.key))
				}
				checkTable(t, &tab)
			}
			b := tab.dir[0].b
			if len(b.slots) != minSlots || tab.n != len(c.slots) {
				t.Fatalf("%d entries in %d slots, want %d in %d", tab.n, len(b.slots), len(c.slots), minSlots)
			}
			for key, want := range c.slots {
				e := tab.get(b.slots[want].hash, key)
				if e != &b.slots[want] || string(tab.value(e)) != key {
					t.Errorf("%s is not in slot %d", key, want)
				}
			}
			for key, h := range c.misses {
				if e := tab.get(h, key); e != nil {
					t.Errorf("%s (hash %#x) found: %+v", key, h, e)
				}
				if _, ok := tab.remove(h, key); ok {
					t.Errorf("%s (hash %#x) removed", key, h)
				}
			}
		})
	}
}

// Deletes leave nothing behind: a bucket that has held and lost many more keys than it
// has slots, all in one run, is as empty as a new one, a miss stops at the first slot,
// and it fills to 3/4 again without growing.
func TestTableReuseAfterManyDeletes(t *testing.T) {
	tab := newTable()
	for round := range 1000 {
		for k := range 6 { // 6 of 8 slots: the most before a bucket grows
			tab.add(uint64(round+k), "k"+strconv.Itoa(round)+"."+strconv.Itoa(k), nil)
		}
		checkTable(t, &tab)
		for k := range 6 {
			if _, ok := tab.remove(uint64(round+k), "k"+strconv.Itoa(round)+"."+strconv.Itoa(k)); !ok {
				t.Fatalf("round %d: key %d not removed", round, k)
			}
		}
	}
	b := tab.dir[0].b
	if len(b.slots) != minSlots || tab.n != 0 || len(tab.dir) != 1 {
		t.Fatalf("after the deletes: %d entries, %d slots, %d buckets; want 0, %d, 1", tab.n, len(b.slots), len(tab.dir), minSlots)
	}
	for i, c := range b.ctrl {
		if c != 0 || !isEmpty(b.slots[i]) {
			t.Fatalf("slot %d still holds %#x %+v", i, c, b.slots[i])
		}
	}
}

// FuzzTable runs the table against a Go map: each pair of input bytes is an operation and
// a key. The keys' hashes come from few homes and tags, so runs are long, collide in
// their tags and wrap around, and the table grows and splits.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 1, 2, 1, 2, 2})
	f.Add([]byte("\x00\x07\x00\x0f\x00\x17\x01\x07\x02\x0f\x02\x07"))
	seq := make([]byte, 0, 4000)
	for i := range 2000 {
		seq = append(seq, byte(i%3), byte(i*7))
	}
	f.Add(seq)
	f.Fuzz(func(t *testing.T, ops []byte) {
		// 256 keys: homes from the low bits, a few tags, and directory bits for splits
		hash := func(k byte) uint64 {
			return uint64(k&7) | uint64(k>>3&3)<<tagShift | uint64(k>>5)<<dirShift
		}
		tab := newTable()
		want := map[string]byte{}
		for i := 0; i+1 < len(ops); i += 2 {
			k := ops[i+1]
			key, h := "k"+strconv.Itoa(int(k)), hash(k)
			switch ops[i] % 3 {
			case 0:
				if e := tab.get(h, key); e != nil {
					tab.set(e, key, []byte{byte(i)})
				} else {
					tab.add(h, key, []byte{byte(i)})
				}
				want[key] = byte(i)
			case 1:
				_, ok := tab.remove(h, key)
				if _, stored := want[key]; ok != stored {
					t.Fatalf("op %d: remove %s = %v, want %v", i/2, key, ok, stored)
				}
				delete(want, key)
			}
			w, ok := want[key]
			if e := tab.get(h, key); (e != nil) != ok || e != nil && tab.value(e)[0] != w {
				t.Fatalf("op %d: get %s = %+v, want %v (stored %v)", i/2, key, e, w, ok)
			}
		}
		checkTable(t, &tab)
		checkArena(t, &tab)
		if tab.n != len(want) {
			t.Fatalf("%d entries, want %d", tab.n, len(want))
		}
		for k := range 256 {
			key := "k" + strconv.Itoa(k)
			w, ok := want[key]
			if e := tab.get(hash(byte(k)), key); (e != nil) != ok || e != nil && tab.value(e)[0] != w {
				t.Fatalf("get %s = %+v, want %v (stored %v)", key, e, w, ok)
			}
		}
	})
}

// BenchmarkTable reads stored keys (hit) and keys never written (miss) through the driver,
// at 1,000 keys (the table stays in the CPU's caches) and 1,000,000 (it does not), and
// reports what the index costs per key: the heap the writes of the keys with empty values
// took, less nothing else (the key strings exist before).
//
//	go test -run '^$' -bench Table -benchtime 2000000x ./drivers/memory/
func BenchmarkTable(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			d := open(b, map[string]string{"maxBytes": "0"})
			keys := make([]string, 2*n) // the first n are written, the rest never
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range keys { // even numbers written, odd ones never
				keys[i] = "key" + strconv.FormatUint(rng.Uint64()%1e12&^1|uint64(i/n), 10)
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			for _, k := range keys[:n] {
				if err := d.Write(ctx, k, nil); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			perKey := float64(m1.HeapAlloc-m0.HeapAlloc) / float64(n)
			for _, c := range []struct {
				name string
				keys []string
				err  error
			}{{"hit", keys[:n], nil}, {"miss", keys[n:], driver.ErrNotFound}} {
				b.Run(c.name, func(b *testing.B) {
					for i := range b.N {
						if _, err := d.Read(ctx, c.keys[i%n]); err != c.err {
							b.Fatal(err)
						}
					}
					b.ReportMetric(perKey, "index-B/key")
				})
			}
		})
	}
}

// A bucket that grows past maxBucketSlots holds keys that share every directory bit
// (hash bits dirShift to dirShift+maxDepth): at the directory's maximum depth, ~40 M keys
// per shard, that is every bucket, and before it a bucket whose split told none of its
// keys apart. Its keys still spread over all of its slots: a stored key sits a few slots
// from its home, as in any bucket at most 3/4 full. The table here is not at the maximum
// depth (that takes ~50 M keys); its keys share the bits the directory would use there,
// which is the same bucket. Before the fix a key's home came from the hash's low bits
// only, so such a bucket of 32,768 slots had 1,024 homes and its keys sat hundreds of
// slots from them.
func TestTableBigBucketSpreads(t *testing.T) {
	const dirBits = uint64(1<<maxDepth-1) << dirShift
	for _, c := range []struct {
		name  string
		share uint64 // the directory bits every key has
		keys  int
	}{
		{"directory bits 0, 2 buckets' worth", 0, 1500},
		{"directory bits 0, 20 buckets' worth", 0, 20000},
		{"directory bits all 1", dirBits, 20000},
		{"directory bits mixed", 0x5a5a << dirShift & dirBits, 50000},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			tab := newTable()
			for i := range c.keys {
				h := rng.Uint64()&^dirBits | c.share
				tab.add(h, "k"+strconv.Itoa(i), nil)
			}
			checkTable(t, &tab)
			b := tab.dir[c.share>>dirShift&(uint64(len(tab.dir))-1)].b
			if b.n != c.keys {
				t.Fatalf("the bucket holds %d of the %d keys", b.n, c.keys)
			}
			mask := uint64(len(b.slots) - 1)
			var total, worst uint64
			for j, ctl := range b.ctrl {
				if ctl != 0 {
					d := (uint64(j) - home(b.slots[j].hash)) & mask
					total += d
					worst = max(worst, d)
				}
			}
			// Linear probing at load α puts a key (1/(1-α)-1)/2 slots from its home on
			// average: 1.5 at 3/4 full.
			if mean := float64(total) / float64(b.n); mean > 3 {
				t.Errorf("%d keys in %d slots sit %.1f slots from their homes on average (worst %d), want <= 3",
					b.n, len(b.slots), mean, worst)
			}
		})
	}
}
