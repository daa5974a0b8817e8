package stats

import (
	"iter"
	"math"
	"math/bits"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// layout is the index arithmetic of the package's histogram geometries (lowest value 1,
// highest HighestValue): which entry of hdrhistogram's counts array a value falls in,
// and the lowest value of an entry. It is the library's own arithmetic (getBucketIndex,
// getSubBucketIdx, countsIndex, valueFromIndex) for a unit magnitude of 0, so a count
// kept at index(v) and recorded into a histogram at value(index(v)) lands in the bucket
// that recording v would have; TestLayoutMatchesHistogram checks every bucket.
type layout struct {
	halfMag uint   // log2 of half the sub-bucket count
	half    int    // half the sub-bucket count
	small   int64  // the sub-bucket count: values below it have an entry each, at index v
	mask    uint64 // small - 1
	n       int    // length of the counts array
}

func newLayout(digits int) *layout {
	subMag := uint(math.Ceil(math.Log2(2 * math.Pow10(digits))))
	return &layout{
		halfMag: subMag - 1,
		half:    1 << (subMag - 1),
		small:   1 << subMag,
		mask:    1<<subMag - 1,
		n:       int(countsLen(int64(digits), LowestValue, HighestValue)),
	}
}

// The layouts of the latency (SignificantDigits) and start-lag (LagSignificantDigits)
// histograms.
var (
	latencyLayout = newLayout(SignificantDigits)
	lagLayout     = newLayout(LagSignificantDigits)
)

// index returns the counts index of v, 0 <= v <= HighestValue.
func (l *layout) index(v int64) int {
	if v < l.small {
		return int(v)
	}
	bucket := uint(bits.Len64(uint64(v)|l.mask)) - l.halfMag - 1
	return int(bucket+1)<<l.halfMag + int(v>>bucket) - l.half
}

// size returns how many values counts index i holds.
func (l *layout) size(i int) int64 {
	if bucket := i>>l.halfMag - 1; bucket > 0 {
		return 1 << uint(bucket)
	}
	return 1
}

// median returns the middle value of counts index i, as hdrhistogram's mean weighs it.
func (l *layout) median(i int) int64 { return l.value(i) + l.size(i)>>1 }

// value returns the lowest value of counts index i.
func (l *layout) value(i int) int64 {
	bucket := i>>l.halfMag - 1
	sub := i&(l.half-1) + l.half
	if bucket < 0 {
		return int64(sub - l.half)
	}
	return int64(sub) << uint(bucket)
}

// The single-value bounds of the latency (SignificantDigits) and start-lag
// (LagSignificantDigits) layouts (layout.small): below them a value is its own counts
// index. Constants, so that counting a value costs a compare and an increment
// (sparse.add); TestLayoutMatchesHistogram checks them.
const (
	latencySmall = 2048
	lagSmall     = 256
)

// marks is a two-level bitmap of the counts indexes that hold a count, so that moving
// counts out (once a second) visits only the buckets recorded into: with a shard's values
// within a few hundred buckets of the 23,552, a drain costs those few hundred steps where
// merging and resetting a whole histogram walked every bucket up to its max and cleared
// 188 KB.
type marks struct {
	used  []uint64 // bit i%64 of used[i/64] is set when index i holds a count
	words []uint64 // bit j%64 of words[j/64] is set when used[j] != 0
}

func makeMarks(n int) marks {
	nw := (n + 63) / 64
	return marks{used: make([]uint64, nw), words: make([]uint64, (nw+63)/64)}
}

// set marks index i.
func (m *marks) set(i int) {
	m.used[i>>6] |= 1 << (i & 63)
	m.words[i>>12] |= 1 << ((i >> 6) & 63)
}

// each yields every marked index in ascending order. The caller may change the counts
// (not the marks) while it runs.
func (m *marks) each() iter.Seq[int] {
	return func(yield func(int) bool) {
		for wi, w := range m.words {
			for w != 0 {
				j := wi<<6 + bits.TrailingZeros64(w)
				w &= w - 1
				for u := m.used[j]; u != 0; u &= u - 1 {
					if !yield(j<<6 + bits.TrailingZeros64(u)) {
						return
					}
				}
			}
		}
	}
}

// reset unmarks every index, touching only the words that hold marks.
func (m *marks) reset() {
	for wi, w := range m.words {
		for w != 0 {
			m.used[wi<<6+bits.TrailingZeros64(w)] = 0
			w &= w - 1
		}
		m.words[wi] = 0
	}
}

// empty tells whether no index is marked.
func (m *marks) empty() bool {
	for _, w := range m.words {
		if w != 0 {
			return false
		}
	}
	return true
}

// sparse is the counts of one histogram over an interval, by counts index, with the marks
// of the indexes it holds. The collector sums the shards' tallies into sparses
// (Recorder.sum).
type sparse struct {
	counts []int64
	marks  // the indexes whose counts are not 0
	l      *layout
}

func makeSparse(l *layout) sparse {
	return sparse{l: l, counts: make([]int64, l.n), marks: makeMarks(l.n)}
}

// tally is one shard's counts of one histogram over an interval: a sparse whose counts
// are uint32, so that the buckets a shard records into take half the cache lines (at 50
// shards on one core, ~0.8 MB of hot counts rather than ~1.6 MB). A count that would
// wrap past math.MaxUint32 leaves its 2^32 in spill, so the tally stays exact at any count.
type tally struct {
	counts []uint32
	marks  // the indexes whose counts or spills are not 0
	// spill holds, by counts index, the multiples of 2^32 a count wrapped past; nil until
	// one first wraps, which takes 2^32 records of one bucket in one interval.
	spill map[int]int64
}

func makeTally(l *layout) tally {
	return tally{counts: make([]uint32, l.n), marks: makeMarks(l.n)}
}

// add counts one value v, 0 <= v <= HighestValue, of the layout whose single-value
// bound is small (latencySmall or lagSmall), and returns its counts index and the count
// it now holds: the caller passes both to settle when that count is at most 1. The split
// keeps add within the inliner's budget, so that a record's three adds cost no calls.
func (t *tally) add(v, small int64) (int, uint32) {
	i := int(v)
	if v >= small {
		i = wideIndex(v, small)
	}
	c := t.counts[i] + 1
	t.counts[i] = c
	return i, c
}

// count is add with its rare cases settled, for the paths that are not hot.
func (t *tally) count(v, small int64) {
	if i, c := t.add(v, small); c <= 1 {
		t.settle(i, c)
	}
}

// settle is add's rare path (c <= 1): it marks index i on its first count (c == 1) and, when its
// count wrapped past math.MaxUint32 (c == 0), keeps the 2^32 in spill.
//
//go:noinline
func (t *tally) settle(i int, c uint32) {
	if c == 1 {
		t.set(i)
		return
	}
	if t.spill == nil {
		t.spill = make(map[int]int64)
	}
	// The index stays marked, its count 0 mod 2^32; moveTo adds the spill back.
	t.spill[i] += 1 << 32
}

// moveTo adds every count into dst, which has t's layout, and leaves t empty, touching
// only the indexes t holds.
func (t *tally) moveTo(dst *sparse) {
	for i := range t.each() {
		n := int64(t.counts[i])
		if t.spill != nil {
			n += t.spill[i]
		}
		t.counts[i] = 0
		if n == 0 {
			continue
		}
		if dst.counts[i] == 0 {
			dst.set(i)
		}
		dst.counts[i] += n
	}
	t.reset()
	clear(t.spill)
}

// clear empties t, touching only the indexes it holds.
func (t *tally) clear() {
	for i := range t.each() {
		t.counts[i] = 0
	}
	t.reset()
	clear(t.spill)
}

// wideIndex is layout.index for a value beyond the single-value buckets of bound small.
func wideIndex(v, small int64) int {
	halfMag := uint(bits.Len64(uint64(small))) - 2
	bucket := uint(bits.Len64(uint64(v))) - halfMag - 1
	return int(bucket+1)<<halfMag + int(v>>bucket) - 1<<halfMag
}

// all yields every index that holds a count, with its count, in ascending order.
func (s *sparse) all() iter.Seq2[int, int64] {
	return func(yield func(int, int64) bool) {
		for i := range s.each() {
			if !yield(i, s.counts[i]) {
				return
			}
		}
	}
}

// record adds every count into h, a histogram of s's layout.
func (s *sparse) record(h *hdrhistogram.Histogram) {
	for i, n := range s.all() {
		// In range by construction; a count that would overflow h's total is dropped,
		// as hdrhistogram's Merge drops it.
		_ = h.RecordValues(s.l.value(i), n)
	}
}

// addTo adds every count into dst, which has s's layout.
func (s *sparse) addTo(dst *sparse) {
	for i, n := range s.all() {
		if n == 0 {
			continue // dst marks only the indexes that hold a count
		}
		if dst.counts[i] == 0 {
			dst.set(i)
		}
		dst.counts[i] += n
	}
}

// clear empties s, touching only the indexes it holds.
func (s *sparse) clear() {
	for i := range s.each() {
		s.counts[i] = 0
	}
	s.reset()
}

// latency is LatencyOf(h) for a histogram h that holds exactly s's counts, with the max
// and the mean read from s's buckets rather than by hdrhistogram's walks over every
// bucket up to the max (the same arithmetic in the same order, so the same figures to
// the bit; TestCollectorMatchesOldPath checks them).
func (s *sparse) latency(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	p := h.ValueAtPercentilesSlice([]float64{50, 95, 99, 99.5, 99.9})
	total := float64(h.TotalCount())
	var mean float64
	last := 0
	for i, n := range s.all() {
		mean += float64(n) * float64(s.l.median(i)) / total
		last = i
	}
	return Latency{
		P50:  float64(p[0]),
		P95:  float64(p[1]),
		P99:  float64(p[2]),
		P995: float64(p[3]),
		P999: float64(p[4]),
		Max:  float64(s.l.value(last) + s.l.size(last) - 1),
		Mean: mean,
	}
}
