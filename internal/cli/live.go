package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

// live prints one line per interval while a run goes on and, on a terminal, keeps a
// progress bar under the lines. On anything else (a pipe, a CI log) it prints plain
// lines only, so logs stay readable.
type live struct {
	out      io.Writer
	tty      bool
	start    time.Time
	duration time.Duration // 0: runs until stopped
	// width is the most columns a line takes (consoleWidth by default): each class's
	// figures are packed onto lines of at most width, the classes that do not fit go on
	// the next. 0 is the wide mode (--wide): one line a second with every percentile.
	width int

	mu       sync.Mutex
	backfill func() engine.BackfillStatus // set while a backfill runs
	status   bool                         // a status line is on screen
	// anchored says start has been aligned on the intervals' boundaries (see elapsed).
	anchored bool
}

// consoleWidth is the columns the console output fits by default: a terminal of 100
// columns, or a CI log viewer, shows every line whole.
const consoleWidth = 100

func newLive(out io.Writer, tty bool, duration time.Duration) *live {
	return &live{out: out, tty: tty, start: time.Now(), duration: duration, width: consoleWidth}
}

// setBackfill switches the display to backfill progress (f non-nil) or back to load. At
// the backfill's end its progress bar is cleared, so that the next line starts on a line
// of its own.
func (l *live) setBackfill(f func() engine.BackfillStatus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f == nil {
		l.clearStatus()
	}
	l.backfill = f
	l.start, l.anchored = time.Now(), false
}

// restart resets the elapsed clock when the load phase starts.
func (l *live) restart() {
	l.mu.Lock()
	l.start, l.anchored = time.Now(), false
	l.mu.Unlock()
}

// elapsed is how far the phase was at the end of iv: the interval's own time, not the
// time it is printed, so that intervals delivered late together (after a stall of the
// process) keep one stamp a second each. The first interval of a phase aligns start on
// the intervals' boundaries, so that the stamps round to consecutive seconds.
func (l *live) elapsed(iv *stats.Interval) time.Duration {
	d := iv.End.Sub(l.start)
	if !l.anchored {
		l.anchored = true
		l.start = l.start.Add(d - d.Round(time.Second))
		d = d.Round(time.Second)
	}
	return max(d, 0)
}

// interval is the collector subscriber: it runs on the ticking goroutine, once a second.
func (l *live) interval(iv *stats.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	secs := iv.Seconds()
	if secs < 0.9 {
		// A partial interval (the last one at the end of a run, the one a warm-up's end
		// cuts): a rate over part of a second, printed under the same clock second as
		// the line before, reads as a second measurement of it. The summary covers it.
		return
	}
	elapsed := l.elapsed(iv)
	// The clock says how far a bounded run is (elapsed/total); a run until Ctrl-C shows
	// the elapsed time only.
	prefix := "[" + clock(elapsed) + "]"
	if l.duration > 0 && l.backfill == nil {
		prefix = "[" + clock(elapsed) + "/" + clock(l.duration) + "]"
	}
	if l.backfill != nil {
		st := l.backfill()
		o := iv.Op("backfill")
		line := fmt.Sprintf("%s backfill %s %s/s  %d/%d keys  err %d", prefix, st.Phase, count(float64(o.Count())/secs), st.Written, st.Total, o.Errors())
		l.print(line, l.backfillBar(st))
		return
	}
	var parts []string
	// One entry per op class (an operation of a mixed class is in the summary, not here).
	for i := range iv.Ops {
		o := &iv.Ops[i]
		op := o.Name
		if op == "backfill" || stats.IsOperationSeries(op) || o.Workers == 0 && o.Count()+o.Errors() == 0 {
			continue
		}
		parts = append(parts, l.classText(o, secs))
	}
	if len(parts) == 0 {
		parts = []string{"idle"}
	}
	if l.width <= 0 {
		l.print(prefix+" "+strings.Join(parts, "  | "), l.runBar(elapsed))
		return
	}
	l.print(strings.Join(pack(prefix, parts, " | ", l.width), "\n"), l.runBar(elapsed))
}

// classText is one class's figures of an interval: its rate (of the target), response
// time percentiles and start lag (which tells a slow store from a late generator), errors,
// and what happened only when it did. A second with no answer has no latency ("–"), not a
// latency of 0. The compact form (the default) drops p99.9 and the words a reader knows
// from the summary's legend.
func (l *live) classText(o *stats.OpInterval, secs float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/s", o.Name, count(float64(o.Count())/secs))
	if o.TargetRate > 0 {
		fmt.Fprintf(&b, " (of %s)", count(o.TargetRate))
	}
	p50, p99, p999, lag := "–", "–", "–", "–"
	if o.Count() > 0 {
		p50, p99, p999 = micros(float64(o.Response.ValueAtQuantile(50))), micros(float64(o.Response.ValueAtQuantile(99))),
			micros(float64(o.Response.ValueAtQuantile(99.9)))
		lag = micros(float64(o.StartLag.ValueAtQuantile(99)))
	}
	if l.width <= 0 {
		fmt.Fprintf(&b, " p50 %s p99 %s p99.9 %s lag p99 %s err %d", p50, p99, p999, lag, o.Errors())
	} else {
		fmt.Fprintf(&b, " p50 %s p99 %s lag %s err %d", p50, p99, lag, o.Errors())
	}
	if o.Misses > 0 || o.Name == "read" {
		fmt.Fprintf(&b, " miss %d", o.Misses)
	}
	if o.Dropped > 0 {
		fmt.Fprintf(&b, " dropped %d", o.Dropped)
	}
	if o.Backlog > time.Second {
		fmt.Fprintf(&b, " backlog %s", o.Backlog.Round(time.Millisecond))
	}
	return b.String()
}

