package verdict

import (
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	tests := []struct {
		name    string
		classes []Class
		fails   []string // each in one reason; none: it passes
	}{
		{"all succeeded", []Class{{"read", 100, 100}, {"write", 10, 10}}, nil},
		{"a few failed", []Class{{"read", 100, 80}, {"write", 10, 9}}, nil},
		{"exactly half failed", []Class{{"read", 100, 50}}, nil},
		{"most failed", []Class{{"read", 100, 40}, {"write", 100, 50}}, []string{"110 of 200 attempted operations failed (55.0%, more than 50%)"}},
		{"nothing succeeded", []Class{{"read", 100, 0}, {"write", 10, 0}}, []string{"read: none of 100", "write: none of 10"}},
		{"one class never answered", []Class{{"read", 1000, 1000}, {"write", 10, 0}}, []string{"write: none of 10 attempted operations succeeded"}},
		{"a disabled class is not judged", []Class{{"read", 100, 100}, {"write", 0, 0}}, nil},
		{"nothing attempted", []Class{{"read", 0, 0}, {"write", 0, 0}}, []string{"no operation was attempted"}},
		{"no classes", nil, []string{"no operation was attempted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why := Default(tt.classes)
			if len(why) != len(tt.fails) {
				t.Fatalf("Default = %q, want %d reasons %q", why, len(tt.fails), tt.fails)
			}
			for i, w := range tt.fails {
				if !strings.Contains(why[i], w) {
					t.Errorf("reason %d = %q, want it to say %q", i, why[i], w)
				}
			}
		})
	}
}

// TestCodes: the table is documented and scripts rely on it; a number never changes.
func TestCodes(t *testing.T) {
	for code, name := range map[int]string{Pass: "PASSED", Failed: "FAILED", Usage: "ERROR", Aborted: "ABORTED", Invalid: "INVALID"} {
		if got := Name(code); got != name {
			t.Errorf("Name(%d) = %q, want %q", code, got, name)
		}
	}
	if Pass != 0 || Failed != 1 || Usage != 2 || Aborted != 3 || Invalid != 4 {
		t.Errorf("exit codes changed: %d %d %d %d %d", Pass, Failed, Usage, Aborted, Invalid)
	}
}
