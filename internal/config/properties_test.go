package config

import (
	"maps"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=1", map[string]string{"a": "1"}},
		{"colon", "a: 1", map[string]string{"a": "1"}},
		{"whitespace separator", "a 1", map[string]string{"a": "1"}},
		{"blanks around separator", "  a \t = \t 1", map[string]string{"a": "1"}},
		{"trailing blanks kept in value", "a=1  ", map[string]string{"a": "1  "}},
		{"second separator is part of value", "a==1:2", map[string]string{"a": "=1:2"}},
		{"key only", "lonely", map[string]string{"lonely": ""}},
		{"empty value", "a=", map[string]string{"a": ""}},
		{"hash comment", "# a=1\nb=2", map[string]string{"b": "2"}},
		{"bang comment", "  ! a=1\nb=2", map[string]string{"b": "2"}},
		{"hash inside value is not a comment", "a=1 # x", map[string]string{"a": "1 # x"}},
		{"blank lines", "\n\n  \na=1\n\n", map[string]string{"a": "1"}},
		{"continuation", "a=one, \\\n    two, \\\n\tthree", map[string]string{"a": "one, two, three"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"comment does not continue", "# c \\\nb=2", map[string]string{"b": "2"}},
		{"continuation at end of input", "a=1\\", map[string]string{"a": "1"}},
		{"escaped separators in key", `a\=b\:c\ d=v`, map[string]string{"a=b:c d": "v"}},
		{"escapes in value", `a=t\tn\nr\rf\f\q\\`, map[string]string{"a": "t\tn\nr\rf\fq\\"}},
		{"unicode escape", `a=caf\u00e9`, map[string]string{"a": "café"}},
		{"surrogate pair", `a=\ud83d\ude00`, map[string]string{"a": "😀"}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"later duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"NDBench sample", "ndbench.config.numKeys=20000000\nndbench.config.cass.writeConsistencyLevel=LOCAL_QUORUM",
			map[string]string{"ndbench.config.numKeys": "20000000", "ndbench.config.cass.writeConsistencyLevel": "LOCAL_QUORUM"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(tt.in)
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tt.in, err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ParseProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"short unicode escape", "a=1\nb=\\u12", "line 2"},
		{"bad hex", "x=\\uzzzz", `malformed \uxxxx`},
		{"line number counts the first line of a continued line", "a=1\nb=x\\\n  y\\\n \\uqq", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProperties(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseProperties(%q) error = %v, want it to contain %q", tt.in, err, tt.wantErr)
			}
		})
	}
}
