package merge

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// t0 is on the slot grid, so slot s of a test is the coordinator second t0+s-1 .. t0+s.
var t0 = time.Unix(1_800_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// simNode is a node: a real collector and interval log, ticking once a coordinator second
// at its phase, with its clock offset, recording latencies scaled by its slowness.
type simNode struct {
	id     string
	c      *stats.Collector
	log    *stats.IntervalLog
	offset time.Duration // node clock − coordinator clock
	phase  time.Duration // when in each coordinator second it ticks
	scale  float64       // latency multiplier: a slow node has a large one
	rate   int           // ops per second
	next   uint64
	rng    *rand.Rand
}

func newSimNode(id string, phase, offset time.Duration, scale float64, seed uint64) *simNode {
	n := &simNode{id: id, offset: offset, phase: phase, scale: scale, rate: 300, rng: rand.New(rand.NewPCG(seed, 7))}
	n.c = stats.NewCollector(stats.Config{Shards: 2})
	n.c.ResetAt(n.nodeTime(at(0).Add(phase - time.Second)))
	if _, err := n.c.Register("search.byTitle"); err != nil {
		panic(err)
	}
	n.log = stats.NewIntervalLog(n.c, 30, 0)
	return n
}

func (n *simNode) nodeTime(coord time.Time) time.Time { return coord.Add(n.offset) }

// tick records a second of operations and ticks at coordinator second s + phase (+ jitter).
func (n *simNode) tick(s int, jitter time.Duration) {
	search, _ := n.c.Lookup("search.byTitle")
	for i := range n.rate {
		// Backfill stays empty (an empty histogram is encoded as ""), which keeps the
		// race-detector run short: hdrhistogram's encoder is slow under it.
		op := []stats.Op{stats.OpRead, stats.OpWrite, search}[i%3]
		sh := n.c.Recorder(op).Shard(i % 2)
		svc := time.Duration(n.scale * n.rng.ExpFloat64() * float64(400*time.Microsecond))
		lag := time.Duration(n.rng.IntN(200)) * time.Microsecond
		switch {
		case i%97 == 0:
			sh.Failure(driver.ClassTimeout)
		case i%13 == 0:
			sh.Miss(svc+lag, svc)
		case i%2 == 0:
			// A split start lag (stats.Counts.LagOwnUs) merges like every counter.
			sh.SuccessLag(svc+lag, svc, lag/3)
		default:
			sh.Success(svc+lag, svc)
		}
	}
	n.c.Tick(n.nodeTime(at(float64(s)).Add(n.phase + jitter)))
}

// poll returns what a coordinator's GET .../intervals?since=next would.
func (n *simNode) poll() []stats.EncodedInterval {
	p := n.log.Since(n.next)
	n.next = p.Next
	return p.Intervals
}

// truth is the union of every interval handed to the merger, merged by the library.
type truth struct {
	ops map[string]*truthOp
}

type truthOp struct {
	resp, svc, lag *hdrhistogram.Histogram
	counts         stats.Counts
}

func (tr *truth) add(t *testing.T, e stats.EncodedInterval) {
	t.Helper()
	iv, err := e.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if tr.ops == nil {
		tr.ops = map[string]*truthOp{}
	}
	for _, o := range iv.Ops {
		x := tr.ops[o.Name]
		if x == nil {
			x = &truthOp{resp: stats.NewHistogram(), svc: stats.NewHistogram(), lag: stats.NewLagHistogram()}
			tr.ops[o.Name] = x
		}
		stats.MergeHistograms(x.resp, o.Response)
		stats.MergeHistograms(x.svc, o.Service)
		stats.MergeHistograms(x.lag, o.StartLag)
		x.counts.Add(&o.Counts)
	}
}

// coord is a coordinator: a merger feeding a fleet collector, recording what it emitted.
type coord struct {
	t     *testing.T
	m     *Merger
	fleet *stats.Collector
	truth truth
	slots []emitted // on-time slots, in emission order
	late  int       // late Fleets delivered
}

type emitted struct {
	end     time.Time
	partial bool
	missing []string
	nodes   []string
	per     map[string]NodeFigures
	count   int64 // all series
}

func newCoord(t *testing.T, cfg Config) *coord {
	c := &coord{t: t, m: New(cfg), fleet: stats.NewCollector(stats.Config{Shards: 1})}
	c.fleet.ResetAt(at(-10))
	return c
}

func (c *coord) poll(n *simNode) {
	c.t.Helper()
	for _, e := range n.poll() {
		c.add(n, e)
	}
}

func (c *coord) add(n *simNode, e stats.EncodedInterval) {
	c.t.Helper()
	if err := c.m.Add(n.id, n.offset, e); err != nil {
		c.t.Fatal(err)
	}
	c.truth.add(c.t, e)
}

func (c *coord) ready(now time.Time) {
	c.t.Helper()
	for _, f := range c.m.Ready(now) {
		if f.Late {
			c.late++
			if err := c.fleet.IngestCumulative(f.Interval); err != nil {
				c.t.Fatal(err)
			}
			continue
		}
		if err := c.fleet.Ingest(f.Interval); err != nil {
			c.t.Fatal(err)
		}
		var n int64
		for _, o := range f.Interval.Ops {
			n += o.Count()
		}
		if f.Interval.Nodes != len(f.Nodes) || f.Interval.Partial != (len(f.Interval.Missing) > 0) {
			c.t.Errorf("slot %v: Nodes %d for %v, partial %v missing %v", f.Interval.End, f.Interval.Nodes, f.Nodes, f.Interval.Partial, f.Interval.Missing)
		}
		c.slots = append(c.slots, emitted{end: f.Interval.End, partial: f.Interval.Partial, missing: slices.Clone(f.Interval.Missing),
			nodes: slices.Clone(f.Nodes), per: f.PerNode, count: n})
	}
}

// checkExact asserts the fleet cumulative is the union of every interval merged: equal
// counts in every bucket of every histogram, equal counters.
func (c *coord) checkExact() {
	c.t.Helper()
	if len(c.truth.ops) == 0 {
		c.t.Fatal("nothing merged")
	}
	for name, x := range c.truth.ops {
		op, ok := c.fleet.Lookup(name)
		if !ok {
			c.t.Fatalf("%s: not in the fleet collector", name)
		}
		resp, svc := c.fleet.CumulativeHistograms(op)
		if !sameBuckets(resp, x.resp) || !sameBuckets(svc, x.svc) {
			c.t.Errorf("%s: fleet cumulative histograms (%d values) differ from the union's (%d)", name, resp.TotalCount(), x.resp.TotalCount())
		}
		if got := c.fleet.CumulativeCounts(op); got != x.counts {
			c.t.Errorf("%s: fleet counts %+v, union %+v", name, got, x.counts)
		}
		cum := c.fleet.Cumulative().Ops[name]
		if want := stats.LatencyOf(x.lag); cum.StartLag != want {
			c.t.Errorf("%s: fleet start lag %+v, union %+v", name, cum.StartLag, want)
		}
		if want := stats.LatencyOf(x.resp); cum.ResponseTime != want {
			c.t.Errorf("%s: fleet response %+v, union %+v", name, cum.ResponseTime, want)
		}
	}
}

func sameBuckets(a, b *hdrhistogram.Histogram) bool {
	return a.TotalCount() == b.TotalCount() && slices.Equal(a.Export().Counts, b.Export().Counts)
}

// slot returns what was emitted for the slot ending at coordinator second s.
func (c *coord) slot(s int) *emitted {
	for i := range c.slots {
		if c.slots[i].end.Equal(at(float64(s))) {
			return &c.slots[i]
		}
	}
	return nil
}

// run ticks every node for seconds [from, to), polling each right after the whole
// second and calling Ready, with hooks to drop or delay a node's intervals.
func (c *coord) run(nodes []*simNode, from, to int, skip func(n *simNode, s int) bool) {
	for s := from; s < to; s++ {
		for _, n := range nodes {
			n.tick(s, 0)
		}
		for _, n := range nodes {
			if skip == nil || !skip(n, s) {
				c.poll(n)
			}
		}
		c.ready(at(float64(s + 1)))
	}
}

// flush ends the run after second s: polls what is left, ends every membership with the
// last slot all nodes delivered (s−1: a node ticking early in a second delivers slot s
// only in second s) and emits everything still open.
func (c *coord) flush(nodes []*simNode, s int) {
	for _, n := range nodes {
		c.poll(n)
	}
	for id := range c.m.nodes {
		c.m.Forget(id, at(float64(s-1)))
	}
	c.ready(at(float64(s) + 10))
	if open := c.m.Open(); open != 0 {
		c.t.Errorf("%d slots still open after the wait", open)
	}
}

// TestFleetIsTheUnion is the merge's exactness bar: nodes with different latency
// distributions, tick phases (including both sides of the half-second) and clock
// offsets; the fleet cumulative (every Ready interval ingested) has exactly the counts
// and histograms of the union of every node's intervals, its percentiles those of the
// union, and the fleet p99 is not the mean of the nodes' p99s when one node is slow.
func TestFleetIsTheUnion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		phases []time.Duration
		offset []time.Duration
		scales []float64
	}{
		{"in phase", []time.Duration{0, 0, 0}, []time.Duration{0, 0, 0}, []float64{1, 1, 1}},
		{"spread phases and offsets, one slow node",
			[]time.Duration{0, 200 * time.Millisecond, 490 * time.Millisecond, 510 * time.Millisecond, 900 * time.Millisecond},
			[]time.Duration{0, 300 * time.Millisecond, -2 * time.Second, 45 * time.Minute, -700 * time.Millisecond},
			[]float64{1, 1.5, 1, 0.7, 12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCoord(t, Config{})
			var nodes []*simNode
			for i, ph := range tc.phases {
				n := newSimNode(string(rune('a'+i)), ph, tc.offset[i], tc.scales[i], uint64(i+1))
				nodes = append(nodes, n)
				c.m.Expect(n.id, at(0))
			}
			c.run(nodes, 0, 20, nil)
			c.flush(nodes, 20)
			c.checkExact()

			// The union is also every node's own cumulative, merged.
			union, sum := stats.NewHistogram(), 0.0
			for _, n := range nodes {
				resp, _ := n.c.CumulativeHistograms(stats.OpRead)
				stats.MergeHistograms(union, resp)
				sum += float64(resp.ValueAtPercentile(99))
			}
			fleetP99 := c.fleet.Cumulative().Ops["read"].ResponseTime.P99
			if want := float64(union.ValueAtPercentile(99)); fleetP99 != want {
				t.Errorf("fleet read p99 %v, union of the nodes' cumulatives %v", fleetP99, want)
			}
			meanP99 := sum / float64(len(nodes))
			t.Logf("read p99: fleet (merged histograms) %.0f µs, mean of the %d nodes' p99s %.0f µs", fleetP99, len(nodes), meanP99)
			if slices.Max(tc.scales) > 2 && !(fleetP99 > 1.2*meanP99 || fleetP99 < meanP99/1.2) {
				t.Errorf("with a slow node the fleet p99 %.0f should differ from the mean of p99s %.0f", fleetP99, meanP99)
			}
			// Every slot complete, every node once in each (the phases near the half
			// second included), and the slots' sum is the fleet total. The first and the
			// last slot have only part of the fleet: slot 0 the nodes whose first tick
			// rounds to it, before the membership; slot 20 the nodes ticking late in
			// second 19, after it. Neither expects the others.
			var total int64
			for _, s := range c.slots {
				total += s.count
				if k := s.end.Sub(t0) / time.Second; k == 0 || k == 20 {
					continue
				}
				if s.partial || len(s.nodes) != len(nodes) {
					t.Errorf("slot %v: partial %v, nodes %v", s.end, s.partial, s.nodes)
				}
				for id, f := range s.per {
					if f.Intervals != 1 {
						t.Errorf("slot %v: %d intervals of node %s", s.end, f.Intervals, id)
					}
				}
			}
			var want int64
			for _, x := range c.truth.ops {
				want += x.counts.Count()
			}
			if total != want || c.late != 0 {
				t.Errorf("slots hold %d ops, the union %d; %d late deliveries", total, want, c.late)
			}
			if cnt := c.m.Counters(); cnt.Intervals != uint64(20*len(nodes)) || cnt.Late != 0 || cnt.Partial != 0 {
				t.Errorf("counters %+v", cnt)
			}
		})
	}
}

