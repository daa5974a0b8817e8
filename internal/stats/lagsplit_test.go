package stats

import (
	"encoding/json"
	"testing"
	"time"
)

// The start lag of an operation recorded with its split is divided into the generator's
// own part and the wait for a worker busy in the store, and the summary gives both as
// means per answered operation; one recorded without a split adds to neither, and an own
// part beyond the lag (a caller's rounding) counts as the whole lag, never more.
func TestStartLagSplit(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		record    func(s *Shard)
		own, wait float64 // µs per answered operation
	}{
		{"the store's", func(s *Shard) { s.SuccessLag(10*ms, ms, 0) }, 0, 9000},
		{"the generator's", func(s *Shard) { s.MissLag(10*ms, ms, 9*ms) }, 9000, 0},
		{"shared", func(s *Shard) { s.SuccessLag(10*ms, ms, 3*ms) }, 3000, 6000},
		{"own beyond the lag", func(s *Shard) { s.SuccessLag(10*ms, ms, time.Hour) }, 9000, 0},
		{"validated", func(s *Shard) { s.SuccessInvalid(5*ms, ms, ms, Stale); s.MissInvalid(5*ms, ms, 4*ms, Lost) }, 2500, 1500},
		{"not split", func(s *Shard) { s.Success(10*ms, ms); s.Miss(10*ms, ms) }, 0, 0},
		{"half split", func(s *Shard) { s.Success(10*ms, ms); s.SuccessLag(10*ms, ms, 0) }, 0, 4500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, t0 := newTestCollector(t, Config{Shards: 1})
			tc.record(c.Recorder(OpRead).Shard(0))
			iv := c.Tick(t0.Add(time.Second))
			got := iv.Summary().Ops["read"]
			if got.StartLagOwn != tc.own || got.StartLagWait != tc.wait {
				t.Errorf("own %.0f µs, wait %.0f µs per op; want %.0f, %.0f", got.StartLagOwn, got.StartLagWait, tc.own, tc.wait)
			}
			if cum := c.Cumulative().Ops["read"]; cum.StartLagOwn != tc.own || cum.StartLagWait != tc.wait {
				t.Errorf("cumulative: own %.0f µs, wait %.0f µs per op; want %.0f, %.0f", cum.StartLagOwn, cum.StartLagWait, tc.own, tc.wait)
			}
			if pts := c.Series(); len(pts) != 1 || pts[0].Ops["read"].StartLagOwn != tc.own || pts[0].Ops["read"].StartLagWait != tc.wait {
				t.Errorf("series point: %+v", pts)
			}
		})
	}
}

// An interval encoded by a node that predates the split (no lagOwnUs, lagWaitUs) decodes
// with both zero, "not known", and the rest of it intact; one that has them keeps them.
func TestOldIntervalsDecodeWithoutTheSplit(t *testing.T) {
	for _, tc := range []struct {
		name      string
		json      string
		own, wait int64
	}{
		{"old", `{"seq":3,"ops":{"read":{"successes":5,"misses":1,"failures":{},"validation":{}}}}`, 0, 0},
		{"new", `{"seq":3,"ops":{"read":{"successes":5,"misses":1,"failures":{},"validation":{},"lagOwnUs":70,"lagWaitUs":900}}}`, 70, 900},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e EncodedInterval
			if err := json.Unmarshal([]byte(tc.json), &e); err != nil {
				t.Fatal(err)
			}
			iv, err := e.Decode()
			if err != nil {
				t.Fatal(err)
			}
			o := iv.Ops[0]
			if o.Successes != 5 || o.Misses != 1 || o.LagOwnUs != tc.own || o.LagWaitUs != tc.wait {
				t.Errorf("decoded %+v, want 5 successes, 1 miss, own %d, wait %d", o.Counts, tc.own, tc.wait)
			}
		})
	}
}
