package memory

import (
	"math/bits"
	"unsafe"
)

// table is one shard's index: open-addressing hash tables with linear probing, keyed by
// the hash the driver computes anyway to pick the shard. A Go map hashes the key a second
// time, and its lookup was most of the store's cost per operation (measured: the closed
// loop at 1,000 keys spent ~14% of its CPU in mapaccess1_faststr and its hashing). An
// entry holds the hash, so a probe compares the key's bytes only when the 64-bit hashes
// match, and where the key and value are in the shard's arena (arena.go): a record there
// holds the key and the value side by side, so a hit that misses the CPU caches waits for
// the entry and the record, and an entry is 16 bytes with no Go pointer in it.
//
// Beside the slots, a bucket keeps one control byte per slot: 0 for an empty slot, or a
// used bit and seven bits of the key's hash (its tag). A lookup probes the control bytes
// and reads an entry only where the tag matches, so a read of a key that is not stored
// (most reads of a large keyspace) reads one cache line of control bytes (64 slots) and
// stops at the first empty one, instead of reading every entry (48 bytes then) to the end of its
// run: with entries alone such misses were 28% of the CPU of the engine's closed loop at
// 100 M keys (docs/performance.md, "Engine cost as the work grows").
//
// The keys are spread over buckets of at most maxBucketSlots slots by extendible hashing:
// a full bucket splits in two by one more bit of the hash, and the directory doubles when
// a bucket needs more bits than it has. So growing never moves more than one bucket's
// entries while the shard's lock is held (a single table of 100,000 entries took 26 ms to
// double), as a Go map grows table by table. The caller holds the shard's lock.
type table struct {
	// dir maps bits dirShift.. of a hash to its bucket; 1<<t.depth() long. A bucket of
	// local depth d is at every index with its low d bits.
	dir []dirEntry
	n   int // entries
	// a holds the keys and values. It is a pointer so that the table, the shard's lock
	// and the padding keep to one cache line (TestShardIsACacheLine).
	a *arena
}

// depth is the number of hash bits the directory's index takes.
func (t *table) depth() uint { return uint(bits.TrailingZeros(uint(len(t.dir)))) }

// dirEntry is a bucket's place in the directory. It repeats the bucket's control bytes and
// slots so that a lookup goes from the directory straight to them.
type dirEntry struct {
	ctrl  []uint8
	slots []entry
	b     *bucket
}

// bucket is a power-of-two run of slots, at most 3/4 full, and their control bytes.
type bucket struct {
	ctrl  []uint8 // per slot: 0 while empty, else tagOf(the entry's hash)
	slots []entry
	n     int
	depth uint // bits of the directory index its keys share
}

// entry is one used slot of a bucket: the key's hash and where the key and value are in
// the table's arena. It holds no Go pointer, so neither do the slots: the collector does
// not scan them, nor anything per key (arena.go).
type entry struct {
	hash uint64
	loc  uint64 // the record's slab index << 32 | its offset in the slab
}

const (
	// usedCtrl marks a used slot's control byte; the byte's other bits are the tag.
	usedCtrl = 0x80
	// tagShift is the first of the seven hash bits a tag holds: bits the slot (below
	// dirShift) and the directory index (dirShift to dirShift+maxDepth) do not use, so
	// keys of one run, which share those, still differ in their tags. The shard comes
	// from the hash's top bits (Driver.shardFor), which the tag leaves alone too.
	tagShift = dirShift + maxDepth
	// minSlots is the size of a new bucket; maxBucketSlots the most a bucket grows to
	// before it splits (40 KiB of entries).
	minSlots       = 8
	maxBucketSlots = 1024
	// dirShift is the first hash bit of the directory index: the bits below it pick the
	// slot within a bucket.
	dirShift = 10
	// maxDepth bounds the directory at 1<<maxDepth buckets (3.5 MiB), ~40 million keys
	// per shard; past it a bucket grows beyond maxBucketSlots instead, as it does when a
	// split tells none of its keys apart.
	maxDepth = 16
)

// homeShift is how far home shifts the hash bits it mixes into a slot index's bits at and
// above dirShift: from bit tagShift+7 on, above the tag's bits.
const homeShift = tagShift + 7 - dirShift

