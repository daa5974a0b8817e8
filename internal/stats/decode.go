package stats

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/klauspost/compress/zlib"
)

// HistogramDecoder adds V2-encoded histograms (EncodeHistogram's format) into histograms
// of the package geometry without building a histogram per call. A fleet coordinator
// decodes every histogram of every node every second; hdrhistogram.Decode allocates a
// full counts array (~188 KB at 3 digits) and a zlib reader (~40 KB) for each, which at a
// thousand nodes is gigabytes a second of garbage. The decoder reuses its buffers and
// zlib reader (klauspost/compress's: a node's interval merges in 14% less time than with
// compress/zlib's, docs/performance.md) and adds the non-zero buckets straight into the
// destination.
//
// It also keeps the buckets of the last histogram it decoded, so a caller can take that
// histogram's own percentiles (Percentile) without a histogram of its own.
//
// The zero value is ready to use; a HistogramDecoder is not safe for concurrent use.
type HistogramDecoder struct {
	text, raw, inflated []byte
	br                  bytes.Reader
	zr                  io.ReadCloser

	// The last histogram decoded: its non-zero buckets in index order, and its geometry.
	idx   []int32
	cnt   []int64
	total int64
	geom  *geometry
}

// geometry is what the fast path needs of a histogram geometry to map a V2 counts index
// to its value: the package's (LowestValue 1, so a unit magnitude of 0).
type geometry struct {
	digits    int64
	halfMag   uint  // log2 of the sub-bucket half count
	half      int32 // sub-bucket half count
	countsLen int32
	lowest    int64
	highest   int64
}

func newGeometry(digits int64) *geometry {
	// HdrHistogram: the sub-bucket count is the smallest power of two ≥ 2·10^digits.
	largest := 2 * int64(math.Pow10(int(digits)))
	mag := uint(math.Ceil(math.Log2(float64(largest))))
	g := &geometry{digits: digits, halfMag: mag - 1, half: 1 << (mag - 1), lowest: LowestValue, highest: HighestValue}
	// Buckets needed to cover HighestValue, as hdrhistogram's getBucketsNeededToCoverValue
	// (HighestValue is far below the overflow it guards against).
	buckets := int32(1)
	for smallestUntrackable := int64(2 * g.half); smallestUntrackable <= HighestValue; smallestUntrackable <<= 1 {
		buckets++
	}
	g.countsLen = (buckets + 1) * g.half
	return g
}

// The geometries of NewHistogram and NewLagHistogram.
var (
	respGeometry = newGeometry(SignificantDigits)
	lagGeometry  = newGeometry(LagSignificantDigits)
)

// value returns the lowest value of counts index i (unit magnitude 0).
func (g *geometry) value(i int32) int64 {
	bucket := int32(i>>g.halfMag) - 1
	sub := (i & (g.half - 1)) + g.half
	if bucket < 0 {
		sub -= g.half
		bucket = 0
	}
	return int64(sub) << uint(bucket)
}

// index returns the counts index of value v (0 ≤ v ≤ HighestValue), as hdrhistogram's
// countsIndexFor with a unit magnitude of 0.
func (g *geometry) index(v int64) int32 {
	mask := int64(2*g.half - 1)
	bucket := int32(64-bits.LeadingZeros64(uint64(v|mask))) - int32(g.halfMag+1)
	sub := int32(v >> uint(bucket))
	return (bucket+1)<<g.halfMag + sub - g.half
}

// highestEquivalent returns the highest value counted at counts index i.
func (g *geometry) highestEquivalent(i int32) int64 {
	bucket := max(int32(i>>g.halfMag)-1, 0)
	return g.value(i) + (int64(1) << uint(bucket)) - 1
}

const (
	v2CompressedCookie = 0x1c849304
	v2Cookie           = 0x1c849303
	v2HeaderSize       = 40
)