// TestPerNodeFigures: each node's own rate, target, errors and p99 are reported beside
// the fleet's, and a node sending less than 95% of its target is saturated.
func TestPerNodeFigures(t *testing.T) {
	c := newCoord(t, Config{})
	fast := newSimNode("fast", 100*time.Millisecond, 0, 1, 1)
	slow := newSimNode("slow", 600*time.Millisecond, time.Second, 10, 2)
	fast.c.SetTarget(stats.OpRead, 100, 4)
	slow.c.SetTarget(stats.OpRead, 200, 4) // sends 100/s of reads: saturated
	nodes := []*simNode{fast, slow}
	for _, n := range nodes {
		c.m.Expect(n.id, at(0))
	}
	c.run(nodes, 0, 5, nil)
	s := c.slot(3)
	if s == nil {
		t.Fatal("no slot 3")
	}
	f, g := s.per["fast"].Ops["read"], s.per["slow"].Ops["read"]
	if f.Count+f.Errors != 100 || f.TargetRate != 100 || f.Saturated() || !g.Saturated() {
		t.Errorf("fast %+v (saturated %v), slow %+v (saturated %v)", f, f.Saturated(), g, g.Saturated())
	}
	if f.Errors != 2 || !(g.ResponseP99 > 5*f.ResponseP99) || f.StartLagP99 == 0 {
		t.Errorf("errors %d, p99 fast %v slow %v, lag p99 %v", f.Errors, f.ResponseP99, g.ResponseP99, f.StartLagP99)
	}
	if sec := s.per["slow"].Seconds; sec < 0.99 || sec > 1.01 {
		t.Errorf("slow node's seconds %v", sec)
	}
}

