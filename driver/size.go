package driver

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Size is an amount of memory or storage in bytes. In text it is a number with an optional
// unit: B, the decimal KB, MB, GB, TB (powers of 1000) or the binary KiB, MiB, GiB, TiB
// (powers of 1024), in any case: "4096", "512MiB", "1.5GB". An option of type Size takes
// min and max tags in the same form.
type Size int64

// Binary size units.
const (
	KiB Size = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

// sizeUnits lists the accepted units, longest suffix first so that "MiB" is not read as
// "B" after an unparsable "Mi".
var sizeUnits = []struct {
	suffix string
	factor float64
}{
	{"kib", float64(KiB)}, {"mib", float64(MiB)}, {"gib", float64(GiB)}, {"tib", float64(TiB)},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// ParseSize reads a size such as "4096", "512MiB" or "1.5GB"; fractions of a byte are
// dropped.
func ParseSize(s string) (Size, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	factor := 1.0
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, factor = strings.TrimSpace(num), u.factor
			break
		}
	}
	// Whole numbers are exact; float64 would round sizes above 2^53.
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && n >= 0 && float64(n)*factor < math.MaxInt64 {
		return Size(n * int64(factor)), nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(x) || x < 0 || x*factor >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q: want a non-negative number of bytes with an optional unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB)", s)
	}
	return Size(x * factor), nil
}

// String writes the size in the largest binary unit that divides it exactly ("1GiB",
// "1536MiB"), or in bytes ("1000B"), so that it parses back to the same value.
func (s Size) String() string {
	for _, u := range []struct {
		unit Size
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if s != 0 && s%u.unit == 0 {
			return strconv.FormatInt(int64(s/u.unit), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}
