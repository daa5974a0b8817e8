package cluster

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/merge"
	"github.com/ndbench/ndbench/internal/stats"
)

// fleetWindow is how many seconds of a node's figures give its achieved rate and p99.
const fleetWindow = 5

// saturatedBelow is the share of its assigned rate under which a node is flagged.
const saturatedBelow = 0.95

// fleetStats pulls every node's encoded 1 s intervals, merges them per second and feeds
// the merged intervals to a collector of their own: the fleet's statistics are then served
// by the same code as a node's.
type fleetStats struct {
	c      *Coordinator
	merger *merge.Merger
	coll   *stats.Collector
	log    *stats.IntervalLog

	satMu sync.Mutex
	sat   map[int64][]string // merged second's start (ns) -> nodes saturated in it
}

// satKept is how many merged seconds' saturated nodes are kept.
const satKept = 300

// saturated returns the nodes saturated in the merged second starting at start.
func (f *fleetStats) saturated(start time.Time) []string {
	f.satMu.Lock()
	defer f.satMu.Unlock()
	return slices.Clone(f.sat[start.UnixNano()])
}

// noteSaturated records which nodes sent less than their share in fl, before the merged
// second is ingested (its subscribers may ask).
func (f *fleetStats) noteSaturated(fl merge.Fleet) {
	var ids []string
	for id, nf := range fl.PerNode {
		for name, o := range nf.Ops {
			if !stats.IsOperationSeries(name) && o.Saturated() {
				ids = append(ids, id)
				break
			}
		}
	}
	slices.Sort(ids)
	f.satMu.Lock()
	defer f.satMu.Unlock()
	if f.sat == nil {
		f.sat = map[int64][]string{}
	}
	k := fl.Interval.Start.UnixNano()
	f.sat[k] = ids
	if len(f.sat) > satKept {
		for old := range f.sat {
			if old < k-int64(satKept)*int64(time.Second) {
				delete(f.sat, old)
			}
		}
	}
}

func newFleetStats(c *Coordinator, wait time.Duration) *fleetStats {
	coll := stats.NewCollector(stats.Config{})
	return &fleetStats{c: c, merger: merge.New(merge.Config{Interval: time.Second, Wait: wait}), coll: coll,
		log: stats.NewIntervalLog(coll, 120, time.Minute)}
}

func (f *fleetStats) expect(id string, now time.Time) { f.merger.Expect(id, now) }
func (f *fleetStats) forget(id string, now time.Time) { f.merger.Forget(id, now) }
func (f *fleetStats) reset()                          { f.coll.Reset() }

// poll asks every node that answers for its new intervals, then ingests the seconds that
// are complete or waited for long enough.
func (f *fleetStats) poll(ctx context.Context, now time.Time) {
	c := f.c
	type job struct {
		m      *member
		since  uint64
		first  bool
		offset time.Duration
	}
	c.mu.Lock()
	var jobs []job
	for _, m := range c.members {
		if m.health == Alive || m.health == Suspect {
			jobs = append(jobs, job{m: m, since: m.next, first: !m.polling, offset: m.offset})
		}
	}
	c.mu.Unlock()
	c.each(len(jobs), func(i int) {
		j := jobs[i]
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var page stats.IntervalsPage
		if err := j.m.client().call(pctx, http.MethodGet, "/api/v1/stats/intervals?since="+strconv.FormatUint(j.since, 10), nil, &page); err != nil {
			c.log.Debug("fleet stats poll failed", "node", j.m.ID, "err", err)
			return
		}
		c.mu.Lock()
		j.m.next, j.m.polling = page.Next, true
		expect := !j.m.expected && j.m.health == Alive
		j.m.expected = j.m.expected || expect
		c.mu.Unlock()
		if expect {
			// Expected from now on, not from when it answered its first beat: seconds
			// before its first interval was asked for are not missing it.
			f.expect(j.m.ID, time.Now())
		}
		if j.first {
			// What a node held before the coordinator first asked is its own history, not
			// the fleet's: the fleet's figures start now.
			return
		}
		for _, iv := range page.Intervals {
			if err := f.merger.Add(j.m.ID, j.offset, iv); err != nil {
				c.log.Warn("fleet stats: interval not merged", "node", j.m.ID, "seq", iv.Seq, "err", err)
			}
		}
	})
	for _, fl := range f.merger.Ready(time.Now()) {
		f.ingest(fl)
	}
}

