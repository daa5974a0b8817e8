// Package workload generates what the engine sends to a store: key indices drawn from a
// configurable access pattern, NDBench-shaped key strings, pools of random values, the
// validation codec that lets a read detect corrupt, misdirected, stale and lost values,
// and the ranges a parallel backfill splits the keyspace into.
//
// Everything here is built for the engine's hot path: picking a key or a value takes tens
// of nanoseconds and allocates nothing. Each worker passes its own *rand.Rand (PCG), so
// generators hold no per-call state; what they share (zeta constants, the window clock's
// start, the latest/sequential counters) is immutable or atomic.
package workload

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
)

// Op tells a key generator what the key is for. Only the latest and sequential patterns
// care: in latest, writes create new keys and reads chase them.
type Op = keydist.Op

// The operations a key is picked for.
const (
	OpRead  = keydist.Read
	OpWrite = keydist.Write
)

// Pattern names. NDBench's names (random, sliding_window, sliding_window_flip, zipfian)
// are accepted as they are, so NDBench configurations keep working.
const (
	PatternUniform           = "uniform"
	PatternZipfian           = "zipfian"
	PatternScrambledZipfian  = "scrambled_zipfian"
	PatternYCSBZipfian       = "ycsb_zipfian"
	PatternSlidingWindow     = "sliding_window"
	PatternSlidingWindowFlip = "sliding_window_flip"
	PatternLatest            = "latest"
	PatternHotspot           = "hotspot"
	PatternSequential        = "sequential"
	PatternExponential       = "exponential"
)

// Patterns returns the accepted pattern names including aliases, in registration order
// (the built-ins first, then any registered through package keydist), for validation
// messages and UI choices. The caller may modify the returned slice.
func Patterns() []string { return keydist.Names() }

// CanonicalPattern returns the canonical name of a pattern (case-insensitive, aliases
// resolved) and whether it is known.
func CanonicalPattern(name string) (string, bool) {
	d, ok := keydist.Lookup(name)
	return d.Name, ok
}

// Defaults applied by NewKeys when a field is zero.
const (
	DefaultZipfExponent = 0.99 // YCSB's zipfian constant
	// DefaultExpPercentile and DefaultExpFraction are YCSB's ExponentialGenerator
	// defaults: 95% of operations go to the first 1/1.1667 = 85.7% of the keys.
	DefaultExpPercentile = 95
	DefaultExpFraction   = 0.8571428571
)

// KeyParams configures a key generator. Fields a pattern does not use are ignored (and not
// validated), so switching patterns at run time never trips over leftover settings.
type KeyParams struct {
	// Pattern is one of Patterns(), case-insensitive.
	Pattern string
	// NumKeys is the keyspace size; keys are indices in [0, NumKeys).
	NumKeys int64
	// ZipfExponent is theta for zipfian, scrambled_zipfian, ycsb_zipfian and latest: P(rank k) ~
	// 1/(k+1)^theta. Zero means DefaultZipfExponent; otherwise in [0.01, 100].
	ZipfExponent float64
	// WindowSize is the number of keys in the window of the sliding_window patterns,
	// in [1, NumKeys].
	WindowSize int64
	// WindowDuration is the time the window takes for one pass over the keyspace, for both
	// sliding window patterns:
	//   - sliding_window: the window's first key moves linearly from 0 to
	//     NumKeys-WindowSize over WindowDuration (NDBench's "test duration"), then starts
	//     over at 0. NDBench stops the test at that point; ndbench runs forever.
	//   - sliding_window_flip: the keyspace is cut into floor(NumKeys/WindowSize) disjoint
	//     windows [i*WindowSize, (i+1)*WindowSize) and each is used for
	//     WindowDuration/floor(NumKeys/WindowSize) before flipping to the next, wrapping
	//     after the last. (NDBench's own flip setting is the per-window time; multiply it by
	//     the number of windows to convert.)
	WindowDuration time.Duration
	// HotKeys is, for hotspot, the fraction of keys that are hot, in (0, 1]: the first
	// max(1, floor(HotKeys*NumKeys)) indices (YCSB's hotspotdatafraction).
	HotKeys float64
	// HotFraction is, for hotspot, the fraction of operations that go to hot keys, [0, 1]
	// (YCSB's hotspotopnfraction).
	HotFraction float64
	// ExpPercentile and ExpFraction shape exponential: ExpPercentile percent of operations
	// go to the first ExpFraction*NumKeys keys (key 0 is the hottest); YCSB's
	// exponential.percentile and exponential.frac. Zero means the YCSB defaults
	// DefaultExpPercentile and DefaultExpFraction. ExpPercentile in (0, 100),
	// ExpFraction in (0, 1].
	ExpPercentile float64
	ExpFraction   float64
	// Options are the options of a pattern that has its own (one registered through
	// package keydist), as name=value pairs separated by commas: workload.patternOptions.
	// The built-in patterns' options are the fields above and cannot be given here.
	Options string
	// Seed keys the scrambled_zipfian permutation; generators built with the same seed put
	// the hot keys at the same indices, so a restarted run or another node hits the same
	// hot set.
	Seed uint64
	// Now is the clock of the sliding window patterns; nil means time.Now.
	Now func() time.Time
	// Start is the instant the window is at position 0; zero means NewKeys' call time.
	// Passing the previous generator's Start when swapping generators keeps the window
	// moving smoothly instead of jumping back to the start of the keyspace.
	Start time.Time
	// Size, when set, returns the current keyspace size, which inserts grow beyond
	// NumKeys (keydist.Keyspace.Size); latest follows it. nil: the keyspace is fixed.
	Size func() int64
}

