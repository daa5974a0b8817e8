// Package kube checks rendered Kubernetes objects against the API's own field names and
// value types, and decodes the fields deploy's tests read. The schema (schema.json) is
// written by schemagen from k8s.io/api's Go types; keeping k8s.io/api out of the ndbench
// module saves a fresh CI run its compile, plain and again under -race (docs/performance.md,
// "CI time"), and the check is as strict as decoding into those types with the API server's
// strict decoder: an unknown or misspelt field, a field in the wrong case or a value of
// the wrong type is an error.
package kube

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

//go:embed schema.json
var schemaJSON []byte

type schema struct {
	Version string                       `json:"k8sApi"`
	Kinds   map[string]string            `json:"kinds"`
	Types   map[string]map[string]string `json:"types"`
}

var theSchema = func() schema {
	var s schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic("kube: schema.json: " + err.Error()) // embedded at build time: a broken file is a build defect
	}
	return s
}()

// Kinds returns the "apiVersion kind" pairs the schema knows, sorted.
func Kinds() []string {
	var k []string
	for name := range theSchema.Kinds {
		k = append(k, name)
	}
	slices.Sort(k)
	return k
}

// Check validates one object, as JSON, against the API type of its apiVersion and kind,
// and returns them as "apiVersion kind". Every problem found is in the error, each
// with its path in the object.
func Check(j []byte) (string, error) {
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("decode the object: %w", err)
	}
	if _, err := d.Token(); err == nil {
		return "", errors.New("data after the object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("not an object: %T", v)
	}
	av, _ := obj["apiVersion"].(string)
	k, _ := obj["kind"].(string)
	kind := av + " " + k
	typ, ok := theSchema.Kinds[kind]
	if !ok {
		return kind, fmt.Errorf("kind %q of apiVersion %q is not in the schema (known: %s); add it to schemagen's kinds and regenerate schema.json", k, av, strings.Join(Kinds(), ", "))
	}
	var errs []error
	check(v, typ, "", &errs)
	return kind, errors.Join(errs...)
}

// quantity is resource.Quantity's syntax (k8s.io/apimachinery/pkg/api/resource).
var quantity = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$`)

var intBits = map[string]struct {
	bits     int
	unsigned bool
}{
	"int": {64, false}, "int64": {64, false}, "int32": {32, false}, "int16": {16, false}, "int8": {8, false},
	"uint": {64, true}, "uint64": {64, true}, "uint32": {32, true}, "uint16": {16, true}, "uint8": {8, true},
}

// check appends to errs what in v does not fit type expression typ (schemagen's
// notation). null fits every type, as encoding/json leaves the field unset.
func check(v any, typ, path string, errs *[]error) {
	if v == nil {
		return
	}
	bad := func(want string) {
		*errs = append(*errs, fmt.Errorf("%s: %s, want %s", pathOr(path), describe(v), want))
	}
	switch {
	case typ == "any":
	case typ == "string":
		if _, ok := v.(string); !ok {
			bad("a string")
		}
	case typ == "boolean":
		if _, ok := v.(bool); !ok {
			bad("true or false")
		}
	case typ == "number":
		if _, ok := v.(json.Number); !ok {
			bad("a number")
		}
	case typ == "bytes":
		s, ok := v.(string)
		if _, err := base64.StdEncoding.DecodeString(s); !ok || err != nil {
			bad("base64 data")
		}
	case typ == "time":
		if _, ok := v.(string); !ok {
			bad("an RFC 3339 time string")
		}
	case typ == "quantity":
		s := fmt.Sprint(v)
		if _, isStr := v.(string); !isStr {
			if _, isNum := v.(json.Number); !isNum {
				s = ""
			}
		}
		if !quantity.MatchString(strings.TrimSpace(s)) {
			bad("a quantity (such as 500m, 1, 2Gi)")
		}
	case typ == "int-or-string":
		switch x := v.(type) {
		case string:
		case json.Number:
			if _, err := strconv.ParseInt(x.String(), 10, 32); err != nil {
				bad("an int32 or a string")
			}
		default:
			bad("an integer or a string")
		}
	case strings.HasPrefix(typ, "[]"):
		a, ok := v.([]any)
		if !ok {
			bad("a list")
			return
		}
		for i, e := range a {
			check(e, typ[2:], fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case strings.HasPrefix(typ, "map[]"):
		m, ok := v.(map[string]any)
		if !ok {
			bad("a map")
			return
		}
		for _, k := range sortedKeys(m) {
			check(m[k], typ[5:], path+"["+strconv.Quote(k)+"]", errs)
		}
	default:
		if ib, ok := intBits[typ]; ok {
			n, isNum := v.(json.Number)
			var err error
			if isNum && ib.unsigned {
				_, err = strconv.ParseUint(n.String(), 10, ib.bits)
			} else if isNum {
				_, err = strconv.ParseInt(n.String(), 10, ib.bits)
			}
			if !isNum || err != nil {
				bad("an integer of type " + typ)
			}
			return
		}
		fields, ok := theSchema.Types[typ]
		if !ok {
			*errs = append(*errs, fmt.Errorf("%s: schema.json has no type %q", pathOr(path), typ))
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			bad("an object (" + typ + ")")
			return
		}
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				*errs = append(*errs, fmt.Errorf("%s: unknown field %q in %s", pathOr(path), k, typ))
				continue
			}
			check(m[k], ft, path+"."+k, errs)
		}
	}
}

func pathOr(p string) string {
	if p == "" {
		return "the object"
	}
	return strings.TrimPrefix(p, ".")
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case json.Number:
		return "number " + fmt.Sprint(v)
	case bool:
		return fmt.Sprint(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func sortedKeys(m map[string]any) []string {
	k := make([]string, 0, len(m))
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}