func (f *fleetStats) ingest(fl merge.Fleet) {
	if !fl.Late {
		f.noteSaturated(fl)
	}
	var err error
	if fl.Late {
		err = f.coll.IngestCumulative(fl.Interval)
	} else {
		err = f.coll.Ingest(fl.Interval)
	}
	c := f.c
	switch {
	case errors.Is(err, stats.ErrOutOfOrder):
		// A second from before the fleet's last stats reset: not part of this span.
	case err != nil:
		c.log.Warn("fleet stats: merged interval not ingested", "start", fl.Interval.Start, "err", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, nf := range fl.PerNode {
		if m, ok := c.members[id]; ok {
			m.figures.add(nf)
		}
	}
}

// nodeFigures are a node's last seconds, for its row in the fleet view.
type nodeFigures struct {
	last []merge.NodeFigures
}

func (f *nodeFigures) add(n merge.NodeFigures) {
	f.last = append(f.last, n)
	if len(f.last) > fleetWindow {
		f.last = f.last[len(f.last)-fleetWindow:]
	}
}

// fill sets s's achieved rates, p99s, error rate and saturation flag.
func (f *nodeFigures) fill(s *MemberStatus) {
	if len(f.last) == 0 {
		return
	}
	secs := 0.0
	ops := map[string]float64{}
	targetSecs, targetAttempts, targetOps := map[string]float64{}, map[string]float64{}, map[string]float64{}
	targetN := map[string]int{}
	hadTarget := map[string]bool{} // the class had a rate in the second before
	errs := 0.0
	s.ResponseP99Ms, s.StartLagP99Ms = map[string]float64{}, map[string]float64{}
	for i, n := range f.last {
		secs += n.Seconds
		for name, o := range n.Ops {
			if stats.IsOperationSeries(name) {
				continue // a class's operations are counted in the class
			}
			ops[name] += float64(o.Count)
			if o.TargetRate > 0 && i > 0 && hadTarget[name] {
				// Saturation is judged only on whole seconds the node had a rate to keep:
				// the seconds before a start, and the one it started in, would flag every
				// node.
				targetSecs[name] += n.Seconds
				targetAttempts[name] += float64(o.Count + o.Errors)
				targetOps[name] += float64(o.Count)
				targetN[name]++
			}
			hadTarget[name] = o.TargetRate > 0
			errs += float64(o.Errors)
			s.ResponseP99Ms[name] = max(s.ResponseP99Ms[name], o.ResponseP99/1000)
			s.StartLagP99Ms[name] = max(s.StartLagP99Ms[name], o.StartLagP99/1000)
		}
	}
	if secs <= 0 {
		return
	}
	s.Achieved = map[string]float64{}
	for name, n := range ops {
		switch {
		case targetSecs[name] > 0:
			// Over the whole seconds it ran at a rate: the seconds before a start would
			// show a node that keeps its rate as below it.
			s.Achieved[name] = targetOps[name] / targetSecs[name]
		case n > 0:
			s.Achieved[name] = n / secs
		}
	}
	s.ErrorsPerSec = errs / secs
	// Saturated: it did not even attempt its share (failed attempts count as sent: a node
	// that sends its share and gets errors is the store's problem, not the generator's).
	// A node is judged on 3 seconds of load at least.
	for name, want := range s.Assigned {
		if want > 0 && s.Running[name] && targetN[name] >= 3 && targetAttempts[name]/targetSecs[name] < saturatedBelow*want {
			s.Saturated = true
		}
	}
}
