package driver

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options are a plain struct whose exported fields carry tags:
//
//	opt:"name"          the option's name (required; fields without it are ignored)
//	default:"value"     the default, in the same text form a user writes
//	help:"text"         one line for `ndbench drivers`, the API schema and the UI form
//	enum:"a,b,c"        the allowed values of a string option
//	min:"n" max:"n"     bounds of a numeric option (durations in Go syntax, e.g. "1ms")
//	live:"true"         may change while the driver runs (through Reconfigurer)
//	secret:"true"       never echoed: redacted in logs, API output and reports
//	alias:"a,b"         other accepted names, e.g. NDBench's own names for the option
//	reach:"a,b"         the option reaches beyond the configured store (see Reach*): a
//	                    value from an untrusted caller (the REST API, the UI, a fleet
//	                    coordinator) needs the operator's consent (`serve --allow=...`)
//
// Field types: string, bool, int, int64, uint, uint64, float64, time.Duration, Size (bytes,
// written 512MiB or 1GiB), []string (comma-separated in text form). Bounds are only allowed
// on numeric types and must parse as the option's type, with min <= max: Schema rejects
// any other bound rather than leave it unenforced.
//
// A rule that tags cannot express (one option depending on another, a name that must
// match an entry of a list) belongs in a Validate method on the options struct (see
// OptionsValidator): NewOptions calls it, so the rule holds wherever options are built,
// long before a driver's Init.
//
// Option groups: an exported struct field without an opt tag is a group, whose options
// (and groups) are read in its place, as if declared there; TLSOptions, AuthOptions and
// TimeoutOptions (groups.go) are the shared ones. The embedding field's tags adjust the
// group for one driver without touching the group:
//
//	OPTION.KEY:"value"  replaces tag KEY (default, help, min, max, alias, enum, live) of the
//	                    group's option OPTION; an empty value removes a bound or the aliases
//	omit:"a,b"          the driver does not offer these options of the group: they are
//	                    not in the schema and their fields keep the zero value
//
// for example
//
//	Timeouts driver.TimeoutOptions `omit:"timeout" connectTimeout.default:"10s" connectTimeout.alias:"dialTimeout"`
//
// An adjustment naming no option of the group is a schema error. A group's Validate
// method runs wherever the struct's does (see Validate), before it.

// Redacted replaces secret values wherever options are shown.
const Redacted = "<redacted>"

// Option describes one option of a driver, for listings, the API and generated forms.
type Option struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Default string   `json:"default"`
	Help    string   `json:"help"`
	Enum    []string `json:"enum,omitempty"`
	Min     string   `json:"min,omitempty"`
	Max     string   `json:"max,omitempty"`
	Live    bool     `json:"live"`
	Secret  bool     `json:"secret"`
	Aliases []string `json:"aliases,omitempty"`
	// NDBench is the name of the same setting in Netflix NDBench (tag `ndbench`, e.g.
	// "numReaders" or "cli.windowSize"), so its property files, REST routes and UI map
	// onto this option from this one declaration. A name without a dot is also accepted as
	// an alias.
	NDBench string `json:"ndbench,omitempty"`
	// NDBenchSeconds says NDBench gives the value as a number of seconds (tag suffix
	// ",seconds") where this option takes a duration.
	NDBenchSeconds bool `json:"-"`
	// Reach lists what a value of the option can touch beyond the configured store (tag
	// `reach`): ReachPath, ReachScript, ReachTarget. Empty for an option that only
	// shapes the talk with the store.
	Reach []string `json:"reach,omitempty"`

	index []int
}

// What an option can reach beyond the configured store (tag `reach`). A server refuses a
// value of such an option from its API unless its operator allowed that capability at
// start, so a caller of the API cannot make the node read files, run code or send
// requests to hosts its operator did not mean it to.
const (
	// ReachPath: the value names a file or directory the driver reads or writes (a
	// database directory, TLS keys, descriptor files).
	ReachPath = "path"
	// ReachScript: the value is code the node runs, with everything that code may do
	// (HTTP to any URL, any bundled driver with any options).
	ReachScript = "script"
	// ReachTarget: the value is a network address or URL the driver sends requests of the
	// caller's choosing to (an HTTP or gRPC service), as opposed to a store's address it
	// only speaks the store's protocol to.
	ReachTarget = "target"
)

// reachKinds are the values tag reach accepts.
var reachKinds = []string{ReachPath, ReachScript, ReachTarget}

