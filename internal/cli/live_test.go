package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// TestLiveLine: a second without answers shows no latency ("–", not 0µs), dropped
// operations are named, and a partial interval (the run's last part-second) prints no
// line of its own, which would read as a second measurement of the same clock second.
func TestLiveLine(t *testing.T) {
	iv := func(secs float64, answered, failed, dropped int64) *stats.Interval {
		o := stats.OpInterval{Name: "read", Response: stats.NewHistogram(), Service: stats.NewHistogram(),
			StartLag: stats.NewLagHistogram(), TargetRate: 100, Workers: 4}
		for range answered {
			_ = o.Response.RecordValue(1500)
			_ = o.StartLag.RecordValue(20)
		}
		o.Successes, o.Dropped = answered, dropped
		o.Failures[driver.ClassTimeout] = failed
		end := time.Now()
		return &stats.Interval{Start: end.Add(-time.Duration(secs * float64(time.Second))), End: end, Ops: []stats.OpInterval{o}}
	}
	for _, tc := range []struct {
		name      string
		iv        *stats.Interval
		want, not []string
	}{
		{"answers", iv(1, 100, 0, 0), []string{"read 100/s (of 100)", "p50 1.50ms", "err 0"}, []string{"–", "dropped"}},
		{"no answers", iv(1, 0, 40, 60), []string{"read 0/s (of 100)", "p50 – p99 – p99.9 – lag p99 –", "err 40", "dropped 60"}, []string{"0µs"}},
		{"partial last second", iv(0.3, 30, 0, 0), nil, []string{"read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			newLive(&out, false, 0).interval(tc.iv)
			line := out.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(line, n) {
					t.Errorf("line %q has %q", line, n)
				}
			}
		})
	}
}
