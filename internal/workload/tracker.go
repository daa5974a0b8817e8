package workload

import (
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// MaxTrackedKeys bounds a Tracker's keyspace: slot indices stay far from int overflow and
// a tracker never exceeds 4 GiB, whatever the memory budget (see EstimateMemory).
const MaxTrackedKeys = 1 << 30

// TrackerParams configures a Tracker.
type TrackerParams struct {
	// NumKeys is the keyspace size, in [1, MaxTrackedKeys].
	NumKeys int64
	// MaxWriteTime is the longest a write can take and still be acknowledged, i.e. the
	// write timeout. Two writes to one key that overlap in time may be applied in either
	// order, so a read may legally return the older one; a value is therefore only called
	// stale when its write started more than MaxWriteTime before the last acknowledged
	// write to the key started, which proves it finished before that write began. Zero
	// assumes writes to a key never overlap.
	MaxWriteTime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxInserted is how many keys beyond NumKeys (the keys inserts add) the tracker
	// follows, at most MaxTrackedKeys-NumKeys; keys past them are not tracked: nothing is
	// expected of them. Its memory is TrackerGrowth(NumKeys, MaxInserted) at most.
	MaxInserted int64
}

// Tracker remembers, per key index, the sequence of the latest acknowledged write, so a
// read can tell a stale value and a lost write from a correct answer. It is lock-free:
// Ack is an atomic CAS-max, Expect an atomic load.
//
// A sequence is a Unix time in milliseconds read from the monotonic clock (start wall
// time + elapsed monotonic time), carried in full (uint64) in the value header. Absolute
// time rather than a per-tracker counter keeps sequences comparable across trackers, so
// the engine can replace a tracker (a new keyspace, or Expired) while values written under
// the old one stay in the store. Per key the tracker stores only milliseconds since its
// start + 1 and a deleted bit in a uint32 (0 = never written): 4 bytes per key keeps 100M
// keys at 400 MB, millisecond resolution is finer than any store's write latency, and the
// range covers 24.8 days, after which Ack stops recording (Expired reports it) so verdicts
// err towards "ok", never towards a false alarm. Writes to one key within the same millisecond get
// equal sequences; a read returning the older of them goes unnoticed (a false negative,
// never a false positive).
//
// Only writes made through this tracker are known. With several nodes writing the same
// keys, a key last written by another node looks unwritten here, and staleness verdicts
// on other nodes' values assume clocks agree within MaxWriteTime.
type Tracker struct {
	slots []atomic.Uint32
	// ext tracks the keys inserts add beyond NumKeys, up to MaxInserted of them, in blocks
	// of extBlock slots made on first use: nil until the first insert, so a keyspace that
	// does not grow costs nothing more, and one that does costs 4 bytes per key claimed,
	// rounded up to a block (plus the table of blocks, 8 bytes per block, once). Keys
	// beyond are not tracked: nothing is expected of them.
	ext     atomic.Pointer[[]atomic.Pointer[[extBlock]atomic.Uint32]]
	extMax  int64 // MaxInserted, bounded by MaxTrackedKeys
	now     func() time.Time
	start   time.Time
	startMs uint64 // start as Unix milliseconds
	graceMs uint64 // MaxWriteTime, rounded up to milliseconds
}

// extBlock is the number of slots of one block of inserted keys.
const extBlock = 1 << 14

// TrackerGrowth is the most memory a tracker of numKeys keys takes beyond its NumKeys
// slots when it follows maxInserted inserted keys: whole blocks of slots, and the table
// of blocks.
func TrackerGrowth(numKeys, maxInserted int64) int64 {
	blocks := extBlocks(numKeys, maxInserted)
	return blocks * (extBlock*TrackerSlotBytes + 8)
}

// extBlocks is the number of blocks that hold maxInserted slots beyond numKeys, within
// MaxTrackedKeys.
func extBlocks(numKeys, maxInserted int64) int64 {
	n := min(maxInserted, MaxTrackedKeys-numKeys)
	if n <= 0 {
		return 0
	}
	return (n + extBlock - 1) / extBlock
}

// slot returns idx's slot, or nil when idx is not tracked (out of range, or an inserted
// key whose block does not exist and make is false).
func (t *Tracker) slot(idx int64, grow bool) *atomic.Uint32 {
	if idx >= 0 && idx < int64(len(t.slots)) {
		return &t.slots[idx]
	}
	off := idx - int64(len(t.slots))
	if off < 0 || off >= t.extMax {
		return nil
	}
	tab := t.ext.Load()
	if tab == nil {
		if !grow {
			return nil
		}
		blocks := make([]atomic.Pointer[[extBlock]atomic.Uint32], extBlocks(int64(len(t.slots)), t.extMax))
		t.ext.CompareAndSwap(nil, &blocks)
		tab = t.ext.Load()
	}
	b := &(*tab)[off/extBlock]
	blk := b.Load()
	if blk == nil {
		if !grow {
			return nil
		}
		b.CompareAndSwap(nil, new([extBlock]atomic.Uint32))
		blk = b.Load()
	}
	return &blk[off%extBlock]
}

// Result is a Tracker's verdict on a read.
type Result uint8

// The verdicts of Classify.
const (
	// ResultOK: the read returned the latest acknowledged write or a newer one, or the
	// key was never acknowledged written and the read missed.
	ResultOK Result = iota
	// ResultStale: the read returned a value older than a write acknowledged before the
	// read began.
	ResultStale
	// ResultLost: the read missed a key that was acknowledged written before the read
	// began. On stores that evict or expire keys (caches, TTLs), a miss is expected and
	// the caller should not count it as a loss.
	ResultLost
	numResults
)

var resultNames = [numResults]string{"ok", "stale", "lost"}

// String returns the name used in counters and reports.
func (r Result) String() string {
	if r < numResults {
		return resultNames[r]
	}
	return "unknown"
}

// Validate checks the keyspace size and the write time. Errors are driver.FieldErrors
// naming the workload options they come from (numKeys, opTimeout). The config store and
// NewTracker both call it, so a tracker the store accepts is one the engine can build.
func (p TrackerParams) Validate() error {
	var errs driver.FieldErrors
	if p.NumKeys < 1 || p.NumKeys > MaxTrackedKeys {
		errs = append(errs, &driver.FieldError{Field: "workload.numKeys", Value: strconv.FormatInt(p.NumKeys, 10),
			Allowed: "an integer from 1 to " + strconv.Itoa(MaxTrackedKeys) + " when workload.validate is on (the tracker's limit)"})
	}
	if p.MaxInserted < 0 {
		errs = append(errs, &driver.FieldError{Field: "workload.trackedInserts", Value: strconv.FormatInt(p.MaxInserted, 10), Allowed: "an integer >= 0"})
	}
	if p.MaxWriteTime < 0 {
		errs = append(errs, &driver.FieldError{Field: "workload.opTimeout", Value: p.MaxWriteTime.String(), Allowed: "a duration >= 0"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// NewTracker returns a tracker for p.NumKeys keys, all unwritten.
func NewTracker(p TrackerParams) (*Tracker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	now := p.Now
	if now == nil {
		now = time.Now
	}
	start := now()
	return &Tracker{
		extMax:  max(min(p.MaxInserted, MaxTrackedKeys-p.NumKeys), 0),
		slots:   make([]atomic.Uint32, p.NumKeys),
		now:     now,
		start:   start,
		startMs: uint64(start.UnixMilli()),
		graceMs: uint64((p.MaxWriteTime + time.Millisecond - 1) / time.Millisecond),
	}, nil
}

// Seq returns the sequence for a write starting now. Take it before encoding the value
// and pass the same number to Ack once the store acknowledged the write.
func (t *Tracker) Seq() uint64 {
	el := t.now().Sub(t.start)
	if el < 0 {
		el = 0
	}
	return t.startMs + uint64(el/time.Millisecond)
}

// maxOffset bounds a sequence's milliseconds since the tracker's start: a slot holds the
// offset + 1 shifted left by one, and its lowest bit says the key was deleted.
const maxOffset = math.MaxUint32 >> 1

// Ack records that the write of seq to key idx was acknowledged. Only newer sequences
// replace older ones (concurrent acks on one key keep the maximum), and a write that
// started no later than a delete of the key issued or answered after it is ignored: the
// store may have applied either first, so nothing is expected of the key. Indices from
// NumKeys on are the keys inserts add (tracked up to MaxTrackedKeys); negative ones,
// sequences from before the tracker started and after it expired are ignored.
func (t *Tracker) Ack(idx int64, seq uint64) { t.raise(idx, seq, 0) }

// Deleting records that a delete of key idx is being issued now. The store may apply it
// at any moment until it is answered, which is at most MaxWriteTime from now, so a write
// of the key that starts before then may end up under it or over it: the key is expected
// absent, and a read that misses it is never called lost, until a write that started
// later is acknowledged (or a later event replaces the delete). Call Delete with the
// sequence of the answer when it comes.
func (t *Tracker) Deleting(idx int64) { t.raise(idx, t.Seq()+t.graceMs, 1) }

// Delete records that a delete of key idx was answered at seq, whatever the answer (a
// delete that timed out may still be applied). Like Deleting, it makes the key expected
// absent until a write that started after seq is acknowledged.
func (t *Tracker) Delete(idx int64, seq uint64) { t.raise(idx, seq, 1) }

// raise stores the event of seq (deleted: 1 for a delete, 0 for a write) in idx's slot if
// it is newer than the slot's; a delete wins over a write of the same millisecond.
func (t *Tracker) raise(idx int64, seq uint64, deleted uint32) {
	if seq < t.startMs || seq-t.startMs >= maxOffset {
		return
	}
	s := t.slot(idx, true)
	if s == nil {
		return
	}
	v := (uint32(seq-t.startMs)+1)<<1 | deleted
	for {
		old := s.Load()
		if old >= v || s.CompareAndSwap(old, v) {
			return
		}
	}
}

// Expect returns the sequence of the latest write to idx acknowledged so far, or 0 if
// none (or if a delete came after it). Call it before issuing the read, and pass it to
// Classify.
func (t *Tracker) Expect(idx int64) uint64 {
	s := t.slot(idx, false)
	if s == nil {
		return 0
	}
	v := s.Load()
	if v == 0 || v&1 != 0 {
		return 0
	}
	return t.startMs + uint64(v>>1) - 1
}

// Classify judges a read of a key whose Expect was exp: found says whether the store
// returned a value, valueSeq is the sequence CheckValue read from it (only meaningful
// with CheckOK).
func (t *Tracker) Classify(exp uint64, found bool, valueSeq uint64) Result {
	switch {
	case exp == 0:
		return ResultOK
	case !found:
		return ResultLost
	case valueSeq+t.graceMs < exp:
		return ResultStale
	}
	return ResultOK
}

// Expired reports whether the tracker has run past the 24.8 days its per-key slots can
// represent; from then on Ack records nothing and the engine should start a new tracker.
func (t *Tracker) Expired() bool {
	return t.Seq()-t.startMs >= maxOffset
}

// NumKeys returns the size of the keyspace the tracker was made for; the keys inserts
// add beyond it are tracked too.
func (t *Tracker) NumKeys() int64 { return int64(len(t.slots)) }
