// Package merge turns the 1 s interval streams of a fleet's nodes into fleet intervals:
// one merged interval per slot of the coordinator's clock, with the exact union of every
// node's histograms and counters, marked partial when an expected node's data is missing,
// and each node's own figures beside it.
//
// # Slots
//
// The coordinator's time is cut into slots of Config.Interval on a grid from the Unix
// epoch: slot k is the span ((k-1)·I, k·I]. Nodes tick every second, but not in phase with
// each other or with that grid, so each node interval is assigned to exactly one slot:
// the one that ends nearest the instant its tick was due on the node's schedule
// (EncodedInterval.Due), moved to the coordinator's clock (Due − offset). A tick that
// came late (a stalled process) thus lands in its own slot, and the next one in the next.
// Rounding alone would still flip a node's intervals between two slots when its schedule
// sits near the half-slot and the measured offset jitters, so the offset of the schedule
// from the grid (its phase, within ±I/2) is kept from the node's first due instant and
// removed before rounding; it is taken again when the schedule moves (a restart, its
// ticks restarted for a new driver session, its clock stepped: a due instant off the
// last one's grid). An interval from a node that does not send Due (an older version) is
// placed the same way by its end, with the phase of its stream's first end.
//
// Every interval lands in exactly one slot, so merging every slot (plus the late
// deliveries, below) gives exactly the union of every node's intervals: the fleet
// cumulative is exact whatever the phases. A slot holds each node's second that was due
// at its end (a node's second that ends 0.3 s into the slot counts whole in it); an
// interval that spans more than one due instant (a stall longer than a slot) counts
// whole in the slot of the last, and the slots it spanned before are partial with the
// node in Missing: its data for them is in the later slot, not in them.
//
// # Completeness
//
// Expect and Forget say which slots expect which node (ExpectAgain: a node that comes
// back, from its last delivery on). A slot is emitted (Ready) when every node it expects
// has delivered its data through the slot, or when Config.Wait has passed since the slot
// ended (plus, for a node behind a slow link, its SetDelay, at most Config.MaxDelay);
// then it is marked Partial, with the nodes that delivered nothing for it in Missing. A node has delivered through slot k when its intervals,
// gapless in Seq, reach slot k: a gap in its Seq (intervals the coordinator could not
// fetch any more, IntervalsPage.Missed), its first interval after being expected, and a
// restart (Seq starting over with a new SpanStart) leave the slots before the interval
// that follows without that node's data, and those slots are partial for it; so do the
// slots an interval spanned (above). Such a slot is not held for the wait: the data it
// lacks will not come. A node's stats reset between two intervals leaves none: what it
// recorded meanwhile it discarded itself.
//
// An interval whose slot was already emitted is never dropped: Ready delivers it, merged
// with any other late ones, as a Fleet with Late set, for the cumulative view only
// (stats.Collector.IngestCumulative), and Counters counts it; its Short names the slots
// that went out without its operations, to be flagged partial after the fact. A repeated interval (same
// SpanStart, a Seq already seen) is ignored and counted, so a poller may re-fetch safely.
// A stats reset on a node (SpanStart changes, Seq runs on) changes nothing here: its
// intervals keep merging, and the coordinator decides whether the fleet resets too.
//
// # Cost
//
// A node interval is decoded once, outside the merger's lock (pollers may call Add
// concurrently), into reused buffers, and added into the slot's dense counts sums; no
// histogram is allocated per node interval. Slots are emitted after at most Wait, their
// accumulators reused, and a node that never reports costs its small state only.
package merge

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultWait     = 2 * time.Second
	DefaultHorizon  = 10 * time.Second
	DefaultMaxDelay = 5 * time.Second
)

// SaturationRatio is the share of its target rate below which a node's class is
// saturated: the node could not send what it was assigned, so its latencies are the
// generator's as much as the store's.
const SaturationRatio = 0.95

// Config configures a Merger. Zero fields take their defaults.
type Config struct {
	// Interval is the slot length: the nodes' tick, default 1 s.
	Interval time.Duration
	// Wait is how long after a slot ends the merger waits for late nodes before emitting
	// it as partial; default 2 s.
	Wait time.Duration
	// Horizon is how far past the coordinator's clock (the last Ready) an interval may
	// end, after its offset: beyond it Add refuses the interval, which can only come from
	// a wrong offset (or sign), rather than keep a slot open for it; default 10 s.
	Horizon time.Duration
	// MaxDelay bounds the extra wait SetDelay gives a node behind a slow link: a slot
	// that lacks such a node waits at most Wait + MaxDelay past its end; default 5 s.
	MaxDelay time.Duration
}

