// Package keydist is the public interface of key distributions: how ndbench picks which
// key an operation touches. A distribution is a Definition (a name, options declared as a
// tagged struct like a driver's, and a constructor) registered from an init function; the
// constructor gets the keyspace and the parsed options and returns a Generator, a function
// from a random source to a key index. ndbench's own patterns (uniform, zipfian, latest,
// hotspot, exponential, ...) register through this package too, so a custom distribution
// is listed by `ndbench workloads`, chosen with workload.pattern and given its options with
// workload.patternOptions exactly as a built-in is.
//
// Like package driver, this package imports nothing else from ndbench: a third party's
// distribution depends only on it (and on package driver for option errors).
package keydist

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// Op tells a generator what the key is for. Most distributions ignore it; "latest" makes
// writes take new keys and reads chase them while the keyspace does not grow.
type Op uint8

// The operations a key is picked for.
const (
	Read Op = iota
	Write
)

// Generator picks key indices. It is called on the engine's hot path, once per operation
// by every worker at once, so it must be safe for concurrent use, allocate nothing and
// take tens of nanoseconds: each worker passes its own r, so a generator keeps no
// per-call state; what it shares (precomputed constants, a counter) is immutable or
// atomic.
type Generator interface {
	// Next returns a key index in [0, Keyspace.NumKeys).
	Next(r *rand.Rand, op Op) int64
}

// GeneratorFunc adapts a function to a Generator.
type GeneratorFunc func(r *rand.Rand, op Op) int64

// Next calls f.
func (f GeneratorFunc) Next(r *rand.Rand, op Op) int64 { return f(r, op) }

// Keyspace is what a generator draws from, fixed for the generator's life: a change of
// the keyspace, the options or the pattern builds a new generator, which the engine swaps
// in atomically.
type Keyspace struct {
	// NumKeys is the number of keys; indices are [0, NumKeys). At least 1.
	NumKeys int64
	// Seed is the run's seed (workload.seed, or a fresh random one): a generator that
	// derives a layout from randomness (a permutation of hot keys) uses it, so a restarted
	// run or another node of a fleet picks the same layout.
	Seed uint64
	// Now is the clock of time-dependent distributions; nil means the system clock.
	Now func() time.Time
	// Start is the instant a time-dependent distribution starts from; zero means when the
	// generator is built. A rebuilt generator is passed its predecessor's Start, so a
	// moving window keeps moving instead of jumping back.
	Start time.Time
	// Size, when set, returns the current number of keys, which inserts grow: NumKeys
	// until an insert claims a key beyond them, then one more per insert (the keys
	// NumKeys, NumKeys+1, ... in the order they were claimed; a claimed key may not be
	// written yet). Distributions over a fixed keyspace ignore it and draw from the first
	// NumKeys keys; one that follows the newest keys (latest) calls it per draw, so it is
	// an atomic load. nil means the keyspace does not grow. It is the engine's, kept
	// across rebuilt generators.
	Size func() int64
}

// Definition describes a distribution to the registry.
type Definition struct {
	// Name is what users give as workload.pattern: lower case letters, digits and '_',
	// starting with a letter.
	Name string
	// Aliases are other accepted names (e.g. NDBench's), resolved to Name.
	Aliases []string
	// Summary is one line for listings: which keys it picks.
	Summary string
	// NewOptions returns a pointer to a new, zero options struct, tagged as a driver's
	// options are (opt, default, min, max, enum, help; see package driver); the registry
	// applies the defaults, parses the values given, checks the tags and calls the
	// struct's Validate method when it has one (driver.OptionsValidator). nil means the
	// distribution has no options.
	NewOptions func() any
	// Check, when set, validates the options (the pointer NewOptions returned, filled)
	// against the keyspace, for rules across the two (a window no larger than the
	// keyspace). It returns driver.FieldErrors naming options by name. It runs whenever a
	// configuration is validated, so it must be cheap: New is not called then.
	Check func(ks Keyspace, opts any) error
	// New returns a generator for the keyspace (NumKeys >= 1) and valid options (the
	// pointer NewOptions returned, filled; nil when NewOptions is nil). It runs when a run
	// starts and when the pattern, its options or the keyspace change, off the hot path.
	// What it allocates is not in ndbench's memory estimate (workload.memoryBudget), which
	// counts the built-in patterns as constant-size: a distribution that builds a table
	// over the keyspace should bound it, or refuse a keyspace too large for it in Check.
	New func(ks Keyspace, opts any) (Generator, error)
}

// The registry is global, like package driver's: distributions add themselves from init,
// before main runs, and it is only read afterwards (tests may register later).
var (
	mu    sync.RWMutex
	defs  []Definition          // registration order: the order of listings
	names = map[string]string{} // name or alias -> canonical name
)

