package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"

	"github.com/ndbench/ndbench/driver"
)

// MaxValueSize bounds one value (64 MiB): larger values are no key-value workload, and
// a typo should not size every value in the pool. What the whole pool may take is bounded
// by the memory budget (see EstimateMemory), not here.
const MaxValueSize = 64 << 20

// ValueParams configures a value pool. Field names follow NDBench's (numValues, dataSize,
// useVariableDataSize with lower/upper bounds).
type ValueParams struct {
	// NumValues is how many distinct payloads the pool holds (>= 1).
	NumValues int
	// DataSize is the size of every payload in bytes when Variable is off.
	DataSize int
	// Variable gives each payload its own size, uniform in [DataSizeMin, DataSizeMax].
	Variable                 bool
	DataSizeMin, DataSizeMax int
	// Header means payloads will carry the validation header (workload.validate), so every
	// size must be at least HeaderSize.
	Header bool
}

// Values is a pool of random alphanumeric payloads (NDBench's DefaultDataGenerator shape),
// shared read-only by all workers. Refresh swaps in a new pool atomically, so a reader
// sees either the old pool or the new one, never a half-built one.
type Values struct {
	p    ValueParams
	pool atomic.Pointer[[][]byte]
}

// NewValues validates p and builds a pool from seed. Invalid parameters yield
// driver.FieldErrors naming workload.<field>. It allocates the whole pool at once (see
// EstimateMemory for how much); callers check that against their memory budget first,
// because an out-of-memory failure cannot be turned into an error.
func NewValues(p ValueParams, seed uint64) (*Values, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	v := &Values{p: p}
	v.Refresh(seed)
	return v, nil
}

// Validate checks the value sizes in use: each in [1, MaxValueSize], at least HeaderSize
// when values carry the validation header, and dataSizeMin <= dataSizeMax with variable
// sizes.
// Errors are driver.FieldErrors naming workload.<option>. The config store and NewValues
// both call it, so a pool the store accepts is a pool the engine can build.
func (p ValueParams) Validate() error {
	var errs driver.FieldErrors
	bad := func(field string, value int, allowed string) {
		errs = append(errs, &driver.FieldError{Field: "workload." + field, Value: strconv.Itoa(value), Allowed: allowed})
	}
	header := fmt.Sprintf("at least %d when workload.validate is on (the validation header)", HeaderSize)
	size := func(field string, v int) bool {
		if v < 1 || v > MaxValueSize {
			bad(field, v, fmt.Sprintf("an integer from 1 to %d", MaxValueSize))
			return false
		}
		return true
	}
	if p.NumValues < 1 {
		bad("numValues", p.NumValues, "an integer >= 1")
	}
	// Only the sizes in use are checked, as KeyParams checks only what its pattern uses:
	// switching variableDataSize is itself a change that is validated whole.
	if !p.Variable {
		if size("dataSize", p.DataSize) && p.Header && p.DataSize < HeaderSize {
			bad("dataSize", p.DataSize, header)
		}
	} else {
		okMin, okMax := size("dataSizeMin", p.DataSizeMin), size("dataSizeMax", p.DataSizeMax)
		if okMin && okMax && p.DataSizeMin > p.DataSizeMax {
			bad("dataSizeMin", p.DataSizeMin, fmt.Sprintf("at most workload.dataSizeMax (%d)", p.DataSizeMax))
		}
		if okMin && p.Header && p.DataSizeMin < HeaderSize {
			bad("dataSizeMin", p.DataSizeMin, header)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// largest returns the size of the largest value the pool can hold.
func (p ValueParams) largest() int {
	if p.Variable {
		return p.DataSizeMax
	}
	return p.DataSize
}

// Params returns the parameters the pool was built with.
func (v *Values) Params() ValueParams { return v.p }

// Pick returns a payload chosen uniformly from the pool. The slice is shared by every
// worker: read it, never modify it.
func (v *Values) Pick(r *rand.Rand) []byte {
	pool := *v.pool.Load()
	return pool[r.IntN(len(pool))]
}

const alphanumeric = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Refresh builds a new pool from seed with the same parameters and swaps it in. Readers
// holding a payload from the old pool keep a valid slice; the old pool is garbage
// collected once nobody does.
func (v *Values) Refresh(seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc908))
	sizes := make([]int, v.p.NumValues)
	total := 0
	for i := range sizes {
		s := v.p.DataSize
		if v.p.Variable {
			s = v.p.DataSizeMin + r.IntN(v.p.DataSizeMax-v.p.DataSizeMin+1)
		}
		sizes[i] = s
		total += s
	}
	// One backing array: NumValues allocations would cost the GC far more to scan.
	buf := make([]byte, total)
	for i := 0; i < len(buf); {
		// Each 64-bit draw yields 10 base-62 digits (62^10 < 2^64), a generator call per
		// 10 bytes rather than per byte; the bias of the top digit is below 5%.
		x := r.Uint64()
		for j := 0; j < 10 && i < len(buf); j++ {
			buf[i] = alphanumeric[x%62]
			x /= 62
			i++
		}
	}
	pool := make([][]byte, len(sizes))
	off := 0
	for i, s := range sizes {
		pool[i] = buf[off : off+s : off+s]
		off += s
	}
	v.pool.Store(&pool)
}