// Keys picks key indices (keydist.Generator). Implementations are safe for concurrent
// use; each caller passes its own RNG.
type Keys = keydist.Generator

// NewKeys validates p and returns a generator for its pattern, built by the pattern's
// keydist.Definition. Invalid parameters yield driver.FieldErrors naming
// workload.<field>, the value and what is allowed.
func NewKeys(p KeyParams) (Keys, error) {
	def, ks, values, err := p.check()
	if err != nil {
		return nil, err
	}
	g, err := def.Build(ks, values)
	if err != nil {
		return nil, p.fieldErrors(err)
	}
	return g, nil
}

// MaxWindowDuration keeps window arithmetic (nanoseconds times NumKeys) far from overflow
// concerns and rejects durations that are certainly typos. The workload.windowDuration
// option's max tag states the same (a test checks).
const MaxWindowDuration = 365 * 24 * time.Hour

// Validate checks the parameters the pattern uses (see KeyParams), as NewKeys would,
// without building the generator. Errors are driver.FieldErrors naming
// workload.<option>. The config store and NewKeys both call it, so a key generator the
// store accepts is one the engine can build.
func (p KeyParams) Validate() error {
	_, _, _, err := p.check()
	return err
}

// check resolves p and validates the keyspace and the options, reporting every mistake
// at once.
func (p KeyParams) check() (keydist.Definition, keydist.Keyspace, map[string]string, error) {
	def, ks, values, errs := p.resolve()
	if def.New != nil {
		if err := def.Validate(ks, values); err != nil {
			fes, ok := driver.AsFieldErrors(p.fieldErrors(err))
			if !ok {
				return def, ks, values, err
			}
			errs = append(errs, fes...)
		}
	}
	if len(errs) > 0 {
		return def, ks, values, errs
	}
	return def, ks, values, nil
}

