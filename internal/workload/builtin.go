package workload

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
)

// The built-in patterns register through package keydist like any other, in the order
// listings show them. Every generator holds O(1) state (zipfian constants, a Feistel key,
// counters); none precomputes a table, which is why EstimateMemory counts nothing for
// keys. A pattern that builds one must add its size there.
func init() {
	for _, d := range []keydist.Definition{
		{Name: PatternUniform, Aliases: []string{"random"}, Summary: "every key equally likely (NDBench's random)",
			New: func(ks keydist.Keyspace, _ any) (keydist.Generator, error) { return uniformKeys{n: ks.NumKeys}, nil }},
		{Name: PatternZipfian, Summary: "zipfian over ranks (YCSB's ZipfianGenerator); key 0 is the hottest",
			NewOptions: func() any { return new(zipfOptions) },
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				return zipfKeys{z: newZipf(ks.NumKeys, o.(*zipfOptions).ZipfExponent)}, nil
			}},
		{Name: PatternScrambledZipfian, Aliases: []string{"scrambled"}, Summary: "zipfian frequencies, the hot keys spread over the keyspace by a keyed permutation",
			NewOptions: func() any { return new(zipfOptions) },
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				return &scrambledKeys{z: newZipf(ks.NumKeys, o.(*zipfOptions).ZipfExponent), perm: newPermutation(ks.NumKeys, ks.Seed)}, nil
			}},
		{Name: PatternYCSBZipfian, Summary: "YCSB's requestdistribution=zipfian exactly (ScrambledZipfianGenerator as CoreWorkload builds it): zipfian ranks over 10^10 items, FNV-hashed onto numKeys+1+expectedNewKeys keys, a key not inserted yet drawn again",
			NewOptions: func() any { return new(ycsbZipfOptions) }, Check: checkYCSBZipf,
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				y := o.(*ycsbZipfOptions)
				return ycsbScrambledKeys{z: newYCSBScrambledZipf(y.ZipfExponent), items: ks.NumKeys + 1 + y.ExpectedNewKeys, n: ks.NumKeys, size: ks.Size}, nil
			}},
		{Name: PatternSlidingWindow, Summary: "uniform within a window of windowSize keys that moves over the keyspace once per windowDuration (NDBench's)",
			NewOptions: func() any { return new(windowOptions) }, Check: checkWindow,
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				return newWindow(ks, o.(*windowOptions)), nil
			}},
		{Name: PatternSlidingWindowFlip, Summary: "the keyspace in blocks of windowSize keys, each used for windowDuration/blocks in turn (NDBench's)",
			NewOptions: func() any { return new(windowOptions) }, Check: checkWindow,
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				w := newWindow(ks, o.(*windowOptions))
				w.tiles = ks.NumKeys / w.size
				w.hold = max(w.dur/time.Duration(w.tiles), 1)
				return &flipKeys{w}, nil
			}},
		{Name: PatternLatest, Summary: "recent keys, zipfian by recency (YCSB's SkewedLatestGenerator): the newest inserted once inserts grow the keyspace, else writes take the next key of a moving head",
			NewOptions: func() any { return new(zipfOptions) },
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				return newLatestKeys(ks.NumKeys, o.(*zipfOptions).ZipfExponent, ks.Size), nil
			}},
		{Name: PatternHotspot, Summary: "hotFraction of operations uniformly on the first hotKeys fraction of keys, the rest on the others (YCSB's HotspotIntegerGenerator)",
			NewOptions: func() any { return new(hotspotOptions) },
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				h := o.(*hotspotOptions)
				hot := min(max(1, int64(h.HotKeys*float64(ks.NumKeys))), ks.NumKeys)
				return hotspotKeys{n: ks.NumKeys, hot: hot, frac: h.HotFraction}, nil
			}},
		{Name: PatternSequential, Summary: "one shared counter modulo the keyspace: every key once per pass",
			New: func(ks keydist.Keyspace, _ any) (keydist.Generator, error) {
				return &sequentialKeys{n: ks.NumKeys}, nil
			}},
		{Name: PatternExponential, Summary: "expPercentile% of operations on the first expFraction of keys, key 0 the hottest (YCSB's ExponentialGenerator)",
			NewOptions: func() any { return new(expOptions) },
			New: func(ks keydist.Keyspace, o any) (keydist.Generator, error) {
				e := o.(*expOptions)
				n := float64(ks.NumKeys)
				gamma := -math.Log(1-e.ExpPercentile/100) / (e.ExpFraction * n)
				return exponentialKeys{n: ks.NumKeys, invGamma: 1 / gamma, mass: -math.Expm1(-gamma * n)}, nil
			}},
	} {
		keydist.MustRegister(d)
	}
}

// The options structs carry the same names, defaults and bounds as the workload options
// they come from (config.Workload; a test there checks the two agree).

type zipfOptions struct {
	ZipfExponent float64 `opt:"zipfExponent" default:"0.99" min:"0.01" max:"100" help:"skew theta: P(rank k) ~ 1/(k+1)^theta"`
}

