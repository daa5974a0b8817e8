package otlpexport

import (
	"math"
	"sort"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Bounds are the upper bounds, in seconds, of the explicit-bucket latency histograms:
// the same 28 bounds as the classic buckets of the Prometheus export (1, 2, 3 and 5 per
// decade from 10 µs to 30 s, then 60 s), so that OTLP and Prometheus series of a fleet
// line up and sum.
var Bounds = [...]float64{
	0.00001, 0.00002, 0.00003, 0.00005,
	0.0001, 0.0002, 0.0003, 0.0005,
	0.001, 0.002, 0.003, 0.005,
	0.01, 0.02, 0.03, 0.05,
	0.1, 0.2, 0.3, 0.5,
	1, 2, 3, 5,
	10, 20, 30, 60,
}

// Exponential histogram settings. Scale 3 has buckets 2^(1/8) ≈ 1.09 wide (about ±4.5%
// relative error), the resolution of the Prometheus native histograms ndbench exports
// (their schema 3 is the same layout: OTLP index i is Prometheus key i+1). When more than
// expoMaxBuckets buckets are populated the scale is lowered, as the SDK's own exponential
// aggregation does with its default of 160.
const (
	expoScale      = 3
	expoMaxBuckets = 160
	// expoOffset and expoSpan bound the indexes kept: -192 .. 127 at scale 3, i.e. 60 ns
	// .. 16 h, beyond the 1 µs .. 1 h of the HDR histograms on both sides.
	expoOffset = 192
	expoSpan   = 320
)

// expoBounds are the scale-3 bucket boundaries within one power of two, as fractions
// from math.Frexp.
var expoBounds = [...]float64{
	0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048,
	0.7071067811865475, 0.7711054127039704, 0.8408964152537144, 0.9170040432046711,
}

// expoIndex is the scale-3 bucket index of v > 0: bucket i holds (2^(i/8), 2^((i+1)/8)].
func expoIndex(v float64) int {
	frac, exp := math.Frexp(v)
	return sort.SearchFloat64s(expoBounds[:], frac) + (exp-1)*len(expoBounds) - 1
}

// slot is what one HDR count index contributes. A value is placed by the highest value
// equivalent to its HDR bucket (what HDR percentiles report) and summed at the median
// equivalent value (what HDR's Mean uses), as the Prometheus export does.
type slot struct {
	mid      float64 // median equivalent value, seconds
	high     float64 // highest equivalent value, seconds
	explicit uint8   // index into Bounds; len(Bounds) is the overflow bucket
	expo     int16   // scale-3 index + expoOffset; -1 for the zero bucket
}

type geometry struct{ low, high, digits int64 }

var (
	slotsMu sync.Mutex
	slotsBy = map[geometry][]slot{}
)

// slotsFor returns the slot table of h's layout, built once per layout (in practice one:
// stats.NewHistogram's). It turns the per-interval conversion into one pass over the
// counts.
func slotsFor(h *hdrhistogram.Histogram) []slot {
	g := geometry{h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures()}
	slotsMu.Lock()
	defer slotsMu.Unlock()
	if s, ok := slotsBy[g]; ok {
		return s
	}
	// hdrhistogram-go exports no index-to-value function, but a histogram holding only
	// its highest trackable value yields one bar per count index, in index order.
	probe := hdrhistogram.New(g.low, g.high, int(g.digits))
	_ = probe.RecordValue(g.high) // within range by construction
	bars := probe.Distribution()
	s := make([]slot, len(bars))
	for i, b := range bars {
		mid := b.From + (b.To-b.From+1)/2
		if b.To == 0 {
			mid = 0
		}
		sec := float64(b.To) / 1e6
		sl := slot{mid: float64(mid) / 1e6, high: sec,
			explicit: uint8(sort.SearchFloat64s(Bounds[:], sec)), expo: -1}
		if b.To > 0 {
			sl.expo = int16(min(max(expoIndex(sec)+expoOffset, 0), expoSpan-1))
		}
		s[i] = sl
	}
	slotsBy[g] = s
	return s
}

// hist is the state of one latency histogram (one series, one latency type) since its
// start time: per-bucket counts of both layouts.
type hist struct {
	explicit [len(Bounds) + 1]uint64
	expo     [expoSpan]uint64
	zero     uint64
	count    uint64
	sum      float64
	min, max float64 // valid when count > 0
}

// add adds every value of h (microseconds), walking its counts once up to the last
// value.
func (p *hist) add(h *hdrhistogram.Histogram) {
	if h == nil || h.TotalCount() == 0 {
		return
	}
	slots := slotsFor(h)
	counts := h.Export().Counts
	counts = counts[:min(len(counts), len(slots))]
	left := uint64(h.TotalCount())
	first := true
	for i, c := range counts {
		if c == 0 {
			continue
		}
		sl := &slots[i]
		n := uint64(c)
		if first {
			if p.count == 0 || sl.high < p.min {
				p.min = sl.high
			}
			first = false
		}
		p.explicit[sl.explicit] += n
		if sl.expo < 0 {
			p.zero += n
		} else {
			p.expo[sl.expo] += n
		}
		p.count += n
		p.sum += float64(c) * sl.mid
		if left -= n; left == 0 {
			p.max = max(p.max, sl.high)
			break
		}
	}
}

// explicitPoint is p as an explicit-bucket data point.
func (p *hist) explicitPoint(dp *metricdata.HistogramDataPoint[float64]) {
	dp.Bounds = Bounds[:]
	dp.BucketCounts = append([]uint64(nil), p.explicit[:]...)
	dp.Count, dp.Sum = p.count, p.sum
	if p.count > 0 {
		dp.Min, dp.Max = metricdata.NewExtrema(p.min), metricdata.NewExtrema(p.max)
	}
}

// expoPoint is p as an exponential data point, at scale 3 or coarser when more than
// expoMaxBuckets buckets would be needed.
func (p *hist) expoPoint(dp *metricdata.ExponentialHistogramDataPoint[float64]) {
	dp.Count, dp.Sum, dp.ZeroCount = p.count, p.sum, p.zero
	dp.Scale = expoScale
	if p.count > 0 {
		dp.Min, dp.Max = metricdata.NewExtrema(p.min), metricdata.NewExtrema(p.max)
	}
	lo, hi := -1, -1
	for i, n := range p.expo {
		if n > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	if lo < 0 {
		return
	}
	// Indexes relative to the scale; lowering the scale by one maps index i to i>>1
	// (bucket j of scale s-1 holds buckets 2j and 2j+1 of scale s).
	first, last := lo-expoOffset, hi-expoOffset
	shift := 0
	for (last>>shift)-(first>>shift)+1 > expoMaxBuckets {
		shift++
	}
	dp.Scale = int32(expoScale - shift)
	off := first >> shift
	counts := make([]uint64, (last>>shift)-off+1)
	for i := lo; i <= hi; i++ {
		counts[((i-expoOffset)>>shift)-off] += p.expo[i]
	}
	dp.PositiveBucket = metricdata.ExponentialBucket{Offset: int32(off), Counts: counts}
}