// builtinOptions are the pattern options that are workload options of their own
// (workload.<name>), with the KeyParams field each comes from. A pattern registered
// through keydist may declare one of them too, and then gets its value.
var builtinOptions = []struct {
	name string
	// value returns the field as option text, or "" to leave the option at the pattern's
	// default (the fields whose zero means "the default").
	value func(p *KeyParams) string
}{
	{"zipfExponent", func(p *KeyParams) string { return fmtNonZero(p.ZipfExponent) }},
	{"windowSize", func(p *KeyParams) string { return strconv.FormatInt(p.WindowSize, 10) }},
	{"windowDuration", func(p *KeyParams) string { return p.WindowDuration.String() }},
	{"hotKeys", func(p *KeyParams) string { return fmtFloat(p.HotKeys) }},
	{"hotFraction", func(p *KeyParams) string { return fmtFloat(p.HotFraction) }},
	{"expPercentile", func(p *KeyParams) string { return fmtNonZero(p.ExpPercentile) }},
	{"expFraction", func(p *KeyParams) string { return fmtNonZero(p.ExpFraction) }},
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func fmtNonZero(f float64) string {
	if f == 0 {
		return ""
	}
	return fmtFloat(f)
}

// resolve finds p's pattern and gathers the text values of its options: those that are
// workload options from the typed fields, the others from p.Options.
func (p KeyParams) resolve() (keydist.Definition, keydist.Keyspace, map[string]string, driver.FieldErrors) {
	var errs driver.FieldErrors
	bad := func(field, value, allowed string) {
		errs = append(errs, &driver.FieldError{Field: "workload." + field, Value: value, Allowed: allowed})
	}
	def, ok := keydist.Lookup(p.Pattern)
	if !ok {
		bad("pattern", p.Pattern, strings.Join(Patterns(), ", "))
	}
	if p.NumKeys < 1 {
		bad("numKeys", strconv.FormatInt(p.NumKeys, 10), "an integer >= 1")
	}
	ks := keydist.Keyspace{NumKeys: p.NumKeys, Seed: p.Seed, Now: p.Now, Start: p.Start, Size: p.Size}
	if !ok {
		return def, ks, nil, errs
	}
	schema, err := def.Schema()
	if err != nil {
		bad("pattern", p.Pattern, "a pattern whose options parse: "+err.Error())
		return def, ks, nil, errs
	}
	values := map[string]string{}
	for _, o := range schema {
		for _, b := range builtinOptions {
			if b.name == o.Name {
				if v := b.value(&p); v != "" {
					values[o.Name] = v
				}
			}
		}
	}
	extra, fes := parsePatternOptions(p.Options, def, schema)
	errs = append(errs, fes...)
	maps.Copy(values, extra)
	if p.NumKeys < 1 {
		// The options are still checked (every mistake at once); the keyspace error is
		// already reported.
		ks.NumKeys = 1
	}
	return def, ks, values, errs
}

// parsePatternOptions parses workload.patternOptions: name=value pairs separated by
// commas, naming options of def that are not workload options of their own.
func parsePatternOptions(text string, def keydist.Definition, schema []driver.Option) (map[string]string, driver.FieldErrors) {
	var errs driver.FieldErrors
	values := map[string]string{}
	var own []string
	for _, o := range schema {
		if !isBuiltinOption(o.Name) {
			own = append(own, o.Name)
		}
	}
	allowed := "name=value pairs separated by commas, naming options of pattern " + def.Name
	if len(own) == 0 {
		allowed = "nothing: pattern " + def.Name + " has no options of its own"
	} else {
		allowed += ": " + strings.Join(own, ", ")
	}
	for _, pair := range strings.Split(text, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == "":
			errs = append(errs, &driver.FieldError{Field: "workload.patternOptions", Value: pair, Allowed: allowed})
		case isBuiltinOption(name):
			errs = append(errs, &driver.FieldError{Field: "workload.patternOptions", Value: pair,
				Allowed: allowed + " (" + name + " is set with workload." + name + ")"})
		case !slices.Contains(own, name):
			errs = append(errs, &driver.FieldError{Field: "workload.patternOptions", Value: pair, Allowed: allowed})
		case values[name] != "":
			errs = append(errs, &driver.FieldError{Field: "workload.patternOptions", Value: pair, Allowed: allowed + ", each once"})
		default:
			values[name] = strings.TrimSpace(value)
		}
	}
	return values, errs
}

// OptionKey returns the configuration key a pattern's option is set with:
// workload.<name> for the options that are workload options of their own (zipfExponent,
// windowSize, windowDuration, hotKeys, hotFraction, expPercentile, expFraction), else
// workload.patternOptions.
func OptionKey(name string) string {
	for _, b := range builtinOptions {
		if b.name == name {
			return "workload." + name
		}
	}
	return "workload.patternOptions"
}

func isBuiltinOption(name string) bool {
	for _, b := range builtinOptions {
		if strings.EqualFold(b.name, name) {
			return true
		}
	}
	return false
}

// fieldErrors turns the option errors of a keydist.Definition (naming options) into
// errors naming the configuration keys they come from: workload.<name> for the workload
// options, workload.patternOptions for the others.
func (p KeyParams) fieldErrors(err error) error {
	fes, ok := driver.AsFieldErrors(err)
	if !ok {
		return err
	}
	out := make(driver.FieldErrors, 0, len(fes))
	for _, fe := range fes {
		e := *fe
		switch {
		case e.Field == "numKeys" || isBuiltinOption(e.Field):
			e.Field = "workload." + e.Field
		default:
			if e.Unknown {
				e.Value = e.Field
			} else {
				e.Value = e.Field + "=" + e.Value
			}
			e.Unknown = false
			e.Allowed = e.Field + ": " + e.Allowed
			e.Field = "workload.patternOptions"
		}
		out = append(out, &e)
	}
	return out
}

