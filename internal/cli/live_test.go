package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// TestLiveLine: a second without answers shows no latency ("–", not 0µs), dropped
// operations are named, and a partial interval (the run's last part-second) prints no
// line of its own, which would read as a second measurement of the same clock second.
func TestLiveLine(t *testing.T) {
	iv := func(secs float64, answered, failed, dropped int64) *stats.Interval {
		o := stats.OpInterval{Name: "read", Response: stats.NewHistogram(), Service: stats.NewHistogram(),
			StartLag: stats.NewLagHistogram(), TargetRate: 100, Workers: 4}
		for range answered {
			_ = o.Response.RecordValue(1500)
			_ = o.StartLag.RecordValue(20)
		}
		o.Successes, o.Dropped = answered, dropped
		o.Failures[driver.ClassTimeout] = failed
		end := time.Now()
		return &stats.Interval{Start: end.Add(-time.Duration(secs * float64(time.Second))), End: end, Ops: []stats.OpInterval{o}}
	}
	for _, tc := range []struct {
		name      string
		wide      bool
		iv        *stats.Interval
		want, not []string
	}{
		{"answers", false, iv(1, 100, 0, 0), []string{"read 100/s (of 100)", "p50 1.50ms p99 1.50ms lag 20µs", "err 0"}, []string{"–", "dropped", "p99.9"}},
		{"no answers", false, iv(1, 0, 40, 60), []string{"read 0/s (of 100)", "p50 – p99 – lag –", "err 40", "dropped 60"}, []string{"0µs"}},
		{"answers, wide", true, iv(1, 100, 0, 0), []string{"read 100/s (of 100)", "p50 1.50ms p99 1.50ms p99.9 1.50ms lag p99 20µs", "err 0"}, []string{"–", "dropped"}},
		{"no answers, wide", true, iv(1, 0, 40, 60), []string{"read 0/s (of 100)", "p50 – p99 – p99.9 – lag p99 –", "err 40", "dropped 60"}, []string{"0µs"}},
		{"partial last second", false, iv(0.3, 30, 0, 0), nil, []string{"read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			l := newLive(&out, false, 0)
			if tc.wide {
				l.width = 0
			}
			l.interval(tc.iv)
			line := out.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(line, n) {
					t.Errorf("line %q has %q", line, n)
				}
			}
		})
	}
}

// TestLiveLinesFit100Columns: by default every live line fits 100 columns (issue 36: a
// line ran to ~180), whatever the classes, with the elapsed and total time of a bounded
// run; the classes that do not fit beside each other go on lines of their own, under the
// first. The wide mode keeps one line a second.
func TestLiveLinesFit100Columns(t *testing.T) {
	class := func(name string, errs int64) stats.OpInterval {
		o := stats.OpInterval{Name: name, Response: stats.NewHistogram(), Service: stats.NewHistogram(),
			StartLag: stats.NewLagHistogram(), TargetRate: 123456, Workers: 64, Backlog: 2500 * time.Millisecond}
		for range 1000 {
			_ = o.Response.RecordValue(2_500_000)
			_ = o.StartLag.RecordValue(1_200_000)
		}
		o.Successes, o.Misses, o.Dropped = 23457, 99999, 12345
		o.Failures[driver.ClassTimeout] = errs
		return o
	}
	end := time.Now()
	for _, n := range []int{1, 2, 5} {
		iv := &stats.Interval{Start: end.Add(-time.Second), End: end}
		for i := range n {
			iv.Ops = append(iv.Ops, class([]string{"read", "write", "search", "checkout-with-a-long-name", "x"}[i], 1234567))
		}
		var out bytes.Buffer
		l := newLive(&out, false, 90*time.Minute)
		l.interval(iv)
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if !strings.HasPrefix(lines[0], "[00:00/1:30:00] read ") {
			t.Errorf("%d classes: first line %q does not start with the elapsed and total time", n, lines[0])
		}
		for _, line := range lines {
			if w := utf8.RuneCountInString(line); w > consoleWidth {
				t.Errorf("%d classes: a line of %d columns: %q", n, w, line)
			}
		}
		for _, o := range iv.Ops {
			if !strings.Contains(out.String(), o.Name+" 123.5k/s (of 123.5k)") || !strings.Contains(out.String(), "backlog 2.5s") {
				t.Errorf("%d classes: %s is not shown:\n%s", n, o.Name, out.String())
			}
		}
		out.Reset()
		l.width = 0
		l.interval(iv)
		if got := strings.Count(out.String(), "\n"); got != 1 {
			t.Errorf("%d classes, wide: %d lines, want 1", n, got)
		}
	}
}

