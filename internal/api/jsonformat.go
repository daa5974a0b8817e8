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
var jsonFormat = huma.Format{Marshal: huma.DefaultJSONFormat.Marshal, Unmarshal: unmarshalJSON}

// maxExactInteger is the largest integer a float64 holds exactly (2^53): integral values
// beyond it are left as they are and refused by the decoder as before.
const maxExactInteger = 1 << 53

// unmarshalJSON decodes data into v; when only a number kept it from fitting an integer
// field, it rewrites integral numbers as integers and decodes again. The common case, a
// body that decodes, costs nothing more.
func unmarshalJSON(data []byte, v any) error {
	err := json.Unmarshal(data, v)
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