// TestPartialAndLate covers what goes wrong in a fleet: a node whose intervals are lost
// for 3 s (a Seq gap: those slots are partial with it missing, and only those), a node
// whose intervals come too late for their slots (delivered as late, counted, still in
// the cumulative), a stats reset and a restart. The fleet cumulative stays exactly the
// union of what was delivered.
func TestPartialAndLate(t *testing.T) {
	type want struct {
		partial map[int][]string // slot → missing nodes; every other slot complete
		late    uint64
		missed  uint64
		resets  uint64
		restart uint64
	}
	for _, tc := range []struct {
		name string
		// skip says whether node n is not polled after second s (its intervals wait in
		// its log, which holds 30; lose drops them instead).
		skip  func(n *simNode, s int) bool
		lose  func(n *simNode, s int) bool
		event func(c *coord, nodes []*simNode, s int)
		cfg   Config
		delay map[string]time.Duration // SetDelay before the first second
		want  want
	}{
		{name: "node lost for 3 s",
			lose: func(n *simNode, s int) bool { return n.id == "b" && s >= 10 && s < 13 },
			// b (phase 0.5, anchored at −0.5) ticks slot s+1 during second s.
			want: want{partial: map[int][]string{11: {"b"}, 12: {"b"}, 13: {"b"}}, missed: 3}},
		{name: "node first reports after 5 s",
			// a (phase 0.1) ticks slot s in second s; what it sent before second 5 is
			// lost, and its first interval seen (Seq 5) leaves slots 1..4, which expect
			// it, without it. Slot 0 is before its membership.
			lose: func(n *simNode, s int) bool { return n.id == "a" && s < 5 },
			want: want{partial: map[int][]string{1: {"a"}, 2: {"a"}, 3: {"a"}, 4: {"a"}}}},
		{name: "node late by 4 s",
			skip: func(n *simNode, s int) bool { return n.id == "c" && s >= 10 && s < 14 },
			// c (phase 0.8) ticks slot s+1 during second s; skipped polls of seconds
			// 10..13 delay slots 11..14 until second 14: 11 and 12 have expired by then.
			want: want{partial: map[int][]string{11: {"c"}, 12: {"c"}}, late: 2}},
		{name: "node behind a slow link, waited for",
			// As above, but the coordinator knows c's pulls take 2 s: slot 11 waits until
			// 11 + 2 + 2, and c's intervals, fetched in second 14, are on time.
			skip:  func(n *simNode, s int) bool { return n.id == "c" && s >= 10 && s < 14 },
			delay: map[string]time.Duration{"c": 2 * time.Second},
			want:  want{}},
		{name: "node behind a slow link, waited for within MaxDelay",
			// Its delay of 3 s is bounded to 1 s: slot 11 waits until 11 + 2 + 1 and is
			// partial, slot 12 (until 15) is whole.
			skip:  func(n *simNode, s int) bool { return n.id == "c" && s >= 10 && s < 14 },
			cfg:   Config{MaxDelay: time.Second},
			delay: map[string]time.Duration{"c": 3 * time.Second},
			want:  want{partial: map[int][]string{11: {"c"}}, late: 1}},
		{name: "stats reset on a node",
			event: func(c *coord, nodes []*simNode, s int) {
				if s == 8 {
					nodes[0].c.ResetAt(nodes[0].nodeTime(at(8.05)))
				}
			},
			want: want{resets: 1}},
		{name: "node restarts",
			event: func(c *coord, nodes []*simNode, s int) {
				if s == 8 { // a new process: new collector, Seq from 0, another phase
					old := nodes[1]
					n := newSimNode(old.id, 300*time.Millisecond, old.offset, 1, 99)
					n.c.ResetAt(n.nodeTime(at(8)))
					nodes[1] = n
				}
			},
			// b (phase 0.5, anchored at −0.5) delivered slots 1..8 (its last tick at
			// 7.5); the new process ticks at 8.3, re-anchored to slot 8, then 9.3 is slot
			// 9: nothing is missing, slot 8 has two intervals of b.
			want: want{restart: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCoord(t, tc.cfg)
			nodes := []*simNode{
				newSimNode("a", 100*time.Millisecond, 0, 1, 1),
				newSimNode("b", 500*time.Millisecond, 250*time.Millisecond, 2, 2),
				newSimNode("c", 800*time.Millisecond, -time.Second, 1, 3),
			}
			for _, n := range nodes {
				c.m.Expect(n.id, at(0))
			}
			for id, d := range tc.delay {
				c.m.SetDelay(id, d)
			}
			for s := range 17 {
				if tc.event != nil {
					tc.event(c, nodes, s)
				}
				for _, n := range nodes {
					n.tick(s, 0)
				}
				for _, n := range nodes {
					switch {
					case tc.skip != nil && tc.skip(n, s):
					case tc.lose != nil && tc.lose(n, s):
						n.poll() // fetched and lost: the next poll starts after them
					default:
						c.poll(n)
					}
				}
				c.ready(at(float64(s + 1)))
			}
			c.flush(nodes, 17)
			c.checkExact()
			for _, s := range c.slots {
				k := int(s.end.Sub(t0) / time.Second)
				miss, ok := tc.want.partial[k]
				if s.partial != ok || !slices.Equal(s.missing, miss) {
					t.Errorf("slot %d: partial %v missing %v; want partial %v missing %v", k, s.partial, s.missing, ok, miss)
				}
			}
			cnt := c.m.Counters()
			if cnt.Late != tc.want.late || cnt.Missed != tc.want.missed || cnt.Resets != tc.want.resets || cnt.Restarts != tc.want.restart ||
				cnt.Partial != uint64(len(tc.want.partial)) {
				t.Errorf("counters %+v, want %+v", cnt, tc.want)
			}
			if (c.late > 0) != (tc.want.late > 0) {
				t.Errorf("%d late deliveries", c.late)
			}
			cum := c.fleet.Cumulative()
			if cum.Partial != (len(tc.want.partial) > 0) {
				t.Errorf("fleet cumulative partial %v (missing %v)", cum.Partial, cum.Missing)
			}
			// The series says which seconds are partial.
			var partial []int
			for _, p := range c.fleet.Series() {
				if p.Partial {
					partial = append(partial, int(p.Time.Sub(t0)/time.Second))
				}
			}
			if len(partial) != len(tc.want.partial) {
				t.Errorf("partial points %v, want the slots %v", partial, tc.want.partial)
			}
		})
	}
}

