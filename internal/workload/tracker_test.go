package workload

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func mustTracker(t testing.TB, p TrackerParams) *Tracker {
	t.Helper()
	tr, err := NewTracker(p)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestNewTrackerRejectsBadParams(t *testing.T) {
	for _, p := range []TrackerParams{{NumKeys: 0}, {NumKeys: MaxTrackedKeys + 1}, {NumKeys: 10, MaxWriteTime: -1}} {
		_, err := NewTracker(p)
		var fe driver.FieldErrors
		if !errors.As(err, &fe) {
			t.Errorf("NewTracker(%+v) = %v, want field errors", p, err)
		}
	}
}

func TestTrackerSeqFollowsClock(t *testing.T) {
	clock := &fakeClock{t: epoch}
	tr := mustTracker(t, TrackerParams{NumKeys: 10, Now: clock.now})
	s0 := tr.Seq()
	if want := uint64(epoch.UnixMilli()); s0 != want {
		t.Errorf("Seq at start = %d, want Unix ms %d", s0, want)
	}
	clock.t = epoch.Add(1500 * time.Microsecond)
	if s := tr.Seq(); s != s0+1 {
		t.Errorf("Seq after 1.5ms = %d, want %d", s, s0+1)
	}
	clock.t = epoch.Add(-time.Second) // wall clock stepped back
	if s := tr.Seq(); s != s0 {
		t.Errorf("Seq went backwards to %d", s)
	}
}

func TestTrackerClassify(t *testing.T) {
	clock := &fakeClock{t: epoch}
	tr := mustTracker(t, TrackerParams{NumKeys: 10, MaxWriteTime: 100 * time.Millisecond, Now: clock.now})
	base := tr.Seq()
	// Key 1 written at base+1000 and acked; key 2 never written.
	clock.t = epoch.Add(time.Second)
	w := tr.Seq()
	tr.Ack(1, w)
	tests := []struct {
		name     string
		idx      int64
		found    bool
		valueSeq uint64
		want     Result
	}{
		{"latest value", 1, true, w, ResultOK},
		{"newer value (a later write)", 1, true, w + 5, ResultOK},
		{"overlapping older write", 1, true, w - 100, ResultOK},
		{"older than the write timeout", 1, true, w - 101, ResultStale},
		{"much older", 1, true, base, ResultStale},
		{"acked key missing", 1, false, 0, ResultLost},
		{"unwritten key missing", 2, false, 0, ResultOK},
		{"unwritten key found", 2, true, base, ResultOK},
		{"inserted key not written yet", 99, false, 0, ResultOK},
	}
	for _, tt := range tests {
		if got := tr.Classify(tr.Expect(tt.idx), tt.found, tt.valueSeq); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestTrackerInsertedKeys: keys beyond NumKeys (inserts grow the keyspace) are tracked
// like the others: an acknowledged insert read back missing is lost, a claimed key not
// acknowledged yet expects nothing, and keys beyond MaxTrackedKeys are not tracked.
func TestTrackerInsertedKeys(t *testing.T) {
	clock := &fakeClock{t: epoch}
	tr := mustTracker(t, TrackerParams{NumKeys: 10, Now: clock.now, MaxInserted: MaxTrackedKeys})
	clock.t = epoch.Add(time.Second)
	w := tr.Seq()
	for _, idx := range []int64{10, 11, extBlock + 10, 3*extBlock + 17, MaxTrackedKeys - 1, MaxTrackedKeys} {
		tr.Ack(idx, w)
	}
	for _, tc := range []struct {
		name  string
		idx   int64
		found bool
		want  Result
	}{
		{"first inserted key, missing", 10, false, ResultLost},
		{"first inserted key, found", 10, true, ResultOK},
		{"next inserted key, missing", 11, false, ResultLost},
		{"claimed, not acknowledged", 12, false, ResultOK},
		{"in a later block", extBlock + 10, false, ResultLost},
		{"unacknowledged in a later block", 2*extBlock + 10, false, ResultOK},
		{"far block", 3*extBlock + 17, false, ResultLost},
		{"last tracked key", MaxTrackedKeys - 1, false, ResultLost},
		{"beyond the tracker's limit", MaxTrackedKeys, false, ResultOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tr.Classify(tr.Expect(tc.idx), tc.found, w); got != tc.want {
				t.Errorf("key %d: %v, want %v", tc.idx, got, tc.want)
			}
		})
	}
	if tr.NumKeys() != 10 {
		t.Errorf("NumKeys = %d after inserts, want the initial 10", tr.NumKeys())
	}
}

// TestTrackerFollowsAtMostMaxInserted: a tracker follows the first MaxInserted keys
// beyond NumKeys and no more, so its memory stays within what the estimate counted
// (TrackerGrowth): a key past them, acknowledged and then missing, is not judged.
func TestTrackerFollowsAtMostMaxInserted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxInserted int64
		idx         int64
		want        Result
	}{
		{"none tracked: the first inserted key", 0, 10, ResultOK},
		{"last tracked", 3, 12, ResultLost},
		{"first past the limit", 3, 13, ResultOK},
		{"a block on: within", 2 * extBlock, extBlock + 10, ResultLost},
		{"a block on: past", 2 * extBlock, 2*extBlock + 10, ResultOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: epoch}
			tr := mustTracker(t, TrackerParams{NumKeys: 10, Now: clock.now, MaxInserted: tc.maxInserted})
			clock.t = epoch.Add(time.Second)
			w := tr.Seq()
			tr.Ack(tc.idx, w)
			if got := tr.Classify(tr.Expect(tc.idx), false, 0); got != tc.want {
				t.Errorf("key %d acknowledged, then missing: %v, want %v", tc.idx, got, tc.want)
			}
			if tab := tr.ext.Load(); tab != nil && int64(len(*tab))*(extBlock*TrackerSlotBytes+8) > TrackerGrowth(10, tc.maxInserted) {
				t.Errorf("table of %d blocks: more than TrackerGrowth(10, %d) = %d bytes", len(*tab), tc.maxInserted, TrackerGrowth(10, tc.maxInserted))
			}
		})
	}
}