// pack lays parts out after prefix on lines of at most width columns (runes), joined by
// sep, the lines after the first indented under the first part. A part too long for a
// line of its own is wrapped at its spaces.
func pack(prefix string, parts []string, sep string, width int) []string {
	indent := strings.Repeat(" ", runeLen(prefix)) + " "
	var lines []string
	line := ""
	for i, p := range parts {
		if i > 0 && runeLen(line)+runeLen(sep)+runeLen(p) <= width {
			line += sep + p
			continue
		}
		if i > 0 {
			lines = append(lines, line)
		}
		lead := indent
		if i == 0 {
			lead = prefix + " "
		}
		wrapped := strings.Split(wrapText(lead, p, width), "\n")
		lines = append(lines, wrapped[:len(wrapped)-1]...)
		line = wrapped[len(wrapped)-1]
	}
	return append(lines, line)
}

// wrapText breaks text into lines of at most width columns (runes) at spaces, the first
// starting with prefix and the others indented as deep; 0 leaves it one line. A word
// longer than a line (a URL, a path) is kept whole on a line of its own.
func wrapText(prefix, text string, width int) string {
	if width <= 0 {
		return prefix + text
	}
	indent := strings.Repeat(" ", runeLen(prefix))
	var b strings.Builder
	line := prefix
	fresh := true // line holds no word yet
	for _, w := range strings.Fields(text) {
		if !fresh && runeLen(line)+1+runeLen(w) > width {
			b.WriteString(line)
			b.WriteByte('\n')
			line, fresh = indent, true
		}
		if !fresh {
			line += " "
		}
		line += w
		fresh = false
	}
	b.WriteString(line)
	return b.String()
}

// wrapLines is wrapText for a text of several lines: each wraps on its own, the first
// after prefix, the others and their continuations under it. Width 0 keeps the lines as
// they are.
func wrapLines(prefix, text string, width int) string {
	if width <= 0 {
		return prefix + text
	}
	lines := strings.Split(text, "\n")
	indent := strings.Repeat(" ", runeLen(prefix))
	for i, l := range lines {
		if i > 0 {
			prefix = indent
		}
		lines[i] = wrapText(prefix, l, width)
	}
	return strings.Join(lines, "\n")
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// note prints a line of the run's own (a phase that ended) between interval lines, under
// the same lock, so it never interleaves with them.
func (l *live) note(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.print(wrapText("", line, l.width), "")
}

// print writes a line; on a terminal it redraws the status line under it.
func (l *live) print(line, status string) {
	if !l.tty {
		fmt.Fprintln(l.out, line)
		return
	}
	fmt.Fprintf(l.out, "\r\033[K%s\n", line)
	if status != "" {
		fmt.Fprint(l.out, status)
		l.status = true
	}
}

// finish clears the status line.
func (l *live) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clearStatus()
}

// clearStatus erases the status line from the terminal. The caller holds l.mu.
func (l *live) clearStatus() {
	if l.tty && l.status {
		fmt.Fprint(l.out, "\r\033[K")
		l.status = false
	}
}

func (l *live) runBar(elapsed time.Duration) string {
	if l.duration <= 0 {
		return fmt.Sprintf("running %s (Ctrl-C stops and reports)", clock(elapsed))
	}
	frac := min(elapsed.Seconds()/l.duration.Seconds(), 1)
	return fmt.Sprintf("%s %s / %s", bar(frac), clock(elapsed), clock(l.duration))
}

func (l *live) backfillBar(st engine.BackfillStatus) string {
	if st.Total == 0 {
		return ""
	}
	return fmt.Sprintf("%s backfill %.0f%%", bar(float64(st.Written+st.Failed)/float64(st.Total)), 100*float64(st.Written+st.Failed)/float64(st.Total))
}

func bar(frac float64) string {
	const width = 30
	n := int(frac * width)
	return "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + "]"
}

func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// count formats a rate compactly: 950, 12.3k, 1.25M.
func count(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.1fk", x/1e3)
	default:
		return fmt.Sprintf("%.0f", x)
	}
}

// micros formats a latency given in microseconds with a unit that keeps 2-3 digits.
func micros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.0fµs", us)
	}
}
