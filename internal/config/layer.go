package config

import (
	"slices"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// Layer names, lowest precedence first. A layer with another name (a future source) sits
// between env and runtime.
const (
	LayerDefault = "default"
	// LayerPreset holds a workload preset (--workload): above the defaults it replaces,
	// below the file, env and --set a user tunes it with.
	LayerPreset  = "preset"
	LayerFile    = "file"
	LayerEnv     = "env"
	LayerEtcd    = "etcd"
	LayerRuntime = "runtime"
	// LayerFleet holds a fleet coordinator's fleet-scope values in its view of the fleet's
	// configuration: above everything the coordinator node itself was started with, so a
	// fleet value always wins there. A node's own store never has it (the coordinator
	// patches nodes through their runtime layer).
	LayerFleet = "fleet"
)

// Layer is one source of configuration: a name that fixes its precedence and a flat map of
// values. Keys are canonical keys in any case ("workload.readRate", "drivers.redis.addrs"),
// NDBench aliases ("workload.numReaders") or NDBench property names
// ("ndbench.config.readRateLimit"); the loader maps and checks them, so a new source only
// has to produce this map.
type Layer struct {
	Name    string            // precedence: LayerDefault, LayerPreset, LayerFile, LayerEnv, LayerEtcd, LayerRuntime, ...
	Source  string            // how its values are labelled: "file config.yaml", "--set", "default"
	Values  map[string]string // key -> value, as the source wrote them
	Origins map[string]string // optional per-key label overriding Source, e.g. "env NDBENCH_X"
	// Notes are optional per-key explanations added to any error about the key's value,
	// e.g. that a .properties value holds what looks like an inline comment.
	Notes map[string]string
}

// rank orders layers: unknown names (future sources) go between etcd and runtime.
func rank(name string) int {
	switch name {
	case LayerDefault:
		return 0
	case LayerPreset:
		return 5
	case LayerFile:
		return 10
	case LayerEnv:
		return 20
	case LayerEtcd:
		return 30
	case LayerRuntime:
		return 50
	case LayerFleet:
		return 60
	}
	return 40
}

// origin returns the label of key in l.
func (l Layer) origin(key string) string {
	if o, ok := l.Origins[key]; ok {
		return o
	}
	if l.Source != "" {
		return l.Source
	}
	return l.Name
}

func (l Layer) clone() Layer {
	c := Layer{Name: l.Name, Source: l.Source, Values: make(map[string]string, len(l.Values))}
	for k, v := range l.Values {
		c.Values[k] = v
	}
	if l.Origins != nil {
		c.Origins = make(map[string]string, len(l.Origins))
		for k, v := range l.Origins {
			c.Origins[k] = v
		}
	}
	if l.Notes != nil {
		c.Notes = make(map[string]string, len(l.Notes))
		for k, v := range l.Notes {
			c.Notes[k] = v
		}
	}
	return c
}

// DefaultDriver is the driver used when driver.name is not set: embedded, so a first run
// needs no server.
const DefaultDriver = "pebble"

// DefaultsLayer returns the built-in defaults: driver.name and every workload option.
// Driver options take their defaults from the driver's own schema.
func DefaultsLayer() Layer {
	l := Layer{Name: LayerDefault, Source: "default", Values: map[string]string{"driver.name": DefaultDriver}}
	for _, o := range workloadSchema() {
		l.Values["workload."+o.Name] = o.Default
	}
	return l
}

// EnvPrefix starts every environment variable ndbench reads.
const EnvPrefix = "NDBENCH_"

// ReservedEnv returns the NDBENCH_* variables that are not configuration keys (read by other
// parts of ndbench or by its tooling); the environment layer ignores them instead of
// rejecting them as unknown.
func ReservedEnv() []string {
	return []string{"NDBENCH_TOKEN", "NDBENCH_ETCD_PASSWORD", "NDBENCH_CASSANDRA_HOME", "NDBENCH_CACHE", "NDBENCH_RESULTS"}
}

// EnvLayer maps NDBENCH_* variables (os.Environ form) onto keys: NDBENCH_ + key upper-cased
// with '.' as '_' (NDBENCH_WORKLOAD_READRATE, NDBENCH_DRIVERS_REDIS_ADDRS), matched without
// regard to case or underscores against known keys, options and aliases;
// NDBENCH_CONFIG_<property> takes NDBench core property names. Unknown variables come back
// as field errors.
func EnvLayer(env []string) (Layer, driver.FieldErrors) {
	l := Layer{Name: LayerEnv, Source: "env", Values: map[string]string{}, Origins: map[string]string{}}
	var errs driver.FieldErrors
	for _, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		if !strings.HasPrefix(upper, EnvPrefix) || slices.Contains(ReservedEnv(), upper) {
			continue
		}
		key, ok := envKey(upper[len(EnvPrefix):])
		if !ok {
			hint := ""
			if opt, ok := strings.CutPrefix(upper, EnvPrefix+"WORKLOAD_"); ok {
				if h := didYouMean(strings.ReplaceAll(opt, "_", ""), workloadSchema()); h != "" {
					// "did you mean readRate? " as the variable it would be.
					o := strings.TrimSuffix(strings.TrimPrefix(h, "did you mean "), "? ")
					hint = "did you mean " + EnvPrefix + "WORKLOAD_" + strings.ToUpper(o) + "? "
				}
			}
			errs = append(errs, &driver.FieldError{Field: name, Value: driver.Shown(true, v), Unknown: true, // not a key: may be a secret
				Allowed: hint + "NDBENCH_DRIVER_NAME, NDBENCH_WORKLOAD_<option>, NDBENCH_DRIVERS_<driver>_<option>, " +
					"NDBENCH_CONFIG_<NDBench property>, or a reserved variable (" + strings.Join(ReservedEnv(), ", ") + ")",
				Source: "env " + name})
			continue
		}
		l.Values[key] = v
		l.Origins[key] = "env " + name
	}
	return l, errs
}

