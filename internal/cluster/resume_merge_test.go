package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// A node paused (SIGSTOP) until the coordinator finds it lost, then resumed: its
// collector's late tick is the tick of the last instant due, so the interval its stall
// spanned (what it read before the pause) is due a little before the resume, and the
// coordinator, which stopped expecting the node at the loss, learns of the resume from
// the node's next answer, after that instant. The fleet second of that interval holds it
// when it is still open at the answer, and names the node missing when it went out
// before (while the node was paused and lost, the data did not exist yet); it is never
// silently short. The partition test's paused node (stop 52) had the fleet's second at
// its resume short by 116 and 18 reads, unflagged.
//
// On given instants, the coordinator's own calls (setHealth at the loss and at the
// answer) with the pulls' pages fed to its merge and its fleet statistics: c ticks at .4
// of each second, a and b at .1 and .2; c is paused at 4.7 (its last tick due at 4.4),
// found lost at 10.8, resumed at 12.9, and answers at 12.95; its stall's interval, 130
// reads, is due at 12.4, slot 12's. Before the fix, the coordinator expected c again from
// its answer (12.95): slot 12 did not expect it and went out with a and b's seconds only,
// unflagged, whenever their pages came before c's (polls on the second), and c's reads
// came late; when slot 12 went out before the resume (polls at the half second), the
// same, and the fix's expectation cannot help: the late reads flag the second instead.
// The fleet's clients that had second 12 before the late reads came (the live stream, a
// poller of the series and one of the interval log) hold it as the series has it at the
// end (stop 54: before, they kept it unflagged).
func TestResumedNodeStallIsInTheFleetSecondOfItsDueInstant(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll float64 // when in each second the coordinator polls (a and b's pages first)
		want second  // the fleet's second 12
	}{
		{name: "its slot open at its answer", poll: 1, want: second{reads: 330}},
		{name: "its slot out before its resume", poll: 0.5, want: second{reads: 200, missing: []string{"c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := resumeCoordinator(t)
			t0 := time.Unix(1_800_000_000, 0)
			r := newFleetReaders(t, c, t0)
			at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
			seqs := map[string]uint64{}
			last := map[string]float64{} // each node's last due instant
			// add merges node id's interval due at due (from its last), as its pull brings it.
			add := func(id string, due float64, reads int64) {
				t.Helper()
				start, ok := last[id]
				if !ok {
					start = due - 1
				}
				e := stats.EncodedInterval{Seq: seqs[id], Start: at(start), End: at(due), Due: at(due),
					Ops: map[string]stats.EncodedOp{"read": {Successes: reads}}}
				seqs[id]++
				last[id] = due
				if err := c.stats.merger.Add(id, 0, e); err != nil {
					t.Fatal(err)
				}
			}
			health := func(id string, h Health, s float64) {
				c.mu.Lock()
				c.setHealth(c.members[id], h, at(s))
				c.mu.Unlock()
			}
			phase := map[string]float64{"a": 0.1, "b": 0.2, "c": 0.4}
			// c is lost at 10.8 (its last answer before the pause + LostAfter) and answers
			// again at 12.95: each before the poll that follows it.
			events := []struct {
				at float64
				h  Health
			}{{10.8, Lost}, {12.95, Alive}}
			for s := 1; s < 16; s++ {
				poll := float64(s) + tc.poll
				back := false
				for len(events) > 0 && events[0].at < poll {
					health("c", events[0].h, events[0].at)
					back = events[0].h == Alive
					events = events[1:]
				}
				for _, id := range []string{"a", "b", "c"} {
					if id == "c" && back {
						// Its first pull after its answer: the interval its stall spanned.
						add("c", 12.4, 130)
					}
					if id == "c" && s >= 5 && s <= 12 {
						continue // paused from 4.7 to 12.9
					}
					add(id, float64(s)+phase[id], 100)
					if id == "b" {
						c.stats.emit(at(poll)) // a and b's pages come in first
					}
				}
				c.stats.emit(at(poll))
				r.poll()
			}
			c.stats.emit(at(30))
			r.poll()
			fleet := map[int]second{}
			for _, p := range c.stats.coll.Series() {
				fleet[int(p.Time.Sub(t0)/time.Second)] = second{p.Ops["read"].Attempted, p.Missing}
			}
			if got := fleet[12]; got.reads != tc.want.reads || fmt.Sprint(got.missing) != fmt.Sprint(tc.want.missing) {
				t.Errorf("the fleet's second 12: %d reads, missing %v; want %d, missing %v (a's and b's 100, c's 130 of its stall, due at 12.4)",
					got.reads, got.missing, tc.want.reads, tc.want.missing)
			}
			// Every other second: whole, or naming c missing while it was paused and expected.
			for k := 1; k <= 15; k++ {
				want := second{reads: 300}
				switch {
				case k == 12:
					continue
				case k >= 5 && k <= 10:
					want = second{200, []string{"c"}}
				case k == 11:
					want = second{reads: 200}
				}
				if g := fleet[k]; g.reads != want.reads || fmt.Sprint(g.missing) != fmt.Sprint(want.missing) {
					t.Errorf("the fleet's second %d: %d reads, missing %v; want %d, missing %v", k, g.reads, g.missing, want.reads, want.missing)
				}
			}
			for k := 1; k <= 15; k++ {
				for _, h := range []struct {
					name string
					held map[int][]string
				}{{"the live stream", r.live}, {"a poller of the series", r.series}, {"a poller of the interval log", r.log}} {
					if got, ok := h.held[k]; !ok || fmt.Sprint(got) != fmt.Sprint(fleet[k].missing) {
						t.Errorf("%s holds the fleet's second %d missing %v (held: %v); the series has it missing %v", h.name, k, got, ok, fleet[k].missing)
					}
				}
			}
			if n := c.stats.coll.Cumulative().Ops["read"].Attempted; n != 15*300-8*100+130 {
				t.Errorf("the fleet's cumulative counts %d reads; want %d, every node's", n, 15*300-8*100+130)
			}
		})
	}
}

