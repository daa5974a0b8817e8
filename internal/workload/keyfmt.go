package workload

import "strconv"

// DefaultKeyPrefix is NDBench's key prefix. NDBench's key generators
// (ndbench-core/src/main/java/com/netflix/ndbench/core/generators/RandomStringKeyGenerator,
// ZipfianStringKeyGenerator, SlidingWindowStringKeyGenerator,
// SlidingWindowFlipStringKeyGenerator in github.com/Netflix/ndbench) all build keys as
// "T" + index with the index in decimal and no padding ("T0", "T1", ..., "T999"), so using
// the same shape lets ndbench read and verify stores that NDBench filled.
//
// One difference: NDBench's zipfian sampler (commons-math ZipfDistribution) yields indices
// 1..numKeys, its other patterns 0..numKeys-1; ndbench uses 0..numKeys-1 everywhere.
const DefaultKeyPrefix = "T"

// AppendKey appends prefix followed by idx in decimal to dst and returns the extended
// slice. It allocates only when dst lacks capacity; workers keep one buffer and pass
// buf[:0].
func AppendKey(dst []byte, prefix string, idx int64) []byte {
	dst = append(dst, prefix...)
	return strconv.AppendInt(dst, idx, 10)
}