// Fleet is one emitted slot: the merged interval of every node that reported in it.
type Fleet struct {
	// Interval is the merge, Start/End the slot in coordinator time (for a late delivery,
	// the span of the slots its intervals belong to); Partial and Missing say which
	// expected nodes it lacks, Nodes how many contributed. Its series are sorted by
	// name; gauges are summed over nodes (target rate, workers, pending) except Backlog,
	// the worst node's. It belongs to the Merger and is reused after the next Ready:
	// ingest it (stats.Collector.Ingest copies) or clone what you keep.
	Interval *stats.Interval
	// Nodes lists the nodes that contributed, sorted.
	Nodes []string
	// PerNode has each contributing node's own figures for the slot.
	PerNode map[string]NodeFigures
	// Late marks intervals that arrived after their slot was emitted: they belong in the
	// cumulative view only (stats.Collector.IngestCumulative), the series already has
	// those seconds.
	Late bool
	// Short lists, on a Late fleet, the emitted slots its intervals belong to that went
	// out without their operations, and whose: each such slot's counts were short of the
	// node's (a node lost when the slot went out, back with a stall's interval due in
	// it). Its point in the series is to be flagged partial with the node missing
	// (stats.Collector.MarkMissing): the slot was short, and never silently. An interval
	// without operations leaves nothing short.
	Short []SlotNode
}

// SlotNode names a node's interval in a slot: the slot by its end (coordinator time).
type SlotNode struct {
	End  time.Time
	Node string
}

// NodeFigures are one node's own figures in a slot, for the fleet view's node table:
// achieved against assigned rate, saturation, errors, its own p99.
type NodeFigures struct {
	// Seq is the last of the node's intervals merged into the slot (normally the only
	// one); Intervals counts them.
	Seq       uint64
	Intervals int
	// Start and End are the node's interval in coordinator time; Seconds its length
	// (summed over Intervals).
	Start, End time.Time
	Seconds    float64
	// SpanStart is the node's cumulative span (its last stats reset), in its own clock.
	SpanStart time.Time
	// Ops has the node's figures per series.
	Ops map[string]NodeOp
}

// NodeOp is one node's figures for one series in a slot. Latencies are microseconds.
type NodeOp struct {
	Count, Errors int64
	// Rate is Count per second; AttemptRate counts errors too, the figure to compare to
	// the target (a node that sends its share but gets errors is not saturated).
	Rate, AttemptRate float64
	TargetRate        float64
	Workers           int
	// ResponseP99 and StartLagP99 are the node's own 99th percentiles (the larger of
	// its intervals' when two fell in one slot).
	ResponseP99, StartLagP99 float64
	BacklogMs                float64
	Pending                  int64
}

// Saturated reports whether the node sent less than SaturationRatio of its target rate
// (false in a closed loop, target 0).
func (o NodeOp) Saturated() bool {
	return o.TargetRate > 0 && o.AttemptRate < SaturationRatio*o.TargetRate
}

// Counters are the merger's totals since New.
type Counters struct {
	// Intervals counts node intervals merged (on time or late).
	Intervals uint64
	// Late counts node intervals that arrived after their slot was emitted.
	Late uint64
	// Duplicates counts intervals received again and ignored.
	Duplicates uint64
	// Missed counts intervals absent from a node's Seq (gaps).
	Missed uint64
	// Resets counts node stats resets seen (SpanStart changed, Seq ran on); Restarts
	// counts node restarts (Seq started over).
	Resets, Restarts uint64
	// Skipped counts slots a node's interval spanned without being placed in them (its
	// tick came more than a slot late): partial with the node missing.
	Skipped uint64
	// Slots counts slots emitted, Partial those emitted partial.
	Slots, Partial uint64
}

