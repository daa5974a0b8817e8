package memory

import (
	"encoding/binary"
	"unsafe"
)

// arena holds one shard's keys and values in slabs: byte slices of up to maxSlab bytes,
// which hold no Go pointers, so the collector marks each slab as one object and never
// scans it. The table's slots hold a slab index and offset, not a pointer. A store of Go
// strings and slices, one object each per key and value, had the collector mark every key
// it held: 17% of the CPU of the engine's closed loop at 100 M keys, a heap that grew with
// every new key (docs/performance.md, "Engine cost as the work grows").
//
// A record (a key and its value) is written once, at the end of the current slab, and
// never written over: an overwrite appends a new record and marks the old one dead. So a
// value that Read handed out never changes, as when each value was its own slice, and the
// collector keeps a slab alive while a reader holds a slice of it. A slab whose records
// are at most half live is compacted: its live records are copied to the current slab and
// the table is pointed at them, and the slab is dropped. So the dead bytes stay below
// about as many as are live, like the collector's own heap goal, plus the current slab and
// the one sealed last, and each compaction copies at most half a slab (512 KiB) while the
// shard's lock is held.
//
// The slab sealed last is left alone until the next one is sealed (prev): when a slab
// fills, the latest record of nearly every key of a small keyspace is in it, and those
// records die as their keys are overwritten while the next slab fills. Compacted at once,
// it had its live records copied on: 30% of the bytes written at 16 keys per shard (1,000
// keys in 64 shards), 100-byte values; a slab later, nearly all of them are dead and the
// slab is dropped whole: 0.3% (TestSmallKeyspaceCompactsLittle).
//
// A record is a header of recHeader bytes (the key's hash, the key's length with the dead
// bit, the value's length), the key and the value, padded to 8 bytes, so that records
// never share a word: a reader of one value and a writer of the next record do not touch
// the same memory. A record of more than bigRecord bytes gets a slab of its own, dropped
// when the record dies.
type arena struct {
	slabs   []slab
	cur     int      // index of the slab records are appended to; -1 before the first
	prev    int      // index of the slab sealed last, not compacted before the next seal; -1: none
	free    []uint32 // indexes of dropped slabs, to reuse
	pending []uint32 // slabs to compact; each has queued set while it is here
	live    int      // bytes of live records in all slabs
	moved   int      // bytes of records compaction copied, for tests
}

// slab is one byte slice of records.
type slab struct {
	buf    []byte // nil once dropped
	used   int    // bytes written from buf's start
	live   int    // bytes of records that are not dead
	queued bool   // in arena.pending
}

const (
	// recHeader is the size of a record's header: hash (8 bytes), key length with
	// deadBit (4), value length (4).
	recHeader = 16
	// deadBit marks a dead record in its key length.
	deadBit = 1 << 31
	// maxKeyLen and maxValueLen are the longest key and value a record holds.
	maxKeyLen   = deadBit - 1
	maxValueLen = 1<<32 - 1
	// A new slab is slabPerLive times the shard's live records, at least minSlab and at
	// most maxSlab bytes. So a shard of few keys overwritten often (1,000 keys in 64
	// shards) takes slabs of 32 KiB, the allocator's largest small size, which it
	// recycles, rather than 1 MiB ones, each zeroed and likely new to the kernel (page
	// faults), for a few live keys. Not smaller: each slab costs ~6,400 instructions to
	// allocate (the span refill and zeroing), which 8 KiB slabs of 68 records paid every
	// ~84 writes (BenchmarkMix's Write under callgrind, 752 instructions per call with
	// 4 KiB minimum slabs, 713 with 32 KiB). A shard of many keys gets maxSlab.
	slabPerLive = 4
	minSlab     = 32 << 10
	maxSlab     = 1 << 20
	// bigRecord is the largest record a shared slab holds: a bigger one would leave too
	// much of a slab unused at its end.
	bigRecord = maxSlab / 4
)

// recSize is the bytes a record of a key of k bytes and a value of v bytes takes.
func recSize(k, v int) int { return (recHeader + k + v + 7) &^ 7 }

// put appends a record of key, whose hash is h, and a copy of v, and returns its place.
func (a *arena) put(h uint64, key string, v []byte) uint64 {
	n := recSize(len(key), len(v))
	var id int
	if n > bigRecord {
		id = a.newSlab(n)
	} else {
		if a.cur < 0 || a.slabs[a.cur].used+n > len(a.slabs[a.cur].buf) {
			if a.cur >= 0 {
				a.seal()
			}
			size := minSlab
			for size < slabPerLive*a.live && size < maxSlab {
				size *= 2
			}
			a.cur = a.newSlab(max(size, n))
		}
		id = a.cur
	}
	s := &a.slabs[id]
	off := s.used
	// The record fits (checked above, or its slab is its own), so it is written through
	// its address without bounds checks, as rec reads it.
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.buf)), off)
	hdr := (*[recHeader]byte)(p)
	binary.LittleEndian.PutUint64(hdr[:], h)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(len(key)))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(len(v)))
	kp := unsafe.Add(p, recHeader)
	copy(unsafe.Slice((*byte)(kp), len(key)), key)
	if len(v) > 0 {
		// Not a pointer past the key when there is no value: it may be the slab's end.
		copy(unsafe.Slice((*byte)(unsafe.Add(kp, len(key))), len(v)), v)
	}
	s.used += n
	s.live += n
	a.live += n
	return uint64(id)<<32 | uint64(off)
}

