package scenario

import (
	"strings"
	"testing"
)

// TestParseErrorsShowNoValue: a scenario file the YAML parser refuses is named with its
// line and problem, never with its values (a driver's password among them).
func TestParseErrorsShowNoValue(t *testing.T) {
	const secret = "s3cr3t-Pw"
	for _, text := range []string{
		"name: x\ndrivers:\n  ? {password: " + secret + "}\n  : 1\n",
		"name: [" + secret + "]: 1\n",
		"- password: " + secret + "\n",
		secret + "\n",
	} {
		_, err := Parse("s.yaml", []byte(text), Options{})
		if err == nil {
			t.Fatalf("%q accepted", text)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%q: the error shows the value: %v", text, err)
		}
	}
}