// uniformKeys picks every key with equal probability (NDBench's "random").
type uniformKeys struct{ n int64 }

func (k uniformKeys) Next(r *rand.Rand, _ Op) int64 { return r.Int64N(k.n) }

// zipfKeys returns the zipfian rank as the index: key 0 is the hottest, key 1 the next,
// and so on (YCSB's unscrambled "zipfian"; NDBench's sampler also puts the hot keys at the
// low indices, though 1-based).
type zipfKeys struct{ z *zipf }

func (k zipfKeys) Next(r *rand.Rand, _ Op) int64 { return k.z.rank(r) }

// scrambledKeys spreads the zipfian ranks over the keyspace with a keyed bijection, so hot
// keys are not neighbours (which matters to range-partitioned stores and caches with
// locality) while the frequency profile is exactly that of zipfian.
type scrambledKeys struct {
	z    *zipf
	perm permutation
}

func (k *scrambledKeys) Next(r *rand.Rand, _ Op) int64 {
	return int64(k.perm.apply(uint64(k.z.rank(r))))
}

// ycsbScrambledKeys is YCSB's ScrambledZipfianGenerator, what YCSB's core workloads run
// for requestdistribution=zipfian: a zipfian rank over a fixed 10^10 items, hashed with
// FNV-1a (Utils.fnvhash64) and taken modulo the keyspace. Its profile is much flatter than
// scrambled_zipfian's over the same keyspace (with 1000 keys and theta 0.99 the hottest
// key gets 3.8% of the operations rather than 13%, the hottest tenth 28% rather than
// 70%), since most of the zipfian mass lies in ranks far beyond the keyspace that the hash
// folds onto it; and hash collisions merge ranks. It is here so that results can be
// compared with YCSB's; scrambled_zipfian is the zipfian distribution over the keyspace.
//
// As YCSB's CoreWorkload builds it, the hash is taken modulo numKeys+1+expectedNewKeys
// items (ScrambledZipfianGenerator(insertstart, insertstart+insertcount+expectednewkeys),
// both ends included), and a key beyond the last one inserted is drawn again
// (CoreWorkload.nextKeynum). So the hot keys lie where YCSB's do: modulo numKeys alone
// would keep the profile but move every hot key. go-ycsb does not draw again; it reads
// the key that does not exist yet.
type ycsbScrambledKeys struct {
	z     *zipf
	items int64        // the hash's modulus
	n     int64        // numKeys
	size  func() int64 // the keyspace with the keys inserted; nil: n
}

func (k ycsbScrambledKeys) Next(r *rand.Rand, _ Op) int64 {
	limit := k.n
	if k.size != nil {
		limit = max(limit, k.size())
	}
	for {
		if key := floorMod(fnvhash64(k.z.rank(r)), k.items); key < limit {
			return key
		}
	}
}

// ycsbScrambledItems is ScrambledZipfianGenerator.ITEM_COUNT: YCSB builds its
// ZipfianGenerator over [0, ITEM_COUNT], one more item than the constant says.
const ycsbScrambledItems = 10_000_000_000 + 1

// ycsbZetan is ScrambledZipfianGenerator.ZETAN, zeta(10^10, 0.99) as YCSB hard-codes it for
// its default constant (and uses for 10^10 + 1 items).
const ycsbZetan = 26.46902820178302

// newYCSBScrambledZipf returns the rank generator of YCSB's scrambled zipfian. For theta
// 0.99 it uses YCSB's hard-coded zeta, as YCSB does; for other exponents YCSB sums 10^10
// terms (minutes of start-up), where zeta's tail formula gives the same value at once.
func newYCSBScrambledZipf(theta float64) *zipf {
	z := newZipf(ycsbScrambledItems, theta)
	if theta == DefaultZipfExponent {
		z.zetan = ycsbZetan
		z.eta = (1 - math.Pow(2/float64(z.n), 1-theta)) / (1 - zeta(2, theta)/z.zetan)
	}
	return z
}