func TestTrackerAckKeepsMaximum(t *testing.T) {
	clock := &fakeClock{t: epoch.Add(time.Hour)}
	tr := mustTracker(t, TrackerParams{NumKeys: 4, Now: clock.now})
	base := tr.Seq()
	tr.Ack(0, base+10)
	tr.Ack(0, base+5) // a slower, older write acked later
	if got := tr.Expect(0); got != base+10 {
		t.Errorf("Expect = %d, want %d", got, base+10)
	}
	tr.Ack(0, base-1) // before the tracker started: ignored
	tr.Ack(-1, base)  // out of range: ignored
	tr.Ack(4, base)
	if got := tr.Expect(0); got != base+10 {
		t.Errorf("Expect = %d after ignored acks, want %d", got, base+10)
	}
	// Concurrent acks on one key keep the largest.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range uint64(1000) {
				tr.Ack(1, base+i*8+uint64(w))
			}
		})
	}
	wg.Wait()
	if got, want := tr.Expect(1), base+999*8+7; got != want {
		t.Errorf("after concurrent acks Expect = %d, want %d", got, want)
	}
}

func TestTrackerExpiry(t *testing.T) {
	clock := &fakeClock{t: epoch}
	tr := mustTracker(t, TrackerParams{NumKeys: 2, Now: clock.now})
	tr.Ack(0, tr.Seq())
	if tr.Expired() {
		t.Fatal("expired at start")
	}
	clock.t = epoch.Add(50 * 24 * time.Hour)
	if !tr.Expired() {
		t.Fatal("not expired after 50 days")
	}
	tr.Ack(1, tr.Seq())
	if got := tr.Expect(1); got != 0 {
		t.Errorf("ack after expiry recorded %d", got)
	}
	if got := tr.Expect(0); got != uint64(epoch.UnixMilli()) {
		t.Errorf("ack from before expiry lost: Expect = %d", got)
	}
}

