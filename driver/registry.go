package driver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Definition describes a driver to the registry.
type Definition struct {
	// Name is what users pass as driver.name (lower case, no spaces).
	Name string
	// Summary is one line shown in listings.
	Summary string
	// NewOptions returns a pointer to a new, zero options struct; the registry applies the
	// defaults from its tags.
	NewOptions func() any
	// New returns a new, uninitialised driver.
	New func() Driver
	// Operations are the operations the driver offers beyond Read and Write, if any; its
	// driver then implements Operator. Declaring them here (not on an instance) lets the
	// configuration be checked against them before any store is connected.
	Operations []Operation
	// Series names every series the driver may measure itself (Measurer), whatever its
	// options, so that the configuration refuses an op class of the same name (or of the
	// part before the first '.') instead of recording both as one.
	Series []string
	// Pipelines, for a driver that implements Pipeliner, reports whether it gives pipelines
	// with the given options (a pointer from NewOptions), so workload.pipeline above 1 is
	// refused when the configuration is written, not when the engine starts. nil means
	// never.
	Pipelines func(opts any) bool
	// InProcess says the store lives inside the ndbench process (memory, pebble): its
	// workers hold no connections or sockets, so what a run needs of the open-file limit
	// does not grow with its workers.
	InProcess bool
}

// The registry is the one piece of global mutable state ndbench allows: drivers add
// themselves from init, before main runs, and it is only read afterwards.
var (
	registryMu sync.RWMutex
	registry   = map[string]Definition{}
)

// Register adds a driver. It fails on an empty or duplicate name, a missing constructor, an
// options struct whose tags do not parse, or defaults its Validate method rejects.
func Register(def Definition) error {
	if def.Name == "" || strings.ContainsAny(def.Name, " \t.=") {
		return fmt.Errorf("register driver %q: name must be non-empty without spaces, dots or '='", def.Name)
	}
	if def.New == nil || def.NewOptions == nil {
		return fmt.Errorf("register driver %q: New and NewOptions are required", def.Name)
	}
	if err := checkOperations(def); err != nil {
		return fmt.Errorf("register driver %q: %w", def.Name, err)
	}
	opts := def.NewOptions()
	if err := ApplyDefaults(opts); err != nil {
		return fmt.Errorf("register driver %q: %w", def.Name, err)
	}
	// Defaults that break the driver's own rules would make every configuration that does
	// not override them invalid.
	if err := Validate(opts); err != nil {
		return fmt.Errorf("register driver %q: defaults: %w", def.Name, err)
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[def.Name]; dup {
		return fmt.Errorf("register driver %q: already registered", def.Name)
	}
	registry[def.Name] = def
	return nil
}

// MustRegister is Register for use from init functions, where a failure is a programming
// error in the driver package and must stop the binary at start-up.
func MustRegister(def Definition) {
	if err := Register(def); err != nil {
		panic(err)
	}
}

// Lookup returns the definition registered under name.
func Lookup(name string) (Definition, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	def, ok := registry[name]
	return def, ok
}

// Names returns the registered driver names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ErrUnknownDriver is wrapped by errors for driver names that are not registered.
var ErrUnknownDriver = errors.New("unknown driver")

// UnknownDriverError names the requested driver and the registered ones.
func UnknownDriverError(name string) error {
	return fmt.Errorf("%w %q; registered drivers: %s", ErrUnknownDriver, name, strings.Join(Names(), ", "))
}

// NewOptions returns the options of driver name with defaults applied and values set, or
// field errors naming every bad option: values that fail their tags, and then the rules
// of the Validate methods of its option groups and of the options struct itself. The
// error says once which driver the options belong to ("options of driver NAME: ...");
// callers add nothing of the kind.
func NewOptions(name string, values map[string]string) (any, error) {
	def, ok := Lookup(name)
	if !ok {
		return nil, UnknownDriverError(name)
	}
	opts := def.NewOptions()
	if err := ApplyDefaults(opts); err != nil {
		return nil, err
	}
	err := Set(opts, values)
	if err == nil {
		err = checkRules(opts) // the option groups' rules, then the struct's own
	}
	if err != nil {
		return nil, fmt.Errorf("options of driver %s: %w", name, err)
	}
	return opts, nil
}

// Open builds, configures and initialises driver name. It returns the driver and the
// options it was initialised with.
func Open(ctx context.Context, name string, values map[string]string) (Driver, any, error) {
	opts, err := NewOptions(name, values)
	if err != nil {
		return nil, nil, err
	}
	def, _ := Lookup(name)
	d := def.New()
	if err := d.Init(ctx, opts); err != nil {
		_ = d.Close()
		return nil, nil, fmt.Errorf("init driver %s: %w", name, err)
	}
	return d, opts, nil
}

// OptionsAs returns opts as *T, for a driver's Init and Reconfigure.
func OptionsAs[T any](opts any) (*T, error) {
	o, ok := opts.(*T)
	if !ok {
		var want *T
		return nil, fmt.Errorf("options are %T, want %T", opts, want)
	}
	return o, nil
}
