package merge

import (
	"fmt"
	"testing"

	"github.com/ndbench/ndbench/internal/stats"
)

// TestExpectAgainCoversTheOpenSlotsAfterItsLastDelivery: a node found lost at 4.5 (its
// last tick due at 4.4) comes back at 7.45 with a stall's interval due at 7.4, while
// slots 6 and 7 are still open; b's seconds for them come first. Expected again, slot 7
// waits for the node and holds its stall; slot 6, which the stall spanned, names it
// missing and goes out once the stall came, not after the wait; slot 5, emitted while it
// was lost, stays as it went out. Expected from 7.45 only (Expect), slots 6 and 7 went
// out with b's seconds alone and the stall came late, in no fleet second, unflagged.
func TestExpectAgainCoversTheOpenSlotsAfterItsLastDelivery(t *testing.T) {
	m := New(Config{})
	m.Expect("a", at(0))
	m.Expect("b", at(0))
	seq := map[string]uint64{}
	add := func(id string, start, due float64, reads int64) {
		t.Helper()
		e := stats.EncodedInterval{Seq: seq[id], Start: at(start), End: at(due), Due: at(due),
			Ops: map[string]stats.EncodedOp{"read": {Successes: reads}}}
		seq[id]++
		if err := m.Add(id, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	ready := func(now float64) {
		for _, f := range m.Ready(at(now)) {
			got = append(got, fmt.Sprintf("%v:%d%v", f.Interval.End.Sub(t0).Seconds(), f.Interval.Summary().Ops["read"].Attempted, f.Interval.Missing))
		}
	}
	for s := range 5 {
		add("a", float64(s)-0.6, float64(s)+0.4, 100)
		add("b", float64(s)-0.9, float64(s)+0.1, 100)
	}
	ready(4.5)
	m.Forget("a", at(4.5))
	add("b", 4.1, 5.1, 100)
	ready(5.5)
	m.ExpectAgain("a", at(7.45))
	add("b", 5.1, 6.1, 100)
	add("b", 6.1, 7.1, 100)
	ready(7.5)
	add("a", 4.4, 7.4, 130) // the stall's interval
	ready(7.6)
	want := "[0:200[] 1:200[] 2:200[] 3:200[] 4:200[] 5:100[] 6:100[a] 7:230[]]"
	if fmt.Sprint(got) != want {
		t.Errorf("slots (end:reads[missing]) %v, want %s", got, want)
	}
	if l := m.Counters().Late; l != 0 {
		t.Errorf("%d intervals late, want none", l)
	}
}

// TestLateFleetNamesTheSlotsItLeftShort: the late delivery of an interval with
// operations names its slot and node in Short (that slot went out without them); one
// without operations (a node's idle second, back after a cut) leaves nothing short.
func TestLateFleetNamesTheSlotsItLeftShort(t *testing.T) {
	m := New(Config{})
	m.Expect("b", at(0))
	add := func(id string, seq uint64, due float64, reads int64) {
		t.Helper()
		e := stats.EncodedInterval{Seq: seq, Start: at(due - 1), End: at(due), Due: at(due),
			Ops: map[string]stats.EncodedOp{"read": {Successes: reads}}}
		if err := m.Add(id, 0, e); err != nil {
			t.Fatal(err)
		}
	}
	for s := range 4 {
		add("b", uint64(s), float64(s)+0.1, 100)
	}
	m.Ready(at(4))
	// a, expected by no slot, delivers seconds of slots 2 and 3 after they went out.
	add("a", 0, 2.4, 0)
	add("a", 1, 3.4, 130)
	var got []string
	for _, f := range m.Ready(at(4.5)) {
		if !f.Late {
			continue
		}
		for _, s := range f.Short {
			got = append(got, fmt.Sprintf("%v:%s", s.End.Sub(t0).Seconds(), s.Node))
		}
	}
	if want := "[3:a]"; fmt.Sprint(got) != want {
		t.Errorf("the late delivery names %v short; want %s", got, want)
	}
}
