package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
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

// TestRunConsoleFits100Columns runs `ndbench run` as a terminal shows it (progress bars
// included) and checks that every line fits 100 columns: the header, the live lines, the
// notes, the summary's tables, the driver's counters, the warnings and the verdict (issue
// 36). The backfill's progress bar is gone before the next line. --wide keeps the long
// forms: the header, the one summary table and the verdict each on one line.
func TestRunConsoleFits100Columns(t *testing.T) {
	// A store that stalls makes the start-lag warnings, the longest lines a run prints; a
	// paced backfill long enough to draw its bar. 3 s of load for the 2 live lines asked
	// below: a line is a whole second, and the second ending as a 2 s run ends raced the
	// run's stop (it got its line only while stopping workers took a further 20 ms).
	args := []string{"run", "--driver", "memory", "--warmup", "1s", "--duration", "3s", "--backfill",
		"--set", "workload.numKeys=1500", "--set", "workload.backfillRate=1000",
		"--set", "workload.readRate=500", "--set", "workload.writeRate=100", "--set", "drivers.memory.stallEvery=1s",
		"--set", "drivers.memory.stallFor=300ms", "--set", "workload.opTimeout=2s"}
	screen := func(t *testing.T, args ...string) []string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := execute(context.Background(), args, &streams{out: &out, err: &errOut, tty: true})
		if code > 1 {
			t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
		}
		ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
		var lines []string
		for _, raw := range strings.Split(ansi.ReplaceAllString(out.String()+errOut.String(), ""), "\n") {
			// What a terminal shows of a line redrawn after "\r": its last part.
			lines = append(lines, raw[strings.LastIndexByte(raw, '\r')+1:])
		}
		return lines
	}
	lines := screen(t, args...)
	live, warnings, bars := 0, 0, 0
	leftover := regexp.MustCompile(`backfill \d+%.`)
	for _, line := range lines {
		if strings.HasPrefix(line, "[") {
			live++
		}
		if strings.HasPrefix(line, "WARNING: ") {
			warnings++
		}
		if strings.Contains(line, "] backfill ") {
			bars++
		}
		if leftover.MatchString(line) {
			t.Errorf("the backfill's progress bar runs into the next line: %q", line)
		}
		if w := utf8.RuneCountInString(line); w > consoleWidth {
			t.Errorf("a line of %d columns: %q", w, line)
		}
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"summary over", "op         attempted  succeeded", "response", "startlag", "verdict: "} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q:\n%s", want, all)
		}
	}
	if live < 2 {
		t.Errorf("%d live lines, want a line a second:\n%s", live, all)
	}
	t.Logf("%d live lines, %d warnings, %d backfill frames", live, warnings, bars)

	wide := screen(t, append(args, "--wide")...)
	long := 0
	for _, line := range wide {
		switch {
		case strings.HasPrefix(line, "ndbench ") && strings.Contains(line, "writes "),
			strings.HasPrefix(line, "op ") && strings.Contains(line, "p99.9") && strings.HasSuffix(line, "misses"),
			strings.HasPrefix(line, "verdict: ") && strings.HasSuffix(line, ")"):
			long++
		}
	}
	if long != 3 {
		t.Errorf("--wide: %d of the header, the table's header and the verdict on one line each, want 3:\n%s", long, strings.Join(wide, "\n"))
	}
}

// TestLiveStampsFromIntervalTime: each line's clock is its interval's own time, so that
// intervals delivered late together (a stall of the process held the ticks, issue 36:
// "[00:18/01:10]" three times, 00:14-00:17 missing) keep one stamp a second each, from
// whatever offset within a second the phase started.
func TestLiveStampsFromIntervalTime(t *testing.T) {
	for _, offset := range []time.Duration{0, 300 * time.Millisecond, 499 * time.Millisecond, 501 * time.Millisecond, 900 * time.Millisecond} {
		var out bytes.Buffer
		l := newLive(&out, false, 70*time.Second)
		start := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
		l.start = start
		first := start.Add(offset)
		// Ten intervals a second apart, with a few milliseconds of jitter, all printed
		// now (long after they ended).
		for i := range 10 {
			jitter := time.Duration((i%3)-1) * 3 * time.Millisecond
			end := first.Add(time.Duration(i+1)*time.Second + jitter)
			o := stats.OpInterval{Name: "read", Response: stats.NewHistogram(), Service: stats.NewHistogram(),
				StartLag: stats.NewLagHistogram(), Workers: 1}
			o.Successes = 10
			l.interval(&stats.Interval{Start: end.Add(-time.Second), End: end, Ops: []stats.OpInterval{o}})
		}
		var stamps []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			stamps = append(stamps, line[1:6])
		}
		// The first interval may round to the second before or after its end; the
		// stamps that follow are consecutive either way.
		if first := stamps[0]; !consecutive(stamps) || first != "00:01" && first != "00:02" {
			t.Errorf("phase started %s into a second: stamps %s, want one a second from 00:01 or 00:02", offset, strings.Join(stamps, " "))
		}
	}
}

func consecutive(stamps []string) bool {
	for i := 1; i < len(stamps); i++ {
		a, _ := time.Parse("04:05", stamps[i-1])
		b, _ := time.Parse("04:05", stamps[i])
		if b.Sub(a) != time.Second {
			return false
		}
	}
	return true
}

