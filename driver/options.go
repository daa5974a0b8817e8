package driver

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
//
// Field types: string, bool, int, int64, uint, uint64, float64, time.Duration, []string
// (comma-separated in text form).

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

	index []int
}

// FieldError is a bad option value: it names the option, the value given and what is
// allowed, so the user can fix it without reading code.
type FieldError struct {
	Field   string // option or config key, e.g. "ttl" or "workload.readRate"
	Value   string // the rejected value (redacted for secrets)
	Allowed string // what would have been accepted
	Source  string // where the value came from, when known (file, env, --set, ...)
}

// Error formats the field, value, allowed values and source.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	if e.Value != "" {
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

// Schema returns the options of an options struct (a pointer to it or the struct itself),
// in field order. Two options sharing a name or an alias are an error.
func Schema(opts any) ([]Option, error) {
	t := reflect.TypeOf(opts)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("options must be a struct or a pointer to one, got %T", opts)
	}
	var out []Option
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("opt")
		if !ok || !f.IsExported() {
			continue
		}
		typ, err := typeName(f.Type)
		if err != nil {
			return nil, fmt.Errorf("option %s: %w", name, err)
		}
		o := Option{
			Name:    name,
			Type:    typ,
			Default: f.Tag.Get("default"),
			Help:    f.Tag.Get("help"),
			Min:     f.Tag.Get("min"),
			Max:     f.Tag.Get("max"),
			Live:    f.Tag.Get("live") == "true",
			Secret:  f.Tag.Get("secret") == "true",
			index:   f.Index,
		}
		if e := f.Tag.Get("enum"); e != "" {
			o.Enum = strings.Split(e, ",")
		}
		if a := f.Tag.Get("alias"); a != "" {
			o.Aliases = strings.Split(a, ",")
		}
		out = append(out, o)
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

func typeName(t reflect.Type) (string, error) {
	if t == reflect.TypeOf(time.Duration(0)) {
		return "duration", nil
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

func bound(o Option, s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	if o.Type == "duration" {
		d, err := time.ParseDuration(s)
		return float64(d), err == nil
	}
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil
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
	if f.Type() == reflect.TypeOf(time.Duration(0)) {
		return time.Duration(f.Int()).String()
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