// fnvhash64 is YCSB's Utils.fnvhash64: 64-bit FNV-1a over the eight bytes of v, least
// significant first, made non-negative by Math.abs (which leaves MinInt64 negative; the
// caller's floorMod keeps that in range).
func fnvhash64(v int64) int64 {
	h := uint64(0xcbf29ce484222325)
	for range 8 {
		h ^= uint64(v) & 0xff
		h *= 1099511628211
		v >>= 8
	}
	if x := int64(h); x >= 0 {
		return x
	}
	return -int64(h)
}

// windowKeys is NDBench's sliding_window: keys are uniform within a window of size keys
// whose first key is round(f * (n - size)), f being the fraction of the current pass
// ((now - start) mod dur) / dur. Before start (a clock set back) the window is at 0.
type windowKeys struct {
	n, size int64
	dur     time.Duration
	start   time.Time
	elapsed func() time.Duration // since start, by the configured clock
	// flip only
	tiles int64
	hold  time.Duration
}

func (k *windowKeys) Next(r *rand.Rand, _ Op) int64 {
	return k.first() + r.Int64N(k.size)
}

// first returns the window's first key at the current time.
func (k *windowKeys) first() int64 {
	el := k.elapsed()
	if el <= 0 || k.n == k.size {
		return 0
	}
	f := float64(el%k.dur) / float64(k.dur)
	return int64(math.Round(f * float64(k.n-k.size)))
}

// flipKeys is NDBench's sliding_window_flip: the window jumps from one disjoint block of
// size keys to the next every hold, wrapping after floor(n/size) blocks (keys beyond the
// last whole block are never used, as in NDBench).
type flipKeys struct{ *windowKeys }

func (k *flipKeys) Next(r *rand.Rand, _ Op) int64 {
	return k.first()*k.size + r.Int64N(k.size)
}

// first returns the index of the current block.
func (k *flipKeys) first() int64 {
	el := k.elapsed()
	if el <= 0 {
		return 0
	}
	return int64(el/k.hold) % k.tiles
}

// latestKeys is YCSB's "latest" (SkewedLatestGenerator): reads pick the newest key minus
// a zipfian rank, so the most recently created keys are the most read. Which key is the
// newest depends on whether the keyspace grows:
//
//   - it grows (inserts have claimed keys beyond NumKeys, see keydist.Keyspace.Size):
//     the newest key is the last one claimed, max = size-1, and reads and writes
//     (updates, as YCSB's) both pick max-rank with a zipfian rank over every key but key 0
//     (rank < max), as YCSB's SkewedLatestGenerator does: its ZipfianGenerator is asked
//     for a rank among max items, sums zeta over them as they grow, and keeps the
//     numerator of eta, 1-(2/items)^(1-theta), of the item count it was built with
//     (recordcount-1). That last is a quirk of YCSB's (eta belongs with the item count),
//     kept because YCSB's D is quoted with it. A key claimed but not yet written reads as
//     a miss, never as lost.
//   - it does not (no insert yet): every write takes the next key of a shared head (head
//     mod n), as NDBench-style appends that wrap, and reads pick head-1-rank. Before any
//     write the head is 0 and reads go to the top of the keyspace (n-1, n-2, ...): the
//     last keys a sequential backfill wrote.
//
// An exponent of 1 or more, which YCSB's formula does not describe, draws its ranks
// over NumKeys keys in a grown keyspace too (the newest NumKeys keys).
type latestKeys struct {
	n    int64
	z    *zipf
	size func() int64 // nil: the keyspace is fixed
	head atomic.Int64
	// YCSB's grown-keyspace constants: theta < 1 and NumKeys >= 3, else ycsb is false.
	ycsb             bool
	theta, alpha     float64
	etaNum, zeta2    float64                    // eta's numerator, of the item count built with
	grown            atomic.Pointer[latestZeta] // zeta over the last item count drawn for
	lastTermsAtATime int64                      // terms summed one by one before zeta's closed form
}

// latestZeta is zeta(count, theta) and the eta that goes with it, kept for the next
// draws while the keyspace stays.
type latestZeta struct {
	count      int64
	zetan, eta float64
}

