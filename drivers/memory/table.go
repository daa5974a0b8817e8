package memory

// table is one shard's index: an open-addressing hash table with linear probing, keyed by
// the hash the driver computes anyway to pick the shard. A Go map hashes the key a second
// time, and its lookup was most of the store's cost per operation (measured: the closed
// loop at 1,000 keys spent ~14% of its CPU in mapaccess1_faststr and its hashing). A slot
// holds the hash and the entry, so a probe compares the key's bytes only when the 64-bit
// hashes match. The caller holds the shard's lock.
type table struct {
	slots []slot // a power of two long; at most 3/4 full
	n     int    // entries
}

// slot is one place of a table; empty while e is nil.
type slot struct {
	hash uint64
	e    *entry
}

// entry holds a stored key and value. A slot points to it so that overwriting a key is a
// lookup and a pointer store, and so that slots are small and more of the index stays in
// cache (measured: Read and Write both faster than storing the slice in the index).
type entry struct {
	key string
	v   []byte
}

// minSlots is the size of an empty table.
const minSlots = 8

func newTable() *table { return &table{slots: make([]slot, minSlots)} }

// get returns the entry of key, whose hash is h, or nil.
func (t *table) get(h uint64, key string) *entry {
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.hash == h && s.e.key == key {
			return s.e
		}
	}
}

// add inserts e, whose key has hash h and is not in t.
func (t *table) add(h uint64, e *entry) {
	if (t.n+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]slot, 2*len(old))
		for _, s := range old {
			if s.e != nil {
				t.place(s)
			}
		}
	}
	t.place(slot{hash: h, e: e})
	t.n++
}

// place puts s in the first free slot from its hash's home on.
func (t *table) place(s slot) {
	mask := uint64(len(t.slots) - 1)
	for i := s.hash & mask; ; i = (i + 1) & mask {
		if t.slots[i].e == nil {
			t.slots[i] = s
			return
		}
	}
}

// remove deletes key, whose hash is h, and returns its entry, or nil if it was not there.
// The entries after it in its run move back (backward-shift deletion), so the table needs
// no tombstones and lookups stay as short as before the key was added.
func (t *table) remove(h uint64, key string) *entry {
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.hash == h && s.e.key == key {
			break
		}
		i = (i + 1) & mask
	}
	e := t.slots[i].e
	// i is the hole. An entry further along the run may move into it unless its home lies
	// cyclically in (i, j]: it would then sit before its home, where lookups never look.
	for j := (i + 1) & mask; t.slots[j].e != nil; j = (j + 1) & mask {
		if home := t.slots[j].hash & mask; (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
	return e
}

// each calls f for every entry.
func (t *table) each(f func(*entry)) {
	for _, s := range t.slots {
		if s.e != nil {
			f(s.e)
		}
	}
}
