package stats

import (
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry shared by every histogram this package creates, so that histograms
// from any shard, interval or node merge without loss.
const (
	// LowestValue is the lowest discernible value, 1 µs.
	LowestValue = 1
	// HighestValue is the highest trackable value, 1 hour in microseconds. Larger
	// latencies are clamped to it and counted (Counts.Clamped), never dropped.
	HighestValue = int64(HighestLatency / time.Microsecond)
	// HighestLatency is HighestValue as a duration.
	HighestLatency = time.Hour
	// SignificantDigits is the value precision: 3 digits, i.e. within 0.1%.
	SignificantDigits = 3
)

// NewHistogram returns an empty histogram with the package geometry: values in
// microseconds from 1 µs to 1 h at 3 significant digits. Each one holds about 188 KB of
// counts, which is what bounds the number of shards (see DefaultShards).
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestValue, HighestValue, SignificantDigits)
}

// LagSignificantDigits is the precision of start-lag histograms. Lag is a self-check of
// the load generator (how late operations started against their schedule), where 1% is
// plenty; two digits make the histogram ~8x smaller than a latency histogram.
const LagSignificantDigits = 2

// NewLagHistogram returns an empty start-lag histogram: 1 µs .. 1 h in microseconds at
// LagSignificantDigits.
func NewLagHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestValue, HighestValue, LagSignificantDigits)
}

// Micros converts a duration to the microsecond value recorded in histograms, and
// reports whether it had to be clamped to HighestValue.
//
// It rounds up: any positive duration below 1 µs records as 1 µs, so a measured latency
// is never reported lower than it was (a 0 only comes from a zero or negative duration,
// which a monotonic clock should not produce).
func Micros(d time.Duration) (v int64, clamped bool) {
	if d <= 0 {
		return 0, false
	}
	v = int64((d + time.Microsecond - 1) / time.Microsecond)
	if v > HighestValue {
		return HighestValue, true
	}
	return v, false
}

// EncodeHistogram encodes h in the HdrHistogram V2 compressed format (base64 text, the
// form used in interval logs), so nodes can ship histograms to a coordinator.
func EncodeHistogram(h *hdrhistogram.Histogram) ([]byte, error) {
	if h == nil {
		return nil, errors.New("stats: encode nil histogram")
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("stats: encode histogram: %w", err)
	}
	return b, nil
}

// DecodeHistogram decodes a histogram written by EncodeHistogram or by any HdrHistogram
// implementation's V2 compressed encoder. The result keeps the encoded geometry; merge
// it into a NewHistogram with MergeHistograms to combine it with local data. A geometry
// whose counts array would exceed MaxDecodedCounts is refused before it is allocated.
func DecodeHistogram(b []byte) (*hdrhistogram.Histogram, error) {
	if err := checkEncodedGeometry(b); err != nil {
		return nil, err
	}
	h, err := hdrhistogram.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("stats: decode histogram: %w", err)
	}
	return h, nil
}

// MergeHistograms adds every src into dst and returns how many values dst could not
// hold (non-zero only when a src has a wider range than dst's geometry). Cluster
// percentiles come from merged histograms, never from averaged percentiles.
func MergeHistograms(dst *hdrhistogram.Histogram, srcs ...*hdrhistogram.Histogram) (dropped int64) {
	for _, s := range srcs {
		if s == nil || s.TotalCount() == 0 {
			continue
		}
		dropped += dst.Merge(s)
	}
	return dropped
}

// Latency is the percentile summary of a histogram, in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P995 float64 `json:"p995"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// LagWithin returns lag, the start lag of the operations whose response time is resp,
// with no figure above resp's. Every operation's start lag is at most its response time
// (resp - svc), so each percentile of the lags is at most the same percentile of the
// responses; but the lag histogram keeps two significant digits where resp keeps three,
// and a percentile reads the top of its bucket: a run's lag max read 11.839 ms beside a
// response max of 11.791 ms. Both readings are upper bounds of the true value, and so is
// the lower of the two.
func LagWithin(lag, resp Latency) Latency {
	return Latency{
		P50: min(lag.P50, resp.P50), P95: min(lag.P95, resp.P95), P99: min(lag.P99, resp.P99),
		P995: min(lag.P995, resp.P995), P999: min(lag.P999, resp.P999), Max: min(lag.Max, resp.Max),
		Mean: min(lag.Mean, resp.Mean),
	}
}

// LatencyOf summarizes h (microsecond values). An empty or nil histogram gives zeros.
func LatencyOf(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	p := h.ValueAtPercentilesSlice([]float64{50, 95, 99, 99.5, 99.9})
	return Latency{
		P50:  float64(p[0]),
		P95:  float64(p[1]),
		P99:  float64(p[2]),
		P995: float64(p[3]),
		P999: float64(p[4]),
		Max:  float64(h.Max()),
		Mean: h.Mean(),
	}
}
