package stats

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

func TestHDRLogRoundTrip(t *testing.T) {
	c, _ := newTestCollector(t, Config{Shards: 2})
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 789e6, time.UTC)
	c.ResetAt(t0)
	var buf bytes.Buffer
	lw, err := NewHDRLogWriter(&buf, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Subscribe(lw.Subscriber())

	r := c.Recorder(OpRead).Shard(0)
	w := c.Recorder(OpWrite).Shard(1)
	for i := 1; i <= 100; i++ {
		r.Success(time.Duration(i)*time.Millisecond, time.Duration(i)*time.Microsecond)
	}
	w.Success(5*time.Millisecond, 4*time.Millisecond)
	c.Tick(t0.Add(time.Second))
	r.Success(time.Second, time.Second)
	c.Tick(t0.Add(2500 * time.Millisecond))
	if err := lw.Err(); err != nil {
		t.Fatal(err)
	}

	log := buf.String()
	for _, want := range []string{"outputValueUnitRatio 1000", "#[StartTime: ", "#[BaseTime: ", "\"StartTimestamp\""} {
		if !strings.Contains(log, want) {
			t.Errorf("log header lacks %q:\n%s", want, log)
		}
	}

	type line struct {
		tag        string
		start, end int64
		count, max int64
	}
	var got []line
	rd := hdrhistogram.NewHistogramLogReader(strings.NewReader(log))
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		got = append(got, line{h.Tag(), h.StartTimeMs(), h.EndTimeMs(), h.TotalCount(), h.Max()})
	}
	if len(got) != 2*2*len(BuiltinNames()) {
		t.Fatalf("read %d interval histograms, want %d:\n%s", len(got), 2*2*len(BuiltinNames()), log)
	}
	ms := t0.UnixMilli()
	want := []line{
		{"read-response", ms, ms + 1000, 100, 100000},
		{"read-service", ms, ms + 1000, 100, 100},
		{"write-response", ms, ms + 1000, 1, 5000},
		{"write-service", ms, ms + 1000, 1, 4000},
		{"backfill-response", ms, ms + 1000, 0, 0},
		{"backfill-service", ms, ms + 1000, 0, 0},
		{"read-response", ms + 1000, ms + 2500, 1, 1000000},
	}
	for i, w := range want {
		g := got[i]
		// Maxima are the histogram's highest equivalent value, within 0.1%.
		if g.tag != w.tag || g.start != w.start || g.end != w.end || g.count != w.count || !near(float64(g.max), float64(w.max)) {
			t.Errorf("line %d = %+v, want %+v", i, g, w)
		}
	}
	// The Interval_Max column is in milliseconds, like the standard tools' ns logs.
	if !strings.Contains(log, "Tag=read-response,0.789,1.000,100.") {
		t.Errorf("first read line lacks the expected timestamps and max in ms:\n%s", log)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestHDRLogWriteErrorSticks(t *testing.T) {
	if _, err := NewHDRLogWriter(&failWriter{n: 10}, time.Now()); err == nil {
		t.Error("header write error not reported")
	}
	fw := &failWriter{n: 1000}
	lw, err := NewHDRLogWriter(fw, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Config{Shards: 1})
	iv := c.Tick(time.Now())
	fw.n = 0
	if err := lw.WriteInterval(iv); err == nil {
		t.Fatal("interval write error not reported")
	}
	fw.n = 1 << 20
	if err := lw.WriteInterval(iv); err == nil || lw.Err() == nil {
		t.Error("write after an error succeeded")
	}
}

// writeCounter counts the writes that reach it and keeps what they wrote.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestHDRLogIntervalIsOneWrite: each interval reaches the file in one write, however many
// bytes its histograms take, so a process killed while writing (kill -9) leaves whole
// intervals: never a torn line, nor an interval with only some of its series. The first
// interval here is more than bufio's 4 KiB, which once cut it into two writes.
func TestHDRLogIntervalIsOneWrite(t *testing.T) {
	c, _ := newTestCollector(t, Config{Shards: 2})
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c.ResetAt(t0)
	out := &writeCounter{}
	lw, err := NewHDRLogWriter(out, t0)
	if err != nil {
		t.Fatal(err)
	}
	header := out.writes
	// Values spread over the whole range make large histograms.
	for _, op := range []Op{OpRead, OpWrite} {
		s := c.Recorder(op).Shard(0)
		for i := 1; i <= 20000; i++ {
			d := time.Duration(i*i) * time.Microsecond / 50
			s.Success(d+time.Duration(i)*time.Microsecond, d)
		}
	}
	for k := 1; k <= 3; k++ {
		before, size := out.writes, out.Len()
		if err := lw.WriteInterval(c.Tick(t0.Add(time.Duration(k) * time.Second))); err != nil {
			t.Fatal(err)
		}
		if k == 1 && out.Len()-size <= 4096 {
			t.Fatalf("the interval took %d bytes; the test needs one of more than 4 KiB", out.Len()-size)
		}
		if got := out.writes - before; got != 1 {
			t.Errorf("interval %d (%d bytes) reached the file in %d writes, want 1", k, out.Len()-size, got)
		}
	}
	if header != 1 {
		t.Errorf("the header took %d writes, want 1", header)
	}
}