// Decode parses enc ("" is an empty histogram) into the decoder, for AddTo, MergeInto,
// Count and Percentile. An encoding of the package geometries is read directly; one of
// another geometry is decoded by the library and re-bucketed into NewHistogram's (as
// MergeHistograms would), and values beyond HighestValue are an error. After an error the decoder holds an empty
// histogram.
func (d *HistogramDecoder) Decode(enc string) error {
	d.idx, d.cnt, d.total, d.geom = d.idx[:0], d.cnt[:0], 0, respGeometry
	if enc == "" {
		return nil
	}
	g, err := d.decode(enc)
	switch {
	case err != nil:
	case g == nil:
		err = d.decodeForeign(enc)
	default:
		d.geom = g
	}
	if err != nil {
		d.idx, d.cnt, d.total, d.geom = d.idx[:0], d.cnt[:0], 0, respGeometry
		return err
	}
	return nil
}

func (d *HistogramDecoder) decodeForeign(enc string) error {
	h, err := DecodeHistogram([]byte(enc))
	if err != nil {
		return err
	}
	// The finest package geometry: a bucket of it lies within one bucket of the coarser
	// lag geometry, so adding these into either kind of sum is what merging the original
	// into it would give.
	g, dst := respGeometry, NewHistogram()
	if dropped := MergeHistograms(dst, h); dropped != 0 {
		return fmt.Errorf("stats: decode histogram: %d values outside the histogram range", dropped)
	}
	d.idx, d.cnt, d.total = d.idx[:0], d.cnt[:0], 0
	for i, c := range dst.Export().Counts {
		if c != 0 {
			d.idx, d.cnt = append(d.idx, int32(i)), append(d.cnt, c)
			d.total += c
		}
	}
	d.geom = g
	return nil
}

// AddTo adds the histogram last decoded into sum. Buckets of the other package geometry
// (a start-lag encoding into a latency sum) are re-bucketed by value.
func (d *HistogramDecoder) AddTo(sum *HistogramSum) {
	if len(d.idx) == 0 {
		return
	}
	if d.geom == sum.g {
		counts := sum.counts[:d.geom.countsLen]
		for i, ix := range d.idx {
			counts[ix] += d.cnt[i]
		}
		sum.lo, sum.hi = min(sum.lo, d.idx[0]), max(sum.hi, d.idx[len(d.idx)-1])
	} else {
		for i, ix := range d.idx {
			j := sum.g.index(d.geom.value(ix))
			sum.counts[j] += d.cnt[i]
			sum.lo, sum.hi = min(sum.lo, j), max(sum.hi, j)
		}
	}
	sum.total += d.total
}

// MergeInto adds the histogram last decoded into dst. Values dst cannot hold (a dst of
// a narrower range than the package's) are an error, and dst then holds the others.
func (d *HistogramDecoder) MergeInto(dst *hdrhistogram.Histogram) error {
	var dropped int64
	for i, ix := range d.idx {
		if dst.RecordValues(d.geom.value(ix), d.cnt[i]) != nil {
			dropped += d.cnt[i]
		}
	}
	if dropped != 0 {
		return fmt.Errorf("stats: merge decoded histogram: %d values outside the histogram range", dropped)
	}
	return nil
}

// Merge decodes enc and adds it into dst: Decode then MergeInto.
func (d *HistogramDecoder) Merge(dst *hdrhistogram.Histogram, enc string) error {
	if err := d.Decode(enc); err != nil {
		return err
	}
	return d.MergeInto(dst)
}

// Add decodes enc and adds it into sum: Decode then AddTo. On an error sum is unchanged.
func (d *HistogramDecoder) Add(sum *HistogramSum, enc string) error {
	if err := d.Decode(enc); err != nil {
		return err
	}
	d.AddTo(sum)
	return nil
}

