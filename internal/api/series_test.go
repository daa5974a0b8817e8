package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
)

// seriesInterval is a 1 s interval of reads and writes as a coordinator would ingest it,
// with n operations of each and a fleet's completeness (ids an HTML-escaping encoder
// would change).
func seriesInterval(start time.Time, n int64) *stats.Interval {
	iv := &stats.Interval{Start: start, End: start.Add(time.Second), Nodes: 2, Partial: n%3 == 0, Missing: []string{"a<b>&c"}}
	for _, name := range []string{"read", "write"} {
		o := stats.OpInterval{Name: name, Response: stats.NewHistogram(), Service: stats.NewHistogram(),
			StartLag: stats.NewLagHistogram(), TargetRate: 100, Workers: 4}
		for i := range n {
			_ = o.Response.RecordValue(100 + 7*i)
			_ = o.Service.RecordValue(50 + 3*i)
			_ = o.StartLag.RecordValue(1 + i%5)
		}
		o.Successes = n
		iv.Ops = append(iv.Ops, o)
	}
	return iv
}

// seriesStart is a start for fillSeries: intervals must end after the collector's
// span start (its creation), and whole seconds keep the since values readable.
func seriesStart() time.Time { return time.Now().UTC().Truncate(time.Second).Add(time.Second) }

// fillSeries ingests n intervals into e's collector from seriesStart on and returns that
// start. It first ends the node's own 1 s ticks (Finish): their points, at the real time,
// would fall into the series between two reads the tests compare.
func fillSeries(tb testing.TB, e *env, n int) time.Time {
	tb.Helper()
	e.inst.Finish()
	c, t0 := e.inst.Collector(), seriesStart()
	for i := range n {
		if err := c.Ingest(seriesInterval(t0.Add(time.Duration(i)*time.Second), int64(i%50+1))); err != nil {
			tb.Fatal(err)
		}
	}
	return t0
}

// getSeriesRaw is GET path's status, Content-Type and body as sent.
func (e *env) getSeriesRaw(path string) (int, string, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.ts.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// TestSeriesBodyIsUnchanged: GET /api/v1/stats/series, answered from the points encoded
// once each, is byte for byte what huma's encoding of the series gave, whole and with
// since; the header is huma's.
func TestSeriesBodyIsUnchanged(t *testing.T) {
	e := newEnv(t)
	c := e.inst.Collector()
	t0 := fillSeries(t, e, 30)
	plus1 := time.FixedZone("+01:00", 3600)
	for _, since := range []string{"", t0.Add(10 * time.Second).Format(time.RFC3339), t0.Add(10500 * time.Millisecond).Format(time.RFC3339Nano),
		t0.Add(30 * time.Second).Format(time.RFC3339), t0.Add(10 * time.Second).In(plus1).Format(time.RFC3339)} {
		path, want := "/api/v1/stats/series", stats.Point{}.Time
		if since != "" {
			path += "?since=" + url.QueryEscape(since)
			want, _ = time.Parse(time.RFC3339Nano, since)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // huma's JSON format
		if err := enc.Encode(SeriesBody{Points: c.SeriesSince(want)}); err != nil {
			t.Fatal(err)
		}
		st, ct, body := e.getSeriesRaw(path)
		if st != 200 || ct != "application/json" || !bytes.Equal(body, buf.Bytes()) {
			t.Errorf("GET %s: %d %q, %d bytes:\n%.300s\nwant 200 application/json, %d bytes:\n%.300s", path, st, ct, len(body), body, buf.Len(), buf.Bytes())
		}
	}
}

// TestSeriesPages: with limit, a client pages through the series with since set to the
// last point it got, and gets every point once; more is false on the last page only. A
// bad limit is refused naming the parameter. The pages start after t0: the node's own
// ticks before fillSeries ended them may have left a point (a slow machine's).
func TestSeriesPages(t *testing.T) {
	e := newEnv(t)
	t0 := fillSeries(t, e, 23)
	from := "since=" + url.QueryEscape(t0.Format(time.RFC3339Nano))
	var all SeriesBody
	e.must(200, "GET", "/api/v1/stats/series?"+from, nil, &all)
	if len(all.Points) != 23 || all.More {
		t.Fatalf("whole series: %d points, more %v; want 23, false", len(all.Points), all.More)
	}
	var got []time.Time
	since, pages := "&"+from, 0
	for {
		var page SeriesBody
		e.must(200, "GET", "/api/v1/stats/series?limit=5"+since, nil, &page)
		pages++
		for _, p := range page.Points {
			got = append(got, p.Time)
		}
		if !page.More || pages > 10 {
			if len(page.Points) != 3 {
				t.Errorf("last page: %d points, want 3", len(page.Points))
			}
			break
		}
		if len(page.Points) != 5 {
			t.Fatalf("page %d: %d points and more, want 5", pages, len(page.Points))
		}
		since = "&since=" + url.QueryEscape(page.Points[len(page.Points)-1].Time.Format(time.RFC3339Nano))
	}
	if pages != 5 || len(got) != len(all.Points) {
		t.Fatalf("%d pages, %d points; want 5 pages and the %d points", pages, len(got), len(all.Points))
	}
	for i, p := range all.Points {
		if !got[i].Equal(p.Time) {
			t.Errorf("paged point %d at %v, the series has %v", i, got[i], p.Time)
		}
	}
	// limit=0 is no limit.
	var zero SeriesBody
	e.must(200, "GET", "/api/v1/stats/series?limit=0&"+from, nil, &zero)
	if len(zero.Points) != 23 || zero.More {
		t.Errorf("limit=0: %d points, more %v; want all 23", len(zero.Points), zero.More)
	}
	st, body := e.call("GET", "/api/v1/stats/series?limit=-1", nil)
	if st != 422 || !bytes.Contains(body, []byte("query.limit")) {
		t.Errorf("limit=-1: %d %s; want 422 naming query.limit", st, body)
	}
}
