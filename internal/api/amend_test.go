package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
)

// TestAmendedSecondReachesThePollers: a poller that read a fleet second before a late
// delivery flagged it partial (stats.Collector.MarkMissing) gets it again, flagged, from
// GET /api/v1/stats/series?since= its newest point; the whole series says it too.
func TestAmendedSecondReachesThePollers(t *testing.T) {
	e := newEnv(t)
	t0 := fillSeries(t, e, 5)
	flagged := t0.Add(3 * time.Second) // the end of the third second

	var all SeriesBody
	e.must(200, "GET", "/api/v1/stats/series", nil, &all)
	last := all.Points[len(all.Points)-1].Time
	since := "/api/v1/stats/series?since=" + url.QueryEscape(last.Format(time.RFC3339Nano))
	var poll SeriesBody
	e.must(200, "GET", since, nil, &poll)
	if len(poll.Points) != 0 {
		t.Fatalf("since the newest point before the mark: %d points; want none", len(poll.Points))
	}

	e.inst.Collector().MarkMissing(flagged, "node-late")

	marks := func(pts []stats.Point) string {
		s := ""
		for _, p := range pts {
			s += fmt.Sprintf("%s:%v%v ", p.Time.Format(time.TimeOnly), p.Partial, p.Missing)
		}
		return s
	}
	flaggedIn := func(pts []stats.Point) bool {
		for _, p := range pts {
			if p.Time.Equal(flagged) {
				return p.Partial && slices.Contains(p.Missing, "node-late")
			}
		}
		return false
	}
	e.must(200, "GET", since, nil, &poll)
	if len(poll.Points) != 1 || !flaggedIn(poll.Points) {
		t.Errorf("since the newest point after the mark: %s; want the third second (%s) again, partial, missing node-late", marks(poll.Points), flagged.Format(time.TimeOnly))
	}
	e.must(200, "GET", "/api/v1/stats/series", nil, &all)
	if !flaggedIn(all.Points) {
		t.Errorf("the whole series after the mark does not flag the third second (%s): %s", flagged.Format(time.TimeOnly), marks(all.Points))
	}
}

// TestAmendedIntervalReachesTheLogPoller: a reader of GET /api/v1/stats/intervals that
// had an interval gets it again, flagged, under amended when the collector flags its
// second after the fact, and the log's entry is flagged for later readers. The node's
// own ticks feed the log here (a finished node's log is closed).
func TestAmendedIntervalReachesTheLogPoller(t *testing.T) {
	e := newEnv(t)
	var page stats.IntervalsPage
	e.must(200, "GET", "/api/v1/stats/intervals", nil, &page) // the log encodes from its first reader on
	deadline := time.Now().Add(30 * time.Second)
	var held []stats.EncodedInterval
	for len(held) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the node's log holds %d intervals after 30 s; want 2", len(held))
		}
		time.Sleep(100 * time.Millisecond)
		e.must(200, "GET", "/api/v1/stats/intervals?since=0", nil, &page)
		held = page.Intervals
	}
	// A whole second: a sliver of one is no series point, and is not marked.
	iv := held[len(held)-1]
	next := iv.Seq + 1
	e.inst.Collector().MarkMissing(iv.End, "node-late")
	e.must(200, "GET", "/api/v1/stats/intervals?since="+fmt.Sprint(next), nil, &page)
	found := false
	for _, a := range page.Amended {
		found = found || a.Seq == iv.Seq && a.Partial && slices.Contains(a.Missing, "node-late")
	}
	if !found {
		t.Errorf("intervals since %d after the mark: amended %+v; want interval %d, partial, missing node-late", next, page.Amended, iv.Seq)
	}
	e.must(200, "GET", "/api/v1/stats/intervals?since=0", nil, &page)
	for _, a := range page.Intervals {
		if a.Seq == iv.Seq && (!a.Partial || !slices.Contains(a.Missing, "node-late")) {
			t.Errorf("the interval log's entry %d: partial %v, missing %v; want partial, node-late", a.Seq, a.Partial, a.Missing)
		}
	}
}

// TestAmendedSecondReachesTheStream: a client of GET /api/v1/stats/stream that got a
// fleet second's interval event gets an amend event with that second's point, partial
// and naming the node, when a late delivery flags it.
func TestAmendedSecondReachesTheStream(t *testing.T) {
	e := newEnv(t)
	e.inst.Finish() // the node's own ticks would interleave with the ingested seconds
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := e.stream(t, ctx, "")
	// next returns the next event's name and data (heartbeats skipped).
	next := func() (string, string) {
		t.Helper()
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				return event, data
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return "", ""
	}
	// The stream's preamble is written once the client is subscribed.
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "retry:") {
	}
	t0 := seriesStart()
	flagged := t0.Add(time.Second)
	if err := e.inst.Collector().Ingest(seriesInterval(t0, 4)); err != nil {
		t.Fatal(err)
	}
	ev, data := next()
	var sum stats.Summary
	if err := json.Unmarshal([]byte(data), &sum); ev != "interval" || err != nil || !sum.End.Equal(flagged) {
		t.Fatalf("first event %q %.200s (%v); want the interval ending %v", ev, data, err, flagged)
	}
	e.inst.Collector().MarkMissing(flagged, "node-late")
	ev, data = next()
	var p stats.Point
	if err := json.Unmarshal([]byte(data), &p); ev != "amend" || err != nil {
		t.Fatalf("event after the mark: %q %.200s (%v); want amend", ev, data, err)
	}
	if !p.Time.Equal(flagged) || !p.Partial || !slices.Contains(p.Missing, "node-late") || p.Ops["read"].Count != 4 {
		t.Errorf("amended point %+v; want the second ending %v, partial, missing node-late, its 4 reads", p, flagged)
	}
}