// TestWrapText: a warning (issue 36: ~344 characters) is broken at spaces into lines of
// at most the width, under its prefix, and no word is lost.
func TestWrapText(t *testing.T) {
	long := "read: operations started late against their schedule (start-lag p99 39.1 ms of a response p99 of 39.1 ms): " +
		"62% of the lag (1.57 ms of a mean 2.54 ms) came after a worker was free, so the delay is mostly the generator's own " +
		"(scheduling, GC, a busy machine); see https://example.com/a/very/long/path/that/is/longer/than/any/line/of/the/console/" +
		"at/all/because/it/goes/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on/and/on"
	for _, tc := range []struct {
		prefix, text string
		width        int
	}{
		{"WARNING: ", long, 100},
		{"WARNING: ", "short", 100},
		{"", long, 40},
		{"WARNING: ", long, 0},
	} {
		got := wrapText(tc.prefix, tc.text, tc.width)
		if !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("%q does not start with %q", got, tc.prefix)
		}
		if strings.Join(strings.Fields(strings.TrimPrefix(got, tc.prefix)), " ") != strings.Join(strings.Fields(tc.text), " ") {
			t.Errorf("words changed: %q", got)
		}
		lines := strings.Split(got, "\n")
		if tc.width == 0 && len(lines) != 1 {
			t.Errorf("width 0: %d lines", len(lines))
		}
		for i, line := range lines {
			w := utf8.RuneCountInString(line)
			// Only a word longer than a line (the URL) may overflow, alone on its line.
			if tc.width > 0 && w > tc.width && len(strings.Fields(line)) > 1 {
				t.Errorf("width %d: line %d has %d columns: %q", tc.width, i, w, line)
			}
			if i > 0 && !strings.HasPrefix(line, strings.Repeat(" ", len(tc.prefix))) {
				t.Errorf("line %d is not indented under the prefix: %q", i, line)
			}
		}
	}
}

// TestRunConsoleFits100Columns runs `ndbench run` as a terminal shows it (progress bar
// included) and checks that every live line, note and warning fits 100 columns.
func TestRunConsoleFits100Columns(t *testing.T) {
	var out, errOut bytes.Buffer
	// A store that stalls makes the start-lag warnings, the longest lines a run prints.
	code := execute(context.Background(), []string{"run", "--driver", "memory", "--warmup", "1s", "--duration", "2s",
		"--set", "workload.readRate=500", "--set", "workload.writeRate=100", "--set", "drivers.memory.stallEvery=1s",
		"--set", "drivers.memory.stallFor=300ms", "--set", "workload.opTimeout=2s"},
		&streams{out: &out, err: &errOut, tty: true})
	if code > 1 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	screen := ansi.ReplaceAllString(out.String()+errOut.String(), "")
	inTable, live, warnings := false, 0, 0
	for _, raw := range strings.Split(screen, "\n") {
		// What a terminal shows of a line redrawn after "\r": its last part.
		line := raw[strings.LastIndexByte(raw, '\r')+1:]
		switch {
		case strings.HasPrefix(line, "op "):
			inTable = true // the summary's table is its own width (see the report)
		case strings.HasPrefix(line, "driver ") || strings.HasPrefix(line, "client:"):
			inTable = false
		}
		if strings.HasPrefix(line, "[") {
			live++
		}
		if strings.HasPrefix(line, "WARNING: ") {
			warnings++
		}
		if inTable || strings.HasPrefix(line, "verdict:") || strings.HasPrefix(line, "ndbench ") || strings.HasPrefix(line, "driver ") {
			continue
		}
		if w := utf8.RuneCountInString(line); w > consoleWidth {
			t.Errorf("a line of %d columns: %q", w, line)
		}
	}
	if live < 2 {
		t.Errorf("%d live lines, want a line a second:\n%s", live, screen)
	}
	t.Logf("%d live lines, %d warnings", live, warnings)
}