// TestValidationEndToEnd runs the write/read protocol the engine uses against a map.
func TestValidationEndToEnd(t *testing.T) {
	clock := &fakeClock{t: epoch}
	tr := mustTracker(t, TrackerParams{NumKeys: 3, Now: clock.now})
	store := map[string][]byte{}
	write := func(idx int64) {
		key := AppendKey(nil, DefaultKeyPrefix, idx)
		seq := tr.Seq()
		store[string(key)] = EncodeValue(nil, key, seq, payload(64))
		tr.Ack(idx, seq)
	}
	read := func(idx int64) (Check, Result) {
		key := AppendKey(nil, DefaultKeyPrefix, idx)
		exp := tr.Expect(idx)
		v, found := store[string(key)]
		c, seq := CheckValue(key, v)
		if found && c != CheckOK {
			return c, ResultOK
		}
		return c, tr.Classify(exp, found, seq)
	}
	write(0)
	old := store["T0"]
	clock.t = clock.t.Add(time.Second)
	write(0)
	write(1)
	if c, r := read(0); c != CheckOK || r != ResultOK {
		t.Errorf("fresh read: %v/%v", c, r)
	}
	store["T0"] = old // the store serves the previous version
	if c, r := read(0); c != CheckOK || r != ResultStale {
		t.Errorf("stale read: %v/%v, want ok/stale", c, r)
	}
	delete(store, "T1") // the store lost an acknowledged write
	if _, r := read(1); r != ResultLost {
		t.Errorf("lost write: %v, want lost", r)
	}
	store["T2"] = store["T0"] // key 0's value under key 2
	if c, _ := read(2); c != CheckWrongKey {
		t.Errorf("misplaced value: %v, want wrong_key", c)
	}
}

func BenchmarkTrackerAckExpect(b *testing.B) {
	tr := mustTracker(b, TrackerParams{NumKeys: 1 << 20})
	seq := tr.Seq()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i = (i + 7919) & (1<<20 - 1)
		tr.Ack(i, seq)
		tr.Expect(i)
	}
}

// TestTrackerDelete: a delete makes a key expected absent, so a later miss is never lost,
// until a write that started after the delete was issued and answered is acknowledged;
// a write that started before may have been applied before the delete, so its ack changes
// nothing.
func TestTrackerDelete(t *testing.T) {
	clock := &fakeClock{t: epoch}
	at := func(ms int) uint64 { return uint64(epoch.UnixMilli()) + uint64(ms) }
	tests := []struct {
		name   string
		events func(tr *Tracker)
		want   uint64 // Expect afterwards
	}{
		{"write", func(tr *Tracker) { tr.Ack(3, at(10)) }, at(10)},
		{"write then delete", func(tr *Tracker) { tr.Ack(3, at(10)); tr.Delete(3, at(20)); tr.Delete(3, at(25)) }, 0},
		{"delete answered, then a write that started earlier is acked", func(tr *Tracker) {
			tr.Delete(3, at(20))
			tr.Delete(3, at(25))
			tr.Ack(3, at(22))
		}, 0},
		{"write started in the same millisecond the delete was answered", func(tr *Tracker) {
			tr.Delete(3, at(20))
			tr.Delete(3, at(25))
			tr.Ack(3, at(25))
		}, 0},
		{"write started after the delete was answered", func(tr *Tracker) {
			tr.Delete(3, at(20))
			tr.Delete(3, at(25))
			tr.Ack(3, at(26))
		}, at(26)},
		{"delete issued, a later write acked, then the delete answered", func(tr *Tracker) {
			tr.Delete(3, at(20))
			tr.Ack(3, at(21))
			tr.Delete(3, at(30))
		}, 0},
		// Deleting at 0 with MaxWriteTime 100ms: the delete may be applied until 100.
		{"delete in flight, a write that started after it was issued is acked", func(tr *Tracker) {
			tr.Deleting(3)
			tr.Ack(3, at(50))
		}, 0},
		{"delete in flight, a write that started after its longest time is acked", func(tr *Tracker) {
			tr.Deleting(3)
			tr.Ack(3, at(101))
		}, at(101)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := mustTracker(t, TrackerParams{NumKeys: 4, Now: clock.now, MaxWriteTime: 100 * time.Millisecond})
			tc.events(tr)
			if got := tr.Expect(3); got != tc.want {
				t.Errorf("Expect = %d, want %d", got, tc.want)
			}
			if got := tr.Classify(tr.Expect(3), false, 0); tc.want == 0 && got != ResultOK {
				t.Errorf("a miss after the delete is %v, want ok", got)
			}
		})
	}
}
