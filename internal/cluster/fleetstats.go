package cluster

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
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

	emitMu sync.Mutex     // Ready and the ingest of what it returns, one at a time
	pulls  sync.WaitGroup // pulls of nodes' intervals in flight
	sem    chan struct{}  // bounds the pulls in flight (Options.Parallel)
	// inFlight counts the pulls begun and not yet merged and emitted: a test on a
	// simulated clock moves it on once only the pulls it holds are out.
	inFlight atomic.Int64
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
	// On the coordinator's clock: its span starts and resets, and the merged seconds it
	// takes in end after them, on one clock (on another, a simulated fleet's seconds were
	// all refused as older than the collector's start).
	coll := stats.NewCollector(stats.Config{Clock: c.opts.Clock})
	return &fleetStats{c: c, sem: make(chan struct{}, c.opts.Parallel), merger: merge.New(merge.Config{Interval: time.Second, Wait: wait}), coll: coll,
		log: stats.NewIntervalLog(coll, 120, time.Minute)}
}

func (f *fleetStats) expect(id string, now time.Time) { f.merger.Expect(id, now) }
func (f *fleetStats) forget(id string, now time.Time) { f.merger.Forget(id, now) }
func (f *fleetStats) reset()                          { f.coll.Reset() }

// expectAgain expects a node that comes back, its stream going on (merge.ExpectAgain).
func (f *fleetStats) expectAgain(id string, now time.Time) { f.merger.ExpectAgain(id, now) }

// pollDeadline bounds one pull of a node's intervals; pullsPerNode bounds the pulls of
// one node in flight. Pulls overlap on a link slower than the poll period, so that a
// node's second waits for one round trip, not for the pull before it.
const (
	pollDeadline = 5 * time.Second
	pullsPerNode = 5
)

// poll starts a pull of the new intervals of every node that answers and returns without
// waiting for them: each node's pull has its own deadline, and its intervals are merged
// when they arrive, so a node behind a slow link delays neither the other nodes' pulls nor
// the seconds that do not need it. The merge waits for a slow node's seconds as long as
// its pulls take (bounded, merge.Config.MaxDelay) before it flags them partial. Ready is
// asked now, for the seconds whose wait has ended, and after every pull.
func (f *fleetStats) poll(ctx context.Context, now time.Time) {
	c := f.c
	type job struct {
		m      *member
		since  uint64
		gen    uint64
		offset time.Duration
	}
	c.mu.Lock()
	var jobs []job
	var expect []string
	for _, m := range c.members {
		if (m.health == Alive || m.health == Suspect) && m.polls < pullsPerNode {
			m.polls++
			jobs = append(jobs, job{m: m, since: m.next, gen: m.pollGen, offset: m.offset})
			if m.health == Alive && !m.expected {
				// Owed from its first pull, not from its first answer: a node whose
				// pulls never succeed (a hung stats endpoint, a link too slow for
				// pollDeadline) must be missing from every second, not left out of the
				// fleet's figures with no second flagged.
				m.expected, m.expectedAt, m.pullFailed = true, now, false
				expect = append(expect, m.ID)
			}
		}
	}
	c.mu.Unlock()
	for _, id := range expect {
		f.expect(id, now)
	}
	for _, j := range jobs {
		f.pulls.Add(1)
		f.inFlight.Add(1)
		go func() {
			defer f.pulls.Done()
			defer f.inFlight.Add(-1)
			f.pull(ctx, j.m, j.since, j.gen, j.offset)
		}()
	}
	f.emit(c.now())
}