// squash upper-cases s and drops separators, so WORKLOAD_READ_RATE, WORKLOAD_READRATE and
// workload.readRate compare equal.
func squash(s string) string {
	return strings.ToUpper(strings.NewReplacer("_", "", ".", "", "-", "").Replace(s))
}

// envKey maps an environment variable name without its prefix onto a key.
func envKey(rest string) (string, bool) {
	switch {
	case squash(rest) == "DRIVERNAME" || rest == "DRIVER":
		return "driver.name", true
	case strings.HasPrefix(rest, "WORKLOAD_"):
		if o, ok := squashMatch(workloadSchema(), rest[len("WORKLOAD_"):]); ok {
			return "workload." + o, true
		}
	case strings.HasPrefix(rest, "CONFIG_"):
		want := squash(rest[len("CONFIG_"):])
		for _, n := range ndbenchCoreNames() {
			if squash(n) == want {
				return NDBenchPrefix + n, true
			}
		}
	case strings.HasPrefix(rest, "DRIVERS_"):
		return envDriverKey(rest[len("DRIVERS_"):])
	}
	return "", false
}

// envDriverKey maps <DRIVER>_<OPTION> onto drivers.<driver>.<option>. Registered drivers are
// matched first (their names may contain '-', written '_'); an unknown option of a
// registered driver still maps, so the loader reports it with the driver's options.
// Otherwise the first segment names an unregistered driver.
func envDriverKey(rest string) (string, bool) {
	for _, name := range driver.Names() {
		p := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name)) + "_"
		if !strings.HasPrefix(rest, p) || len(rest) == len(p) {
			continue
		}
		optPart := rest[len(p):]
		if def, ok := driver.Lookup(name); ok {
			if schema, err := driverSchema(def); err == nil {
				if o, ok := squashMatch(schema, optPart); ok {
					return "drivers." + name + "." + o, true
				}
			}
		}
		return "drivers." + name + "." + strings.ToLower(optPart), true
	}
	name, opt, ok := strings.Cut(rest, "_")
	if !ok || name == "" || opt == "" {
		return "", false
	}
	return "drivers." + strings.ToLower(name) + "." + strings.ToLower(opt), true
}

// squashMatch finds the option whose name or alias equals s, ignoring case and separators.
func squashMatch(schema []driver.Option, s string) (string, bool) {
	want := squash(s)
	for _, o := range schema {
		if squash(o.Name) == want {
			return o.Name, true
		}
		for _, a := range o.Aliases {
			if squash(a) == want {
				return o.Name, true
			}
		}
	}
	return "", false
}

// SetsLayer parses --set arguments ("key=value") into the runtime layer.
func SetsLayer(sets []string) (Layer, driver.FieldErrors) {
	l := Layer{Name: LayerRuntime, Source: "--set", Values: map[string]string{}}
	var errs driver.FieldErrors
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			// Name what looks like the key and hide the rest: "drivers.redis.password
			// s3cret" (a blank for the =) still carries the password.
			field, rest, _ := strings.Cut(strings.TrimSpace(s), " ")
			if !ok {
				v = rest
			}
			if field == "" || k == "" {
				field = "--set"
			}
			errs = append(errs, &driver.FieldError{Field: field, Value: driver.Shown(true, strings.TrimSpace(v)),
				Allowed: "key=value, e.g. workload.readRate=500", Source: "--set"})
			continue
		}
		l.Values[k] = v
	}
	return l, errs
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