// Merger merges node intervals into fleet intervals. Its methods are safe for concurrent
// use: pollers call Add, the coordinator's loop calls Ready.
type Merger struct {
	cfg Config

	scratch sync.Pool // *decoded

	mu       sync.Mutex
	nodes    map[string]*node
	slots    map[int64]*slot
	started  bool  // next is meaningful
	emitted  bool  // a slot was emitted: next only moves forward
	next     int64 // the next slot to emit
	nowSlot  int64 // the slot of the last Ready's now
	haveNow  bool
	late     *slot // intervals whose slot was emitted, for the next Ready
	short    []SlotNode
	free     []*slot
	out      []*slot // handed out by the last Ready, reused at the next
	hists    []*hdrhistogram.Histogram
	usedH    int
	lagHists []*hdrhistogram.Histogram
	usedLag  int
	counters Counters
}

// New returns a merger.
func New(cfg Config) *Merger {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Wait <= 0 {
		cfg.Wait = DefaultWait
	}
	if cfg.Horizon <= 0 {
		cfg.Horizon = DefaultHorizon
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	m := &Merger{cfg: cfg, nodes: map[string]*node{}, slots: map[int64]*slot{}}
	m.scratch.New = func() any { return new(decoded) }
	return m
}

// Config returns the effective configuration, defaults filled in.
func (m *Merger) Config() Config { return m.cfg }

// unset marks a node's through as not known yet.
const unset = math.MinInt64

// node is what the merger knows of one node's stream.
type node struct {
	periods []period // slots that expect it
	seen    bool
	seq     uint64
	span    time.Time
	phase   time.Duration // of its schedule from the slot grid, within ±I/2
	lastDue time.Time     // the stream's last due instant (node clock); zero: none yet
	through int64         // it delivered all its data through this slot (unset: unknown)
	holes   []period      // slots it left without data (Seq gaps, first contact, restart)
	last    int64         // the latest slot it contributed to
	delay   time.Duration // how late its data comes on its link (SetDelay), within MaxDelay
}

// period is a range of slots, both ends included.
type period struct{ from, until int64 }

func (n *node) expected(k int64) bool {
	for _, p := range n.periods {
		if p.from <= k && k <= p.until {
			return true
		}
	}
	return false
}

func (n *node) delivered(k int64) bool {
	if n.through == unset || n.through < k {
		return false
	}
	for _, h := range n.holes {
		if h.from <= k && k <= h.until {
			return false
		}
	}
	return true
}

// slotEnd returns the end of slot k in coordinator time.
func (m *Merger) slotEnd(k int64) time.Time { return time.Unix(0, k*int64(m.cfg.Interval)) }

// floorSlot returns floor(t/I): the last slot that ends at or before t.
func (m *Merger) floorSlot(t time.Time) int64 {
	ns, iv := t.UnixNano(), int64(m.cfg.Interval)
	k := ns / iv
	if ns%iv < 0 {
		k--
	}
	return k
}

// roundSlot returns the slot whose end is nearest t (ties to the later).
func (m *Merger) roundSlot(t time.Time) int64 {
	return m.floorSlot(t.Add(m.cfg.Interval / 2))
}

// phaseOf returns t's offset from the nearest slot end, within ±I/2.
func (m *Merger) phaseOf(t time.Time) time.Duration {
	return t.Sub(m.slotEnd(m.roundSlot(t)))
}

// scheduleSlack is how far a node's due instant may be off a whole number of intervals
// from its last one and still be on the same schedule, as a fraction of the interval.
// The due instants of one schedule are exact multiples apart but for the slewing of the
// node's wall clock (at most 0.05% of the time between them); a restarted schedule is
// off by anything.
const scheduleSlack = 20

// onSchedule reports whether two due instants d apart are on one schedule.
func (m *Merger) onSchedule(d time.Duration) bool {
	iv := m.cfg.Interval
	r := d % iv
	if r < 0 {
		r += iv
	}
	return min(r, iv-r) <= iv/scheduleSlack
}

func (m *Merger) node(id string) *node {
	n := m.nodes[id]
	if n == nil {
		n = &node{through: unset, last: unset}
		m.nodes[id] = n
	}
	return n
}

// Expect makes node a member from `from` (coordinator clock): every slot that holds
// what it records after from expects its data, until Forget. For a node not seen yet
// those are the slots ending after from; for one whose schedule is known (it comes back)
// the slots of its seconds due after from, which with its phase may include the slot
// ending just before from. Expecting a node that is already expected changes nothing.
func (m *Merger) Expect(id string, from time.Time) { m.expect(id, from, false) }

// ExpectAgain is Expect for a node that comes back with its stream going on (found lost,
// the same process answering again): every slot not yet emitted after the last it
// delivered expects it too. Its next interval may be due before from: a paused process's
// late tick is the tick of the last instant due before it resumed, and its coordinator
// hears of the resume from its next answer, after that instant. Expected from the
// answer, that interval's slot went out as soon as the other nodes had delivered it, and
// the interval came late, in no fleet second and unflagged (the partition test's paused
// node, stop 52). A slot already emitted stays as it went out: an interval due in one
// still comes late (its node was lost when the slot went out).
func (m *Merger) ExpectAgain(id string, from time.Time) { m.expect(id, from, true) }

func (m *Merger) expect(id string, from time.Time, again bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.node(id)
	if len(n.periods) > 0 && n.periods[len(n.periods)-1].until == math.MaxInt64 {
		return
	}
	// A second due after from is placed at its due instant less the phase: a node whose
	// schedule sits at .4 s and that reads from .2 on has that second in the slot ending
	// at .0, which the slots ending after from leave out; it went out without the node
	// and took its reads late, in no fleet second and unflagged.
	k := m.floorSlot(from.Add(-n.phase)) + 1
	if again && n.through != unset && m.started {
		k = min(k, max(n.through+1, m.next))
	}
	n.periods = append(n.periods, period{k, math.MaxInt64})
	if n.through == unset {
		// Its data is owed from the first slot that expects it.
		n.through = k - 1
	}
	if !m.started || !m.emitted && k < m.next {
		m.started, m.next = true, k
	}
}

// Forget ends node's membership at `at` (it left or was lost): slots ending after at no
// longer expect it; slots before stay partial if it never delivers their data. Its
// intervals still merge if they come.
func (m *Merger) Forget(id string, at time.Time) {
	k := m.floorSlot(at)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.nodes[id]
	if n == nil || len(n.periods) == 0 {
		return
	}
	p := &n.periods[len(n.periods)-1]
	if p.until != math.MaxInt64 {
		return
	}
	p.until = k
	if p.until < p.from {
		n.periods = n.periods[:len(n.periods)-1]
	}
}

// SetDelay says that node's data reaches the coordinator d after it could have (the time a
// pull of its intervals takes over its link): a slot that lacks only nodes behind slow
// links waits for them up to Wait + their delay (at most Config.MaxDelay more) before it
// is emitted partial, so a node on a slow but working link is not flagged missing every
// second. The fleet's series is held back as long, never lost.
func (m *Merger) SetDelay(id string, d time.Duration) {
	d = min(max(d, 0), m.cfg.MaxDelay)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node(id).delay = d
}

// Add merges one interval of node. offset is the node's clock minus the coordinator's,
// as measured by the coordinator. A node's intervals should come in Seq order (as
// IntervalsPage lists them); one already merged is ignored. The interval is decoded
// before anything is applied: a malformed one is an error and changes nothing.
func (m *Merger) Add(id string, offset time.Duration, e stats.EncodedInterval) error {
	d := m.scratch.Get().(*decoded)
	defer m.scratch.Put(d)
	if err := d.decode(&e); err != nil {
		return fmt.Errorf("merge interval %d of node %s: %w", e.Seq, id, err)
	}
	end := e.End.Add(-offset)
	// The instant it is placed by: when its tick was due, or its end from a node that
	// does not say.
	due := end
	if !e.Due.IsZero() {
		due = e.Due.Add(-offset)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.node(id)
	sameSpan := n.seen && e.SpanStart.Equal(n.span)
	if sameSpan && e.Seq <= n.seq {
		m.counters.Duplicates++
		return nil
	}
	restart := n.seen && e.Seq <= n.seq
	phase, lastDue := n.phase, n.lastDue
	switch {
	case !n.seen || restart:
		// A new stream (first contact or a restarted node): a new ticker, a new phase.
		phase, lastDue = m.phaseOf(due), time.Time{}
	case !e.Due.IsZero() && (lastDue.IsZero() || !m.onSchedule(e.Due.Sub(lastDue))):
		// Its schedule moved (its ticks restarted, its clock was stepped), or this is
		// its first due instant after intervals closed off any schedule: the phase is
		// the schedule's.
		phase = m.phaseOf(due)
	}
	if !e.Due.IsZero() {
		lastDue = e.Due
	}
	k := m.roundSlot(due.Add(-phase))
	if m.haveNow && k > m.nowSlot+int64(m.cfg.Horizon/m.cfg.Interval) {
		return fmt.Errorf("merge interval %d of node %s: it ends at %v in coordinator time (offset %v), beyond %v past the coordinator's clock: is the offset right?",
			e.Seq, id, end, offset, m.cfg.Horizon)
	}

	// Where it goes: an emitted slot's interval is late (before anything is emitted, the
	// first slot moves back to it instead). Refuse it now if that slot cannot take its
	// series, before the node's state records it as merged.
	late := m.emitted && k < m.next
	target := m.slots[k]
	if late {
		target = m.late
	}
	if target != nil && !target.fits(d) {
		return fmt.Errorf("merge interval %d of node %s: more than %d series in a slot", e.Seq, id, stats.MaxSeries)
	}

	gap := !n.seen || restart
	switch {
	case restart:
		m.counters.Restarts++
	case n.seen && e.Seq > n.seq+1:
		m.counters.Missed += e.Seq - n.seq - 1
		gap = true
	}
	if n.seen && !sameSpan && !restart {
		m.counters.Resets++
	}
	// The slots between what it delivered and this interval lack its data: after a gap
	// (a Seq gap, first contact, a restart), and in one span when this interval spanned
	// them (its tick came more than a slot late: it counts whole here). Across a stats
	// reset, none: the node discarded what it recorded meanwhile.
	if (gap || sameSpan) && n.through != unset && k > n.through+1 {
		if !gap {
			m.counters.Skipped += uint64(k - 1 - n.through)
		}
		// Those already emitted were emitted without it; only open ones need the mark.
		if from := max(n.through+1, m.next); from <= k-1 {
			n.holes = append(n.holes, period{from, k - 1})
		}
	}
	// A tick closed before its due instant (off the schedule: a phase's end) leaves the
	// rest of its slot to the tick due there: the node has delivered the slots before.
	done := k
	if !e.Due.IsZero() && e.End.Before(e.Due) {
		done = k - 1
	}
	if n.through == unset || done > n.through {
		n.through = done
	}
	n.seen, n.seq, n.span, n.phase, n.lastDue = true, e.Seq, e.SpanStart, phase, lastDue
	n.last = max(n.last, k)
	if !m.started {
		m.started, m.next = true, k
	}
	if !m.emitted && k < m.next {
		m.next = k
	}

	m.counters.Intervals++
	s := target
	switch {
	case late:
		m.counters.Late++
		if s == nil {
			s = m.newSlot(k)
			m.late = s
		}
		s.lo, s.k = min(s.lo, k), max(s.k, k)
		if d.operations() {
			m.short = append(m.short, SlotNode{End: m.slotEnd(k), Node: id})
		}
	case s == nil:
		s = m.newSlot(k)
		m.slots[k] = s
	}
	s.add(id, d, &e, end.Add(-e.End.Sub(e.Start)), end)
	return nil
}

func (m *Merger) newSlot(k int64) *slot {
	var s *slot
	if l := len(m.free); l > 0 {
		s, m.free = m.free[l-1], m.free[:l-1]
	} else {
		s = &slot{}
	}
	s.k, s.lo = k, k
	s.per = map[string]NodeFigures{}
	return s
}

// Ready returns the slots that can be emitted at now, oldest first, each once: those
// every expected node has delivered or has left without data for good (partial), and
// those whose Wait has passed (partial if some expected node did not deliver). A slot waits for the ones before it. Late intervals
// merged since the last call come last, as one Fleet with Late set. The Fleets returned
// by the previous call are reused: call Ready from one goroutine and be done with its
// Fleets before calling it again.
func (m *Merger) Ready(now time.Time) []Fleet {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.out {
		s.reset()
	}
	m.free, m.out = append(m.free, m.out...), m.out[:0]
	m.usedH, m.usedLag = 0, 0
	m.nowSlot, m.haveNow = m.floorSlot(now), true

	var out []Fleet
	for m.started {
		k := m.next
		end := m.slotEnd(k)
		s := m.slots[k]
		expectedAny, missing, owed := m.check(k)
		var extra time.Duration
		for _, id := range missing {
			extra = max(extra, m.nodes[id].delay)
		}
		expired := !now.Before(end.Add(m.cfg.Wait + extra))
		if s == nil && !expectedAny {
			if !expired {
				break
			}
			m.next = m.skipIdle(k, now)
			continue
		}
		// Only a node whose data may still come holds the slot: one that delivered past
		// it, leaving it a hole (a Seq gap, a stall's skipped slot), never sends it.
		if !expired && (owed || now.Before(end)) {
			break
		}
		if s == nil {
			s = m.newSlot(k)
		}
		delete(m.slots, k)
		out = append(out, m.emit(s, missing, false))
		m.next, m.emitted = k+1, true
	}
	if m.late != nil {
		f := m.emit(m.late, nil, true)
		f.Short, m.short = m.short, nil
		out = append(out, f)
		m.late = nil
	}
	m.prune()
	return out
}

// check returns whether slot k expects any node, the expected nodes that did not
// deliver its data, and whether any of those may still deliver it (it has not delivered
// past the slot).
func (m *Merger) check(k int64) (expectedAny bool, missing []string, owed bool) {
	s := m.slots[k]
	for id, n := range m.nodes {
		if !n.expected(k) {
			continue
		}
		expectedAny = true
		if n.delivered(k) {
			continue
		}
		if s != nil {
			// Its data is here, unless only a tick off its schedule's (through is then
			// the slot before): the rest of the node's second is still owed.
			if _, ok := s.per[id]; ok && n.through >= k {
				continue
			}
		}
		missing = append(missing, id)
		owed = owed || n.through == unset || n.through < k
	}
	return expectedAny, missing, owed
}

// skipIdle returns the slot to look at after k, which has no data and expects nobody:
// the next slot with data or expecting a node, or the first whose wait has not passed,
// so an idle coordinator does not walk every second it was idle.
func (m *Merger) skipIdle(k int64, now time.Time) int64 {
	next := m.floorSlot(now.Add(-m.cfg.Wait)) + 1
	for j := range m.slots {
		if j > k {
			next = min(next, j)
		}
	}
	for _, n := range m.nodes {
		for _, p := range n.periods {
			if p.from > k {
				next = min(next, p.from)
			}
		}
	}
	return max(next, k+1)
}

// emit turns slot s into a Fleet; s is reused at the next Ready.
func (m *Merger) emit(s *slot, missing []string, late bool) Fleet {
	iv := &s.iv
	iv.Start, iv.End = m.slotEnd(s.lo-1), m.slotEnd(s.k)
	// A fleet interval is due at its slot's end, so a coordinator above this one (its
	// /stats/intervals) places it there; a late delivery belongs to no one slot.
	iv.Due = time.Time{}
	if !late {
		iv.Due = iv.End
	}
	slices.Sort(missing)
	iv.Partial, iv.Missing, iv.Nodes = len(missing) > 0, missing, len(s.nodes)
	iv.Ops = iv.Ops[:0]
	slices.SortFunc(s.ops, func(a, b *opSum) int { return strings.Compare(a.name, b.name) })
	for _, o := range s.ops {
		resp, svc, lag, late := m.hist(), m.hist(), m.lagHist(), m.lagHist()
		// The sums and these histograms share the package geometries: no error.
		_ = o.resp.MergeInto(resp)
		_ = o.svc.MergeInto(svc)
		_ = o.lag.MergeInto(lag)
		_ = o.late.MergeInto(late)
		iv.Ops = append(iv.Ops, stats.OpInterval{Name: o.name, Response: resp, Service: svc, StartLag: lag, Late: late, Counts: o.counts,
			TargetRate: o.target, Workers: o.workers, Backlog: o.backlog, Pending: o.pending})
	}
	slices.Sort(s.nodes)
	if !late {
		m.counters.Slots++
		if iv.Partial {
			m.counters.Partial++
		}
	}
	m.out = append(m.out, s)
	return Fleet{Interval: iv, Nodes: s.nodes, PerNode: s.per, Late: late}
}

// hist returns an empty latency histogram from the pool of those handed out by Ready.
func (m *Merger) hist() *hdrhistogram.Histogram {
	if m.usedH == len(m.hists) {
		m.hists = append(m.hists, stats.NewHistogram())
	}
	h := m.hists[m.usedH]
	m.usedH++
	if h.TotalCount() != 0 {
		h.Reset()
	}
	return h
}

func (m *Merger) lagHist() *hdrhistogram.Histogram {
	if m.usedLag == len(m.lagHists) {
		m.lagHists = append(m.lagHists, stats.NewLagHistogram())
	}
	h := m.lagHists[m.usedLag]
	m.usedLag++
	if h.TotalCount() != 0 {
		h.Reset()
	}
	return h
}

// forgetAfter is how long after its last slot a node that no slot expects any more is
// forgotten entirely (its Seq too: intervals it sends after that start a new stream).
const forgetAfter = time.Hour

// prune drops what no open slot needs: memberships and holes before the next slot, and
// nodes gone for forgetAfter. It keeps the pools to what one Ready hands out.
func (m *Merger) prune() {
	old := m.next - int64(forgetAfter/m.cfg.Interval)
	for id, n := range m.nodes {
		n.periods = slices.DeleteFunc(n.periods, func(p period) bool { return p.until < m.next })
		n.holes = slices.DeleteFunc(n.holes, func(p period) bool { return p.until < m.next })
		if len(n.periods) == 0 && n.last < old {
			delete(m.nodes, id)
		}
	}
	// Free slots beyond what the open window can use would only hold memory.
	if keep := int(m.cfg.Wait/m.cfg.Interval) + 4; len(m.free) > keep {
		clear(m.free[keep:])
		m.free = m.free[:keep]
	}
	// So are histograms beyond twice what this Ready handed out (a Ready after a stall
	// emits several slots at once).
	const minHists = 8
	if len(m.hists) > max(2*m.usedH, minHists) {
		clear(m.hists[max(m.usedH, minHists):])
		m.hists = m.hists[:max(m.usedH, minHists)]
	}
	if len(m.lagHists) > max(2*m.usedLag, minHists) {
		clear(m.lagHists[max(m.usedLag, minHists):])
		m.lagHists = m.lagHists[:max(m.usedLag, minHists)]
	}
}

// Counters returns the merger's totals.
func (m *Merger) Counters() Counters {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counters
}

// Open returns how many slots are waiting to be emitted, for memory accounting.
func (m *Merger) Open() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.slots)
}

