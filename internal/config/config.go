// Package config builds ndbench's typed, validated configuration from layered sources:
// built-in defaults < workload preset < config file (YAML, or NDBench .properties) < NDBENCH_* environment <
// runtime overrides (--set, API). Every effective value remembers which source set it, an
// invalid layer leaves nothing applied, and a Store swaps whole snapshots atomically and
// tells subscribers which keys changed.
package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/workload"
)

// Config is the typed, validated configuration.
type Config struct {
	DriverName string
	// Drivers holds the raw option values set for every driver, keyed by driver name and
	// canonical option name (options of unregistered drivers keep the name as written).
	Drivers  map[string]map[string]string
	Workload Workload
	// DriverOptions is the decoded options struct of the selected driver (from
	// driver.NewOptions), ready for driver.Open.
	DriverOptions any
}

// Entry is one effective key with its value and the source that set it. Its JSON keys
// are the API's (api.ConfigEntry): reports and `ndbench config --json` write it as is.
type Entry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`  // driver.Redacted when Secret and set
	Source string `json:"source"` // "default", "file config.yaml", "env NDBENCH_X", "--set", ...
	Secret bool   `json:"secret"`
}

// Snapshot is one immutable, validated configuration. Treat it as read-only: a Store hands
// the same snapshot to every reader.
type Snapshot struct {
	Config  Config
	Version uint64
	// Entries lists every effective key, including defaults, sorted by key.
	Entries []Entry
	// Notices are things the user should know that are not errors: options for drivers that
	// are not selected or not in this build, NDBench properties without an equivalent.
	Notices []string

	layers []Layer
	values map[string]string // effective values, unredacted, for diffs
}

// Value returns the effective value of key and the source that set it. Secret values come
// back redacted, as in Entries.
func (s *Snapshot) Value(key string) (value, source string, ok bool) {
	i := sort.Search(len(s.Entries), func(i int) bool { return s.Entries[i].Key >= key })
	if i < len(s.Entries) && s.Entries[i].Key == key {
		return s.Entries[i].Value, s.Entries[i].Source, true
	}
	return "", "", false
}

// Sources are the inputs of Load. The config file is read by package config/source
// (FileLayer, or its Load), which holds every source that needs a parser or a client
// library, so that what imports this package (the engine, reports) does not link them.
type Sources struct {
	// Preset is the layer of a workload preset (LayerPreset, package config/presets); nil
	// when there is none.
	Preset *Layer
	// PresetErrors are the keys a preset file's reader rejected, reported like FileErrors.
	PresetErrors driver.FieldErrors
	// File is the config file's layer; nil when there is none.
	File *Layer
	// FileErrors are the keys the file's reader rejected; they are reported with every
	// other bad key.
	FileErrors driver.FieldErrors
	Env        []string // os.Environ() form; only NDBENCH_* variables are read
	Sets       []string // --set arguments, "key=value"
	// SetOrigins labels keys of Sets that a command's own flag gave (driver.name: "flag
	// --driver"). The label is the layer's, not the first snapshot's, so the effective
	// configuration keeps naming the flag after later changes rebuild it.
	SetOrigins map[string]string
}

// Load builds the first snapshot (Version 1) from the defaults and the given sources. On
// any bad key or value it returns driver.FieldErrors naming all of them, each with its
// value, source and what is allowed.
func Load(s Sources) (*Snapshot, error) {
	layers := []Layer{DefaultsLayer()}
	var errs driver.FieldErrors
	if s.Preset != nil {
		errs = append(errs, s.PresetErrors...)
		layers = append(layers, *s.Preset)
	}
	if s.File != nil {
		errs = append(errs, s.FileErrors...)
		layers = append(layers, *s.File)
	}
	env, fes := EnvLayer(s.Env)
	errs = append(errs, fes...)
	layers = append(layers, env)
	sets, fes := SetsLayer(s.Sets)
	errs = append(errs, fes...)
	for k, o := range s.SetOrigins {
		if _, ok := sets.Values[k]; ok {
			if sets.Origins == nil {
				sets.Origins = map[string]string{}
			}
			sets.Origins[k] = o
		}
	}
	layers = append(layers, sets)
	for _, l := range layers[1:] {
		if err := checkSize(l.Source, len(l.Values)); err != nil {
			return nil, err
		}
	}

	snap, err := Build(layers)
	if err != nil {
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			return nil, err
		}
		errs = append(errs, fes...)
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	snap.Version = 1
	return snap, nil
}

// effective is the winning value of one key.
type effective struct {
	value, source string
	note          string // added to errors about the value (Layer.Notes)
}

// Build merges layers (ordered by their names' precedence, not by position), maps and
// checks every key, decodes the workload and the selected driver's options and validates
// the whole configuration. Errors are driver.FieldErrors naming every bad key. The
// snapshot's Version is left 0 for the caller to set.
func Build(layers []Layer) (*Snapshot, error) {
	ordered := make([]Layer, len(layers))
	copy(ordered, layers)
	sort.SliceStable(ordered, func(i, j int) bool { return rank(ordered[i].Name) < rank(ordered[j].Name) })

	eff := map[string]effective{}
	var errs driver.FieldErrors
	var notices []string
	var foreign foreignKeys
	for _, l := range ordered {
		keys := make([]string, 0, len(l.Values))
		for k := range l.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, raw := range keys {
			origin := l.origin(raw)
			key, value, notice, fe := normalize(raw, l.Values[raw], origin)
			switch {
			case fe != nil:
				addNote(fe, l.Notes[raw])
				errs = append(errs, fe)
			case notice != "":
				notices = append(notices, notice)
				foreign.add(raw, l.Values[raw])
			default:
				if isForeignKey(key) {
					foreign.add(raw, l.Values[raw])
				}
				// Name the spelling the user wrote when it differs, unless the origin
				// already does (env NDBENCH_X).
				if _, named := l.Origins[raw]; !named && !strings.EqualFold(raw, key) {
					origin += " as " + strings.TrimSpace(raw)
				}
				eff[key] = effective{value: value, source: origin, note: l.Notes[raw]}
			}
		}
	}

	if fe := foreign.check(); fe != nil {
		errs = append(errs, fe)
	}

	cfg := Config{Drivers: map[string]map[string]string{}}
	cfg.DriverName = strings.TrimSpace(eff["driver.name"].value)
	if _, ok := driver.Lookup(cfg.DriverName); !ok {
		errs = append(errs, &driver.FieldError{Field: "driver.name", Value: Redact("driver.name", cfg.DriverName),
			Allowed: "a registered driver: " + strings.Join(driver.Names(), ", "), Source: eff["driver.name"].source})
	}

	w, werrs := decodeWorkload(eff)
	errs = append(errs, werrs...)
	cfg.Workload = w
	if def, ok := driver.Lookup(cfg.DriverName); ok && len(werrs) == 0 {
		if fes, ok := driver.AsFieldErrors(w.CheckMixOps(def)); ok {
			for _, fe := range fes {
				fe.Source = eff[fe.Field].source
			}
			errs = append(errs, fes...)
		}
	}
	// Show every option of every op class, defaults included, like a driver's.
	for cls, c := range w.Ops {
		for opt, v := range driver.Values(&c, false) {
			key := "workload.ops." + cls + "." + opt
			if _, set := eff[key]; !set {
				eff[key] = effective{value: v, source: "default"}
			}
		}
	}

	for key, e := range eff {
		rest, ok := strings.CutPrefix(key, "drivers.")
		if !ok {
			continue
		}
		name, opt, _ := strings.Cut(rest, ".")
		if cfg.Drivers[name] == nil {
			cfg.Drivers[name] = map[string]string{}
		}
		cfg.Drivers[name][opt] = e.value
	}
	used := map[string]bool{cfg.DriverName: true}

	values := make(map[string]string, len(eff))
	for k, e := range eff {
		values[k] = e.value
	}
	if def, ok := driver.Lookup(cfg.DriverName); ok {
		opts, err := driver.NewOptions(cfg.DriverName, cfg.Drivers[cfg.DriverName])
		if err != nil {
			errs = append(errs, driverFieldErrors(cfg.DriverName, err, func(key string) string { return eff[key].source })...)
		} else {
			refs, ferrs := composeChildren(cfg.DriverName, opts, cfg.Drivers, func(key string) string { return eff[key].source }, 0)
			errs = append(errs, ferrs...)
			for _, ref := range refs {
				used[ref] = true
				// Show every option of a child too, defaults included.
				if c, ok := childOptions(opts, ref); ok {
					for opt, v := range driver.Values(c, false) {
						key := "drivers." + ref + "." + opt
						if _, set := eff[key]; !set {
							eff[key] = effective{value: v, source: "default"}
							values[key] = v
						}
					}
				}
			}
			cfg.DriverOptions = opts
			if w.Pipeline > 1 && len(werrs) == 0 && (def.Pipelines == nil || !def.Pipelines(opts)) {
				allowed := "1: driver " + def.Name + " sends one operation per round trip"
				if def.Pipelines != nil {
					allowed = "1: driver " + def.Name + " pipelines only in another configuration (see its mode option)"
				}
				errs = append(errs, &driver.FieldError{Field: "workload.pipeline", Value: strconv.Itoa(w.Pipeline),
					Allowed: allowed, Source: eff["workload.pipeline"].source})
			}
			// Show every option of the selected driver, defaults included.
			for opt, v := range driver.Values(opts, false) {
				key := "drivers." + def.Name + "." + opt
				if _, set := eff[key]; !set {
					eff[key] = effective{value: v, source: "default"}
					values[key] = v
				}
			}
		}
	}

	for key := range eff {
		if rest, ok := strings.CutPrefix(key, "drivers."); ok {
			if name, _, _ := strings.Cut(rest, "."); !used[name] {
				notices = append(notices, fmt.Sprintf("%s is not used by driver %s", key, cfg.DriverName))
			}
		}
	}

	if len(errs) > 0 {
		for _, fe := range errs {
			if e, ok := eff[fe.Field]; ok && e.source == fe.Source {
				addNote(fe, e.note)
			}
		}
		sortErrors(errs)
		return nil, errs
	}

	snap := &Snapshot{Config: cfg, Notices: dedupSorted(notices), values: values}
	for k, e := range eff {
		snap.Entries = append(snap.Entries, Entry{Key: k, Value: Redact(k, e.value), Source: e.source, Secret: hidden(k)})
	}
	sort.Slice(snap.Entries, func(i, j int) bool { return snap.Entries[i].Key < snap.Entries[j].Key })
	snap.layers = make([]Layer, len(ordered))
	for i, l := range ordered {
		snap.layers[i] = l.clone()
	}
	return snap, nil
}

// addNote appends note (if any, and not already there) to what fe says is allowed.
func addNote(fe *driver.FieldError, note string) {
	if note == "" || strings.Contains(fe.Allowed, note) {
		return
	}
	if fe.Allowed != "" {
		fe.Allowed += "; "
	}
	fe.Allowed += "note: " + note
}

// DriverOptions validates the options s holds for driver name (registered), as Build
// does for the selected driver, and returns the decoded options. Errors are
// driver.FieldErrors naming drivers.<name>.<option> with the value's source. A node uses
// it for the driver it has connected while driver.name selects another one (see
// Store.Require).
func (s *Snapshot) DriverOptions(name string) (any, error) {
	source := func(key string) string {
		_, src, _ := s.Value(key)
		return src
	}
	opts, err := driver.NewOptions(name, s.Config.Drivers[name])
	if err != nil {
		return nil, driverFieldErrors(name, err, source)
	}
	if _, errs := composeChildren(name, opts, s.Config.Drivers, source, 0); len(errs) > 0 {
		return nil, errs
	}
	return opts, nil
}

// ComposeChildren decodes the children of opts, the options of driver reference ref, when
// they are a driver.Composer (the composite driver): each child's options come from
// drivers.<child reference>.*, are validated like a selected driver's, and are handed to
// opts. It is what Build does for the selected driver, for a node that decodes a driver's
// options itself (Instance.Init with options given in the request).
func (s *Snapshot) ComposeChildren(ref string, opts any) error {
	if _, errs := composeChildren(ref, opts, s.Config.Drivers, func(key string) string {
		_, src, _ := s.Value(key)
		return src
	}, 0); len(errs) > 0 {
		return errs
	}
	return nil
}

// composeChildren decodes and hands over the children of opts (see ComposeChildren), to
// any depth, and returns every child reference it used. Errors name
// drivers.<ref>.<option> (or drivers.<parent>.<option> naming the child) with the source.
func composeChildren(ref string, opts any, drivers map[string]map[string]string, source func(key string) string, depth int) ([]string, driver.FieldErrors) {
	c, ok := opts.(driver.Composer)
	if !ok {
		return nil, nil
	}
	if depth >= maxComposeDepth {
		return nil, driver.FieldErrors{{Field: "drivers." + ref, Allowed: fmt.Sprintf("compositions nest at most %d deep (does one refer to itself?)", maxComposeDepth)}}
	}
	for _, child := range c.Children() {
		if base, _ := driver.SplitRef(child); base == ref || child == ref {
			key := refOption(ref, opts, child)
			return nil, driver.FieldErrors{{Field: key, Value: child, Source: source(key),
				Allowed: "another driver than " + ref + " itself (a composition cannot contain itself)"}}
		}
	}
	var used []string
	var errs driver.FieldErrors
	for _, child := range c.Children() {
		if err := driver.CheckRef(child); err != nil {
			key := refOption(ref, opts, child)
			errs = append(errs, &driver.FieldError{Field: key, Value: child, Allowed: err.Error(), Source: source(key)})
			continue
		}
		name, _ := driver.SplitRef(child)
		co, err := driver.NewOptions(name, drivers[child])
		if err != nil {
			errs = append(errs, driverFieldErrors(child, err, source)...)
			continue
		}
		used = append(used, child)
		sub, serrs := composeChildren(child, co, drivers, source, depth+1)
		used = append(used, sub...)
		errs = append(errs, serrs...)
		c.SetChild(child, co)
	}
	return used, errs
}

// refOption returns the key of the option of driver ref whose value is the child
// reference child (drivers.composite.cache), for errors about the reference.
func refOption(ref string, opts any, child string) string {
	for opt, v := range driver.Values(opts, false) {
		if strings.EqualFold(v, child) {
			return "drivers." + ref + "." + opt
		}
	}
	return "drivers." + ref
}

// maxComposeDepth bounds how deep compositions nest.
const maxComposeDepth = 4

// childOptions finds the options of child ref anywhere under opts.
func childOptions(opts any, ref string) (any, bool) {
	c, ok := opts.(driver.Composer)
	if !ok {
		return nil, false
	}
	for _, child := range c.Children() {
		co := c.Child(child)
		if co == nil {
			continue
		}
		if child == ref {
			return co, true
		}
		if found, ok := childOptions(co, ref); ok {
			return found, true
		}
	}
	return nil, false
}

// driverFieldErrors turns an error of driver.NewOptions for driver name into field errors
// on drivers.<name>.<option>, each with the source source(key) reports.
func driverFieldErrors(name string, err error, source func(key string) string) driver.FieldErrors {
	fes, isField := driver.AsFieldErrors(err)
	if !isField {
		fes = driver.FieldErrors{{Allowed: err.Error()}}
	}
	out := make(driver.FieldErrors, 0, len(fes))
	for _, fe := range fes {
		key := "drivers." + name
		if fe.Field != "" {
			key += "." + fe.Field
		}
		out = append(out, &driver.FieldError{Field: key, Value: Redact(key, fe.Value), Allowed: fe.Allowed, Source: source(key)})
	}
	return out
}

// decodeWorkload parses the workload.* values and validates the result, naming the source
// of each bad value.
func decodeWorkload(eff map[string]effective) (Workload, driver.FieldErrors) {
	vals := map[string]string{}
	classVals := map[string]map[string]string{}
	for k, e := range eff {
		opt, ok := strings.CutPrefix(k, "workload.")
		if !ok {
			continue
		}
		if cls, copt, ok := cutOpsKey(opt); ok {
			if classVals[cls] == nil {
				classVals[cls] = map[string]string{}
			}
			classVals[cls][copt] = e.value
			continue
		}
		vals[opt] = e.value
	}
	if p, ok := vals["pattern"]; ok {
		vals["pattern"] = strings.ToLower(strings.TrimSpace(p)) // NDBench writes ZIPFIAN too
	}
	w := DefaultWorkload()
	var fes driver.FieldErrors
	if err := driver.Set(&w, vals); err != nil {
		fes, _ = driver.AsFieldErrors(err)
		for _, fe := range fes {
			fe.Field = "workload." + fe.Field
		}
		// The pattern has no enum tag (the registered patterns are not known to a tag),
		// so Validate, which does not run after these errors, would be the first to see
		// an unknown one: report it beside them, every mistake at once.
		if p, ok := vals["pattern"]; ok {
			if _, known := workload.CanonicalPattern(p); !known {
				fes = append(fes, &driver.FieldError{Field: "workload.pattern", Value: p, Allowed: strings.Join(workload.Patterns(), ", ")})
			}
		}
	}
	for _, cls := range slices.Sorted(maps.Keys(classVals)) {
		c := DefaultOpClass()
		if err := driver.Set(&c, classVals[cls]); err != nil {
			cfes, _ := driver.AsFieldErrors(err)
			for _, fe := range cfes {
				fe.Field = "workload.ops." + cls + "." + fe.Field
			}
			fes = append(fes, cfes...)
			continue
		}
		if w.Ops == nil {
			w.Ops = map[string]OpClass{}
		}
		w.Ops[cls] = c
	}
	if len(fes) == 0 {
		w.Pattern = canonicalPattern(w.Pattern)
		if err := w.Validate(); err != nil {
			fes, _ = driver.AsFieldErrors(err)
		}
	}
	for _, fe := range fes {
		fe.Source = eff[fe.Field].source
		fe.Value = Redact(fe.Field, fe.Value)
	}
	return w, fes
}

// allowedKeys describes the accepted key forms, for unknown-key errors.
const allowedKeys = "driver.name, drivers.<driver>.<option>, workload.<option>, workload.ops.<class>.<option> or ndbench.config.<property>"

// cutOpsKey splits "ops.<class>.<option>" (a workload key without its "workload."
// prefix) into class and option.
func cutOpsKey(rest string) (class, opt string, ok bool) {
	r, ok := cutPrefixFold(rest, "ops.")
	if !ok {
		return "", "", false
	}
	class, opt, ok = strings.Cut(r, ".")
	return class, opt, ok && opt != ""
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if hasPrefixFold(s, prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// normalize maps a key as written onto its canonical form, or returns a notice (an NDBench
// property without an equivalent) or a field error (an unknown key or option).
func normalize(raw, value, origin string) (key, val, notice string, fe *driver.FieldError) {
	k := strings.TrimSpace(raw)
	bad := func(allowed string) (string, string, string, *driver.FieldError) {
		// An unknown key: its value may be a secret under a misspelt name.
		return "", "", "", &driver.FieldError{Field: k, Value: driver.Shown(true, value), Allowed: allowed, Source: origin, Unknown: true}
	}
	if hasPrefixFold(k, NDBenchPrefix) {
		mapped, v, unsupported, ok := mapNDBench(k, value)
		if !ok {
			return bad("an NDBench property " + NDBenchPrefix + "<name> with name one of " +
				strings.Join(ndbenchCoreNames(), ", ") + ", or " + NDBenchPrefix + "<plugin>.<option>")
		}
		if unsupported != "" {
			return "", "", k + " is not supported: " + unsupported, nil
		}
		if mapped == "" {
			return "", "", autoTuneNotice(k), nil
		}
		k, value = mapped, v
	}
	section, rest, _ := strings.Cut(k, ".")
	switch strings.ToLower(section) {
	case "driver":
		// "driver: memory" in YAML is shorthand for driver.name.
		if rest == "" || strings.EqualFold(rest, "name") {
			return "driver.name", value, "", nil
		}
		return bad("driver.name")
	case "workload":
		if cls, opt, ok := cutOpsKey(rest); ok {
			if err := checkClassName(cls); err != nil {
				return bad("workload.ops.<class>.<option> with an op class name: " + err.Error())
			}
			schema := opClassSchema()
			if c, ok := driver.Canonical(schema, opt); ok {
				return "workload.ops." + cls + "." + c, value, "", nil
			}
			return bad(didYouMean(opt, schema) + "one of the op class options " + strings.Join(optionNames(schema), ", "))
		}
		schema := workloadSchema()
		if c, ok := driver.Canonical(schema, rest); ok {
			return "workload." + c, value, "", nil
		}
		return bad(didYouMean(rest, schema) + "one of the workload options " + strings.Join(optionNames(schema), ", "))
	case "drivers":
		name, opt, _ := strings.Cut(rest, ".")
		if name == "" || opt == "" {
			return bad("drivers.<driver>.<option>")
		}
		name = strings.ToLower(name)
		base, _ := driver.SplitRef(name)
		def, registered := driver.Lookup(base)
		if !registered {
			return "drivers." + name + "." + opt, value, "", nil
		}
		if name != base {
			if err := driver.CheckRef(name); err != nil {
				return bad(err.Error())
			}
		}
		schema, err := driverSchema(def)
		if err != nil {
			return bad(err.Error())
		}
		if c, ok := driver.Canonical(schema, opt); ok {
			return "drivers." + name + "." + c, value, "", nil
		}
		return bad(didYouMean(opt, schema) + "one of the options of driver " + name + ": " + strings.Join(optionNames(schema), ", "))
	}
	return bad(sectionHint(section) + allowedKeys)
}

// sectionHint returns "did you mean workload.? " (or drivers., driver.) when section is a
// plausible typo of a key's first part, and "" otherwise: `worklaod.readRate` should not
// leave the user reading the list of key forms to find the misspelling.
func sectionHint(section string) string {
	best, bestD := "", 3
	for _, cand := range []string{"workload", "drivers", "driver", "ndbench"} {
		if d := editDistance(strings.ToLower(section), cand); d < bestD && d <= len(cand)/3 {
			best, bestD = cand, d
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean " + best + ".? "
}

// didYouMean returns "did you mean X? " for the option (or alias) of schema closest to a
// mistyped name, when one is close enough to be a typo, and "" otherwise.
func didYouMean(name string, schema []driver.Option) string {
	best, bestD := "", -1
	for _, o := range schema {
		for _, cand := range append([]string{o.Name}, o.Aliases...) {
			d := editDistance(strings.ToLower(name), strings.ToLower(cand))
			if bestD < 0 || d < bestD {
				best, bestD = o.Name, d
			}
		}
	}
	// Two edits, or a third of the name for long names: a typo, not another word.
	if bestD < 0 || bestD > max(2, len(name)/3) {
		return ""
	}
	return "did you mean " + best + "? "
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func optionNames(schema []driver.Option) []string {
	names := make([]string, len(schema))
	for i, o := range schema {
		names[i] = o.Name
	}
	return names
}

// Redact returns the value of a configuration key as ndbench shows it everywhere: in
// errors, config entries (ndbench config, the API, the UI), reports and logs. The values of
// secret options and of keys this build does not know (a misspelt option may be a
// password; an option of a driver not in the build may be one under any name) show as
// driver.Redacted; any other value keeps its text without the passwords of the URLs in
// it (driver.Shown). key may be written any way the loader accepts (aliases, NDBench
// property names, any case). Every output path calls this one function.
func Redact(key, value string) string {
	return driver.Shown(hidden(key), value)
}

// hidden reports whether the whole value of key must be hidden: it names a secret option
// or no option this build knows.
func hidden(key string) bool {
	c, _, notice, fe := normalize(key, "", "")
	if fe != nil || notice != "" || c == "" {
		return true
	}
	return isSecretKey(c)
}

// isSecretKey reports whether the value of a canonical key is a secret: an option marked
// secret in a registered driver's schema, or any option of a driver not in this build,
// whose schema (and so which of its options are credentials) is unknown.
func isSecretKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "drivers.")
	if !ok {
		return false
	}
	name, opt, _ := strings.Cut(rest, ".")
	base, _ := driver.SplitRef(name)
	def, registered := driver.Lookup(base)
	if !registered {
		return true
	}
	schema, err := driverSchema(def)
	if err != nil {
		return true
	}
	for _, o := range schema {
		if o.Name == opt {
			return o.Secret
		}
	}
	return true
}

func sortErrors(errs driver.FieldErrors) {
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Field != errs[j].Field {
			return errs[i].Field < errs[j].Field
		}
		return errs[i].Source < errs[j].Source
	})
}

func dedupSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// MaxForeignKeys and MaxForeignBytes bound the keys a configuration keeps that this build
// cannot check: options of drivers it does not have (a file shared with a build that has
// more) and NDBench properties without an equivalent. Every other key is an option of a
// schema, so bounded by it; these are kept as written, and without a bound each PATCH
// could add a thousand more (40 PATCHes kept 40,000 keys, and every later change, which
// rebuilds the whole configuration, took most of a second). Generous for any real file:
// every option of every driver is a few hundred keys.
const (
	MaxForeignKeys  = 1000
	MaxForeignBytes = 256 << 10
)

// foreignKeys counts the keys of a configuration that no schema bounds (isForeignKey, and
// NDBench properties noticed as unsupported), and their size, over every layer.
type foreignKeys struct {
	n, bytes int
	first    string // the first such key, to name in the error
}

func (f *foreignKeys) add(key, value string) {
	if f.n == 0 {
		f.first = strings.TrimSpace(key)
	}
	f.n++
	f.bytes += len(key) + len(value)
}

// check returns the error for a configuration over the bounds, or nil.
func (f *foreignKeys) check() *driver.FieldError {
	if f.n <= MaxForeignKeys && f.bytes <= MaxForeignBytes {
		return nil
	}
	field := "drivers"
	if name, _, ok := strings.Cut(strings.TrimPrefix(f.first, "drivers."), "."); ok && strings.HasPrefix(f.first, "drivers.") {
		field = "drivers." + name
	}
	return &driver.FieldError{Field: field, Value: fmt.Sprintf("%d keys, %s", f.n, driver.Size(f.bytes)),
		Allowed: fmt.Sprintf("at most %d keys and %s in all (names and values, every source together) of options of drivers this build does not have and NDBench properties it does not support (its drivers: %s): remove some, or use a build with the driver",
			MaxForeignKeys, driver.Size(MaxForeignBytes), strings.Join(driver.Names(), ", "))}
}

// isForeignKey reports whether canonical key is an option of a driver this build does not
// have.
func isForeignKey(key string) bool {
	rest, ok := strings.CutPrefix(key, "drivers.")
	if !ok {
		return false
	}
	name, _, _ := strings.Cut(rest, ".")
	base, _ := driver.SplitRef(name)
	_, registered := driver.Lookup(base)
	return !registered
}