// TestMembershipChanges: a node expected from second 10 is missing from no slot before
// it, and from none after it once it reports; a node forgotten at second 15 leaves the
// later slots complete without it, while the slots before, which it never delivered,
// stay partial.
func TestMembershipChanges(t *testing.T) {
	c := newCoord(t, Config{})
	a := newSimNode("a", 200*time.Millisecond, 0, 1, 1)
	b := newSimNode("b", 700*time.Millisecond, 0, 1, 2)
	late := newSimNode("joiner", 400*time.Millisecond, time.Second, 1, 3)
	c.m.Expect("a", at(0))
	c.m.Expect("b", at(0))
	for s := range 25 {
		if s == 10 {
			// The joiner is a member from 10; its poller starts at its current Seq.
			late.next = late.log.Since(1 << 62).Next
			c.m.Expect("joiner", at(10))
		}
		if s == 15 {
			c.m.Forget("b", at(13)) // lost: its last heartbeat was at 13
		}
		for _, n := range []*simNode{a, b, late} {
			n.tick(s, 0)
		}
		c.poll(a)
		if s < 12 {
			c.poll(b) // b stops reporting after second 11: its slots 13.. never come
		}
		if s >= 10 {
			c.poll(late)
		}
		c.ready(at(float64(s + 1)))
	}
	c.flush([]*simNode{a, late}, 25)
	c.checkExact()
	for _, s := range c.slots {
		k := int(s.end.Sub(t0) / time.Second)
		want := []string(nil)
		if k == 13 { // b's tick at 12.7 (slot 13) was never polled; after 13 it is not expected
			want = []string{"b"}
		}
		if !slices.Equal(s.missing, want) {
			t.Errorf("slot %d: missing %v, want %v (nodes %v)", k, s.missing, want, s.nodes)
		}
		if k > 10 && !slices.Contains(s.nodes, "joiner") {
			t.Errorf("slot %d: nodes %v without the joiner", k, s.nodes)
		}
	}
}