// ycsbZipfOptions are ycsb_zipfian's: YCSB's CoreWorkload spreads its zipfian keys over
// recordcount+1+expectednewkeys items, expectednewkeys being operationcount ×
// insertproportion × 2, and draws again a key beyond the last one inserted.
type ycsbZipfOptions struct {
	ZipfExponent    float64 `opt:"zipfExponent" default:"0.99" min:"0.01" max:"100" help:"skew theta: P(rank k) ~ 1/(k+1)^theta"`
	ExpectedNewKeys int64   `opt:"expectedNewKeys" default:"0" min:"0" max:"1000000000000000" help:"YCSB's expectednewkeys, operationcount × insertproportion × 2: keys beyond numKeys the hash spreads over besides the one YCSB adds (a draw of a key not inserted yet is drawn again); at most 100 × numKeys"`
}

// ycsbExpectedNewKeysPerKey bounds expectedNewKeys per key of the keyspace: a draw beyond
// the keys inserted is drawn again, so the first draws take up to this many tries.
const ycsbExpectedNewKeysPerKey = 100

func checkYCSBZipf(ks keydist.Keyspace, o any) error {
	y := o.(*ycsbZipfOptions)
	if y.ExpectedNewKeys/ycsbExpectedNewKeysPerKey >= ks.NumKeys {
		return driver.FieldErrors{{Field: "expectedNewKeys", Value: strconv.FormatInt(y.ExpectedNewKeys, 10),
			Allowed: fmt.Sprintf("at most %d × numKeys = %d", ycsbExpectedNewKeysPerKey, ycsbExpectedNewKeysPerKey*ks.NumKeys)}}
	}
	return nil
}

type windowOptions struct {
	WindowSize     int64         `opt:"windowSize" default:"1000" min:"1" max:"1000000000000000" help:"keys in the window"`
	WindowDuration time.Duration `opt:"windowDuration" default:"1m" min:"1ms" max:"8760h" help:"time of one pass over the keyspace"`
}

// checkWindow: the window fits in the keyspace.
func checkWindow(ks keydist.Keyspace, o any) error {
	if w := o.(*windowOptions); w.WindowSize > ks.NumKeys {
		return driver.FieldErrors{{Field: "windowSize", Value: strconv.FormatInt(w.WindowSize, 10),
			Allowed: fmt.Sprintf("an integer in [1, numKeys=%d]", ks.NumKeys)}}
	}
	return nil
}

func newWindow(ks keydist.Keyspace, o *windowOptions) *windowKeys {
	w := &windowKeys{n: ks.NumKeys, size: o.WindowSize, dur: o.WindowDuration, start: ks.Start}
	if ks.Now == nil {
		// time.Since reads only the monotonic clock: half the cost of time.Now.
		if w.start.IsZero() {
			w.start = time.Now()
		}
		w.elapsed = func() time.Duration { return time.Since(w.start) }
	} else {
		now := ks.Now
		if w.start.IsZero() {
			w.start = now()
		}
		w.elapsed = func() time.Duration { return now().Sub(w.start) }
	}
	return w
}

type hotspotOptions struct {
	HotKeys     float64 `opt:"hotKeys" default:"0.2" min:"0" max:"1" help:"fraction of the keyspace that is hot, in (0, 1] (YCSB's hotspotdatafraction)"`
	HotFraction float64 `opt:"hotFraction" default:"0.8" min:"0" max:"1" help:"fraction of operations on the hot keys (YCSB's hotspotopnfraction)"`
}

// Validate: the hot set is never empty (the tags cannot say "greater than 0").
func (o *hotspotOptions) Validate() error {
	if o.HotKeys <= 0 {
		return driver.FieldErrors{{Field: "hotKeys", Value: fmtFloat(o.HotKeys), Allowed: "a number greater than 0 and at most 1"}}
	}
	return nil
}

type expOptions struct {
	ExpPercentile float64 `opt:"expPercentile" default:"95" min:"0" max:"100" help:"percent of operations on the first expFraction of the keys, in (0, 100) (YCSB's exponential.percentile)"`
	ExpFraction   float64 `opt:"expFraction" default:"0.8571428571" min:"0" max:"1" help:"fraction of the keyspace that gets expPercentile% of operations, in (0, 1] (YCSB's exponential.frac)"`
}

// Validate: the bounds the tags cannot state (both open at 0, the percentile also at 100:
// the rate gamma would be 0 or infinite).
func (o *expOptions) Validate() error {
	var errs driver.FieldErrors
	if v := o.ExpPercentile; !(v > 0 && v < 100) {
		errs = append(errs, &driver.FieldError{Field: "expPercentile", Value: fmtFloat(v), Allowed: "a percentage greater than 0 and less than 100"})
	}
	if v := o.ExpFraction; !(v > 0 && v <= 1) {
		errs = append(errs, &driver.FieldError{Field: "expFraction", Value: fmtFloat(v), Allowed: "a fraction greater than 0 and at most 1"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
