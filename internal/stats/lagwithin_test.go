package stats

import (
	"testing"
	"time"
)

// No start-lag figure reads above the same figure of the response time: every operation's
// lag is at most its response (resp - svc), but the lag histogram's coarser buckets read
// their tops, and a report showed lag max 11.839 ms beside response max 11.791 ms.
func TestStartLagNeverAboveResponseTime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resp, svc time.Duration
	}{
		{"all lag", 11791 * time.Microsecond, 0},
		{"all lag, small", 1013 * time.Microsecond, 0},
		{"lag and service", 11791 * time.Microsecond, 3 * time.Microsecond},
		{"mostly service", 5 * time.Millisecond, 4 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, t0 := newTestCollector(t, Config{Shards: 1})
			sh := c.Recorder(OpRead).Shard(0)
			for range 50 {
				sh.Success(tc.resp, tc.svc)
			}
			iv := c.Tick(t0.Add(time.Second))
			views := map[string]OpSummary{
				"interval":   iv.Summary().Ops["read"],
				"cumulative": c.Cumulative().Ops["read"],
				"point":      c.Series()[0].Ops["read"],
			}
			for name, s := range views {
				l, r := s.StartLag, s.ResponseTime
				for _, f := range []struct {
					name      string
					lag, resp float64
				}{{"p50", l.P50, r.P50}, {"p99", l.P99, r.P99}, {"p99.9", l.P999, r.P999}, {"max", l.Max, r.Max}, {"mean", l.Mean, r.Mean}} {
					if f.lag > f.resp {
						t.Errorf("%s: start lag %s %.0f µs above response time %s %.0f µs", name, f.name, f.lag, f.name, f.resp)
					}
				}
				// Still an upper bound of the true lag, as every percentile is.
				if want := float64((tc.resp - tc.svc).Microseconds()); l.Max < want {
					t.Errorf("%s: start lag max %.0f µs below the operations' %.0f µs", name, l.Max, want)
				}
			}
		})
	}
}