// TestJitterKeepsOneIntervalPerSlot: a node ticking at the half second with jitter of
// ±30 ms would flip between slots if intervals were only rounded; its phase keeps each in
// its own slot.
func TestJitterKeepsOneIntervalPerSlot(t *testing.T) {
	c := newCoord(t, Config{})
	n := newSimNode("a", 500*time.Millisecond, 0, 1, 1)
	c.m.Expect("a", at(0))
	rng := rand.New(rand.NewPCG(1, 1))
	for s := range 40 {
		n.tick(s, time.Duration(rng.IntN(61)-30)*time.Millisecond)
		c.poll(n)
		c.ready(at(float64(s + 1)))
	}
	for _, s := range c.slots {
		if f := s.per["a"]; f.Intervals != 1 || s.partial {
			t.Errorf("slot %v: %d intervals of the node, partial %v", s.end, f.Intervals, s.partial)
		}
	}
}

// TestDuplicatesAndBadInput: a re-fetched interval is ignored; an interval ending far
// past the coordinator's clock (a wrong offset) and a malformed one are refused and
// change nothing.
func TestDuplicatesAndBadInput(t *testing.T) {
	c := newCoord(t, Config{})
	n := newSimNode("a", 0, 0, 1, 1)
	c.m.Expect("a", at(0))
	n.tick(0, 0)
	n.tick(1, 0)
	page := n.poll()
	for _, e := range page {
		c.add(n, e)
	}
	if err := c.m.Add("a", 0, page[1]); err != nil {
		t.Fatal(err)
	}
	if d := c.m.Counters().Duplicates; d != 1 {
		t.Errorf("%d duplicates counted", d)
	}
	c.ready(at(2))
	n.tick(2, 0)
	e := n.poll()[0]
	if err := c.m.Add("a", -time.Hour, e); err == nil || !strings.Contains(err.Error(), "offset") {
		t.Errorf("an interval an hour ahead: %v", err)
	}
	bad := e
	bad.Ops = map[string]stats.EncodedOp{"read": {Response: "AAAA"}, "write": {Successes: 5}}
	if err := c.m.Add("a", 0, bad); err == nil {
		t.Error("a malformed histogram was accepted")
	}
	c.add(n, e) // still the next in sequence: nothing above was applied
	c.flush(nil, 3)
	c.checkExact()
	if cnt := c.m.Counters(); cnt.Missed != 0 || cnt.Partial != 0 || cnt.Intervals != 3 {
		t.Errorf("counters %+v", cnt)
	}
}

