package stats

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// A series point carries the start lag and drop lateness of its own interval, like the
// latest interval does: a point that says it dropped operations says how late they were,
// and a point without drops says none were late. Checked on a node's series (Tick) and a
// coordinator's (Ingest). (Both used to read 0 in every point while the run's totals had
// real values.)
func TestSeriesPointsCarryStartLagAndDropLateness(t *testing.T) {
	type sec struct {
		ops       int           // successes recorded
		resp, svc time.Duration // of each success
		drops     int           // operations dropped
		lateness  time.Duration // of each drop
	}
	tests := []struct {
		name string
		secs []sec
		// of the last point: start lag p50 and drop lateness max (µs), dropped count
		wantLag, wantLate float64
		wantDropped       int64
	}{
		{name: "on time", secs: []sec{{ops: 100, resp: time.Millisecond, svc: time.Millisecond}}},
		{name: "started late", secs: []sec{{ops: 100, resp: 4 * time.Millisecond, svc: time.Millisecond}},
			wantLag: 3000},
		{name: "dropped", secs: []sec{{ops: 100, resp: 12 * time.Millisecond, svc: 2 * time.Millisecond, drops: 300, lateness: 50 * time.Millisecond}},
			wantLag: 10000, wantLate: 50000, wantDropped: 300},
		{name: "drops end", secs: []sec{
			{ops: 100, resp: 12 * time.Millisecond, svc: 2 * time.Millisecond, drops: 300, lateness: 50 * time.Millisecond},
			{ops: 100, resp: 3 * time.Millisecond, svc: 2 * time.Millisecond}},
			wantLag: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node, t0 := newTestCollector(t, Config{Shards: 2})
			// fleet is a coordinator's collector, fed the node's intervals.
			fleet, _ := newTestCollector(t, Config{Shards: 2})
			sh := node.Recorder(OpRead).Shard(0)
			for i, s := range tc.secs {
				for range s.ops {
					sh.Success(s.resp, s.svc)
				}
				for range s.drops {
					sh.Drop(s.lateness)
				}
				if err := fleet.Ingest(node.Tick(t0.Add(time.Duration(i+1) * time.Second))); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []*Collector{node, fleet} {
				pts := c.Series()
				if len(pts) != len(tc.secs) {
					t.Fatalf("%d series points, want %d", len(pts), len(tc.secs))
				}
				p, latest := pts[len(pts)-1].Ops["read"], c.Latest().Ops["read"]
				if !within(p.StartLag.P50, tc.wantLag) || !sameLatency(p.StartLag, latest.StartLag) {
					t.Errorf("point start lag %+v, want p50 ~%v µs and the latest interval's %+v", p.StartLag, tc.wantLag, latest.StartLag)
				}
				if p.Dropped != tc.wantDropped || !within(p.DropLateness.Max, tc.wantLate) || !sameLatency(p.DropLateness, latest.DropLateness) {
					t.Errorf("point dropped %d lateness %+v, want %d dropped, max ~%v µs, the latest interval's %+v",
						p.Dropped, p.DropLateness, tc.wantDropped, tc.wantLate, latest.DropLateness)
				}
				// In JSON (the report's and the API's series) too.
				b, err := json.Marshal(pts[len(pts)-1])
				if err != nil {
					t.Fatal(err)
				}
				var doc struct {
					Ops map[string]struct {
						Dropped      int64              `json:"dropped"`
						StartLag     map[string]float64 `json:"startLag"`
						DropLateness map[string]float64 `json:"dropLateness"`
					} `json:"ops"`
				}
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				j := doc.Ops["read"]
				if !within(j.StartLag["p50"], tc.wantLag) || !within(j.DropLateness["max"], tc.wantLate) || j.Dropped != tc.wantDropped {
					t.Errorf("point JSON dropped %d startLag %v dropLateness %v", j.Dropped, j.StartLag, j.DropLateness)
				}
			}
		})
	}
}

// within reports whether got is want at the start-lag histograms' 2 significant digits.
func within(got, want float64) bool {
	return math.Abs(got-want) <= 0.01*math.Abs(want)
}

// sameLatency reports whether a series point's latency (kept in float32) is l.
func sameLatency(p, l Latency) bool {
	return within(p.P50, l.P50) && within(p.P95, l.P95) && within(p.P99, l.P99) && within(p.P995, l.P995) &&
		within(p.P999, l.P999) && within(p.Max, l.Max) && within(p.Mean, l.Mean)
}