// Register adds a distribution. It fails on a malformed or taken name or alias, a missing
// constructor, or an options struct whose tags do not parse or whose defaults are invalid.
func Register(def Definition) error {
	for _, n := range append([]string{def.Name}, def.Aliases...) {
		if err := checkName(n); err != nil {
			return fmt.Errorf("register key distribution %q: %w", def.Name, err)
		}
	}
	if def.New == nil {
		return fmt.Errorf("register key distribution %q: New is required", def.Name)
	}
	if def.NewOptions != nil {
		if _, err := def.Options(nil); err != nil {
			return fmt.Errorf("register key distribution %q: options at their defaults: %w", def.Name, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range append([]string{def.Name}, def.Aliases...) {
		if c, taken := names[n]; taken {
			return fmt.Errorf("register key distribution %q: name %q is taken by %q", def.Name, n, c)
		}
	}
	for _, n := range append([]string{def.Name}, def.Aliases...) {
		names[n] = def.Name
	}
	defs = append(defs, def)
	return nil
}

// MustRegister is Register for init functions: it panics on error, which can only be a
// programming mistake found the first time the binary starts.
func MustRegister(def Definition) {
	if err := Register(def); err != nil {
		panic(err)
	}
}

func checkName(n string) error {
	if n == "" {
		return errors.New("empty name")
	}
	for i, c := range n {
		letter := c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_')) {
			return fmt.Errorf("name %q: a lower-case letter, then lower-case letters, digits and '_'", n)
		}
	}
	return nil
}

// Lookup returns the distribution registered under name or one of its aliases, case
// and surrounding blanks ignored.
func Lookup(name string) (Definition, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := names[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Definition{}, false
	}
	for _, d := range defs {
		if d.Name == c {
			return d, true
		}
	}
	return Definition{}, false
}

// All returns the registered distributions in registration order.
func All() []Definition {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(defs)
}

// Names returns every accepted name in registration order, each distribution's aliases
// right after its name: the allowed values of workload.pattern.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
		out = append(out, d.Aliases...)
	}
	return out
}

// Schema returns the distribution's options (empty without any), for listings and
// forms.
func (d Definition) Schema() ([]driver.Option, error) {
	if d.NewOptions == nil {
		return nil, nil
	}
	return driver.Schema(d.NewOptions())
}

// Options returns the distribution's options struct with the defaults applied, then the
// given values (text, by option name or alias), checked against the tags and the struct's
// Validate method. Errors are driver.FieldErrors naming the options; on error nothing is
// returned. Without options (NewOptions nil) any value is an error.
func (d Definition) Options(values map[string]string) (any, error) {
	if d.NewOptions == nil {
		if len(values) == 0 {
			return nil, nil
		}
		var errs driver.FieldErrors
		for _, n := range slices.Sorted(maps.Keys(values)) {
			errs = append(errs, &driver.FieldError{Field: n, Unknown: true, Allowed: "none: pattern " + d.Name + " has no options"})
		}
		return nil, errs
	}
	opts := d.NewOptions()
	if err := driver.ApplyDefaults(opts); err != nil {
		return nil, err
	}
	if err := driver.Set(opts, values); err != nil {
		return nil, err
	}
	if err := driver.Validate(opts); err != nil {
		return nil, err
	}
	return opts, nil
}

// Validate checks the keyspace and the option values as Build would, without building.
func (d Definition) Validate(ks Keyspace, values map[string]string) error {
	_, err := d.check(ks, values)
	return err
}

func (d Definition) check(ks Keyspace, values map[string]string) (any, error) {
	var errs driver.FieldErrors
	if ks.NumKeys < 1 {
		errs = append(errs, &driver.FieldError{Field: "numKeys", Value: fmt.Sprint(ks.NumKeys), Allowed: "an integer >= 1"})
	}
	opts, err := d.Options(values)
	if err != nil {
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			return nil, err
		}
		errs = append(errs, fes...)
	}
	if len(errs) == 0 && d.Check != nil {
		if err := d.Check(ks, opts); err != nil {
			return nil, err
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return opts, nil
}

// Build validates the keyspace and the option values and returns the distribution's
// generator. Errors name the options (or numKeys).
func (d Definition) Build(ks Keyspace, values map[string]string) (Generator, error) {
	opts, err := d.check(ks, values)
	if err != nil {
		return nil, err
	}
	g, err := d.New(ks, opts)
	if err != nil {
		return nil, fmt.Errorf("build key distribution %s: %w", d.Name, err)
	}
	if g == nil {
		return nil, fmt.Errorf("build key distribution %s: New returned no generator", d.Name)
	}
	return g, nil
}
