package stats

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// fuzzSeeds are valid encodings of both package geometries and of a foreign one, the
// inputs a coordinator sees from healthy peers, for the fuzzer to mutate.
func fuzzSeeds(f *testing.F) {
	for _, h := range []*hdrhistogram.Histogram{NewHistogram(), NewLagHistogram(), hdrhistogram.New(1, 1e6, 2)} {
		for _, v := range []int64{1, 7, 1000, 52_000, 999_999} {
			_ = h.RecordValues(v, v%13+1)
		}
		b, err := EncodeHistogram(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("")
	f.Add("HISTFAAAAB14nJNpmSzMwMDAxAABzFCaEUzOmNZg")
}

// FuzzHistogramDecoder feeds the V2 decoder a coordinator runs on every peer's input.
// Whatever it is given, it returns an error (and then holds an empty histogram) or a
// histogram whose buckets are in range, in index order, and sum to its count, which is
// what the library decodes from the same bytes, and which encodes and decodes back to
// itself.
func FuzzHistogramDecoder(f *testing.F) {
	fuzzSeeds(f)
	var d, again HistogramDecoder
	f.Fuzz(func(t *testing.T, enc string) {
		if err := d.Decode(enc); err != nil {
			if d.Count() != 0 || len(d.idx) != 0 {
				t.Fatalf("rejected (%v) but holds %d values", err, d.Count())
			}
			return
		}
		var sum int64
		for i, ix := range d.idx {
			if ix < 0 || ix >= d.geom.countsLen || i > 0 && ix <= d.idx[i-1] || d.cnt[i] <= 0 {
				t.Fatalf("bucket %d: index %d count %d (countsLen %d)", i, ix, d.cnt[i], d.geom.countsLen)
			}
			sum += d.cnt[i]
		}
		if sum != d.Count() {
			t.Fatalf("buckets sum to %d, Count %d", sum, d.Count())
		}
		if p50, p100 := d.Percentile(50), d.Percentile(100); p50 > p100 || d.Count() > 0 && p100 > HighestValue {
			t.Fatalf("p50 %d, p100 %d", p50, p100)
		}
		newDst := NewHistogram
		if d.geom == lagGeometry {
			newDst = NewLagHistogram
		}
		h := newDst()
		if err := d.MergeInto(h); err != nil {
			t.Fatalf("accepted, then MergeInto: %v", err)
		}
		if h.TotalCount() != d.Count() {
			t.Fatalf("merged %d values of %d", h.TotalCount(), d.Count())
		}
		if enc == "" {
			return
		}
		lib, err := DecodeHistogram([]byte(enc))
		if err != nil {
			t.Fatalf("the decoder accepted what the library refuses: %v", err)
		}
		if lib.TotalCount() != d.Count() {
			t.Fatalf("library decodes %d values, the decoder %d", lib.TotalCount(), d.Count())
		}
		b, err := EncodeHistogram(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Decode(string(b)); err != nil {
			t.Fatalf("re-encoded: %v", err)
		}
		if again.geom != d.geom || again.Count() != d.Count() || len(again.idx) != len(d.idx) {
			t.Fatalf("round trip: %d values in %d buckets, was %d in %d", again.Count(), len(again.idx), d.Count(), len(d.idx))
		}
		for i := range d.idx {
			if again.idx[i] != d.idx[i] || again.cnt[i] != d.cnt[i] {
				t.Fatalf("round trip: bucket %d is %d×%d, was %d×%d", i, again.idx[i], again.cnt[i], d.idx[i], d.cnt[i])
			}
		}
	})
}

// hostileEncoding returns a well-formed V2 encoding whose header claims the geometry
// lowest..highest at digits, with an empty payload: a few dozen bytes on the wire.
func hostileEncoding(digits int32, lowest, highest int64) string {
	var hdr [v2HeaderSize]byte
	binary.BigEndian.PutUint32(hdr[0:], v2Cookie|0x10)
	binary.BigEndian.PutUint32(hdr[4:], 0) // payload length
	binary.BigEndian.PutUint32(hdr[12:], uint32(digits))
	binary.BigEndian.PutUint64(hdr[16:], uint64(lowest))
	binary.BigEndian.PutUint64(hdr[24:], uint64(highest))
	binary.BigEndian.PutUint64(hdr[32:], 0x3ff0000000000000) // conversion ratio 1.0
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(hdr[:])
	_ = zw.Close()
	out := binary.BigEndian.AppendUint32(nil, v2CompressedCookie|0x10)
	out = binary.BigEndian.AppendUint32(out, uint32(z.Len()))
	return base64.StdEncoding.EncodeToString(append(out, z.Bytes()...))
}

// TestDecodeBoundsClaimedGeometry: a peer's encoding claims its histogram's geometry in a
// header of a few bytes, and the library allocates the counts array that geometry needs
// (1..2^63 at 5 digits: 49 MB) before reading a single count. A coordinator decodes
// every peer's histograms every second, so a geometry too wide for a latency histogram
// is refused before anything is allocated for it, by the decoder and by DecodeHistogram.
func TestDecodeBoundsClaimedGeometry(t *testing.T) {
	for _, tc := range []struct {
		name            string
		digits          int32
		lowest, highest int64
		ok              bool
	}{
		{"5 digits to 2^63", 5, 1, 1<<63 - 1, false},
		{"5 digits to 2^40", 5, 1, 1 << 40, false},
		{"4 digits to 2^63", 4, 1, 1<<63 - 1, false},
		{"package geometry", SignificantDigits, LowestValue, HighestValue, true},
		{"5 digits to an hour", 5, 1, HighestValue, false},
		{"4 digits to an hour", 4, 1, HighestValue, true},
		{"2 digits to 2^63", 2, 1, 1<<63 - 1, true},
		{"digits 0", 0, 1, 1000, false},
		{"digits 6", 6, 1, 1000, false},
		{"lowest 0", 3, 0, 1000, false},
		{"highest below 2*lowest", 3, 10, 15, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := hostileEncoding(tc.digits, tc.lowest, tc.highest)
			var d HistogramDecoder
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := d.Decode(enc)
			_, libErr := DecodeHistogram([]byte(enc))
			runtime.ReadMemStats(&after)
			if (err == nil) != tc.ok || (libErr == nil) != tc.ok {
				t.Fatalf("Decode: %v, DecodeHistogram: %v; want ok=%v", err, libErr, tc.ok)
			}
			if !tc.ok {
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
					t.Errorf("refusing a %d-byte encoding allocated %d MB", len(enc), alloc>>20)
				}
			}
		})
	}
}
