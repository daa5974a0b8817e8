package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// HDRLogWriter writes HdrHistogram interval logs (format 1.3): one line per interval per
// tag, with tags "<op>-response" and "<op>-service" (e.g. "read-response"), readable by
// hdrhistogram-go's HistogramLogReader and by Java's HistogramLogProcessor.
//
// Values are microseconds, while the standard tools assume nanoseconds. Pass
// -outputValueUnitRatio 1000 to HistogramLogProcessor for percentiles in milliseconds
// (its default of 1e6 would print them 1000x too small), and select a series with
// -tag (e.g. -tag read-response): every line is tagged, and the tool reads only
// untagged lines without it. The Interval_Max column is written in milliseconds, as
// the tools' own nanosecond logs have it.
//
// It is safe for concurrent use.
type HDRLogWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	line bytes.Buffer // an interval's lines, handed to w in one Write
	lw   *hdrhistogram.HistogramLogWriter
	base time.Time
	err  error
}

// microsPerMs scales the Interval_Max column from recorded microseconds to milliseconds.
// hdrhistogram-go's writer can only apply its default ratio of 1e6 (its options type has
// no exported way to set another), which would show our maxima in seconds, so
// WriteInterval formats the interval lines itself, exactly as the library does.
const microsPerMs = 1000.0

// NewHDRLogWriter writes the log header to w: a comment naming the value unit, the
// format version, the start and base time (start, to the second), and the column
// legend. Interval timestamps are written relative to the base time.
func NewHDRLogWriter(w io.Writer, start time.Time) (*HDRLogWriter, error) {
	// hdrhistogram-go writes StartTime and BaseTime in whole seconds, so the base is
	// truncated to a whole second: interval timestamps relative to it then read back
	// as the exact absolute times.
	ms := start.UnixMilli() / 1000 * 1000
	l := &HDRLogWriter{w: bufio.NewWriter(w), base: time.UnixMilli(ms)}
	l.lw = hdrhistogram.NewHistogramLogWriter(l.w)
	l.lw.SetBaseTime(ms)
	steps := []func() error{
		func() error {
			return l.lw.OutputComment("[Logged with ndbench. Values are microseconds: use HistogramLogProcessor -outputValueUnitRatio 1000 for milliseconds]")
		},
		l.lw.OutputLogFormatVersion,
		func() error { return l.lw.OutputStartTime(ms) },
		func() error { return l.lw.OutputBaseTime(ms) },
		l.lw.OutputLegend,
		l.w.Flush,
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, fmt.Errorf("stats: write hdr log header: %w", err)
		}
	}
	return l, nil
}

// WriteInterval appends iv's histograms, two per op class, and flushes, so the file is
// complete up to the last interval if the process dies (kill -9 loses at most the
// interval in progress). The interval's lines go to the file in one write, whatever
// their size: a process killed mid-interval leaves whole intervals, never a torn line or
// an interval with some of its classes. After a write error every later call returns
// that error.
func (l *HDRLogWriter) WriteInterval(iv *Interval) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	start := iv.Start.Sub(l.base).Seconds()
	length := iv.Seconds()
	l.line.Reset()
	for i := range iv.Ops {
		o := &iv.Ops[i]
		for _, h := range [...]struct {
			kind string
			h    *hdrhistogram.Histogram
			max  float64
		}{{"response", o.Response, o.lat.resp.Max}, {"service", o.Service, o.lat.svc.Max}} {
			payload, err := EncodeHistogram(h.h)
			if err != nil {
				l.err = err
				return err
			}
			// The collector read the max when it published the interval; Max would
			// walk the histogram again.
			if !o.lat.ok {
				h.max = float64(h.h.Max())
			}
			fmt.Fprintf(&l.line, "Tag=%s-%s,%.3f,%.3f,%.3f,%s\n",
				o.Name, h.kind, start, length, h.max/microsPerMs, payload)
		}
	}
	// bufio hands a write at least its size to the file at once when it holds nothing,
	// which it never does between intervals (the header and each interval are flushed).
	_, err := l.w.Write(l.line.Bytes())
	if err == nil {
		err = l.w.Flush()
	}
	if err != nil {
		l.err = fmt.Errorf("stats: write hdr log: %w", err)
	}
	return l.err
}

// Subscriber returns a function to pass to Collector.Subscribe. Write errors are kept
// and reported by Err, since a subscriber has no way to return them.
func (l *HDRLogWriter) Subscriber() func(*Interval) {
	return func(iv *Interval) { _ = l.WriteInterval(iv) }
}

// Err returns the first write error, if any.
func (l *HDRLogWriter) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}