// TestBackfillBarCleared: on a terminal the backfill's progress bar is erased when the
// backfill ends (setBackfill(nil)), so the next line does not continue its last frame (issue 36:
// "[====   ] backfill 81%backfill done: ...").
func TestBackfillBarCleared(t *testing.T) {
	var out bytes.Buffer
	l := newLive(&out, true, 0)
	l.setBackfill(func() engine.BackfillStatus { return engine.BackfillStatus{Phase: "write", Total: 100, Written: 81} })
	end := time.Now()
	bf := stats.OpInterval{Name: "backfill", Response: stats.NewHistogram(), Service: stats.NewHistogram(), StartLag: stats.NewLagHistogram()}
	l.interval(&stats.Interval{Start: end.Add(-time.Second), End: end, Ops: []stats.OpInterval{bf}})
	l.setBackfill(nil)
	// Whatever prints next, through the display or not, starts on a clean line.
	out.WriteString("backfill done: 100 of 100 keys written\n")
	screen := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]").ReplaceAllString(out.String(), "")
	for _, raw := range strings.Split(screen, "\n") {
		line := raw[strings.LastIndexByte(raw, '\r')+1:]
		if strings.Contains(line, "backfill done") && line != "backfill done: 100 of 100 keys written" {
			t.Errorf("the line after the backfill shows %q, want it alone on its line", line)
		}
	}
	if !strings.Contains(out.String(), "backfill 81%") {
		t.Errorf("no progress bar was drawn: %q", out.String())
	}
}

// TestRunHeader: the run's first line names the pipeline depth when there is one (issue
// 36: a pipeline=8 run never confirmed it), and fits the width, or one line in wide mode.
func TestRunHeader(t *testing.T) {
	cfg := config.Config{DriverName: "redis"}
	cfg.Workload.NumKeys, cfg.Workload.DataSize, cfg.Workload.Pipeline = 100000, 128, 8
	cfg.Workload.ReadEnabled, cfg.Workload.Readers, cfg.Workload.ReadRate = true, 64, 190000
	cfg.Workload.WriteEnabled, cfg.Workload.Writers, cfg.Workload.WriteRate = true, 64, 10000
	for _, width := range []int{consoleWidth, 60, 0} {
		h := runHeader("v1.2.3-45-gabcdef0", cfg, width)
		if !strings.HasPrefix(h, "ndbench v1.2.3-45-gabcdef0: driver redis,") || !strings.Contains(h, "pipeline 8") || !strings.Contains(h, "writes 64 workers at 10.0k/s") {
			t.Errorf("width %d: header %q", width, h)
		}
		for _, line := range strings.Split(h, "\n") {
			if width > 0 && utf8.RuneCountInString(line) > width {
				t.Errorf("width %d: a line of %d columns: %q", width, utf8.RuneCountInString(line), line)
			}
		}
		if width == 0 && strings.Contains(h, "\n") {
			t.Errorf("wide: %q is not one line", h)
		}
	}
}

// TestBackfillSummaryReadsRight: a backfill through bulk writes (issue 36: 723,502 keys/s
// beside a 0.46 ms mean response from 4 workers, which would need ~330 operations in
// flight) says how its figures go together: the keys in flight that rate × mean gives, and
// the most its workers' bulk writes hold, which bounds them.
func TestBackfillSummaryReadsRight(t *testing.T) {
	for _, tt := range []struct {
		driver        string
		rate, meanUs  float64
		workers       string
		want, notWant []string
	}{
		{"memory", 723502, 460, "4", []string{"bulk writes of up to 100 keys a call: 333 keys in flight on average", "of at most 400 (4 workers × 100)"}, nil},
		{"memory", 1868996, 175, "8", []string{"327 keys in flight on average", "of at most 800 (8 workers × 100)"}, nil},
		{"nosuchdriver", 723502, 460, "4", nil, []string{"bulk writes"}},
	} {
		r := &report.Report{Seconds: 10, Driver: report.Driver{Name: tt.driver},
			Ops:    map[string]stats.OpSummary{"backfill": {Count: 100000, Rate: tt.rate, ResponseTime: stats.Latency{Mean: tt.meanUs}}},
			Config: []config.Entry{{Key: "workload.backfillWorkers", Value: tt.workers}}}
		var out bytes.Buffer
		printSummary(&out, r, consoleWidth)
		text := strings.Join(strings.Fields(out.String()), " ")
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s at %.0f/s, mean %.0f µs: summary lacks %q:\n%s", tt.driver, tt.rate, tt.meanUs, w, out.String())
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(text, w) {
				t.Errorf("%s: summary has %q:\n%s", tt.driver, w, out.String())
			}
		}
	}
}

// TestBackfillFiguresAgree: a real backfill's keys/s and mean response agree by Little's
// law with its workers' bulk writes: rate × mean response, the keys in flight on average,
// is at most workers × the keys of a bulk write. (The figures were right; what they
// count, each key of a bulk write, is what the summary now says.)
func TestBackfillFiguresAgree(t *testing.T) {
	rep := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ndbench(t, nil, "run", "--driver", "memory", "--backfill", "--duration", "300ms", "--report", rep,
		"--set", "workload.numKeys=100000", "--set", "workload.backfillWorkers=4")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	s := readReport(t, rep).Ops["backfill"]
	inFlight := s.Rate * s.ResponseTime.Mean / 1e6
	if s.Count != 100000 || inFlight <= 0 || inFlight > 1.02*4*float64(engine.DefaultBackfillBatch) {
		t.Errorf("backfill: %d keys at %.0f/s, mean %.3f ms: %.0f keys in flight, want at most %d (4 workers × %d)",
			s.Count, s.Rate, s.ResponseTime.Mean/1000, inFlight, 4*engine.DefaultBackfillBatch, engine.DefaultBackfillBatch)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), fmt.Sprintf("%.0f keys in flight on average", inFlight)) {
		t.Errorf("the summary does not say the keys in flight (%.0f):\n%s", inFlight, out)
	}
}