func newLatestKeys(n int64, theta float64, size func() int64) *latestKeys {
	k := &latestKeys{n: n, z: newZipf(n, theta), size: size, theta: theta}
	if items := n - 1; theta < 1 && items >= 2 {
		k.ycsb, k.alpha = true, 1/(1-theta)
		k.zeta2 = zeta(2, theta)
		k.etaNum = 1 - math.Pow(2/float64(items), 1-theta)
		zn := zeta(items, theta)
		k.grown.Store(&latestZeta{count: items, zetan: zn, eta: k.etaNum / (1 - k.zeta2/zn)})
		k.lastTermsAtATime = zetaExactTerms
	}
	return k
}

// grownRank is YCSB's ZipfianGenerator.next(r, count) as SkewedLatestGenerator calls it:
// zeta over count items, eta's numerator (2/items)^(1-theta) from the count it was built
// with, a rank in [0, count).
// The zeta of a new count is worked out from the last one's when the keyspace grew by a
// few keys (a few terms), from zeta's closed form otherwise.
func (k *latestKeys) grownRank(r *rand.Rand, count int64) int64 {
	g := k.grown.Load()
	if g.count != count {
		var zn float64
		if d := count - g.count; d > 0 && d <= k.lastTermsAtATime {
			zn = g.zetan
			for i := g.count + 1; i <= count; i++ {
				zn += math.Exp(-k.theta * math.Log(float64(i)))
			}
		} else {
			zn = zeta(count, k.theta)
		}
		ng := &latestZeta{count: count, zetan: zn, eta: k.etaNum / (1 - k.zeta2/zn)}
		k.grown.CompareAndSwap(g, ng) // a draw that lost the race uses its own, equal
		g = ng
	}
	u := r.Float64()
	uz := u * g.zetan
	if uz < 1 {
		return 0
	}
	if uz < k.zeta2 {
		return 1
	}
	rank := int64(float64(count) * math.Exp(k.alpha*math.Log(g.eta*u-g.eta+1)))
	return min(rank, count-1) // float rounding at u -> 1
}

func (k *latestKeys) Next(r *rand.Rand, op Op) int64 {
	if k.size != nil {
		if s := k.size(); s > k.n {
			if k.ycsb {
				return s - 1 - k.grownRank(r, s-1)
			}
			return s - 1 - k.z.rank(r)
		}
	}
	if op == OpWrite {
		return floorMod(k.head.Add(1)-1, k.n)
	}
	return floorMod(k.head.Load()-1-k.z.rank(r), k.n)
}

// hotspotKeys is YCSB's HotspotIntegerGenerator: frac of operations go uniformly to the
// first hot keys, the rest uniformly to the others.
type hotspotKeys struct {
	n, hot int64
	frac   float64
}

func (k hotspotKeys) Next(r *rand.Rand, _ Op) int64 {
	if k.hot == k.n || r.Float64() < k.frac {
		return r.Int64N(k.hot)
	}
	return k.hot + r.Int64N(k.n-k.hot)
}

// sequentialKeys walks the keyspace in order, wrapping, with one counter shared by reads
// and writes (and all workers), so every key is touched once per pass.
type sequentialKeys struct {
	n    int64
	next atomic.Int64
}

func (k *sequentialKeys) Next(_ *rand.Rand, _ Op) int64 {
	return floorMod(k.next.Add(1)-1, k.n)
}

// exponentialKeys is YCSB's ExponentialGenerator: index = floor(X) with X exponential of
// rate gamma, chosen so that percentile% of draws fall below fraction*n. YCSB redraws
// values beyond the keyspace; here X is drawn directly from the exponential truncated to
// [0, n) by inversion, -log(1 - U*(1 - e^(-gamma*n)))/gamma, which is the same
// distribution without a loop whose length depends on the parameters.
type exponentialKeys struct {
	n        int64
	invGamma float64
	mass     float64 // 1 - e^(-gamma*n), the untruncated probability of [0, n)
}

func (k exponentialKeys) Next(r *rand.Rand, _ Op) int64 {
	x := int64(-math.Log1p(-r.Float64()*k.mass) * k.invGamma)
	return min(x, k.n-1) // rounding at the top end
}

// floorMod is x mod n in [0, n) for any sign of x; counters may wrap past MaxInt64 on
// practically infinite runs.
func floorMod(x, n int64) int64 {
	m := x % n
	if m < 0 {
		m += n
	}
	return m
}
