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

// TestJudge: one order for every command: an error, then a run cut short, then figures
// that measure the generator (a failed check is no evidence then), then failed checks or
// the default verdict; the reasons keep what else was found.
func TestJudge(t *testing.T) {
	failing := []Class{{"read", 100, 0}}
	tests := []struct {
		name  string
		j     Judgement
		code  int
		by    string
		first string // in the first reason; "" for none
	}{
		{"default pass", Judgement{Classes: []Class{{"read", 10, 10}}}, Pass, "default", ""},
		{"default fail", Judgement{Classes: failing}, Failed, "default", "read: none of 100"},
		{"thresholds fail", Judgement{By: "thresholds", Failed: []string{"threshold x failed"}, Classes: failing}, Failed, "thresholds", "threshold x failed"},
		{"thresholds pass: classes not judged", Judgement{By: "thresholds", Classes: failing}, Pass, "thresholds", ""},
		{"invalid over failed", Judgement{Classes: failing, Invalid: []string{"the client kept 2.0 of 2 cores busy"}}, Invalid, "default", InvalidPrefix + "the client kept"},
		{"aborted over invalid", Judgement{Invalid: []string{"x"}, Aborted: "interrupted"}, Aborted, "default", "interrupted"},
		{"error over all", Judgement{Invalid: []string{"x"}, Aborted: "interrupted", Error: "hook failed"}, Usage, "default", "hook failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Judge(tt.j)
			if r.Code != tt.code || r.By != tt.by {
				t.Errorf("Judge = %d by %q, want %d by %q (%q)", r.Code, r.By, tt.code, tt.by, r.Reasons)
			}
			if tt.first == "" && len(r.Reasons) > 0 || tt.first != "" && (len(r.Reasons) == 0 || !strings.Contains(r.Reasons[0], tt.first)) {
				t.Errorf("reasons %q, want the first to hold %q", r.Reasons, tt.first)
			}
		})
	}
}
