package workload

// Range is a half-open interval [Start, End) of key indices.
type Range struct {
	Start, End int64
}

// Len returns the number of keys in the range.
func (r Range) Len() int64 { return r.End - r.Start }

// Ranges splits [0, numKeys) into parts contiguous ranges, in order, whose sizes differ by
// at most one, so parallel backfill workers finish together. parts is clamped to
// [1, numKeys] (no empty ranges); numKeys <= 0 yields nil.
func Ranges(numKeys int64, parts int) []Range {
	if numKeys <= 0 {
		return nil
	}
	p := int64(max(parts, 1))
	p = min(p, numKeys)
	out := make([]Range, p)
	size, extra := numKeys/p, numKeys%p
	var start int64
	for i := range p {
		n := size
		if i < extra {
			n++
		}
		out[i] = Range{Start: start, End: start + n}
		start += n
	}
	return out
}
