package memory

// table is one shard's index: open-addressing hash tables with linear probing, keyed by
// the hash the driver computes anyway to pick the shard. A Go map hashes the key a second
// time, and its lookup was most of the store's cost per operation (measured: the closed
// loop at 1,000 keys spent ~14% of its CPU in mapaccess1_faststr and its hashing). An
// entry holds the hash, so a probe compares the key's bytes only when the 64-bit hashes
// match, and it holds the key and value headers itself, so a lookup that misses the CPU
// caches (a large keyspace) waits for the entry and the key's bytes, not for a third
// object.
//
// The keys are spread over buckets of at most maxBucketSlots slots by extendible hashing:
// a full bucket splits in two by one more bit of the hash, and the directory doubles when
// a bucket needs more bits than it has. So growing never moves more than one bucket's
// entries while the shard's lock is held (a single table of 100,000 entries took 26 ms to
// double), as a Go map grows table by table. The caller holds the shard's lock.
type table struct {
	// dir maps bits dirShift.. of a hash to its bucket; 1<<depth long. A bucket of local
	// depth d is at every index with its low d bits.
	dir   []dirEntry
	depth uint
	n     int // entries
}

// dirEntry is a bucket's place in the directory. It repeats the bucket's slots so that a
// lookup goes from the directory straight to the slots.
type dirEntry struct {
	slots []entry
	b     *bucket
}

// bucket is a power-of-two run of slots, at most 3/4 full.
type bucket struct {
	slots []entry
	n     int
	depth uint // bits of the directory index its keys share
}

// entry is one slot of a bucket: a stored key and value, or empty while hash is 0.
type entry struct {
	hash uint64 // the key's hash with usedBit set
	key  string
	v    []byte
}

const (
	// usedBit marks a slot in use. The hash's other bits still tell keys apart, and a
	// slot's home comes from its low bits, which the bit leaves alone.
	usedBit = 1 << 63
	// minSlots is the size of a new bucket; maxBucketSlots the most a bucket grows to
	// before it splits (48 KiB).
	minSlots       = 8
	maxBucketSlots = 1024
	// dirShift is the first hash bit of the directory index: the bits below it pick the
	// slot within a bucket.
	dirShift = 10
	// maxDepth bounds the directory at 1<<maxDepth buckets (512 KiB), ~40 million keys
	// per shard; past it a bucket grows beyond maxBucketSlots instead, as it does when a
	// split tells none of its keys apart.
	maxDepth = 16
)

func newTable() table {
	b := &bucket{slots: make([]entry, minSlots)}
	return table{dir: []dirEntry{{slots: b.slots, b: b}}}
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
		t.dir[j] = dirEntry{slots: b.slots, b: b}
	}
}

// get returns the entry of key, whose hash is h, or nil. The entry may be changed in
// place (its value) under the shard's write lock; it is valid until the next add or
// remove.
func (t *table) get(h uint64, key string) *entry {
	return find(t.dir[(h>>dirShift)&(uint64(len(t.dir))-1)].slots, h|usedBit, key)
}

// find returns the entry of key, whose hash with usedBit is h, in slots, or nil.
func find(slots []entry, h uint64, key string) *entry {
	mask := uint64(len(slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &slots[i]
		if s.hash == h && s.key == key {
			return s
		}
		if s.hash == 0 {
			return nil
		}
	}
}

// add inserts key, whose hash is h and which is not in t, with value v.
func (t *table) add(h uint64, key string, v []byte) {
	h |= usedBit
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
	b.place(entry{hash: h, key: key, v: v})
	b.n++
	t.n++
}

// resize moves b's entries into n slots.
func (b *bucket) resize(n int) {
	old := b.slots
	b.slots = make([]entry, n)
	for i := range old {
		if old[i].hash != 0 {
			b.place(old[i])
		}
	}
}

// split replaces b, found at directory index i, by two buckets that tell its keys apart
// by one more bit, doubling the directory first if b already uses all of its bits.
func (t *table) split(b *bucket, i uint64) {
	if b.depth == t.depth {
		t.dir = append(t.dir, t.dir...)
		t.depth++
	}
	bit := uint64(1) << b.depth
	lo := &bucket{slots: make([]entry, len(b.slots)), depth: b.depth + 1}
	hi := &bucket{slots: make([]entry, len(b.slots)), depth: b.depth + 1}
	for _, e := range b.slots {
		if e.hash == 0 {
			continue
		}
		to := lo
		if (e.hash>>dirShift)&bit != 0 {
			to = hi
		}
		to.place(e)
		to.n++
	}
	// Every index whose low b.depth bits are i's referred to b.
	t.point(lo, i&(bit-1))
	t.point(hi, i&(bit-1)|bit)
}

// place puts e in the first free slot from its hash's home on.
func (b *bucket) place(e entry) {
	mask := uint64(len(b.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		if b.slots[i].hash == 0 {
			b.slots[i] = e
			return
		}
	}
}

// remove deletes key, whose hash is h, and returns its entry, or false if it was not
// there. The entries after it in its run move back (backward-shift deletion), so a bucket
// needs no tombstones and lookups stay as short as before the key was added. Buckets do
// not merge again, as a Go map does not shrink.
func (t *table) remove(h uint64, key string) (entry, bool) {
	b, _ := t.bucketOf(h)
	s := find(b.slots, h|usedBit, key)
	if s == nil {
		return entry{}, false
	}
	e := *s
	mask := uint64(len(b.slots) - 1)
	i := e.hash & mask
	for &b.slots[i] != s {
		i = (i + 1) & mask
	}
	// i is the hole. An entry further along the run may move into it unless its home lies
	// cyclically in (i, j]: it would then sit before its home, where lookups never look.
	for j := (i + 1) & mask; b.slots[j].hash != 0; j = (j + 1) & mask {
		if home := b.slots[j].hash & mask; (j-home)&mask >= (j-i)&mask {
			b.slots[i] = b.slots[j]
			i = j
		}
	}
	b.slots[i] = entry{}
	b.n--
	t.n--
	return e, true
}

// each calls f for every entry.
func (t *table) each(f func(*entry)) {
	for i, d := range t.dir {
		b := d.b
		if uint64(i) >= uint64(1)<<b.depth {
			continue // b's first index is below 1<<b.depth; it was visited there
		}
		for j := range b.slots {
			if b.slots[j].hash != 0 {
				f(&b.slots[j])
			}
		}
	}
}