// TestSeriesBound: a slot holds at most stats.MaxSeries series; an interval that would
// exceed it is refused without being recorded as merged.
func TestSeriesBound(t *testing.T) {
	m := New(Config{})
	named := func(prefix string) stats.EncodedInterval {
		e := stats.EncodedInterval{Start: at(0.2), End: at(1.2), Ops: map[string]stats.EncodedOp{}}
		for i := range 20 {
			e.Ops[fmt.Sprintf("%s%d", prefix, i)] = stats.EncodedOp{Successes: 1}
		}
		return e
	}
	if err := m.Add("x", 0, named("a")); err != nil {
		t.Fatal(err)
	}
	if err := m.Add("y", 0, named("b")); err == nil {
		t.Fatal("40 series in a slot were accepted")
	}
	if cnt := m.Counters(); cnt.Intervals != 1 || m.nodes["y"].seen {
		t.Errorf("the refused interval was recorded: %+v", cnt)
	}
}

// TestMemoryIsBounded: a member that never reports gets one partial slot per second
// and no memory; idle time is skipped without walking it; accumulators are reused.
func TestMemoryIsBounded(t *testing.T) {
	m := New(Config{})
	m.Expect("ghost", at(0))
	m.Expect("a", at(0))
	var partial int
	for s := 1; s <= 600; s++ {
		for _, f := range m.Ready(at(float64(s))) {
			if !f.Interval.Partial || len(f.Interval.Missing) != 2 {
				t.Fatalf("slot %v: partial %v missing %v", f.Interval.End, f.Interval.Partial, f.Interval.Missing)
			}
			partial++
		}
		if m.Open() != 0 || len(m.free) > 8 || len(m.nodes) != 2 {
			t.Fatalf("second %d: %d open slots, %d free, %d nodes", s, m.Open(), len(m.free), len(m.nodes))
		}
	}
	if partial != 598 { // slots 1..598: the wait of 2 s holds the last two
		t.Errorf("%d partial slots", partial)
	}
	m.Forget("ghost", at(600))
	m.Forget("a", at(600))
	// A day idle: one call, no slot emitted, nothing kept.
	if out := m.Ready(at(86400)); len(out) != 2 {
		t.Errorf("after the members left: %d fleets, want the 2 still owed", len(out))
	}
	if m.next < m.floorSlot(at(86400-3)) {
		t.Errorf("next slot %d: the idle day was not skipped", m.next)
	}
	if len(m.nodes) != 0 {
		t.Errorf("%d nodes kept a day after they left", len(m.nodes))
	}
}

