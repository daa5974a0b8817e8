package memory

// table is one shard's index: an open-addressing hash table with linear probing, keyed by
// the hash the driver computes anyway to pick the shard. A Go map hashes the key a second
// time, and its lookup was most of the store's cost per operation (measured: the closed
// loop at 1,000 keys spent ~14% of its CPU in mapaccess1_faststr and its hashing). An
// entry holds the hash, so a probe compares the key's bytes only when the 64-bit hashes
// match, and it holds the key and value headers itself, so a lookup that misses the CPU
// caches (a large keyspace) waits for the entry and the key's bytes, not for a third
// object. The caller holds the shard's lock.
type table struct {
	slots []entry // a power of two long; at most 3/4 full
	n     int     // entries
}

// entry is one slot of a table: a stored key and value, or empty while hash is 0.
type entry struct {
	hash uint64 // the key's hash with usedBit set
	key  string
	v    []byte
}

// usedBit marks a slot in use. The hash's other bits still tell keys apart, and a slot's
// home comes from its low bits, which the bit leaves alone.
const usedBit = 1 << 63

// minSlots is the size of an empty table.
const minSlots = 8

func newTable() *table { return &table{slots: make([]entry, minSlots)} }

// get returns the entry of key, whose hash is h, or nil. The entry may be changed in
// place (its value) under the shard's write lock; it is valid until the next add or
// remove.
func (t *table) get(h uint64, key string) *entry {
	h |= usedBit
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
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
	if (t.n+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]entry, 2*len(old))
		for i := range old {
			if old[i].hash != 0 {
				t.place(old[i])
			}
		}
	}
	t.place(entry{hash: h | usedBit, key: key, v: v})
	t.n++
}

// place puts e in the first free slot from its hash's home on.
func (t *table) place(e entry) {
	mask := uint64(len(t.slots) - 1)
	for i := e.hash & mask; ; i = (i + 1) & mask {
		if t.slots[i].hash == 0 {
			t.slots[i] = e
			return
		}
	}
}

// remove deletes key, whose hash is h, and returns its entry, or false if it was not
// there. The entries after it in its run move back (backward-shift deletion), so the
// table needs no tombstones and lookups stay as short as before the key was added.
func (t *table) remove(h uint64, key string) (entry, bool) {
	s := t.get(h, key)
	if s == nil {
		return entry{}, false
	}
	e := *s
	mask := uint64(len(t.slots) - 1)
	i := e.hash & mask
	for &t.slots[i] != s {
		i = (i + 1) & mask
	}
	// i is the hole. An entry further along the run may move into it unless its home lies
	// cyclically in (i, j]: it would then sit before its home, where lookups never look.
	for j := (i + 1) & mask; t.slots[j].hash != 0; j = (j + 1) & mask {
		if home := t.slots[j].hash & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = entry{}
	t.n--
	return e, true
}

// each calls f for every entry.
func (t *table) each(f func(*entry)) {
	for i := range t.slots {
		if t.slots[i].hash != 0 {
			f(&t.slots[i])
		}
	}
}