// home is the slot index of hash h before the bucket's mask: the hash's low dirShift bits,
// and above them its bits from dirShift on mixed with bits the directory and the tag do
// not use. A bucket of at most maxBucketSlots slots uses only the low bits; a bigger one,
// grown because its keys share every directory bit (at the directory's maximum depth, or
// hashes a split told apart by none of its bits), would otherwise have only
// maxBucketSlots homes for all of its slots (TestTableBigBucketSpreads).
func home(h uint64) uint64 { return h ^ (h>>homeShift)&^(1<<dirShift-1) }

// tagOf is the control byte of a slot that holds the key of hash h.
func tagOf(h uint64) uint8 { return usedCtrl | uint8(h>>tagShift) }

func newTable() table {
	b := newBucket(minSlots, 0)
	return table{dir: []dirEntry{{ctrl: b.ctrl, slots: b.slots, b: b}}, a: &arena{cur: -1, prev: -1}}
}

func newBucket(slots int, depth uint) *bucket {
	return &bucket{ctrl: make([]uint8, slots), slots: make([]entry, slots), depth: depth}
}

// open reports whether t was made by newTable (and not emptied since).
func (t *table) open() bool { return t.dir != nil }

// bucketOf returns the bucket of hash h and its directory index.
func (t *table) bucketOf(h uint64) (*bucket, uint64) {
	i := (h >> dirShift) & (uint64(len(t.dir)) - 1)
	return t.dir[i].b, i
}

// point makes every directory index with the low b.depth bits of i refer to b.
func (t *table) point(b *bucket, i uint64) {
	step := uint64(1) << b.depth
	for j := i & (step - 1); j < uint64(len(t.dir)); j += step {
		t.dir[j] = dirEntry{ctrl: b.ctrl, slots: b.slots, b: b}
	}
}

// get returns the entry of key, whose hash is h, or nil. The entry may be changed in
// place (its value) under the shard's write lock; it is valid until the next add or
// remove.
//
// It repeats find's loop rather than calling it: a read of a table in the caches took 8
// instructions more through find (callgrind, BenchmarkTable at 1,000 keys: 242 per hit
// and 237 per miss in the driver's Read, against 209 and 232 before the control bytes,
// when get was small enough to be inlined; now it is not).
func (t *table) get(h uint64, key string) *entry {
	d := &t.dir[(h>>dirShift)&(uint64(len(t.dir))-1)]
	ctrl, slots, tag := d.ctrl, d.slots, tagOf(h)
	mask := uint64(len(ctrl) - 1)
	for i := home(h) & mask; ; i = (i + 1) & mask {
		if c := ctrl[i]; c == tag {
			if s := &slots[i]; s.hash == h && t.a.keyIs(s.loc, key) {
				return s
			}
		} else if c == 0 {
			return nil
		}
	}
}

// read returns the value of key, whose hash is h (see value), or false when it is not
// stored. It is get and value in one: the record's address, found once, serves the key's
// comparison and the value.
func (t *table) read(h uint64, key string) ([]byte, bool) {
	d := &t.dir[(h>>dirShift)&(uint64(len(t.dir))-1)]
	ctrl, slots, tag := d.ctrl, d.slots, tagOf(h)
	mask := uint64(len(ctrl) - 1)
	slots = slots[:len(ctrl)]
	for i := home(h) & mask; ; i = (i + 1) & mask {
		if c := ctrl[i]; c == tag {
			if s := &slots[i]; s.hash == h {
				p := t.a.rec(s.loc)
				if k, v := lens(p); int(k) == len(key) && unsafe.String((*byte)(unsafe.Add(p, recHeader)), k) == key {
					return valueAt(p, k, v), true
				}
			}
		} else if c == 0 {
			return nil, false
		}
	}
}

// find returns the slot of key, whose hash is h, or -1. It reads an entry only where the
// slot's tag is key's; a run ends at the first empty slot (there are no tombstones).
func (t *table) find(ctrl []uint8, slots []entry, h uint64, key string) int {
	mask := uint64(len(ctrl) - 1)
	slots = slots[:len(ctrl)]
	tag := tagOf(h)
	for i := home(h) & mask; ; i = (i + 1) & mask {
		switch ctrl[i] {
		case tag:
			if s := &slots[i]; s.hash == h && t.a.keyIs(s.loc, key) {
				return int(i)
			}
		case 0:
			return -1
		}
	}
}

