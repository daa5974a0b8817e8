package scenario

import (
	"strings"
	"testing"
)

// TestNewRunEvaluator: a run's checks take the scenario grammar; a check without a class
// is one per class that runs; an error names the flag and the check.
func TestNewRunEvaluator(t *testing.T) {
	classes, active := []string{"read", "write", "scan"}, []string{"read", "write"}
	tests := []struct {
		check  string
		judged []string
		err    []string
	}{
		{"read.p99 < 5ms", []string{"read.p99 < 5ms"}, nil},
		{"errors < 1%", []string{"read.errors < 1%", "write.errors < 1%"}, nil},
		{"p99.9 <= 20ms", []string{"read.p99.9 <= 20ms", "write.p99.9 <= 20ms"}, nil},
		{"scan.rate > 10", []string{"scan.rate > 10"}, nil},
		{"raed.p99 < 5ms", nil, []string{`--threshold "raed.p99 < 5ms"`, `"raed"`, "read, write, scan"}},
		{"read.p99 < soon", nil, []string{`--threshold "read.p99 < soon"`, "a duration"}},
		{"read.recovery < 5s", nil, []string{"recovery"}},
		{"nonsense", nil, []string{`--threshold: invalid value "nonsense"`, "CLASS.METRIC OP VALUE"}},
	}
	for _, tt := range tests {
		_, judged, err := NewRunEvaluator([]RunCheck{{Check: tt.check, Field: "--threshold"}}, classes, active)
		if tt.err != nil {
			if err == nil {
				t.Errorf("%q: no error", tt.check)
				continue
			}
			for _, w := range tt.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q: error %q does not say %q", tt.check, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.check, err)
			continue
		}
		var got []string
		for _, c := range judged {
			got = append(got, c.Check)
		}
		if strings.Join(got, "|") != strings.Join(tt.judged, "|") {
			t.Errorf("%q judged as %q, want %q", tt.check, got, tt.judged)
		}
	}
}
