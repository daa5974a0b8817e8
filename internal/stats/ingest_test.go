package stats

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// fleetInterval builds an interval as a coordinator would: its own histograms, series in
// name order (not the collector's), completeness set.
func fleetInterval(start time.Time, n int64, partial bool, missing ...string) *Interval {
	iv := &Interval{Start: start, End: start.Add(time.Second), Nodes: 3, Partial: partial, Missing: missing}
	for _, name := range []string{"read", "scan.range"} {
		o := OpInterval{Name: name, Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram(),
			TargetRate: 300, Workers: 12, Backlog: 5 * time.Millisecond, Pending: 7}
		for i := range n {
			_ = o.Response.RecordValue(100 + i)
			_ = o.Service.RecordValue(50 + i)
			_ = o.StartLag.RecordValue(1 + i%3)
		}
		o.Successes = n
		o.Failures[driver.ClassTimeout] = 2
		iv.Ops = append(iv.Ops, o)
	}
	return iv
}

// TestIngestPublishesLikeTick: an ingested interval reaches every view a ticked one does
// (latest, cumulative, series, subscribers, the encoded log), with its completeness.
func TestIngestPublishesLikeTick(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	log := NewIntervalLog(c, 10, 0)
	defer log.Close()
	var seen []string
	c.Subscribe(func(iv *Interval) {
		// Subscribers see the collector's layout: series by Op, named.
		if iv.Ops[OpRead].Name != "read" {
			t.Errorf("subscriber got %q at OpRead", iv.Ops[OpRead].Name)
		}
		seen = append(seen, strings.Join(iv.Missing, ","))
	})
	if err := c.Ingest(fleetInterval(t0, 100, false)); err != nil {
		t.Fatal(err)
	}
	if err := c.Ingest(fleetInterval(t0.Add(time.Second), 50, true, "node-b")); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Lookup("scan.range"); !ok {
		t.Fatal("an ingested series was not registered")
	}
	if !slices.Equal(seen, []string{"", "node-b"}) {
		t.Errorf("subscribers saw missing %q", seen)
	}
	l := c.Latest()
	if !l.Partial || !slices.Equal(l.Missing, []string{"node-b"}) || l.Nodes != 3 || l.Ops["read"].Count != 50 || l.Ops["read"].TargetRate != 300 {
		t.Errorf("latest: partial %v missing %v nodes %d read %+v", l.Partial, l.Missing, l.Nodes, l.Ops["read"])
	}
	if l.Ops["read"].StartLag.Max != 3 {
		t.Errorf("latest start lag %+v", l.Ops["read"].StartLag)
	}
	pts := c.Series()
	if len(pts) != 2 || pts[0].Partial || !pts[1].Partial || !slices.Equal(pts[1].Missing, []string{"node-b"}) || pts[1].Ops["scan.range"].Count != 50 {
		t.Fatalf("series: %+v", pts)
	}
	b, _ := json.Marshal(pts[1])
	if !strings.Contains(string(b), `"partial":true,"missing":["node-b"]`) {
		t.Errorf("point JSON lacks the completeness: %s", b)
	}
	cum := c.Cumulative()
	if cum.Ops["read"].Count != 150 || cum.Ops["read"].Failures["timeout"] != 4 || !cum.Partial || !slices.Equal(cum.Missing, []string{"node-b"}) {
		t.Errorf("cumulative: %+v partial %v missing %v", cum.Ops["read"], cum.Partial, cum.Missing)
	}
	if !cum.End.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("cumulative ends %v", cum.End)
	}
	p := log.Since(0)
	if len(p.Intervals) != 2 || p.Intervals[0].Partial || !p.Intervals[1].Partial || !slices.Equal(p.Intervals[1].Missing, []string{"node-b"}) || p.Intervals[1].Nodes != 3 {
		t.Errorf("encoded intervals: %+v", p.Intervals)
	}
	if iv, err := p.Intervals[1].Decode(); err != nil || !iv.Partial || iv.Nodes != 3 {
		t.Errorf("decoded: %v %+v", err, iv)
	}

	// Out of order: refused, nothing applied.
	if err := c.Ingest(fleetInterval(t0, 10, false)); !errors.Is(err, ErrOutOfOrder) {
		t.Error("an interval ending before the last one was ingested")
	}
	// Late data goes to the cumulative view only.
	if err := c.IngestCumulative(fleetInterval(t0, 10, false)); err != nil {
		t.Fatal(err)
	}
	if got := c.Cumulative().Ops["read"].Count; got != 160 {
		t.Errorf("cumulative count %d after a late interval of 10, want 160", got)
	}
	if len(c.Series()) != 2 || len(seen) != 2 || c.Latest().Ops["read"].Count != 50 {
		t.Error("a late interval changed the series, the latest interval or reached subscribers")
	}
	// A node's own tick carries no completeness.
	c.ResetAt(t0.Add(10 * time.Second))
	if c.Cumulative().Partial {
		t.Error("reset kept the cumulative partial mark")
	}
	c.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
	iv := c.Tick(t0.Add(11 * time.Second))
	if iv.Partial || iv.Nodes != 0 || iv.Missing != nil {
		t.Errorf("tick after ingest kept completeness: %+v", iv)
	}
	b, _ = json.Marshal(c.Series()[2])
	if strings.Contains(string(b), "partial") || strings.Contains(string(b), "nodes") {
		t.Errorf("node point JSON has fleet fields: %s", b)
	}
}
