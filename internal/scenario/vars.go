package scenario

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// envMap turns os.Environ() entries into a map (the last one wins).
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${NAME} and ${NAME:-default} with the environment's values. Only
// the braced form is expanded, so a shell's $1 or $(...) in a value is left alone. An unset
// variable without a default is an error: a scenario must not silently aim at "".
func expandVars(s string, env map[string]string) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		g := varRE.FindStringSubmatch(m)
		if v, ok := env[g[1]]; ok && v != "" {
			return v
		}
		if g[2] != "" {
			return g[3]
		}
		missing = append(missing, g[1])
		return m
	})
	if len(missing) > 0 {
		return s, fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", missing[0], missing[0])
	}
	return out, nil
}

// expandAll expands ${VAR} in every string of a decoded YAML tree.
func expandAll(v any, env map[string]string) (any, error) {
	switch t := v.(type) {
	case string:
		return expandVars(t, env)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			e, err := expandAll(x, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			e, err := expandAll(x, env)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return v, nil
}

// scalarText is a YAML scalar as a config value.
func scalarText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := yaml.Marshal(v)
	return string(bytes.TrimSpace(b))
}