// pull asks one node for its intervals from since and merges the new ones.
func (f *fleetStats) pull(ctx context.Context, m *member, since, gen uint64, offset time.Duration) {
	c := f.c
	select {
	case f.sem <- struct{}{}: // bounds the pulls in flight (Options.Parallel), apart from the beats'
	case <-ctx.Done():
		c.mu.Lock()
		m.polls--
		c.mu.Unlock()
		return
	}
	// The pull's deadline and what it took are on the coordinator's clock, as the seconds
	// they decide on: a link's delay holds a second back by it (SetDelay, Ready).
	clk := clock.Or(c.opts.Clock)
	sent := clk.Now()
	pctx, cancel := withTimeoutOn(ctx, clk, pollDeadline)
	var page stats.IntervalsPage
	err := m.client().call(pctx, http.MethodGet, "/api/v1/stats/intervals?since="+strconv.FormatUint(since, 10), nil, &page)
	cancel()
	<-f.sem
	took := clock.Since(clk, sent)
	c.mu.Lock()
	m.polls--
	if err == nil {
		// A link's delay is what its slow pulls take: it rises at once and decays slowly,
		// so one quick pull does not cut the wait of the seconds still on their way.
		m.pullDelay = max(took, m.pullDelay-(m.pullDelay-took)/4)
	}
	delay := m.pullDelay
	if err != nil && gen == m.pollGen && !m.expectedAt.IsZero() {
		// The seconds since its expectation stay owed: see apply.
		m.pullFailed = true
	}
	c.mu.Unlock()
	if err != nil {
		c.log.Debug("fleet stats poll failed", "node", m.ID, "err", err)
		return
	}
	f.merger.SetDelay(m.ID, delay)

	f.apply(m, gen, &page, offset)
	f.emit(c.now())
}

// withTimeoutOn is context.WithTimeout with d measured on clk: on the real clock it is
// context.WithTimeout itself; on another (a simulated one) the context ends when clk has
// moved d on, with context.DeadlineExceeded as its cause.
func withTimeoutOn(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	if clk == clock.Real {
		return context.WithTimeout(ctx, d)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	t := clk.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return cctx, func() { t.Stop(); cancel(context.Canceled) }
}

// apply merges the intervals of page that no other pull of m merged.
func (f *fleetStats) apply(m *member, gen uint64, page *stats.IntervalsPage, offset time.Duration) {
	c := f.c
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	c.mu.Lock()
	if gen != m.pollGen {
		// The node restarted while this pull was out: its page is the old process's.
		c.mu.Unlock()
		return
	}
	first, from := !m.polling, m.next
	m.next, m.polling = max(m.next, page.Next), true
	expect := !m.expected && m.health == Alive
	// A first page, when no pull of the node failed since it was expected, is its own
	// history up to now (below): its expectation moves to now, or the seconds between
	// the pull's start and its answer would lack it for nothing. One that came after a
	// failed pull does not erase the seconds owed meanwhile: they are partial.
	rebase := first && !expect && m.expected && !m.pullFailed && !m.expectedAt.IsZero()
	// Only the first page since the expectation began: a restarted node's first page
	// (polling starts over) must leave the seconds it lost partial.
	expectedAt := m.expectedAt
	m.expectedAt = time.Time{}
	m.expected = m.expected || expect
	c.mu.Unlock()
	if rebase {
		f.forget(m.ID, expectedAt)
	}
	if expect || rebase {
		// Expected from now on, not from when it answered its first beat: seconds
		// before its first interval was asked for are not missing it.
		f.expect(m.ID, c.now())
	}
	if first {
		// What a node held before the coordinator first asked is its own history, not
		// the fleet's: the fleet's figures start now.
		return
	}
	for _, iv := range page.Intervals {
		if iv.Seq < from {
			continue // an overlapping pull merged it already
		}
		if err := f.merger.Add(m.ID, offset, iv); err != nil {
			c.log.Warn("fleet stats: interval not merged", "node", m.ID, "seq", iv.Seq, "err", err)
		}
	}
}

// emit ingests the merged seconds that are ready at now, in order: pulls end
// concurrently, and the fleet's collector takes its seconds one after the other.
func (f *fleetStats) emit(now time.Time) {
	f.emitMu.Lock()
	defer f.emitMu.Unlock()
	for _, fl := range f.merger.Ready(now) {
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
		// The seconds that went out without these operations say so now (a node lost
		// when they went out, back with a stall's interval due in one).
		for _, s := range fl.Short {
			if err == nil {
				f.coll.MarkMissing(s.End, s.Node)
			}
		}
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
