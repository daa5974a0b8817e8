package driver

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Composer is implemented by the options of a driver built from other drivers, like the
// composite driver (a cache in front of a database, a primary and its replica). Each child
// is a driver reference: a registered driver's name ("memcached"), or a name and an
// instance ("redis@replica") so that one driver can serve twice with different options.
// A child's options are configured under drivers.<reference>.<option> like any driver's,
// validated with the rest of the configuration, and handed to SetChild before Init.
type Composer interface {
	// Children returns the references of the children these options use, in a fixed
	// order. It is called on validated options.
	Children() []string
	// SetChild gives the decoded options of child ref (a pointer from the child driver's
	// NewOptions). The options keep them: they are part of what Init receives.
	SetChild(ref string, opts any)
	// Child returns what SetChild gave for ref, or nil.
	Child(ref string) any
}

// SplitRef splits a driver reference into the driver's name and the instance ("" when
// there is none): "redis@replica" is driver redis, instance replica.
func SplitRef(ref string) (name, instance string) {
	name, instance, _ = strings.Cut(ref, "@")
	return name, instance
}

// CheckRef reports whether ref names a registered driver, with an optional instance of
// letters, digits, '-' and '_'. It names the allowed values when it fails.
func CheckRef(ref string) error {
	name, inst := SplitRef(ref)
	if _, ok := Lookup(name); !ok {
		return fmt.Errorf("driver reference %q: want a registered driver (%s), optionally with @instance", ref, strings.Join(Names(), ", "))
	}
	if strings.Contains(ref, "@") {
		if inst == "" || len(inst) > 32 {
			return fmt.Errorf("driver reference %q: the instance after @ must have 1 to 32 letters, digits, '-' or '_'", ref)
		}
		for _, r := range inst {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("driver reference %q: the instance after @ must have 1 to 32 lower-case letters, digits, '-' or '_'", ref)
			}
		}
	}
	return nil
}

// NewComposedOptions decodes the options of driver name from values[name] and, when they
// are a Composer, each child's from values[child reference], nested to any depth a child
// allows. It is NewOptions for drivers built from others; ndbench's configuration does the
// same with every value's source named in its errors.
func NewComposedOptions(name string, values map[string]map[string]string) (any, error) {
	return newComposed(name, name, values, 0)
}

// maxComposeDepth bounds nesting, so a composition that refers to itself is an error, not
// a loop.
const maxComposeDepth = 4

func newComposed(ref, name string, values map[string]map[string]string, depth int) (any, error) {
	if depth > maxComposeDepth {
		return nil, fmt.Errorf("driver %s: compositions nest at most %d deep (does one refer to itself?)", ref, maxComposeDepth)
	}
	opts, err := NewOptions(name, values[ref])
	if err != nil {
		return nil, err
	}
	c, ok := opts.(Composer)
	if !ok {
		return opts, nil
	}
	for _, child := range c.Children() {
		if err := CheckRef(child); err != nil {
			return nil, err
		}
		base, _ := SplitRef(child)
		co, err := newComposed(child, base, values, depth+1)
		if err != nil {
			return nil, fmt.Errorf("child %s of driver %s: %w", child, ref, err)
		}
		c.SetChild(child, co)
	}
	return opts, nil
}

// Measurer is implemented by drivers that measure something besides the latency of their
// own operations: the composite driver's visibility lag (the time until a write to a
// primary can be read from a derived store) and the latency of each child. Each name
// becomes a series of its own in the statistics, shown like an op class: per-second
// percentiles in the UI, Prometheus, reports and HDR logs.
type Measurer interface {
	// Measures names the series, valid series names (letters, digits, '_', '-', '.',
	// starting with a letter). Called after Init.
	Measures() []string
	// SetSinks gives one Sink per name of Measures, in that order, before any load runs.
	// The sinks stay valid until Close, across statistics resets.
	SetSinks(sinks []Sink)
}

// Sink records measurements of one series. Its methods are safe for concurrent use and
// cheap (a lock and a histogram increment).
type Sink interface {
	// Observe records one measured duration.
	Observe(d time.Duration)
	// Fail counts a measurement that could not complete, by class (a value that never
	// became visible before the deadline is ClassTimeout).
	Fail(c Class)
}

// Deleter is implemented by drivers that can delete a key, which a cache in front of a
// database needs to invalidate on writes. Deleting a missing key is not an error.
type Deleter interface {
	Delete(ctx context.Context, key string) error
}