// fleetReaders are what a fleet's clients hold of its seconds, the nodes each names
// missing by second after t0: the live stream's (interval events, then amend events, as
// the API's hub gets them), a series poller's (since its newest point) and an interval
// log poller's (from its next seq), each replacing a second it holds when it comes again.
type fleetReaders struct {
	t      *testing.T
	c      *Coordinator
	t0     time.Time
	live   map[int][]string
	series map[int][]string
	log    map[int][]string
	since  time.Time
	next   uint64
}

func newFleetReaders(t *testing.T, c *Coordinator, t0 time.Time) *fleetReaders {
	r := &fleetReaders{t: t, c: c, t0: t0, live: map[int][]string{}, series: map[int][]string{}, log: map[int][]string{}}
	coll := c.stats.coll
	t.Cleanup(coll.Subscribe(func(iv *stats.Interval) { r.live[r.second(iv.End)] = slices.Clone(iv.Missing) }))
	t.Cleanup(coll.SubscribeAmended(func(p stats.Point) { r.live[r.second(p.Time)] = p.Missing }))
	r.next = c.stats.log.Since(0).Next // the log encodes from its first reader on
	return r
}

func (r *fleetReaders) second(end time.Time) int { return int(end.Sub(r.t0) / time.Second) }

// poll reads what came since the last poll, as the pollers do.
func (r *fleetReaders) poll() {
	r.t.Helper()
	page, err := r.c.stats.coll.SeriesJSON(r.since, 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, b := range page.Points {
		var p stats.Point
		if err := json.Unmarshal(b, &p); err != nil {
			r.t.Fatal(err)
		}
		r.series[r.second(p.Time)] = p.Missing
		if p.Time.After(r.since) {
			r.since = p.Time
		}
	}
	ivs := r.c.stats.log.Since(r.next)
	for _, e := range append(ivs.Amended, ivs.Intervals...) {
		r.log[r.second(e.End)] = e.Missing
	}
	r.next = ivs.Next
}

// second is a fleet second as a test checks it: its reads and the nodes it names missing.
type second struct {
	reads   int64
	missing []string
}

// resumeCoordinator is a coordinator of members a, b and c, alive and pulled, expected
// by its merge from the test's t0; nothing runs: the test calls it.
func resumeCoordinator(t *testing.T) *Coordinator {
	t.Helper()
	disc, err := discovery.Parse("static:127.0.0.1:1", discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Self: discovery.Member{ID: "coord"}, Discovery: disc, Token: "a-token-long-enough-for-a-fleet", Config: snap})
	if err != nil {
		t.Fatal(err)
	}
	c.stats.coll.ResetAt(time.Unix(1_800_000_000, 0))
	for _, id := range []string{"a", "b", "c"} {
		c.members[id] = &member{Member: discovery.Member{ID: id}, health: Alive, polling: true, expected: true}
		c.stats.merger.Expect(id, time.Unix(1_800_000_000, 0))
	}
	return c
}
