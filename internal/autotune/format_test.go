package autotune

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestStepTableFits: the step table's columns line up under its header whatever the
// values (issue 36: the pX cells overran their header), and at a width every line fits,
// a long why wrapped under its column or, with many classes, under the row; width 0
// keeps a step to a line.
func TestStepTableFits(t *testing.T) {
	long := []string{"read p99 3.02s > 10ms", "read achieved 61.3% of 5k/s < 97%",
		"generator saturated: read start lag p99 2.98s > 5ms while the store's service p99 9.87ms is within SLA (64 workers, 18234 ops overdue)"}
	class := func(resp float64, errs int64) ClassMeasurement {
		return ClassMeasurement{Target: 5000, Achieved: 4000, Attempted: 40000, Errors: errs, Response: resp}
	}
	for _, classes := range [][]string{{"read"}, {"read", "write"}, {"read", "write", "checkout"}} {
		steps := []Step{
			{N: 1, Phase: PhaseBracket, Rate: 5000, Achieved: 4980, Verdict: Pass},
			{N: 2, Phase: PhaseBracket, Rate: 1e4, Achieved: 6130, Verdict: ClientBound, Why: long},
			{N: 13, Phase: PhaseConfirm, Rate: 2.97e3, Achieved: 2.9e3, Verdict: Fail, Why: long[:1]},
			{N: 14, Phase: PhaseRecover, Rate: 1.23456e6, Achieved: 1.2e6, Verdict: Fail, Why: long[1:2]},
		}
		for i := range steps {
			steps[i].Classes = map[string]ClassMeasurement{}
			for j, c := range classes {
				steps[i].Classes[c] = class([]float64{850, 123_456, 3_020_000}[(i+j)%3], int64(i*1000))
			}
		}
		r := &Result{Status: StatusStopped, Message: "stopped during a step at 1.49k ops/s; so far the highest rate within SLA was 2.5k ops/s (step 5, not confirmed), the lowest outside it 1.77k ops/s (step 8)",
			Steps: steps, Settings: Settings{SLA: SLA{Percentile: 99.9, Latency: 10 * time.Millisecond, MaxErrors: 0.01, MinAchieved: 0.97}}.WithDefaults()}
		for _, width := range []int{100, 0} {
			var b bytes.Buffer
			WriteText(&b, r, width)
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			header := lines[0]
			at := func(line, word string) int { return utf8.RuneCountInString(line[:strings.Index(line, word)]) }
			for _, line := range lines {
				if width > 0 && utf8.RuneCountInString(line) > width {
					t.Errorf("%d classes, width %d: a line of %d columns: %q", len(classes), width, utf8.RuneCountInString(line), line)
				}
				// A row's verdict starts under the header's.
				for _, v := range []Verdict{Pass, Fail, ClientBound} {
					if f := strings.Fields(line); len(f) > 1 && (f[1] == PhaseBracket || f[1] == PhaseConfirm || f[1] == PhaseRecover) &&
						strings.Contains(line, " "+string(v)+" ") && at(line, " "+string(v)+" ") != at(header, " verdict") {
						t.Errorf("%d classes, width %d: verdict at column %d, header's at %d:\n%s\n%s", len(classes), width,
							at(line, " "+string(v)+" "), at(header, " verdict"), header, line)
					}
				}
			}
			// Every word of the why is kept (beside the class lines, it is not contiguous).
			for _, w := range strings.Fields(strings.Join(long, " ")) {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%d classes, width %d: %q is missing:\n%s", len(classes), width, w, b.String())
				}
			}
			if text := strings.Join(strings.Fields(b.String()), " "); !strings.Contains(text, "the highest rate within SLA was 2.5k ops/s") {
				t.Errorf("%d classes, width %d: the outcome is missing:\n%s", len(classes), width, b.String())
			}
			if rows := len(lines); width == 0 && rows != len(steps)*len(classes)+1+4 {
				t.Errorf("%d classes, wide: %d lines, want a step to a line:\n%s", len(classes), rows, b.String())
			}
		}
	}
}
