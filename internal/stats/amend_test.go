package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// pageTimes decodes a SeriesJSON page: each point's end (seconds after t0), and whether
// it is partial with its missing nodes.
func pageTimes(t *testing.T, t0 time.Time, page SeriesPage) string {
	t.Helper()
	s := ""
	for _, b := range page.Points {
		var p Point
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("point %s: %v", b, err)
		}
		s += fmt.Sprintf("%v:%v%v ", p.Time.Sub(t0).Seconds(), p.Partial, p.Missing)
	}
	if page.More {
		s += "more"
	}
	return s
}

// TestAmendedPointReachesThePollers: a poller of the series that read a fleet second
// before a late delivery flagged it (MarkMissing) gets it again, flagged, when it next
// asks for what came after its newest point, whole or paged; a reader of the whole series
// gets it flagged (not the encoding cached before the mark); once the poller has moved
// past the newest second of the amendment's time it is not sent again.
func TestAmendedPointReachesThePollers(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	ingest := func(from, to int) {
		t.Helper()
		for i := from; i <= to; i++ {
			if err := c.Ingest(fleetInterval(t0.Add(time.Duration(i-1)*time.Second), 10, false)); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(since time.Duration, limit int) string {
		t.Helper()
		var at time.Time
		if since > 0 {
			at = t0.Add(since)
		}
		page, err := c.SeriesJSON(at, limit)
		if err != nil {
			t.Fatal(err)
		}
		return pageTimes(t, t0, page)
	}
	ingest(1, 3)
	if got, want := read(0, 0), "1:false[] 2:false[] 3:false[] "; got != want {
		t.Fatalf("the whole series: %s; want %s", got, want)
	}
	if got := read(3*time.Second, 0); got != "" {
		t.Fatalf("since the newest point, before the mark: %q; want nothing", got)
	}
	c.MarkMissing(t0.Add(2*time.Second), "node-b")
	if got, want := read(3*time.Second, 0), "2:true[node-b] "; got != want {
		t.Errorf("since the newest point, after the mark: %q; want the amended second, %q", got, want)
	}
	if got, want := read(0, 0), "1:false[] 2:true[node-b] 3:false[] "; got != want {
		t.Errorf("the whole series after the mark: %q; want %q", got, want)
	}
	// Paged: the amended second comes beside the limit, which pages the new ones.
	ingest(4, 5)
	if got, want := read(3*time.Second, 1), "2:true[node-b] 4:false[] more"; got != want {
		t.Errorf("since the third second, limit 1: %q; want %q", got, want)
	}
	if got, want := read(4*time.Second, 1), "5:false[] "; got != want {
		t.Errorf("since the fourth second, limit 1: %q; want %q", got, want)
	}
	// A mark that changes nothing is no amendment.
	c.MarkMissing(t0.Add(2*time.Second), "node-b")
	if got := read(5*time.Second, 0); got != "" {
		t.Errorf("since the newest point after a mark that changed nothing: %q; want nothing", got)
	}
	// SeriesSince, a span's points (a report's), is not widened by the amendment.
	if n := len(c.SeriesSince(t0.Add(3 * time.Second))); n != 2 {
		t.Errorf("SeriesSince the third second: %d points; want the 2 after it", n)
	}
}

// TestAmendedPointReachesTheSubscribers: the amendment subscribers get the amended point
// once, as it is now; a mark of a point not in the series, or one that changes nothing,
// sends nothing.
func TestAmendedPointReachesTheSubscribers(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	for i, missing := range [][]string{nil, nil, {"node-c"}} {
		if err := c.Ingest(fleetInterval(t0.Add(time.Duration(i)*time.Second), 10, missing != nil, missing...)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	cancel := c.SubscribeAmended(func(p Point) {
		got = append(got, fmt.Sprintf("%v:%v%v:%d", p.Time.Sub(t0).Seconds(), p.Partial, p.Missing, p.Ops["read"].Count))
	})
	c.MarkMissing(t0.Add(3*time.Second), "node-a")
	c.MarkMissing(t0.Add(3*time.Second), "node-a")
	c.MarkMissing(t0.Add(time.Hour), "node-a")
	c.MarkMissing(t0.Add(time.Second), "node-b")
	cancel()
	c.MarkMissing(t0.Add(2*time.Second), "node-b")
	if want := []string{"3:true[node-a node-c]:10", "1:true[node-b]:10"}; !slices.Equal(got, want) {
		t.Errorf("amended points: %q; want %q", got, want)
	}
}

// TestAmendedIntervalInTheLog: the interval log's entry of a second flagged after it
// was published is flagged too, and a reader that had it gets it again, once it asks
// for the intervals after it; a page handed out before keeps what it held.
func TestAmendedIntervalInTheLog(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	l := NewIntervalLog(c, 10, 0)
	defer l.Close()
	for i := range 3 {
		if err := c.Ingest(fleetInterval(t0.Add(time.Duration(i)*time.Second), 10, false)); err != nil {
			t.Fatal(err)
		}
	}
	before := l.Since(0)
	if len(before.Intervals) != 3 || before.Next != 3 {
		t.Fatalf("log: %d intervals, next %d; want 3, 3", len(before.Intervals), before.Next)
	}
	c.MarkMissing(t0.Add(2*time.Second), "node-b")
	after := l.Since(0)
	if e := after.Intervals[1]; !e.Partial || !slices.Equal(e.Missing, []string{"node-b"}) {
		t.Errorf("the log's entry of the flagged second: partial %v, missing %v; want partial, node-b", e.Partial, e.Missing)
	}
	if e := after.Intervals[0]; e.Partial || len(e.Missing) > 0 {
		t.Errorf("the log's entry of another second: partial %v, missing %v; want whole", e.Partial, e.Missing)
	}
	if e := before.Intervals[1]; e.Partial || len(e.Missing) > 0 {
		t.Errorf("a page read before the mark changed: partial %v, missing %v", e.Partial, e.Missing)
	}
	poll := l.Since(before.Next)
	if len(poll.Intervals) != 0 || len(poll.Amended) != 1 || poll.Amended[0].Seq != 1 || !poll.Amended[0].Partial {
		t.Errorf("a reader that had the second: %d new, amended %+v; want none new and interval 1 flagged", len(poll.Intervals), poll.Amended)
	}
	if err := c.Ingest(fleetInterval(t0.Add(3*time.Second), 10, false)); err != nil {
		t.Fatal(err)
	}
	if poll := l.Since(4); len(poll.Amended) != 0 {
		t.Errorf("a reader past the amendment: amended %+v; want none", poll.Amended)
	}
}

// TestSeriesJSONDroppedWhenIdle: the series' encoded points are dropped at the first
// tick SeriesJSONIdle after the last read (on the collector's clock), not before, and a
// read after that answers byte for byte what the series encodes to.
func TestSeriesJSONDroppedWhenIdle(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	sim := clock.NewSim(t0)
	c := NewCollector(Config{Shards: 1, Clock: sim, SeriesLen: 600})
	tick := func(n int) {
		for range n {
			c.Recorder(OpRead).Shard(0).Success(3*time.Millisecond, 2*time.Millisecond)
			sim.Advance(time.Second)
			c.Tick(sim.Now())
		}
	}
	held := func() int {
		c.encMu.Lock()
		defer c.encMu.Unlock()
		return len(c.enc)
	}
	body := func() []byte {
		t.Helper()
		page, err := c.SeriesJSON(time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Join(page.Points, []byte(","))
	}
	want := func() []byte {
		t.Helper()
		var out [][]byte
		for _, p := range c.Series() {
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(p); err != nil {
				t.Fatal(err)
			}
			out = append(out, bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		}
		return bytes.Join(out, []byte(","))
	}
	tick(30)
	first := body()
	if n := held(); n != 30 {
		t.Fatalf("after a read of 30 points: %d held", n)
	}
	tick(100)
	body() // a read 100 s on keeps them
	tick(int(SeriesJSONIdle/time.Second) - 1)
	if n := held(); n != 130 {
		t.Errorf("%v after the last read: %d points held; want the 130 read", SeriesJSONIdle-time.Second, n)
	}
	tick(1)
	if n := held(); n != 0 {
		t.Errorf("%v after the last read: %d points held; want none", SeriesJSONIdle, n)
	}
	again := body()
	if !bytes.Equal(again, want()) {
		t.Errorf("the series read again after the drop differs from its encoding:\n%.300s\nwant\n%.300s", again, want())
	}
	if !bytes.HasPrefix(again, first) {
		t.Errorf("the first 30 points read again differ from their first reading:\n%.300s\nwant\n%.300s", again, first)
	}
	if n, total := held(), len(c.Series()); n != total {
		t.Errorf("after the read: %d points held; want the series' %d", n, total)
	}
}
