package api

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/danielgtaylor/huma/v2"
)

// ConfigValue is one value of a configuration change: a JSON string, number or boolean,
// kept as the text the config store parses. Numbers keep their exact JSON text (a 64-bit
// seed does not round through float64), so {"workload.readRate": 2500} and
// {"workload.readRate": "2500"} are the same change.
type ConfigValue string

// UnmarshalJSON accepts a string, a number or a boolean.
func (v *ConfigValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return errors.New("empty value")
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = ConfigValue(s)
	case bytes.Equal(b, []byte("true")), bytes.Equal(b, []byte("false")):
		*v = ConfigValue(b)
	case b[0] == '-' || (b[0] >= '0' && b[0] <= '9'):
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*v = ConfigValue(n)
	default:
		return errors.New("a configuration value is a string, a number or a boolean")
	}
	return nil
}

// Schema documents the accepted forms in the OpenAPI document.
func (ConfigValue) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Description: "the value as a string, or a JSON number or boolean (kept exactly as written)",
		OneOf: []*huma.Schema{
			{Type: huma.TypeString},
			{Type: huma.TypeNumber},
			{Type: huma.TypeBoolean},
		},
	}
}
