package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// Load builds the first snapshot (Version 1) from the defaults, the config file at path
// ("" for none) and s (environment, --set): config.Load with the file read here, so a
// bad key in the file is reported together with every other bad key.
func Load(path string, s config.Sources) (*config.Snapshot, error) {
	if path != "" {
		l, fes, err := FileLayer(path)
		if err != nil {
			return nil, err
		}
		s.File, s.FileErrors = &l, fes
	}
	return config.Load(s)
}

// FileLayer reads a configuration file: NDBench properties when the name ends in
// .properties, YAML otherwise. A properties file may only hold ndbench.config.* keys; other
// keys come back as field errors (the layer holds the rest). Read and syntax errors are
// plain errors.
func FileLayer(path string) (config.Layer, driver.FieldErrors, error) {
	l := config.Layer{Name: config.LayerFile, Source: "file " + path, Values: map[string]string{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return l, nil, fmt.Errorf("read config file %s: %w", path, err)
	}
	return ParseLayer(l, "config file", path, data)
}

// ParseLayer parses data, the contents of a file named path, into l's values the way
// FileLayer does (by path's extension: .properties or YAML), for sources whose bytes do not
// come from a config file: workload presets, embedded or given by path, are config files
// whose values land in another layer. what names the kind of file in errors ("config
// file", "preset file"); l's Name and Source say which layer it is and how its values are
// labelled.
func ParseLayer(l config.Layer, what, path string, data []byte) (config.Layer, driver.FieldErrors, error) {
	if l.Values == nil {
		l.Values = map[string]string{}
	}
	src := l.Source
	if strings.EqualFold(filepath.Ext(path), ".properties") {
		props, lines, err := config.ParsePropertiesLines(string(data))
		if err != nil {
			return l, nil, fmt.Errorf("parse properties %s %s: %w", what, path, err)
		}
		var errs driver.FieldErrors
		for k, v := range props {
			if !hasPrefixFold(k, config.NDBenchPrefix) {
				errs = append(errs, &driver.FieldError{Field: k, Value: driver.Shown(true, v), // not a key: may be a secret
					Allowed: "only " + config.NDBenchPrefix + "<property> keys in an NDBench properties file", Source: src})
				continue
			}
			l.Values[k] = v
			if c, ok := config.InlineComment(v); ok {
				if l.Notes == nil {
					l.Notes = map[string]string{}
				}
				l.Notes[k] = fmt.Sprintf("%s line %d: .properties files have no inline comments, so %q is part of the value; "+
					"put the comment on a line of its own", path, lines[k], c)
			}
		}
		return l, errs, nil
	}
	k := koanf.New(".")
	if err := k.Load(bytesProvider(data), yaml.Parser()); err != nil {
		return l, nil, fmt.Errorf("read %s %s: %w", what, path, YAMLError(data, err))
	}
	return yamlValues(l, k), nil, nil
}

// yamlValues adds the keys k loaded from YAML to l's values, flattened ("workload.readRate").
func yamlValues(l config.Layer, k *koanf.Koanf) config.Layer {
	for key, v := range k.All() {
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			continue // an empty section sets nothing
		}
		l.Values[key] = yamlText(v)
	}
	return l
}

// bytesProvider hands koanf bytes already read, so embedded presets parse exactly like
// files (koanf's rawbytes provider is a module of its own; this is all of it we need).
type bytesProvider []byte

// ReadBytes returns the bytes for koanf's parser.
func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

// Read is not used: koanf calls it only when Load is given no parser.
func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("bytesProvider needs a parser")
}

// yamlText renders a YAML scalar or list in the text form options parse. Floats print
// without exponent so whole numbers still parse as integers.
func yamlText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = yamlText(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// hasPrefixFold reports whether s starts with prefix, ignoring case, as NDBench's
// property names do.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
