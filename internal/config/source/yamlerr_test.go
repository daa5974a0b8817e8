package source

import (
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
)

// TestYAMLErrorsShowNoValue: a config file the parser refuses is named with its line and
// problem, never with the values around it; the YAML libraries quote values and dump a
// complex key whole (FuzzConfigFile found a password in "invalid map key: map[...]").
func TestYAMLErrorsShowNoValue(t *testing.T) {
	const secret = "s3cr3t-Pw"
	cases := []struct {
		name, text, want string
	}{
		{"complex key holding the password", "driver: fake-kv\ndrivers:\n  ? hosts: [a:1]\n    password: " + secret + "\n  : x\n",
			"line 3: a map key is itself a map or a list"},
		{"flow map as key", "drivers:\n  {password: " + secret + "}: 1\n", "line 2: a map key is itself a map or a list"},
		{"list as key", "drivers:\n  [" + secret + ", b]: 1\n", "line 2: a map key is itself a map or a list"},
		{"bad indentation", "drivers:\n  fake-kv:\n    password: " + secret + "\n   x: [\n", "yaml: line"},
		{"document is a list", "- password: " + secret + "\n", "cannot unmarshal"},
		{"document is a scalar", secret + "\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := config.Layer{Name: config.LayerFile, Source: "file x.yaml"}
			_, _, err := ParseLayer(l, "config file", "x.yaml", []byte(c.text))
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error shows the value: %v", err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.yaml") {
				t.Fatalf("error %q; want the file and %q", err, c.want)
			}
		})
	}
}
