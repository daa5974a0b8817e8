package cluster

import (
	"fmt"
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
// the node's next answer, after that instant. The fleet second of that interval must hold
// it (or name the node missing), not go out when the other nodes delivered it and leave
// its reads to a late delivery, in no fleet second and unflagged: the partition test's
// paused node (stop 52) had the fleet's second at its resume short by 116 and 18 reads.
//
// On given instants, the coordinator's own calls (setHealth at the loss and at the
// answer) with the pulls' pages fed to its merge: c ticks at .4 of each second, a and b
// at .1 and .2; c is paused at 4.7 (its last tick due at 4.4), found lost at 10.8,
// resumed at 12.9 and answers at 12.95; its stall's interval is due at 12.4, slot 12's.
// The coordinator polls on the second: at 13.0 a and b's pages come in before c's.
// Before the fix, the coordinator expected c again from its answer (12.95): slot 12 did
// not expect it and went out with a and b's seconds only, unflagged; c's 130 reads came
// late.
func TestResumedNodeStallIsInTheFleetSecondOfItsDueInstant(t *testing.T) {
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
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	merger := c.stats.merger
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
		if err := merger.Add(id, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	type second struct {
		reads   int64
		missing []string
	}
	fleet := map[int]second{}
	var late int64
	ready := func(now float64) {
		for _, f := range merger.Ready(at(now)) {
			n := f.Interval.Summary().Ops["read"].Attempted
			if f.Late {
				late += n
				continue
			}
			fleet[int(f.Interval.End.Sub(t0)/time.Second)] = second{n, f.Interval.Missing}
		}
	}
	members := map[string]*member{}
	for _, id := range []string{"a", "b", "c"} {
		m := &member{Member: discovery.Member{ID: id}, health: Alive, polling: true, expected: true}
		members[id] = m
		c.members[id] = m
		merger.Expect(id, at(0))
	}
	phase := map[string]float64{"a": 0.1, "b": 0.2, "c": 0.4}
	for s := range 13 {
		for _, id := range []string{"a", "b", "c"} {
			if id == "c" && s >= 5 {
				continue // paused from 4.7
			}
			add(id, float64(s)+phase[id], 100)
		}
		if s == 10 {
			// Lost at 10.8 (its last answer before the pause + LostAfter).
			c.mu.Lock()
			c.setHealth(members["c"], Lost, at(10.8))
			c.mu.Unlock()
		}
		if s == 12 {
			// Resumed at 12.9; its answer comes in at 12.95.
			c.mu.Lock()
			c.setHealth(members["c"], Alive, at(12.95))
			c.mu.Unlock()
		}
		ready(float64(s) + 1) // the poll on the next second, after a and b's pages
	}
	// c's page at 13.0: the interval its stall spanned (its reads before the pause).
	add("c", 12.4, 130)
	ready(13)
	for s := 13; s < 16; s++ {
		for _, id := range []string{"a", "b", "c"} {
			add(id, float64(s)+phase[id], 100)
		}
		ready(float64(s) + 1)
	}
	ready(30)
	got := fleet[12]
	if got.reads != 330 {
		t.Errorf("the fleet's second 12 counts %d reads (missing %v), late deliveries %d; want 330: a's and b's 100 and c's 130 of its stall, due at 12.4",
			got.reads, got.missing, late)
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
}