// decode parses enc into d.idx/d.cnt. It returns the geometry when it is one of the
// package's, nil (and no error) for another geometry, left to the library.
func (d *HistogramDecoder) decode(enc string) (*geometry, error) {
	d.text = append(d.text[:0], enc...)
	n := base64.StdEncoding.DecodedLen(len(d.text))
	if cap(d.raw) < n {
		d.raw = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(d.raw[:n], d.text)
	if err != nil {
		return nil, fmt.Errorf("stats: decode histogram: %w", err)
	}
	raw := d.raw[:n]
	if len(raw) < 8 {
		return nil, errors.New("stats: decode histogram: shorter than its header")
	}
	if cookie := int32(binary.BigEndian.Uint32(raw)) &^ 0xf0; cookie != v2CompressedCookie {
		return nil, fmt.Errorf("stats: decode histogram: cookie %#x is not V2 compressed", cookie)
	}
	clen := int32(binary.BigEndian.Uint32(raw[4:]))
	if clen < 0 || int(clen) > len(raw)-8 {
		return nil, fmt.Errorf("stats: decode histogram: compressed length %d of %d bytes", clen, len(raw)-8)
	}
	d.br.Reset(raw[8 : 8+clen])
	if d.zr == nil {
		d.zr, err = zlib.NewReader(&d.br)
	} else {
		err = d.zr.(zlib.Resetter).Reset(&d.br, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("stats: decode histogram: %w", err)
	}
	var hdr [v2HeaderSize]byte
	if _, err := io.ReadFull(d.zr, hdr[:]); err != nil {
		return nil, fmt.Errorf("stats: decode histogram header: %w", err)
	}
	if cookie := int32(binary.BigEndian.Uint32(hdr[:])) &^ 0xf0; cookie != v2Cookie {
		return nil, fmt.Errorf("stats: decode histogram: inner cookie %#x is not V2", cookie)
	}
	plen := int32(binary.BigEndian.Uint32(hdr[4:]))
	digits := int64(int32(binary.BigEndian.Uint32(hdr[12:])))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:]))
	var g *geometry
	switch {
	case lowest != LowestValue || highest != HighestValue:
	case digits == SignificantDigits:
		g = respGeometry
	case digits == LagSignificantDigits:
		g = lagGeometry
	}
	if g == nil {
		return nil, nil
	}
	if plen < 0 || int64(plen) > int64(g.countsLen)*9 {
		return nil, fmt.Errorf("stats: decode histogram: payload length %d", plen)
	}
	if cap(d.inflated) < int(plen)+1 {
		d.inflated = make([]byte, int(plen)+1)
	}
	if got, err := io.ReadFull(d.zr, d.inflated[:plen]); err != nil {
		return nil, fmt.Errorf("stats: decode histogram payload (%d of %d bytes): %w", got, plen, err)
	}
	// The stream must end right after the payload: reaching its end checks the length
	// and makes zlib verify its checksum. A stream cut short also ends a read early (with
	// io.ErrUnexpectedEOF), so only io.EOF with nothing read is the end.
	if n, err := io.ReadFull(d.zr, d.inflated[plen:plen+1]); n != 0 || err != io.EOF {
		if err == nil {
			err = errors.New("payload longer than announced")
		}
		return nil, fmt.Errorf("stats: decode histogram payload of %d bytes: %w", plen, err)
	}
	return g, d.parse(d.inflated[:plen], g)
}

// parse reads the ZigZag LEB128 counts (a negative value is a run of zero buckets). It
// is the decoder's inner loop, one step per bucket up to the largest value, so it works
// on locals and writes the decoder's fields back once.
func (d *HistogramDecoder) parse(p []byte, g *geometry) error {
	idx, cnt, total := d.idx, d.cnt, d.total
	defer func() { d.idx, d.cnt, d.total = idx, cnt, total }()
	var at int32
	for i := 0; i < len(p); {
		// Most counts and zero runs fit in one byte: decode those inline.
		u := uint64(p[i])
		if u < 0x80 {
			i++
		} else {
			var n int
			if u, n = uvarint9(p[i:]); n == 0 {
				return errors.New("stats: decode histogram: truncated count")
			}
			i += n
		}
		v := int64(u>>1) ^ -int64(u&1)
		if v < 0 {
			if -v <= 0 || -v > int64(g.countsLen-at) {
				return fmt.Errorf("stats: decode histogram: zero run %d at index %d of %d", -v, at, g.countsLen)
			}
			at += int32(-v)
			continue
		}
		if at >= g.countsLen {
			return fmt.Errorf("stats: decode histogram: index %d beyond %d", at, g.countsLen)
		}
		if v > 0 {
			if v > math.MaxInt64-total {
				return errors.New("stats: decode histogram: total count overflows")
			}
			idx, cnt = append(idx, at), append(cnt, v)
			total += v
		}
		at++
	}
	return nil
}