// newSlab adds a slab of size bytes and returns its index.
func (a *arena) newSlab(size int) int {
	s := slab{buf: make([]byte, size)}
	if n := len(a.free); n > 0 {
		id := a.free[n-1]
		a.free = a.free[:n-1]
		a.slabs[id] = s
		return int(id)
	}
	a.slabs = append(a.slabs, s)
	return len(a.slabs) - 1
}

// seal stops appending to the current slab, which becomes prev; the slab that was prev is
// dropped or queued if it is mostly dead.
func (a *arena) seal() {
	id, old := a.cur, a.prev
	a.cur, a.prev = -1, id
	if old >= 0 {
		a.check(old)
	}
}

// check drops slab id if nothing in it lives and queues it for compaction if at most half
// of it does. The current slab is left alone: its end is still being written; so is prev
// but when it is dead.
func (a *arena) check(id int) {
	s := &a.slabs[id]
	switch {
	case id == a.cur || s.queued:
	case s.live == 0:
		a.slabs[id] = slab{}
		a.free = append(a.free, uint32(id))
		if id == a.prev {
			a.prev = -1 // its index may be reused for another slab
		}
	case id == a.prev:
	case 2*s.live <= len(s.buf):
		s.queued = true
		a.pending = append(a.pending, uint32(id))
	}
}

// release marks the record at loc dead.
func (a *arena) release(loc uint64) {
	id := int(loc >> 32)
	s := &a.slabs[id]
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.buf)), uint32(loc))
	k, v := lens(p)
	binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(unsafe.Add(p, 8)), 4), k|deadBit)
	n := recSize(int(k), int(v))
	s.live -= n
	a.live -= n
	if 2*s.live <= len(s.buf) {
		a.check(id) // only a slab at most half live is dropped or queued
	}
}

// rec returns the start of the record at loc. The table's entries and compact's walk
// point only at records within their slabs, so the accessors below read a record's
// header and bytes without bounds checks: with them a read took ~100 instructions more
// than the Go strings and slices the table held before (callgrind, BenchmarkRead at 1,000
// keys).
func (a *arena) rec(loc uint64) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(a.slabs[loc>>32].buf)), uint32(loc))
}

// lens returns the key's and the value's lengths in the header of the record at p, the
// key's with deadBit if the record is dead.
func lens(p unsafe.Pointer) (k, v uint32) {
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(p, 8)), 4)),
		binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(p, 12)), 4))
}

// keyIs reports whether the live record at loc holds key.
func (a *arena) keyIs(loc uint64, key string) bool {
	p := a.rec(loc)
	k, _ := lens(p)
	return int(k) == len(key) && unsafe.String((*byte)(unsafe.Add(p, recHeader)), k) == key
}

// key returns the key of the live record at loc, sharing its bytes with the arena.
func (a *arena) key(loc uint64) string {
	p := a.rec(loc)
	k, _ := lens(p)
	return unsafe.String((*byte)(unsafe.Add(p, recHeader)), k)
}

// value returns the value of the live record at loc (see table.value).
func (a *arena) value(loc uint64) []byte {
	p := a.rec(loc)
	k, v := lens(p)
	return valueAt(p, k, v)
}

// valueAt returns the value of the record at p, whose key and value are k and v bytes.
func valueAt(p unsafe.Pointer, k, v uint32) []byte {
	if v == 0 {
		// Not a pointer past the value, which may be past the slab's end.
		return unsafe.Slice((*byte)(p), 0)
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, recHeader+uintptr(k))), v)
}

// valueLen is the length of the value of the live record at loc.
func (a *arena) valueLen(loc uint64) int {
	_, v := lens(a.rec(loc))
	return int(v)
}

// compact copies the live records of every slab queued for it to the current slab,
// points their entries there, and drops the slab. Appending may seal the current slab
// and queue it; the loop takes that one too.
func (t *table) compact() {
	if len(t.a.pending) > 0 {
		t.compactPending()
	}
}

// compactPending is compact's work, apart so that compact's check is inlined in every write.
func (t *table) compactPending() {
	a := t.a
	for len(a.pending) > 0 {
		id := a.pending[len(a.pending)-1]
		a.pending = a.pending[:len(a.pending)-1]
		s := &a.slabs[id]
		if !s.queued {
			continue
		}
		s.queued = false
		buf, used := s.buf, s.used
		for off := 0; off < used; {
			r := buf[off:]
			k := binary.LittleEndian.Uint32(r[8:])
			v := int(binary.LittleEndian.Uint32(r[12:]))
			n := recSize(int(k&^deadBit), v)
			if k&deadBit == 0 {
				h := binary.LittleEndian.Uint64(r)
				key := unsafe.String(&r[recHeader], k)
				// get finds the entry by comparing its key with key, which is this
				// record's own bytes: they are still here until the slab is dropped.
				e := t.get(h, key)
				e.loc = a.put(h, key, r[recHeader+int(k):recHeader+int(k)+v])
				a.live -= n // the copy counts, this record no longer
				a.moved += n
			}
			off += n
		}
		// The records are copied; a reader's slice keeps buf alive, not the arena.
		a.slabs[id] = slab{}
		a.free = append(a.free, id)
	}
}
