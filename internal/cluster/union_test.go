package cluster_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/merge"
	"github.com/ndbench/ndbench/internal/stats"
)

// seriesPoint is a point of GET /api/v1/stats/series, a node's or the fleet's.
type seriesPoint struct {
	T       time.Time `json:"t"`
	Nodes   int       `json:"nodes"`
	Partial bool      `json:"partial"`
	Missing []string  `json:"missing"`
	Ops     map[string]struct {
		Attempted int64 `json:"attempted"`
	} `json:"ops"`
}

// nodeSeconds returns the reads of a node's seconds by the fleet second the coordinator's
// merge puts each in (package merge): the nearest second after removing the phase of the
// stream's first tick, which the merge keeps for as long as the process lives, and
// summed where two land in one second. A node whose process stalls ticks late and
// then, for a stall shorter than a second, on its old phase: the late second and the
// next can end within one fleet second, and the merge counts both there. Keyed by second
// alone, this test had kept only one of them (fleet second 1,153 reads against its
// nodes' 455) and read each stretch after a stall at the phase of its own ticks, which
// the merge does not follow (the collector's ticks move to a new phase after a stall of
// more than a second).
func nodeSeconds(points []seriesPoint) map[int64]int64 {
	out := map[int64]int64{}
	if len(points) == 0 {
		return out
	}
	// The phase of the first tick a second after the one before: a node's first ticks may
	// be late (a process starting on a loaded machine), and the coordinator's first
	// interval of the node, whose phase the merge keeps, is a later one.
	first := points[0].T
	for i := 1; i < len(points); i++ {
		if (points[i].T.Sub(points[i-1].T) - time.Second).Abs() <= 50*time.Millisecond {
			first = points[i].T
			break
		}
	}
	phase := first.Sub(first.Round(time.Second))
	for _, p := range points {
		out[p.T.Add(-phase).Round(time.Second).Unix()] += p.Ops["read"].Attempted
	}
	return out
}

// TestNodeSecondsFollowTheMerge: for a node whose ticks stall, the seconds
// nodeSeconds expects in each fleet second are those the coordinator's merge puts
// there, read for read, and none is lost: a real collector ticks at the given instants
// (its series is what GET /api/v1/stats/series serves; its interval log what the
// coordinator pulls), and a merge.Merger places its intervals.
func TestNodeSecondsFollowTheMerge(t *testing.T) {
	base := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	// ticks returns n ticks a second apart from the second s at phase.
	ticks := func(s, n int, phase time.Duration) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, time.Duration(s+i)*time.Second+phase)
		}
		return out
	}
	join := func(parts ...[]time.Duration) []time.Duration { return slices.Concat(parts...) }
	for _, tc := range []struct {
		name  string
		ticks []time.Duration // node time after base
		// from is the first tick the coordinator pulls (it joins then): the ticks
		// before it are the node's idle seconds, without reads.
		from int
	}{
		{"steady", ticks(1, 10, 300*time.Millisecond), 0},
		{"near the half second", ticks(1, 10, 490*time.Millisecond), 0},
		// Due at 5.3 s, late at 5.8 s; the next is due at 6.3 s, on the old phase: both
		// end within fleet second 6 (5.5 s to 6.5 s after the phase's 0.3 s).
		{"a half-second stall", join(ticks(1, 4, 300*time.Millisecond), []time.Duration{5800 * time.Millisecond}, ticks(6, 5, 300*time.Millisecond)), 0},
		// A stall past the next tick: the collector ticks on from the late one, at a
		// new phase (0.75 s) that rounds the other way than the old one (0.3 s) does.
		{"a long stall, new phase", join(ticks(1, 4, 300*time.Millisecond), ticks(10, 5, 750*time.Millisecond)), 0},
		{"a long stall, phase kept", join(ticks(1, 4, 300*time.Millisecond), ticks(10, 5, 50*time.Millisecond)), 0},
		// The process's first tick is late (due at 1.3 s, at 1.8 s), the coordinator
		// joins at the third.
		{"a late first tick", join([]time.Duration{1800 * time.Millisecond}, ticks(2, 9, 300*time.Millisecond)), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := stats.NewCollector(stats.Config{Shards: 1})
			c.ResetAt(base)
			log := stats.NewIntervalLog(c, 100, 0)
			defer log.Close()
			var total int64
			for i, at := range tc.ticks {
				// A different number of reads each second, so that a second placed in the
				// wrong slot shows.
				n := 100 + 10*i
				if i < tc.from {
					n = 0
				}
				sh := c.Recorder(stats.OpRead).Shard(0)
				for range n {
					sh.Success(time.Millisecond, time.Millisecond)
				}
				total += int64(n)
				c.Tick(base.Add(at))
			}
			var points []seriesPoint
			for _, p := range c.Series() {
				sp := seriesPoint{T: p.Time, Ops: map[string]struct {
					Attempted int64 `json:"attempted"`
				}{}}
				if o, ok := p.Ops["read"]; ok {
					sp.Ops["read"] = struct {
						Attempted int64 `json:"attempted"`
					}{o.Attempted}
				}
				points = append(points, sp)
			}
			m := merge.New(merge.Config{Interval: time.Second})
			m.Expect("n1", base)
			for _, e := range log.Since(uint64(tc.from)).Intervals {
				if err := m.Add("n1", 0, e); err != nil {
					t.Fatal(err)
				}
			}
			merged := map[int64]int64{}
			for _, f := range m.Ready(base.Add(time.Minute)) {
				if f.Late {
					t.Fatalf("a late delivery: %+v", f)
				}
				if n := f.Interval.Summary().Ops["read"].Attempted; n > 0 {
					merged[f.Interval.End.Unix()] = n
				}
			}
			got := nodeSeconds(points)
			maps.DeleteFunc(got, func(_ int64, n int64) bool { return n == 0 })
			var sum int64
			for _, n := range got {
				sum += n
			}
			if !maps.Equal(got, merged) || sum != total {
				t.Errorf("the test expects %s (%d reads), the merge has %s (%d reads)", seconds(got, base), sum, seconds(merged, base), total)
			}
		})
	}
}

// seconds lists reads by second after base, in order.
func seconds(m map[int64]int64, base time.Time) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%ds:%d", k-base.Unix(), m[k]))
	}
	return fmt.Sprint(out)
}
