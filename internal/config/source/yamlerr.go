package source

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// errYAMLComplexKey stands for the parsers' "invalid map key" / "Unsupported map key"
// errors, whose text dumps the whole offending key and its value with %#v.
var errYAMLComplexKey = errors.New("a map key is itself a map or a list (keys are plain names, e.g. readRate:)")

// quotedValue matches what the YAML libraries quote of a document's values in their
// errors: go-yaml's type errors print the value in backquotes ("cannot unmarshal !!str
// `s3cr3t` into int").
var quotedValue = regexp.MustCompile("`[^`]*`")

// YAMLError returns err, a YAML parser's error about data, with no part of data's values
// in it: the libraries quote values (and dump a complex key whole, with whatever it
// holds) and a configuration's values include passwords, whatever key the user typed
// them under. Line numbers and the kind of problem stay; where the library gives no line
// for a complex key, the line is found in data.
func YAMLError(data []byte, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "invalid map key") || strings.Contains(msg, "Unsupported map key") {
		if line := complexKeyLine(data); line > 0 {
			return fmt.Errorf("yaml: line %d: %w", line, errYAMLComplexKey)
		}
		return fmt.Errorf("yaml: %w", errYAMLComplexKey)
	}
	if quotedValue.MatchString(msg) {
		return errors.New(quotedValue.ReplaceAllString(msg, "(value not shown)"))
	}
	return err
}

// complexKeyLine is the line of the first mapping key in data that is not a scalar, or 0.
func complexKeyLine(data []byte) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return 0
	}
	var walk func(n *yaml.Node, depth int) int
	walk = func(n *yaml.Node, depth int) int {
		if n == nil || depth > 100 {
			return 0
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := n.Content[i]; k.Kind == yaml.MappingNode || k.Kind == yaml.SequenceNode {
					return k.Line
				}
			}
		}
		for _, c := range n.Content {
			if l := walk(c, depth+1); l > 0 {
				return l
			}
		}
		return 0
	}
	return walk(&doc, 0)
}