// add inserts key, whose hash is h and which is not in t, with value v.
func (t *table) add(h uint64, key string, v []byte) {
	b, i := t.bucketOf(h)
	if (b.n+1)*4 > len(b.slots)*3 {
		if len(b.slots) < maxBucketSlots || b.depth == maxDepth {
			b.resize(2 * len(b.slots))
			t.point(b, i)
		} else {
			t.split(b, i)
			full := b.n
			if b, i = t.bucketOf(h); b.n == full {
				// The next bit told none of the keys apart (hashes this alike do not
				// come from a seeded hash): grow instead of splitting on, bit by bit.
				b.resize(2 * len(b.slots))
				t.point(b, i)
			}
		}
	}
	b.place(entry{hash: h, loc: t.a.put(h, key, v)})
	b.n++
	t.n++
	t.compact()
}

// set makes a copy of v the value of e, the entry of key. The old value's bytes stay as
// they are (a slice of them that a reader holds keeps them) and count as garbage.
func (t *table) set(e *entry, key string, v []byte) {
	old := e.loc
	e.loc = t.a.put(e.hash, key, v)
	t.a.release(old)
	t.compact()
}

// value returns e's value, capped at its length so that an append to it cannot write into
// the arena. It is never nil: an empty value stays distinct from a missing key.
func (t *table) value(e *entry) []byte { return t.a.value(e.loc) }

// valueLen is the length of e's value.
func (t *table) valueLen(e *entry) int { return t.a.valueLen(e.loc) }

// resize moves b's entries into n slots.
func (b *bucket) resize(n int) {
	ctrl, slots := b.ctrl, b.slots
	b.ctrl, b.slots = make([]uint8, n), make([]entry, n)
	for i, c := range ctrl {
		if c != 0 {
			b.place(slots[i])
		}
	}
}

// split replaces b, found at directory index i, by two buckets that tell its keys apart
// by one more bit, doubling the directory first if b already uses all of its bits.
func (t *table) split(b *bucket, i uint64) {
	if b.depth == t.depth() {
		t.dir = append(t.dir, t.dir...)
	}
	bit := uint64(1) << b.depth
	lo, hi := newBucket(len(b.slots), b.depth+1), newBucket(len(b.slots), b.depth+1)
	for j, c := range b.ctrl {
		if c == 0 {
			continue
		}
		e := &b.slots[j]
		to := lo
		if (e.hash>>dirShift)&bit != 0 {
			to = hi
		}
		to.place(*e)
		to.n++
	}
	// Every index whose low b.depth bits are i's referred to b.
	t.point(lo, i&(bit-1))
	t.point(hi, i&(bit-1)|bit)
}

// place puts e in the first free slot from its hash's home on.
func (b *bucket) place(e entry) {
	mask := uint64(len(b.slots) - 1)
	for i := home(e.hash) & mask; ; i = (i + 1) & mask {
		if b.ctrl[i] == 0 {
			b.ctrl[i], b.slots[i] = tagOf(e.hash), e
			return
		}
	}
}

// remove deletes key, whose hash is h, and returns its value, or false if it was not
// there. The entries after it in its run move back (backward-shift deletion), so a bucket
// needs no tombstones and lookups stay as short as before the key was added. Buckets do
// not merge again, as a Go map does not shrink.
func (t *table) remove(h uint64, key string) ([]byte, bool) {
	b, _ := t.bucketOf(h)
	i := t.find(b.ctrl, b.slots, h, key)
	if i < 0 {
		return nil, false
	}
	e := b.slots[i]
	v := t.a.value(e.loc)
	mask := uint64(len(b.slots) - 1)
	hole := uint64(i)
	// An entry further along the run may move into the hole unless its home lies
	// cyclically in (hole, j]: it would then sit before its home, where lookups never look.
	for j := (hole + 1) & mask; b.ctrl[j] != 0; j = (j + 1) & mask {
		if at := home(b.slots[j].hash) & mask; (j-at)&mask >= (j-hole)&mask {
			b.ctrl[hole], b.slots[hole] = b.ctrl[j], b.slots[j]
			hole = j
		}
	}
	b.ctrl[hole], b.slots[hole] = 0, entry{}
	b.n--
	t.n--
	t.a.release(e.loc)
	t.compact()
	return v, true
}

// each calls f with every key and value. The key's bytes are the arena's, which never
// change (a record is never written over), so f may keep it.
func (t *table) each(f func(key string, value []byte)) {
	for i, d := range t.dir {
		b := d.b
		if uint64(i) >= uint64(1)<<b.depth {
			continue // b's first index is below 1<<b.depth; it was visited there
		}
		for j, c := range b.ctrl {
			if c != 0 {
				f(t.a.key(b.slots[j].loc), t.a.value(b.slots[j].loc))
			}
		}
	}
}