// uvarint9 reads HdrHistogram's LEB128 variant: at most 9 bytes, the 9th carrying 8
// bits. n is 0 for a truncated value.
func uvarint9(p []byte) (u uint64, n int) {
	for i := 0; i < 9 && i < len(p); i++ {
		b := p[i]
		if i == 8 {
			return u | uint64(b)<<56, 9
		}
		u |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return u, i + 1
		}
	}
	return 0, 0
}

// Count returns the total count of the histogram last merged.
func (d *HistogramDecoder) Count() int64 { return d.total }

// Percentile returns the value (microseconds) at percentile p of the histogram last
// merged, as hdrhistogram's ValueAtPercentile computes it; 0 for an empty one. It lets a
// coordinator report each node's own p99 beside the fleet's without keeping a histogram
// per node.
func (d *HistogramDecoder) Percentile(p float64) int64 {
	if d.total == 0 {
		return 0
	}
	p = min(max(p, 0), 100)
	// hdrhistogram's rank: round to nearest, at least the first value, at most the last.
	rank := int64(1)
	if r := p/100*float64(d.total) + 0.5; r >= float64(d.total) {
		rank = d.total
	} else if r >= 1 {
		rank = int64(r)
	}
	var sum int64
	for i, c := range d.cnt {
		sum += c
		if sum >= rank {
			if p == 0 {
				return d.geom.value(d.idx[i])
			}
			return d.geom.highestEquivalent(d.idx[i])
		}
	}
	return d.geom.highestEquivalent(d.idx[len(d.idx)-1])
}

// HistogramSum is a sum of histograms of one package geometry (NewHistogram's or
// NewLagHistogram's) kept as a plain counts array: adding a decoded histogram is an
// array add per non-zero bucket, where an hdrhistogram.Histogram would re-derive each
// bucket from its value. A coordinator sums a second of many nodes into one, then turns
// it into a histogram once (MergeInto).
type HistogramSum struct {
	g      *geometry
	counts []int64
	total  int64
	lo, hi int32 // the range of indexes written since the last Reset
}

// NewHistogramSum returns an empty sum of NewHistogram's geometry (latencies).
func NewHistogramSum() *HistogramSum { return newHistogramSum(respGeometry) }

// NewLagHistogramSum returns an empty sum of NewLagHistogram's geometry (start lag).
func NewLagHistogramSum() *HistogramSum { return newHistogramSum(lagGeometry) }

func newHistogramSum(g *geometry) *HistogramSum {
	s := &HistogramSum{g: g, counts: make([]int64, g.countsLen)}
	s.Reset()
	return s
}

// Count returns the number of values summed.
func (s *HistogramSum) Count() int64 { return s.total }

// Reset empties the sum, clearing only what was written.
func (s *HistogramSum) Reset() {
	if s.lo <= s.hi {
		clear(s.counts[s.lo : s.hi+1])
	}
	s.total, s.lo, s.hi = 0, s.g.countsLen, -1
}

// MergeInto adds the sum into dst, which must have the sum's geometry (else it fails
// without changing dst).
func (s *HistogramSum) MergeInto(dst *hdrhistogram.Histogram) error {
	if dst.SignificantFigures() != s.g.digits || dst.LowestTrackableValue() != s.g.lowest || dst.HighestTrackableValue() != s.g.highest {
		return fmt.Errorf("stats: write histogram sum of %d digits into a histogram of %d", s.g.digits, dst.SignificantFigures())
	}
	for i := s.lo; i <= s.hi; i++ {
		if c := s.counts[i]; c != 0 {
			if err := dst.RecordValues(s.g.value(i), c); err != nil {
				return fmt.Errorf("stats: write histogram sum: %w", err)
			}
		}
	}
	return nil
}
