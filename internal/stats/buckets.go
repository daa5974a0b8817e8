package stats

import (
	"iter"
	"math"
	"math/bits"
	"sort"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// ClassicBounds are the upper bounds, in seconds, of the fixed-bucket latency histograms
// ndbench exports (Prometheus classic buckets, OTLP explicit buckets): 1, 2, 3 and 5 per
// decade from 10 µs to 30 s, then 60 s (28 bounds, plus the +Inf bucket). The layout is
// fixed, and the same for both exports, so that the buckets of every node, version, run
// and export path line up: summing them across a fleet is only correct when the bounds
// are identical. 10 µs covers in-memory and same-host stores; beyond 60 s (up to
// HighestLatency) latencies land in +Inf, where a quantile reports 60 s: the exponential
// buckets and the clamped counter carry the rest.
var ClassicBounds = [...]float64{
	0.00001, 0.00002, 0.00003, 0.00005,
	0.0001, 0.0002, 0.0003, 0.0005,
	0.001, 0.002, 0.003, 0.005,
	0.01, 0.02, 0.03, 0.05,
	0.1, 0.2, 0.3, 0.5,
	1, 2, 3, 5,
	10, 20, 30, 60,
}

// Exponential bucket layout. Schema 3 (Prometheus native histograms; OTLP scale 3 is the
// same buckets) has buckets 2^(1/8) ≈ 1.09 wide, the largest factor not above 1.1 (what
// NativeHistogramBucketFactor: 1.1 selects in client_golang), i.e. about ±4.5% per
// bucket. The 1 µs .. 1 h range of the histograms spans at most 254 such buckets, so a
// dense array of counts bounds the state whatever is recorded.
const (
	// ExpSchema is the resolution of ExpKey: buckets 2^(2^-ExpSchema) wide.
	ExpSchema = 3
	// ExpMinKey and ExpMaxKey bound the keys a Buckets keeps: 2^-24 s (60 ns) ..
	// 2^15.9 s (16 h), beyond the histograms' range on both sides. A key outside (only
	// from a foreign histogram geometry) is clamped to the edge bucket.
	ExpMinKey = -192
	ExpMaxKey = 127
)

// expBounds are the schema-3 bucket boundaries within one power of two, as fractions
// from math.Frexp; the same constants as client_golang's, so a value sits in the bucket
// a prometheus.Histogram would put it in.
var expBounds = [...]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// ExpKey is the schema-3 key of v > 0, Prometheus' numbering: bucket k holds
// (2^((k-1)/8), 2^(k/8)]. OTLP numbers the same buckets from their lower bound (index i
// holds (2^(i/8), 2^((i+1)/8)]), so its scale-3 index is ExpKey(v)-1.
func ExpKey(v float64) int {
	frac, exp := math.Frexp(v)
	return sort.SearchFloat64s(expBounds[:], frac) + (exp-1)*len(expBounds)
}

// bucketSlot is what one count index of an HDR histogram (values in microseconds)
// contributes to the exported histograms. A value is placed by the highest value
// equivalent to its HDR bucket (what HDR percentiles report, so a quantile from the
// buckets is never lower than the HDR one) and summed at the median equivalent value
// (what HDR's Mean uses, so sum/count matches the report's mean). 16 bytes: Add reads
// one per populated index, so the highest value (needed only for Min and Max) is kept
// apart.
type bucketSlot struct {
	mid     float64 // median equivalent value, seconds (0 for the zero bucket)
	classic uint8   // index into ClassicBounds; len(ClassicBounds) is +Inf
	exp     int16   // schema-3 key (ExpKey of the highest value, clamped), or zeroKey
}

// zeroKey is bucketSlot.exp of the zero bucket (a 0 µs latency: a zero or negative
// duration), which has no key.
const zeroKey = math.MinInt16

// slotTable is the slots of one histogram geometry, by count index.
type slotTable struct {
	slots []bucketSlot
	high  []float64 // highest equivalent value, seconds
}

// hdrGeometry identifies the layout of a histogram's counts array.
type hdrGeometry struct{ low, high, digits int64 }

var (
	slotsMu sync.Mutex
	slotsBy = map[hdrGeometry]*slotTable{}
)

// slotsFor returns the table of h's geometry, built once per geometry (in practice one:
// NewHistogram's, about 23,500 slots, 0.56 MB) and shared read-only. The table turns the
// per-tick conversion into one pass over the counts with no arithmetic per value.
func slotsFor(h *hdrhistogram.Histogram) *slotTable {
	g := hdrGeometry{h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures()}
	slotsMu.Lock()
	defer slotsMu.Unlock()
	if t, ok := slotsBy[g]; ok {
		return t
	}
	// hdrhistogram-go exports no index-to-value function, but its iterator walks the
	// counts array in index order: a histogram holding only its highest trackable value
	// yields one bar per index, from 0 to that value's index (the last one that can hold
	// a count).
	probe := hdrhistogram.New(g.low, g.high, int(g.digits))
	_ = probe.RecordValue(g.high) // within range by construction
	bars := probe.Distribution()
	t := &slotTable{slots: make([]bucketSlot, len(bars)), high: make([]float64, len(bars))}
	for i, b := range bars {
		high := float64(b.To) / 1e6
		sl := bucketSlot{classic: uint8(sort.SearchFloat64s(ClassicBounds[:], high)), exp: zeroKey}
		if b.To > 0 {
			sl.mid = float64(b.From+(b.To-b.From+1)/2) / 1e6
			sl.exp = int16(min(max(ExpKey(high), ExpMinKey), ExpMaxKey))
		}
		t.slots[i], t.high[i] = sl, high
	}
	slotsBy[g] = t
	return t
}

// Buckets is the cumulative state of one exported latency histogram in both layouts,
// fed from HDR histograms with Add. The exports keep one per series and latency type and
// build their data points from it.
type Buckets struct {
	// Classic are per-bucket (not cumulative) counts by ClassicBounds; the last one is
	// +Inf.
	Classic [len(ClassicBounds) + 1]uint64
	// Exp are the schema-3 counts indexed by key - ExpMinKey: a dense array is several
	// times cheaper per value than a map.
	Exp [ExpMaxKey - ExpMinKey + 1]uint64
	// Zero is the count of the zero bucket.
	Zero uint64
	// Count is the number of values; Sum their sum in seconds.
	Count uint64
	Sum   float64
	// Min and Max are the lowest and highest values added, as HDR's highest equivalent
	// values (what its Min and Max report); valid when Count > 0.
	Min, Max float64
}

// Add adds every value of h (microseconds). It copies the counts once (Export; the only
// way to read them without an allocation per bucket) and walks them from the start until
// it has seen every value (h.Min and h.Max would each walk them with the slower
// iterator).
func (b *Buckets) Add(h *hdrhistogram.Histogram) {
	if h == nil || h.TotalCount() == 0 {
		return
	}
	t := slotsFor(h)
	counts := h.Export().Counts
	counts = counts[:min(len(counts), len(t.slots))]
	left := uint64(h.TotalCount())
	first := true
	for i, c := range counts {
		if c == 0 {
			continue
		}
		b.addAt(t, i, c, first)
		first = false
		if left -= uint64(c); left == 0 {
			b.Max = max(b.Max, t.high[i])
			break
		}
	}
}

// addAt adds n values at counts index i of t's geometry. first says i is the lowest
// index the histogram being added holds, whose highest equivalent value may be the new
// Min (the caller sets Max once it knows the highest).
func (b *Buckets) addAt(t *slotTable, i int, n int64, first bool) {
	if first && (b.Count == 0 || t.high[i] < b.Min) {
		b.Min = t.high[i]
	}
	sl := &t.slots[i]
	c := uint64(n)
	b.Classic[sl.classic] += c
	if sl.exp == zeroKey {
		b.Zero += c
	} else {
		b.Exp[int(sl.exp)-ExpMinKey] += c
	}
	b.Count += c
	b.Sum += float64(n) * sl.mid
}

// AddResponse adds the response times of one series of an interval the collector
// published (o.Response). An interval drained by the collector's tick carries the counts
// it drained by bucket with the marks of the buckets used, so this visits only those
// buckets (a few hundred to a few thousand in a second), where Add copies the whole
// histogram out (188 KB) and walks it up to its highest value; an interval built elsewhere (ingested, decoded) is read as Add
// reads it. Either way b ends the same (TestAddIntervalMatchesAdd).
func (b *Buckets) AddResponse(o *OpInterval) {
	if o.sum == nil {
		b.Add(o.Response)
		return
	}
	b.addSparse(&o.sum.resp, o.Response)
}

// AddService is AddResponse for the service times (o.Service).
func (b *Buckets) AddService(o *OpInterval) {
	if o.sum == nil {
		b.Add(o.Service)
		return
	}
	b.addSparse(&o.sum.svc, o.Service)
}

// addSparse is Add for a histogram h that holds exactly s's counts: the same arithmetic
// in the same order (ascending counts index), over the indexes s marks. The walk over the
// marks is written out rather than ranged over s.all(): the nested iterator's calls
// cost 15% more instructions (BenchmarkBucketsAdd under callgrind).
func (b *Buckets) addSparse(s *sparse, h *hdrhistogram.Histogram) {
	t := slotsFor(h)
	last := -1
walk:
	for wi, w := range s.words {
		for ; w != 0; w &= w - 1 {
			j := wi<<6 + bits.TrailingZeros64(w)
			for u := s.used[j]; u != 0; u &= u - 1 {
				i := j<<6 + bits.TrailingZeros64(u)
				if i >= len(t.slots) {
					break walk // beyond h's range: Add does not see it either
				}
				b.addAt(t, i, s.counts[i], last < 0)
				last = i
			}
		}
	}
	if last >= 0 {
		b.Max = max(b.Max, t.high[last])
	}
}

// Series is the state an export keeps per series (op class or operation) between
// intervals, by name, in first-seen order so that every scrape or push lists the series
// stably. It is not safe for concurrent use: each export guards it with the lock its
// tick and its readers share.
type Series[T any] struct {
	by    map[string]*T
	names []string
}

// Get returns the state of name, creating it with create the first time name is seen.
func (s *Series[T]) Get(name string, create func() *T) *T {
	if v, ok := s.by[name]; ok {
		return v
	}
	if s.by == nil {
		s.by = map[string]*T{}
	}
	v := create()
	s.by[name] = v
	s.names = append(s.names, name)
	return v
}

// Len is the number of series.
func (s *Series[T]) Len() int { return len(s.names) }

// All yields every series in first-seen order.
func (s *Series[T]) All() iter.Seq2[string, *T] {
	return func(yield func(string, *T) bool) {
		for _, name := range s.names {
			if !yield(name, s.by[name]) {
				return
			}
		}
	}
}
