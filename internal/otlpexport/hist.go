package otlpexport

import (
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ndbench/ndbench/internal/stats"
)

// Bounds are the upper bounds, in seconds, of the explicit-bucket latency histograms:
// stats.ClassicBounds, the classic buckets of the Prometheus export, so that OTLP and
// Prometheus series of a fleet line up and sum.
var Bounds = stats.ClassicBounds

// Exponential histogram settings. Scale 3 is stats.ExpSchema, the resolution of the
// Prometheus native histograms ndbench exports, with the buckets numbered from their
// lower bound: OTLP index i is Prometheus key i+1. When more than expoMaxBuckets buckets
// are populated the scale is lowered, as the SDK's own exponential aggregation does with
// its default of 160.
const (
	expoScale      = stats.ExpSchema
	expoMaxBuckets = 160
)

// hist is the state of one latency histogram (one series, one latency type) since its
// start time.
type hist struct{ stats.Buckets }

// merge adds o's values to p.
func (p *hist) merge(o *hist) {
	if o.Count == 0 {
		return
	}
	if p.Count == 0 {
		p.Min, p.Max = o.Min, o.Max
	} else {
		p.Min, p.Max = min(p.Min, o.Min), max(p.Max, o.Max)
	}
	for i, n := range o.Classic {
		p.Classic[i] += n
	}
	for i, n := range o.Exp {
		p.Exp[i] += n
	}
	p.Zero += o.Zero
	p.Count += o.Count
	p.Sum += o.Sum
}

// explicitPoint is p as an explicit-bucket data point.
func (p *hist) explicitPoint(dp *metricdata.HistogramDataPoint[float64]) {
	dp.Bounds = Bounds[:]
	dp.BucketCounts = append([]uint64(nil), p.Classic[:]...)
	dp.Count, dp.Sum = p.Count, p.Sum
	if p.Count > 0 {
		dp.Min, dp.Max = metricdata.NewExtrema(p.Min), metricdata.NewExtrema(p.Max)
	}
}

// expoPoint is p as an exponential data point, at scale 3 or coarser when more than
// expoMaxBuckets buckets would be needed.
func (p *hist) expoPoint(dp *metricdata.ExponentialHistogramDataPoint[float64]) {
	dp.Count, dp.Sum, dp.ZeroCount = p.Count, p.Sum, p.Zero
	dp.Scale = expoScale
	if p.Count > 0 {
		dp.Min, dp.Max = metricdata.NewExtrema(p.Min), metricdata.NewExtrema(p.Max)
	}
	lo, hi := -1, -1
	for i, n := range p.Exp {
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
	// Indexes relative to the scale (key - 1, see expoScale); lowering the scale by one
	// maps index i to i>>1 (bucket j of scale s-1 holds buckets 2j and 2j+1 of scale s).
	const expoOffset = -stats.ExpMinKey + 1 // array position - expoOffset = index
	first, last := lo-expoOffset, hi-expoOffset
	shift := 0
	for (last>>shift)-(first>>shift)+1 > expoMaxBuckets {
		shift++
	}
	dp.Scale = int32(expoScale - shift)
	off := first >> shift
	counts := make([]uint64, (last>>shift)-off+1)
	for i := lo; i <= hi; i++ {
		counts[((i-expoOffset)>>shift)-off] += p.Exp[i]
	}
	dp.PositiveBucket = metricdata.ExponentialBucket{Offset: int32(off), Counts: counts}
}
