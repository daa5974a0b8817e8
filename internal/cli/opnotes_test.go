package cli

import (
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// TestOpNotesSayEachFailureOnce: the failures block said the same failures twice
// ("errors by class: unavailable 27" and "unavailable ×27: unavailable: memory: ...").
func TestOpNotesSayEachFailureOnce(t *testing.T) {
	msg := func(class, text string, n int64) stats.ErrorMessage {
		return stats.ErrorMessage{Class: class, Message: text, Count: n}
	}
	cases := []struct {
		name     string
		failures map[string]int64
		msgs     []stats.ErrorMessage
		want     []string
	}{
		{"one message covers all", map[string]int64{"unavailable": 27},
			[]stats.ErrorMessage{msg("unavailable", "unavailable: memory: injected failure", 27)},
			[]string{"          errors: unavailable ×27: memory: injected failure"}},
		{"two classes", map[string]int64{"unavailable": 20, "timeout": 3},
			[]stats.ErrorMessage{msg("unavailable", "unavailable: refused", 20), msg("timeout", "deadline exceeded", 3)},
			[]string{"          errors by class: timeout 3, unavailable 20",
				"            unavailable ×20: refused", "            timeout ×3: deadline exceeded"}},
		{"two messages of one class", map[string]int64{"unavailable": 9},
			[]stats.ErrorMessage{msg("unavailable", "conn reset", 5), msg("unavailable", "refused", 4)},
			[]string{"          errors by class: unavailable 9",
				"            unavailable ×5: conn reset", "            unavailable ×4: refused"}},
		{"messages dropped to make room", map[string]int64{"unavailable": 30},
			[]stats.ErrorMessage{msg("unavailable", "refused", 12)},
			[]string{"          errors by class: unavailable 30", "            unavailable ×12: refused"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var total int64
			for _, n := range tc.failures {
				total += n
			}
			r := &report.Report{
				Ops:    map[string]stats.OpSummary{"read": {Count: 100, Errors: total, Failures: tc.failures}},
				Errors: map[string][]stats.ErrorMessage{"read": tc.msgs},
			}
			var b strings.Builder
			printOpNotes(&b, r, "read", 0)
			got := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
