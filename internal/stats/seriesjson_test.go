package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// wantJSON is what SeriesJSON must give: each point of SeriesSince(since) as the API's
// encoder wrote the whole series before (no HTML escaping), limited.
func wantJSON(t *testing.T, c *Collector, since time.Time, limit int) ([]string, bool) {
	t.Helper()
	var out []string
	for _, p := range c.SeriesSince(since) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(p); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))))
	}
	if limit > 0 && len(out) > limit {
		return out[:limit], true
	}
	return out, false
}

// checkSeriesJSON compares SeriesJSON with wantJSON for since and limit.
func checkSeriesJSON(t *testing.T, c *Collector, what string, since time.Time, limit int) {
	t.Helper()
	page, err := c.SeriesJSON(since, limit)
	if err != nil {
		t.Fatalf("%s: SeriesJSON(%v, %d): %v", what, since, limit, err)
	}
	want, more := wantJSON(t, c, since, limit)
	got := make([]string, len(page.Points))
	for i, p := range page.Points {
		got[i] = string(p)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || page.More != more {
		t.Errorf("%s: SeriesJSON(since %v, limit %d) = %d points, more %v:\n%q\nwant %d points, more %v:\n%q",
			what, since, limit, len(got), page.More, got, len(want), more, want)
	}
}

// TestSeriesJSONIsTheSeriesEncoded: the encoded series matches an encoding of
// SeriesSince at every stage of the ring's life: empty, filling, wrapped more than once
// between two reads (its cache is then entirely stale), with a series registered late,
// with fleet points whose node ids hold characters HTML escaping would change, for
// every since and with limits.
func TestSeriesJSONIsTheSeriesEncoded(t *testing.T) {
	const n = 4
	c, t0 := newTestCollector(t, Config{Shards: 1, SeriesLen: n})
	checkAll := func(what string) {
		t.Helper()
		checkSeriesJSON(t, c, what, time.Time{}, 0)
		for _, p := range c.Series() {
			for _, d := range []time.Duration{-time.Nanosecond, 0, time.Nanosecond} {
				for _, limit := range []int{0, 1, 2, n + 1} {
					checkSeriesJSON(t, c, what, p.Time.Add(d), limit)
				}
			}
		}
	}
	checkAll("empty")
	if page, err := c.SeriesJSON(time.Time{}, 0); err != nil || page.Points == nil || len(page.Points) != 0 {
		t.Errorf("empty series: %v, %v; want no points, not nil", page.Points, err)
	}

	w := c.Recorder(OpWrite).Shard(0)
	tick := 0
	next := func(k int) {
		for range k {
			tick++
			for range tick {
				w.Success(time.Duration(tick)*time.Millisecond, time.Millisecond)
			}
			c.Tick(t0.Add(time.Duration(tick) * time.Second))
		}
	}
	next(2)
	checkAll("filling")
	next(1)
	checkAll("one more")
	next(3)
	checkAll("wrapped")
	if _, err := c.Register("scan.range"); err != nil {
		t.Fatal(err)
	}
	next(1)
	checkAll("a series registered late")
	next(3 * n)
	checkAll("wrapped thrice between reads")

	// Fleet points: completeness, and ids that the default encoder would escape.
	f, f0 := newTestCollector(t, Config{Shards: 1, SeriesLen: n})
	for i := range n + 2 {
		iv := fleetInterval(f0.Add(time.Duration(i)*time.Second), int64(i+1), i%2 == 0, "a<b>&c", fmt.Sprintf("node-%d", i))
		if err := f.Ingest(iv); err != nil {
			t.Fatal(err)
		}
		if i == 1 || i == n+1 {
			c = f
			checkAll(fmt.Sprintf("fleet, %d ingested", i+1))
		}
	}
	page, _ := f.SeriesJSON(time.Time{}, 0)
	if !bytes.Contains(page.Points[0], []byte(`"a<b>&c"`)) {
		t.Errorf("fleet point %s: want the node id unescaped", page.Points[0])
	}
}

// TestSeriesJSONEncodesEachPointOnce: the points are shared between reads (a read is a
// copy, not an encoding), and the cache holds no more than the series.
func TestSeriesJSONEncodesEachPointOnce(t *testing.T) {
	const n = 5
	c, t0 := newTestCollector(t, Config{Shards: 1, SeriesLen: n})
	for i := 1; i <= n+3; i++ {
		c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
		c.Tick(t0.Add(time.Duration(i) * time.Second))
		a, err := c.SeriesJSON(time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := c.SeriesJSON(time.Time{}, 0)
		if len(a.Points) != min(i, n) || len(b.Points) != len(a.Points) {
			t.Fatalf("tick %d: %d and %d points", i, len(a.Points), len(b.Points))
		}
		for k := range a.Points {
			if &a.Points[k][0] != &b.Points[k][0] {
				t.Errorf("tick %d: point %d encoded again by the second read", i, k)
			}
		}
		if len(c.enc) > n {
			t.Errorf("tick %d: %d points cached, the series holds %d", i, len(c.enc), n)
		}
	}
}
