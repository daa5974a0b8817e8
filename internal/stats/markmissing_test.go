package stats

import (
	"fmt"
	"testing"
	"time"
)

// TestMarkMissingFlagsThePointAfterTheFact: a fleet second whose node's data came after it
// was published is flagged partial with the node missing in the series, beside those it
// already named; its counts and the other seconds stay as they were, a series read before
// keeps what it read, and the cumulative view, which takes the late data, names only the
// node its ingested seconds missed.
func TestMarkMissingFlagsThePointAfterTheFact(t *testing.T) {
	c, t0 := newTestCollector(t, Config{Shards: 1})
	for i, missing := range [][]string{nil, nil, {"node-c"}} {
		if err := c.Ingest(fleetInterval(t0.Add(time.Duration(i)*time.Second), 100, len(missing) > 0, missing...)); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Series()
	c.MarkMissing(t0.Add(2*time.Second), "node-b") // the second second's end
	c.MarkMissing(t0.Add(3*time.Second), "node-a") // the third's, which named node-c
	c.MarkMissing(t0.Add(3*time.Second), "node-a") // again: no change
	c.MarkMissing(t0.Add(time.Hour), "node-x")     // no such point
	got := ""
	for _, p := range c.Series() {
		got += fmt.Sprintf("%v:%d,%v,%v ", p.Time.Sub(t0).Seconds(), p.Ops["read"].Count, p.Partial, p.Missing)
	}
	if want := "1:100,false,[] 2:100,true,[node-b] 3:100,true,[node-a node-c] "; got != want {
		t.Errorf("series after the marks: %s; want %s", got, want)
	}
	if p := before[1]; p.Partial || len(p.Missing) > 0 {
		t.Errorf("a series read before the marks changed: %+v", p)
	}
	if cum := c.Cumulative(); !cum.Partial || fmt.Sprint(cum.Missing) != "[node-c]" {
		t.Errorf("the cumulative view: partial %v, missing %v; want node-c only", cum.Partial, cum.Missing)
	}
}