// TestConcurrentAdd: pollers add their nodes' intervals concurrently while the
// coordinator's loop calls Ready; every interval ends up in the fleet exactly once.
func TestConcurrentAdd(t *testing.T) {
	const nodes, seconds = 8, 20
	e := recordedInterval(t, 1, 200)
	var want int64
	for _, o := range e.Ops {
		want += o.Successes + o.Misses
	}
	want *= nodes * seconds
	m := New(Config{Horizon: time.Hour}) // the pollers run ahead of the Ready clock
	fleet := stats.NewCollector(stats.Config{Shards: 1})
	fleet.ResetAt(at(-10))
	for i := range nodes {
		m.Expect(fmt.Sprint(i), at(0))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seconds {
				for i := p; i < nodes; i += 4 {
					x := e
					x.Seq, x.Start, x.End = uint64(s), at(float64(s)-0.7), at(float64(s)+0.3)
					if err := m.Add(fmt.Sprint(i), 0, x); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	ingest := func(now time.Time) {
		for _, f := range m.Ready(now) {
			var err error
			if f.Late {
				err = fleet.IngestCumulative(f.Interval)
			} else {
				err = fleet.Ingest(f.Interval)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for s := 0; ; s++ {
		select {
		case <-done:
			for i := range nodes {
				m.Forget(fmt.Sprint(i), at(seconds))
			}
			ingest(at(seconds + 10))
			var got int64
			for _, o := range fleet.Cumulative().Ops {
				got += o.Count
			}
			if got != want {
				t.Errorf("fleet counted %d ops, the nodes sent %d", got, want)
			}
			return
		default:
			ingest(at(min(float64(s)*0.01, seconds)))
			runtime.Gosched()
		}
	}
}
