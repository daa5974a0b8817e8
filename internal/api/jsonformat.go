package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// jsonFormat is huma's JSON format, except that a number written with a fraction or an
// exponent whose value is an integer (208.0, 2.08e2) decodes into an integer field. JSON
// has one number type, the OpenAPI document declares such fields "integer", and huma's
// validation accepts 208.0 as one; Go's decoder alone refused it, so the document and the
// behaviour disagreed. 208.5 is still refused by the validation, naming the field.
// And the keys of the document huma validates are escaped, so that its error locations
// are right (escapeKeys).
var jsonFormat = huma.Format{Marshal: huma.DefaultJSONFormat.Marshal, Unmarshal: unmarshalJSON}

// maxExactInteger is the largest integer a float64 holds exactly (2^53): integral values
// beyond it are left as they are and refused by the decoder as before.
const maxExactInteger = 1 << 53

// unmarshalJSON decodes data into v; when only a number kept it from fitting an integer
// field, it rewrites integral numbers as integers and decodes again. The common case, a
// body that decodes, costs nothing more.
//
// Huma decodes a body twice: into an any to validate it, then into the input struct. The
// first document gets its keys escaped (escapeKeys) so that huma's error locations are
// right; hideRejectedValues restores them. So no route may take its body as a bare any:
// its handler would get the escaped keys (a map[string]any body is fine).
func unmarshalJSON(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	if doc, ok := v.(*any); ok {
		if err == nil {
			*doc = escapeKeys(*doc)
		}
		return err
	}
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) || !strings.HasPrefix(te.Value, "number") {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return err
	}
	rewritten, merr := json.Marshal(integralAsIntegers(doc))
	if merr != nil {
		return err
	}
	return json.Unmarshal(rewritten, v)
}

// integralAsIntegers rewrites, in a document decoded with UseNumber, every number whose
// value is an integer into plain integer notation.
func integralAsIntegers(x any) any {
	switch t := x.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = integralAsIntegers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = integralAsIntegers(e)
		}
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return t
		}
		if f, err := t.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= maxExactInteger {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
	}
	return x
}

// Huma builds the location of a validation error (body.values.workload.readRate) in a
// path buffer whose Pop cuts the path at its last '.' or '[': a map key holding one left
// segments behind, and every location after it was wrong (an unknown top-level x read
// body.values.drivers.x after the key drivers.redis.password, a value rejected in one key
// was reported under another). escapeKeys replaces those characters in the keys of the
// document huma validates by private-use ones, which unescapeLocation turns back. The
// escape character itself is doubled, so no two keys become one.
const keyEscape = "\uE000"

var (
	keyEscaper   = strings.NewReplacer(keyEscape, keyEscape+keyEscape, ".", keyEscape+"1", "[", keyEscape+"2")
	keyUnescaper = strings.NewReplacer(keyEscape+keyEscape, keyEscape, keyEscape+"1", ".", keyEscape+"2", "[")
)

// escapeKeys escapes the keys of every object in a decoded JSON document; the objects
// whose keys need none are kept, the others replaced.
func escapeKeys(x any) any {
	switch t := x.(type) {
	case map[string]any:
		escape := false
		for k, e := range t {
			t[k] = escapeKeys(e)
			escape = escape || strings.ContainsAny(k, ".["+keyEscape)
		}
		if !escape {
			return t
		}
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[keyEscaper.Replace(k)] = e
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = escapeKeys(e)
		}
	}
	return x
}

// unescapeLocation is the location of a validation error with the keys as the request
// wrote them.
func unescapeLocation(loc string) string {
	if !strings.Contains(loc, keyEscape) {
		return loc
	}
	return keyUnescaper.Replace(loc)
}