// FieldError is a bad option value: it names the option, the value given and what is
// allowed, so the user can fix it without reading code.
type FieldError struct {
	Field   string // option or config key, e.g. "ttl" or "workload.readRate"
	Value   string // the rejected value (redacted for secrets)
	Allowed string // what would have been accepted
	Source  string // where the value came from, when known (file, env, --set, ...)
	// Unknown marks a key or option that does not exist: the mistake is the name, not
	// the value, which is not shown (under a misspelt name it may be a secret).
	Unknown bool
}

// Error formats the field, value, allowed values and source.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	if e.Unknown {
		b.WriteString(": unknown key (its value is not shown)")
	} else if e.Value != "" {
		fmt.Fprintf(&b, ": invalid value %q", e.Value)
	} else {
		b.WriteString(": invalid")
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " (from %s)", e.Source)
	}
	if e.Allowed != "" {
		fmt.Fprintf(&b, "; allowed: %s", e.Allowed)
	}
	return b.String()
}

// FieldErrors is a list of field errors reported together, so one attempt shows every
// mistake rather than the first.
type FieldErrors []*FieldError

// Error joins the messages, one per line.
func (es FieldErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// schemaCache holds the parsed schema (or error) per options struct type: a type's tags
// never change, and a configuration change looks schemas up for every key it touches.
var schemaCache sync.Map // reflect.Type -> schemaEntry

type schemaEntry struct {
	opts []Option
	err  error
}

// Schema returns the options of an options struct (a pointer to it or the struct itself),
// in field order. Two options sharing a name or an alias are an error. The caller may
// modify the returned slice, not the Enum and Aliases slices of its options.
func Schema(opts any) ([]Option, error) {
	t := reflect.TypeOf(opts)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("options must be a struct or a pointer to one, got %T", opts)
	}
	e, ok := schemaCache.Load(t)
	if !ok {
		s, err := parseSchema(t)
		e, _ = schemaCache.LoadOrStore(t, schemaEntry{s, err})
	}
	se := e.(schemaEntry)
	return slices.Clone(se.opts), se.err
}

// parseSchema reads the options of struct type t from its tags, flattening option groups.
func parseSchema(t reflect.Type) ([]Option, error) {
	out, err := parseFields(t, nil, nil)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, o := range out {
		for _, n := range append([]string{o.Name}, o.Aliases...) {
			if prev, dup := seen[strings.ToLower(n)]; dup {
				return nil, fmt.Errorf("option name %q of %s is also used by %s", n, o.Name, prev)
			}
			seen[strings.ToLower(n)] = o.Name
		}
	}
	return out, nil
}