// slot accumulates the node intervals of one slot (or the late ones).
type slot struct {
	k, lo int64 // the slot (lo: the oldest of a late delivery's)
	ops   []*opSum
	nodes []string
	per   map[string]NodeFigures
	iv    stats.Interval
	spare []*opSum // sums of series the last use had and this one has not yet
}

// opSum is one series' sum in a slot.
type opSum struct {
	name           string
	resp, svc, lag *stats.HistogramSum
	late           *stats.HistogramSum // dropped operations' lateness
	counts         stats.Counts
	target         float64
	workers        int
	backlog        time.Duration
	pending        int64
}

func (s *slot) reset() {
	for _, o := range s.ops {
		o.resp.Reset()
		o.svc.Reset()
		o.lag.Reset()
		o.late.Reset()
		*o = opSum{resp: o.resp, svc: o.svc, lag: o.lag, late: o.late}
	}
	s.spare = append(s.spare, s.ops...)
	s.ops, s.nodes, s.per = s.ops[:0], s.nodes[:0], nil
	s.iv = stats.Interval{Ops: s.iv.Ops[:0]}
}

// op returns the sum of series name, adding it (the caller checked fits).
func (s *slot) op(name string) *opSum {
	for _, o := range s.ops {
		if o.name == name {
			return o
		}
	}
	var o *opSum
	if l := len(s.spare); l > 0 {
		o, s.spare = s.spare[l-1], s.spare[:l-1]
	} else {
		o = &opSum{resp: stats.NewHistogramSum(), svc: stats.NewHistogramSum(), lag: stats.NewLagHistogramSum(), late: stats.NewLagHistogramSum()}
	}
	o.name = name
	s.ops = append(s.ops, o)
	return o
}

