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

	"github.com/klauspost/compress/zlib"
)

// MaxDecodedCounts bounds the counts array of a histogram DecodeHistogram accepts: 2 MiB
// of counters, room for 4 significant digits from 1 µs to an hour (the package's
// geometries need 23,552 and 2,944). An encoding states its geometry in a header of a
// few bytes and the library allocates the array that geometry needs before reading a
// count (1..2^63 at 5 digits: 49 MB), so without a bound every peer's every histogram
// could cost the coordinator that much each second.
const MaxDecodedCounts = 1 << 19

// checkEncodedGeometry reads the geometry an encoding claims and refuses one that
// hdrhistogram could not construct or whose counts array exceeds MaxDecodedCounts. It
// inflates only the 40-byte inner header.
func checkEncodedGeometry(b []byte) error {
	raw, err := base64.StdEncoding.DecodeString(string(b))
	if err != nil {
		return fmt.Errorf("stats: decode histogram: %w", err)
	}
	if len(raw) < 8 {
		return errors.New("stats: decode histogram: shorter than its header")
	}
	if cookie := int32(binary.BigEndian.Uint32(raw)) &^ 0xf0; cookie != v2CompressedCookie {
		return fmt.Errorf("stats: decode histogram: cookie %#x is not V2 compressed", cookie)
	}
	clen := int32(binary.BigEndian.Uint32(raw[4:]))
	if clen < 0 || int(clen) > len(raw)-8 {
		return fmt.Errorf("stats: decode histogram: compressed length %d of %d bytes", clen, len(raw)-8)
	}
	zr, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+clen]))
	if err != nil {
		return fmt.Errorf("stats: decode histogram: %w", err)
	}
	defer zr.Close()
	var hdr [v2HeaderSize]byte
	if _, err := io.ReadFull(zr, hdr[:]); err != nil {
		return fmt.Errorf("stats: decode histogram header: %w", err)
	}
	digits := int32(binary.BigEndian.Uint32(hdr[12:]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:]))
	switch {
	case digits < 1 || digits > 5:
		return fmt.Errorf("stats: decode histogram: %d significant digits (want 1 to 5)", digits)
	case lowest < 1:
		return fmt.Errorf("stats: decode histogram: lowest trackable value %d (want 1 or more)", lowest)
	case highest < 2 || highest/2 < lowest:
		return fmt.Errorf("stats: decode histogram: highest trackable value %d below twice the lowest (%d)", highest, lowest)
	}
	if c := countsLen(int64(digits), lowest, highest); c > MaxDecodedCounts {
		return fmt.Errorf("stats: decode histogram: a geometry of %d digits from %d to %d needs %d counters, more than the %d accepted",
			digits, lowest, highest, c, MaxDecodedCounts)
	}
	return nil
}

// countsLen is the length of hdrhistogram's counts array for a geometry (its
// constructor's arithmetic, in int64 so that no claimed geometry overflows it).
func countsLen(digits, lowest, highest int64) int64 {
	largest := 2 * int64(math.Pow10(int(digits)))
	subMag := int64(math.Ceil(math.Log2(float64(largest))))
	subCount := int64(1) << subMag
	unitMag := int64(63 - bits.LeadingZeros64(uint64(lowest)))
	if subMag+unitMag > 62 {
		// The library's own limit: such a geometry is one the constructor refuses.
		return math.MaxInt64
	}
	buckets := int64(1)
	for smallestUntrackable := subCount << unitMag; smallestUntrackable <= highest; smallestUntrackable <<= 1 {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		buckets++
	}
	return (buckets + 1) * (subCount / 2)
}
