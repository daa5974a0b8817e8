package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
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

// placement is one way a node's intervals may sit in the fleet's seconds: its reads by
// the Unix second (coordinator clock) of the fleet second that counts them.
type placement map[int64]int64

// nearHalf is how near the half second a node's schedule (in coordinator time) may sit
// for the merge's measure of its clock offset, not this test's, to decide the side.
const nearHalf = 50 * time.Millisecond

// nodePlacements returns the ways the coordinator's merge (package merge) may have placed
// a node's intervals, as its /api/v1/stats/intervals serves them: each in the fleet second
// that ends nearest the instant its tick was due (EncodedInterval.Due) in coordinator time
// (offset is the node's clock minus the coordinator's), after removing the phase of its
// schedule, that of the schedule's first due instant; a due instant off the last one's
// grid by more than a twentieth of a second starts a new schedule (the node restarted its
// ticks). A schedule within nearHalf of the half second has two placements, one a second
// later than the other: which one the merge took is its measured offset's call. An
// interval without a due instant fails the test: every node sends them.
func nodePlacements(t *testing.T, ivs []stats.EncodedInterval, offset time.Duration) []placement {
	t.Helper()
	type schedule struct {
		phase time.Duration
		ivs   []int
		reads []int64
	}
	var scheds []*schedule
	var last time.Time
	for i, e := range ivs {
		if e.Due.IsZero() {
			t.Fatalf("interval %d of a node (ending %s) has no due instant", e.Seq, e.End.Format("15:04:05.000"))
		}
		iv, err := e.Decode()
		if err != nil {
			t.Fatal(err)
		}
		due := e.Due.Add(-offset)
		r := e.Due.Sub(last) % time.Second
		if r < 0 {
			r += time.Second
		}
		if len(scheds) == 0 || min(r, time.Second-r) > time.Second/20 {
			scheds = append(scheds, &schedule{phase: due.Sub(due.Round(time.Second))})
		}
		s := scheds[len(scheds)-1]
		s.ivs = append(s.ivs, i)
		s.reads = append(s.reads, iv.Summary().Ops["read"].Attempted)
		last = e.Due
	}
	out := []placement{{}}
	for _, s := range scheds {
		phases := []time.Duration{s.phase}
		if s.phase.Abs() > time.Second/2-nearHalf {
			// The other side of the half second: a second earlier or later.
			other := s.phase - time.Second
			if s.phase < 0 {
				other = s.phase + time.Second
			}
			phases = append(phases, other)
		}
		var next []placement
		for _, p := range out {
			for _, ph := range phases {
				q := maps.Clone(p)
				for j, i := range s.ivs {
					sec := ivs[i].Due.Add(-offset).Add(-ph).Round(time.Second).Unix()
					q[sec] += s.reads[j]
				}
				next = append(next, q)
			}
		}
		out = next
	}
	return out
}

// TestNodePlacementsFollowTheMerge: for a node whose ticks are late, stall and restart,
// one of the placements nodePlacements expects is the coordinator's merge's, read for
// read, and none is lost: a real collector ticks on a simulated clock (its interval log
// is what GET /api/v1/stats/intervals serves and the coordinator pulls), and a
// merge.Merger places its intervals.
func TestNodePlacementsFollowTheMerge(t *testing.T) {
	base := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	const (
		onTime = iota
		late   // the tick comes d late
		again  // the ticks restart d later, with a stats reset (a new driver session)
	)
	type step struct {
		kind int
		d    time.Duration
	}
	steady := func(n int) []step { return slices.Repeat([]step{{onTime, 0}}, n) }
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name  string
		phase time.Duration // of the schedule
		steps []step
		// from is the first tick the coordinator merges (it joins then): the ticks
		// before it are the node's idle seconds, without reads.
		from int
	}{
		{"steady", ms(300), steady(10), 0},
		{"near the half second", ms(490), steady(10), 0},
		{"a half-second stall", ms(300), slices.Concat(steady(4), []step{{late, ms(500)}}, steady(5)), 0},
		{"a stall past the next tick", ms(300), slices.Concat(steady(4), []step{{late, ms(2500)}}, steady(5)), 0},
		{"a late first tick", ms(300), slices.Concat(steady(2), []step{{late, ms(700)}}, steady(8)), 2},
		{"ticks restarted", ms(300), slices.Concat(steady(4), []step{{again, ms(1450)}}, steady(5)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewSim(base.Add(tc.phase))
			c := stats.NewCollector(stats.Config{Shards: 1, Clock: clk})
			c.ResetAt(clk.Now())
			log := stats.NewIntervalLog(c, 100, 0)
			defer log.Close()
			ticked := make(chan struct{}, 1)
			c.Subscribe(func(*stats.Interval) { ticked <- struct{}{} })
			var cancel func()
			var done chan struct{}
			run := func() {
				ctx, stop := context.WithCancel(context.Background())
				done, cancel = make(chan struct{}), stop
				go func() { defer close(done); c.Run(ctx) }()
				if !clk.WaitTimers(1, 10*time.Second) {
					t.Fatal("Run set no timer")
				}
			}
			run()
			defer func() { cancel(); <-done }()
			var total int64
			for i, st := range tc.steps {
				if st.kind == again {
					cancel()
					<-done
					clk.Jump(st.d)
					c.ResetAt(clk.Now())
					run()
				}
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
				if !clk.WaitTimers(1, 10*time.Second) {
					t.Fatal("Run set no timer")
				}
				next, _ := clk.Next()
				if st.kind == late {
					clk.Jump(next.Sub(clk.Now()) + st.d)
				}
				clk.Set(next)
				select {
				case <-ticked:
				case <-time.After(10 * time.Second):
					t.Fatalf("no tick at step %d", i)
				}
			}
			m := merge.New(merge.Config{Interval: time.Second})
			m.Expect("n1", base)
			for _, e := range log.Since(uint64(tc.from)).Intervals {
				if err := m.Add("n1", 0, e); err != nil {
					t.Fatal(err)
				}
			}
			merged := placement{}
			var sum int64
			for _, f := range m.Ready(clk.Now().Add(time.Minute)) {
				if f.Late {
					t.Fatalf("a late delivery: %+v", f)
				}
				if n := f.Interval.Summary().Ops["read"].Attempted; n > 0 {
					merged[f.Interval.End.Unix()] = n
					sum += n
				}
			}
			if sum != total {
				t.Errorf("the merge counts %d reads, the node recorded %d", sum, total)
			}
			var tried []string
			for _, p := range nodePlacements(t, log.Since(0).Intervals, 0) {
				maps.DeleteFunc(p, func(_ int64, n int64) bool { return n == 0 })
				if maps.Equal(p, merged) {
					return
				}
				tried = append(tried, seconds(p, base))
			}
			t.Errorf("the test expects one of %v, the merge has %s", tried, seconds(merged, base))
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