// fits reports whether s can take d's series without exceeding stats.MaxSeries.
func (s *slot) fits(d *decoded) bool {
	n := len(s.ops)
	for i := range d.ops {
		if !slices.ContainsFunc(s.ops, func(o *opSum) bool { return o.name == d.ops[i].name }) {
			n++
		}
	}
	return n <= stats.MaxSeries
}

// add merges node id's decoded interval d into s, which fits it.
func (s *slot) add(id string, d *decoded, e *stats.EncodedInterval, start, end time.Time) {
	secs := e.End.Sub(e.Start).Seconds()
	f, ok := s.per[id]
	if !ok {
		s.nodes = append(s.nodes, id)
		f = NodeFigures{Start: start, Ops: make(map[string]NodeOp, len(d.ops))}
	}
	f.Seq, f.End, f.SpanStart = e.Seq, end, e.SpanStart
	f.Intervals++
	f.Seconds += secs
	for i := range d.ops {
		x := &d.ops[i]
		o := s.op(x.name)
		x.resp.AddTo(o.resp)
		x.svc.AddTo(o.svc)
		x.lag.AddTo(o.lag)
		x.late.AddTo(o.late)
		o.counts.Add(&x.counts)
		o.target += x.target
		o.workers += x.workers
		o.backlog = max(o.backlog, x.backlog)
		o.pending += x.pending

		no := f.Ops[x.name]
		no.Count += x.counts.Count()
		no.Errors += x.counts.Errors()
		if f.Seconds > 0 {
			no.Rate = float64(no.Count) / f.Seconds
			no.AttemptRate = float64(no.Count+no.Errors) / f.Seconds
		}
		no.TargetRate, no.Workers, no.Pending = x.target, x.workers, x.pending
		no.BacklogMs = x.backlog.Seconds() * 1000
		no.ResponseP99 = max(no.ResponseP99, x.respP99)
		no.StartLagP99 = max(no.StartLagP99, x.lagP99)
		f.Ops[x.name] = no
	}
	s.per[id] = f
}