// parseFields reads the options of struct type t, whose fields sit at prefix in the
// options struct. adj holds the adjustments the embedding fields made to t's options
// (nil at the top level). An exported struct field without an opt tag is an option
// group: its options are read in its place, as if declared there, so a driver embeds
// TLSOptions instead of re-declaring six fields.
func parseFields(t reflect.Type, prefix []int, adj *groupAdjust) ([]Option, error) {
	var out []Option
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		index := append(slices.Clone(prefix), i)
		name, ok := f.Tag.Lookup("opt")
		if !ok {
			if f.Type.Kind() != reflect.Struct {
				continue
			}
			inner, err := parseGroupAdjust(f)
			if err != nil {
				return nil, err
			}
			sub, err := parseFields(f.Type, index, inner.under(adj))
			if err != nil {
				return nil, err
			}
			if err := inner.checkUsed(f, f.Type); err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		if adj.omits(name) {
			continue
		}
		tag := func(key string) string { return adj.tag(name, key, f.Tag) }
		typ, err := typeName(f.Type)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", name, err)
		}
		o := Option{
			Name:    name,
			Type:    typ,
			Default: tag("default"),
			Help:    tag("help"),
			Min:     tag("min"),
			Max:     tag("max"),
			Live:    tag("live") == "true",
			Secret:  f.Tag.Get("secret") == "true",
			index:   index,
		}
		if e := tag("enum"); e != "" {
			o.Enum = strings.Split(e, ",")
		}
		if a := tag("alias"); a != "" {
			o.Aliases = strings.Split(a, ",")
		}
		if r := f.Tag.Get("reach"); r != "" {
			for _, k := range strings.Split(r, ",") {
				if !slices.Contains(reachKinds, k) {
					return nil, fmt.Errorf("option %s: tag reach: %q is not one of %s", name, k, strings.Join(reachKinds, ", "))
				}
				o.Reach = append(o.Reach, k)
			}
		}
		if n := f.Tag.Get("ndbench"); n != "" {
			o.NDBench, o.NDBenchSeconds = strings.CutSuffix(n, ",seconds")
			if !strings.Contains(o.NDBench, ".") && !slices.Contains(o.Aliases, o.NDBench) && o.NDBench != o.Name {
				o.Aliases = append(o.Aliases, o.NDBench)
			}
		}
		if err := checkBoundTags(o); err != nil {
			return nil, fmt.Errorf("option %s: %w", name, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// adjustableTags are the tags an embedding field may set for one option of its group
// (as OPTION.KEY:"value"). secret and reach are not among them: whether a value may be
// shown, and what it can touch beyond the store, are the group's decision, and no driver
// may weaken them.
var adjustableTags = []string{"default", "help", "min", "max", "alias", "enum", "live"}

// groupAdjust is what an embedding field's tags change in its group: per option, tag
// values that replace the group's own (an empty value removes a bound or alias), and the
// options the driver does not offer (omit:"a,b").
type groupAdjust struct {
	tags map[string]map[string]string // option name -> tag key -> value
	omit map[string]bool
}

// parseGroupAdjust reads the OPTION.KEY and omit tags of the embedding field f.
func parseGroupAdjust(f reflect.StructField) (*groupAdjust, error) {
	adj := &groupAdjust{}
	for _, kv := range tagPairs(f.Tag) {
		key, value := kv[0], kv[1]
		if key == "omit" {
			adj.omit = map[string]bool{}
			for _, n := range strings.Split(value, ",") {
				if n = strings.TrimSpace(n); n != "" {
					adj.omit[n] = true
				}
			}
			continue
		}
		opt, k, ok := strings.Cut(key, ".")
		if !ok {
			continue // json:"...", or another package's tag
		}
		if !slices.Contains(adjustableTags, k) {
			return nil, fmt.Errorf("option group %s: tag %s: %s cannot be adjusted (allowed: %s)",
				f.Name, key, k, strings.Join(adjustableTags, ", "))
		}
		if adj.tags == nil {
			adj.tags = map[string]map[string]string{}
		}
		if adj.tags[opt] == nil {
			adj.tags[opt] = map[string]string{}
		}
		adj.tags[opt][k] = value
	}
	return adj, nil
}

// under merges adj with the adjustments of the group containing it: the outer field's
// tags win, as the driver's own declaration is the outermost.
func (adj *groupAdjust) under(outer *groupAdjust) *groupAdjust {
	if outer == nil {
		return adj
	}
	m := &groupAdjust{tags: map[string]map[string]string{}, omit: map[string]bool{}}
	for _, a := range []*groupAdjust{adj, outer} {
		for opt, kv := range a.tags {
			if m.tags[opt] == nil {
				m.tags[opt] = map[string]string{}
			}
			for k, v := range kv {
				m.tags[opt][k] = v
			}
		}
		for n := range a.omit {
			m.omit[n] = true
		}
	}
	return m
}

func (adj *groupAdjust) omits(name string) bool { return adj != nil && adj.omit[name] }

// tag returns the adjusted value of tag key for option name, or the field's own tag.
func (adj *groupAdjust) tag(name, key string, own reflect.StructTag) string {
	if adj != nil {
		if v, ok := adj.tags[name][key]; ok {
			return v
		}
	}
	return own.Get(key)
}

// checkUsed rejects adjustments naming no option of the group (type t): a misspelt
// OPTION.KEY tag would otherwise leave the default it meant to change in place.
func (adj *groupAdjust) checkUsed(f reflect.StructField, t reflect.Type) error {
	names := groupOptionNames(t)
	for opt := range adj.tags {
		if !slices.Contains(names, opt) {
			return fmt.Errorf("option group %s: tag %s.*: the group has no option %q (options: %s)",
				f.Name, opt, opt, strings.Join(names, ", "))
		}
	}
	for opt := range adj.omit {
		if !slices.Contains(names, opt) {
			return fmt.Errorf("option group %s: omit: the group has no option %q (options: %s)",
				f.Name, opt, strings.Join(names, ", "))
		}
	}
	return nil
}

// groupOptionNames lists the opt names declared in struct type t and its groups.
func groupOptionNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if n, ok := f.Tag.Lookup("opt"); ok {
			names = append(names, n)
		} else if f.Type.Kind() == reflect.Struct {
			names = append(names, groupOptionNames(f.Type)...)
		}
	}
	return names
}

// tagPairs splits a struct tag into its key/value pairs, in order, following the
// convention reflect.StructTag.Lookup parses; reflect offers lookup by key only, and an
// embedding field's keys (OPTION.KEY) are not known in advance.
func tagPairs(tag reflect.StructTag) [][2]string {
	var out [][2]string
	s := string(tag)
	for s != "" {
		i := 0
		for i < len(s) && s[i] == ' ' {
			i++
		}
		s = s[i:]
		if s == "" {
			break
		}
		i = 0
		for i < len(s) && s[i] > ' ' && s[i] != ':' && s[i] != '"' && s[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(s) || s[i] != ':' || s[i+1] != '"' {
			break
		}
		key := s[:i]
		s = s[i+1:]
		i = 1
		for i < len(s) && s[i] != '"' {
			if s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(s) {
			break
		}
		value, err := strconv.Unquote(s[:i+1])
		if err != nil {
			break
		}
		s = s[i+1:]
		out = append(out, [2]string{key, value})
	}
	return out
}

// checkBoundTags rejects min and max tags that would not be enforced as written: on a type
// without order, not parsing as the option's type (a duration without its unit, a
// fraction on an integer), or with min above max.
func checkBoundTags(o Option) error {
	if o.Min == "" && o.Max == "" {
		return nil
	}
	switch o.Type {
	case "int", "uint", "float", "duration", "size":
	default:
		return fmt.Errorf("min and max apply to numeric options, not to type %s", o.Type)
	}
	lo, okLo := bound(o, o.Min)
	hi, okHi := bound(o, o.Max)
	if (o.Min != "" && !okLo) || (o.Max != "" && !okHi) {
		return fmt.Errorf("bounds min %q max %q do not parse as %s", o.Min, o.Max, o.Type)
	}
	if okLo && okHi && lo > hi {
		return fmt.Errorf("min %s is above max %s", o.Min, o.Max)
	}
	return nil
}

func typeName(t reflect.Type) (string, error) {
	if t == reflect.TypeOf(time.Duration(0)) {
		return "duration", nil
	}
	if t == reflect.TypeOf(Size(0)) {
		return "size", nil
	}
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "bool", nil
	case reflect.Int, reflect.Int64:
		return "int", nil
	case reflect.Uint, reflect.Uint64:
		return "uint", nil
	case reflect.Float64:
		return "float", nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "list", nil
		}
	}
	return "", fmt.Errorf("unsupported option type %s", t)
}

// ApplyDefaults sets every option of opts (a pointer to an options struct) to its default.
func ApplyDefaults(opts any) error {
	schema, err := Schema(opts)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(opts).Elem()
	var errs FieldErrors
	for _, o := range schema {
		if err := setField(v.FieldByIndex(o.index), o, o.Default); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bad defaults in %T: %w", opts, errs)
	}
	return nil
}

// Set assigns text values to the options in opts (a pointer to an options struct), by name
// or alias. Every value is checked; on any error nothing is changed and all errors are
// returned as FieldErrors.
func Set(opts any, values map[string]string) error {
	schema, err := Schema(opts)
	if err != nil {
		return err
	}
	byName := make(map[string]Option, len(schema))
	for _, o := range schema {
		byName[o.Name] = o
		for _, a := range o.Aliases {
			byName[a] = o
		}
	}
	// Apply to a copy first so a failure leaves opts untouched.
	dst := reflect.ValueOf(opts).Elem()
	tmp := reflect.New(dst.Type()).Elem()
	tmp.Set(dst)
	var errs FieldErrors
	for _, name := range sortedKeys(values) {
		o, ok := byName[name]
		if !ok {
			// The value is not echoed: an unknown name may be a secret option misspelt.
			errs = append(errs, &FieldError{Field: name,
				Allowed: "one of the options " + strings.Join(optionNames(schema), ", ")})
			continue
		}
		if err := setField(tmp.FieldByIndex(o.index), o, values[name]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	dst.Set(tmp)
	return nil
}

// OptionsValidator is implemented by options structs with rules their tags cannot
// express: one option constrained by another, a name that must be one of a list's
// entries. Validate checks the whole struct and returns FieldErrors naming the options
// (by option name) and what is allowed. It must not touch the network or the file system:
// it runs whenever a configuration is built, on every node, before anything connects.
type OptionsValidator interface {
	Validate() error
}

// CheckTags checks the current values of opts (an options struct or a pointer to one)
// against their tags: enum values, bounds, finite numbers. Options built by Set already
// satisfy them; structs filled in code (tests, library callers) may not.
func CheckTags(opts any) error {
	schema, err := Schema(opts)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(opts)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var errs FieldErrors
	for _, o := range schema {
		f := v.FieldByIndex(o.index)
		// Parsing the value's own text form applies exactly the checks Set applies.
		if fe := setField(reflect.New(f.Type()).Elem(), o, formatField(f)); fe != nil {
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Validate checks opts as a whole: CheckTags, then the struct's own rules when it is an
// OptionsValidator. Errors are FieldErrors naming options by name.
func Validate(opts any) error {
	err := CheckTags(opts)
	if err != nil {
		if _, ok := AsFieldErrors(err); !ok {
			return err
		}
	}
	errs, _ := AsFieldErrors(err)
	if verr := checkRules(opts); verr != nil {
		fes, ok := AsFieldErrors(verr)
		if !ok {
			return verr
		}
		errs = append(errs, fes...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkRules runs the Validate methods of opts (an options struct or a pointer to one):
// those of its option groups first, in field order, then its own. A group's rule (a
// client certificate needs its key) thus holds in every driver embedding the group,
// without each driver's Validate having to remember to call it. Field errors of all are
// returned together; any other error is returned at once.
//
// An anonymously embedded group follows Go's method promotion: when the struct containing
// it has a Validate method (promoted from the group, or its own that shadows the group's),
// that method speaks for the group, which is not asked separately, so no rule runs twice.
func checkRules(opts any) error {
	v := reflect.ValueOf(opts)
	if !v.IsValid() {
		return nil
	}
	var errs FieldErrors
	if err := collectRules(v, &errs); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// collectRules validates the groups inside v, then v itself, appending field errors.
func collectRules(v reflect.Value, errs *FieldErrors) error {
	s := v
	if s.Kind() == reflect.Pointer {
		if s.IsNil() {
			return nil
		}
		s = s.Elem()
	}
	if s.Kind() != reflect.Struct {
		return nil
	}
	t := s.Type()
	_, selfValidates := validatorOf(v)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if _, isOpt := f.Tag.Lookup("opt"); isOpt || !f.IsExported() || f.Type.Kind() != reflect.Struct {
			continue
		}
		if f.Anonymous && selfValidates {
			continue
		}
		fv := s.Field(i)
		if fv.CanAddr() {
			fv = fv.Addr() // pointer receivers too
		}
		if err := collectRules(fv, errs); err != nil {
			return err
		}
	}
	ov, ok := validatorOf(v)
	if !ok {
		return nil
	}
	err := ov.Validate()
	if err == nil {
		return nil
	}
	fes, ok := AsFieldErrors(err)
	if !ok {
		return err
	}
	*errs = append(*errs, fes...)
	return nil
}

// validatorOf returns v as an OptionsValidator, when its value or pointer type is one.
func validatorOf(v reflect.Value) (OptionsValidator, bool) {
	if !v.CanInterface() {
		return nil, false
	}
	ov, ok := v.Interface().(OptionsValidator)
	return ov, ok
}

// Values returns the options as text, keyed by name. With redact, values are as Shown:
// secret options that are set show as Redacted, URL passwords in others as CredentialMask.
func Values(opts any, redact bool) map[string]string {
	schema, err := Schema(opts)
	if err != nil {
		return nil
	}
	v := reflect.ValueOf(opts)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	out := make(map[string]string, len(schema))
	for _, o := range schema {
		s := formatField(v.FieldByIndex(o.index))
		if redact {
			s = Shown(o.Secret, s)
		}
		out[o.Name] = s
	}
	return out
}

// Changed compares two option structs of the same type and returns the names of the options
// that differ, split into live ones and the rest.
func Changed(old, new any) (live, restart []string) {
	schema, err := Schema(old)
	if err != nil {
		return nil, nil
	}
	a, b := Values(old, false), Values(new, false)
	for _, o := range schema {
		if a[o.Name] == b[o.Name] {
			continue
		}
		if o.Live {
			live = append(live, o.Name)
		} else {
			restart = append(restart, o.Name)
		}
	}
	return live, restart
}

func optionNames(schema []Option) []string {
	names := make([]string, len(schema))
	for i, o := range schema {
		names[i] = o.Name
	}
	return names
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// setField parses s into f according to o, checking enum and bounds.
func setField(f reflect.Value, o Option, s string) *FieldError {
	bad := func(allowed string) *FieldError {
		return &FieldError{Field: o.Name, Value: Shown(o.Secret, s), Allowed: allowed}
	}
	s = strings.TrimSpace(s)
	switch o.Type {
	case "string":
		if len(o.Enum) > 0 && !slices.Contains(o.Enum, s) {
			return bad(strings.Join(o.Enum, ", "))
		}
		f.SetString(s)
	case "bool":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad("true or false")
		}
		f.SetBool(b)
	case "int":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || !inBounds(o, float64(n)) {
			return bad(rangeText(o, "an integer"))
		}
		f.SetInt(n)
	case "uint":
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || !inBounds(o, float64(n)) {
			return bad(rangeText(o, "a non-negative integer"))
		}
		f.SetUint(n)
	case "float":
		x, err := strconv.ParseFloat(s, 64)
		// NaN passes every bound check and breaks JSON encoding; infinities are no rate.
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || !inBounds(o, x) {
			return bad(rangeText(o, "a number"))
		}
		f.SetFloat(x)
	case "duration":
		d, err := time.ParseDuration(s)
		if err != nil || !inBounds(o, float64(d)) {
			return bad(rangeText(o, "a duration such as 500ms, 2s or 1m"))
		}
		f.SetInt(int64(d))
	case "size":
		n, err := ParseSize(s)
		if err != nil || !inBounds(o, float64(n)) {
			return bad(rangeText(o, "a size in bytes such as 4096, 512MiB or 2GiB"))
		}
		f.SetInt(int64(n))
	case "list":
		var items []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				items = append(items, p)
			}
		}
		f.Set(reflect.ValueOf(items))
	}
	return nil
}

// bound parses a min or max tag as o's type; false when it is empty or does not parse.
func bound(o Option, s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	switch o.Type {
	case "duration":
		d, err := time.ParseDuration(s)
		return float64(d), err == nil
	case "size":
		n, err := ParseSize(s)
		return float64(n), err == nil
	case "int":
		n, err := strconv.ParseInt(s, 10, 64)
		return float64(n), err == nil
	case "uint":
		n, err := strconv.ParseUint(s, 10, 64)
		return float64(n), err == nil
	}
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil && !math.IsNaN(x) && !math.IsInf(x, 0)
}

func inBounds(o Option, x float64) bool {
	if lo, ok := bound(o, o.Min); ok && x < lo {
		return false
	}
	if hi, ok := bound(o, o.Max); ok && x > hi {
		return false
	}
	return true
}

func rangeText(o Option, what string) string {
	switch {
	case o.Min != "" && o.Max != "":
		return fmt.Sprintf("%s from %s to %s", what, o.Min, o.Max)
	case o.Min != "":
		return fmt.Sprintf("%s >= %s", what, o.Min)
	case o.Max != "":
		return fmt.Sprintf("%s <= %s", what, o.Max)
	}
	return what
}

func formatField(f reflect.Value) string {
	switch f.Type() {
	case reflect.TypeOf(time.Duration(0)):
		return time.Duration(f.Int()).String()
	case reflect.TypeOf(Size(0)):
		return Size(f.Int()).String()
	}
	switch f.Kind() {
	case reflect.String:
		return f.String()
	case reflect.Bool:
		return strconv.FormatBool(f.Bool())
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(f.Int(), 10)
	case reflect.Uint, reflect.Uint64:
		return strconv.FormatUint(f.Uint(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(f.Float(), 'g', -1, 64)
	case reflect.Slice:
		return strings.Join(f.Interface().([]string), ",")
	}
	return ""
}

// AsFieldErrors extracts the field errors from err, if it carries any.
func AsFieldErrors(err error) (FieldErrors, bool) {
	var fes FieldErrors
	if errors.As(err, &fes) {
		return fes, true
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return FieldErrors{fe}, true
	}
	return nil, false
}

// Canonical returns the canonical name of the option that name refers to in schema, matching
// names and aliases without regard to case (environment variables are upper case).
func Canonical(schema []Option, name string) (string, bool) {
	for _, o := range schema {
		if strings.EqualFold(o.Name, name) {
			return o.Name, true
		}
		for _, a := range o.Aliases {
			if strings.EqualFold(a, name) {
				return o.Name, true
			}
		}
	}
	return "", false
}