// decoded is one node interval decoded, ready to add: the decoders hold its histograms'
// buckets. Pooled, so decoding reuses buffers.
type decoded struct {
	ops []decodedOp
}

type decodedOp struct {
	name           string
	counts         stats.Counts
	target         float64
	workers        int
	backlog        time.Duration
	pending        int64
	resp, svc, lag stats.HistogramDecoder
	late           stats.HistogramDecoder
	// The node's own p99s, taken while decoding, outside the merger's lock.
	respP99, lagP99 float64
}

// operations reports whether the interval holds any operation (done, failed or
// dropped).
func (d *decoded) operations() bool {
	for i := range d.ops {
		if c := &d.ops[i].counts; c.Count()+c.Errors()+c.Dropped > 0 {
			return true
		}
	}
	return false
}

func (d *decoded) decode(e *stats.EncodedInterval) error {
	if len(e.Ops) > stats.MaxSeries {
		return fmt.Errorf("%d series, at most %d", len(e.Ops), stats.MaxSeries)
	}
	if !e.End.After(e.Start) && !e.End.Equal(e.Start) {
		return errors.New("it ends before it starts")
	}
	for len(d.ops) < len(e.Ops) {
		d.ops = append(d.ops, decodedOp{})
	}
	d.ops = d.ops[:len(e.Ops)]
	i := 0
	for name, eo := range e.Ops {
		if err := stats.CheckSeriesName(name); err != nil {
			return err
		}
		x := &d.ops[i]
		i++
		x.name = name
		x.counts = stats.Counts{Successes: eo.Successes, Misses: eo.Misses, Clamped: eo.Clamped, Dropped: eo.Dropped,
			LagOwnUs: eo.LagOwnUs, LagWaitUs: eo.LagWaitUs}
		for _, c := range driver.Classes {
			x.counts.Failures[c] = eo.Failures[c.String()]
		}
		for _, v := range stats.Validations {
			x.counts.Validation[v] = eo.Validation[v.String()]
		}
		x.target, x.workers, x.pending = eo.TargetRate, eo.Workers, eo.Pending
		x.backlog = time.Duration(eo.BacklogMs * float64(time.Millisecond))
		for _, h := range []struct {
			dec  *stats.HistogramDecoder
			enc  string
			kind string
		}{{&x.resp, eo.Response, "response"}, {&x.svc, eo.Service, "service"}, {&x.lag, eo.StartLag, "start lag"}, {&x.late, eo.DropLateness, "drop lateness"}} {
			if err := h.dec.Decode(h.enc); err != nil {
				return fmt.Errorf("%s %s histogram: %w", name, h.kind, err)
			}
		}
		x.respP99, x.lagP99 = float64(x.resp.Percentile(99)), float64(x.lag.Percentile(99))
	}
	return nil
}
