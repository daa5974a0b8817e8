package engine

import (
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
)

// A fenced engine sends nothing once its clock passes the fence, whatever its schedule
// has overdue, until the fence is lifted; a fence ahead lets the load run. On simulated
// time, 4 readers at 2,000/s against a store that takes 1 ms: the reads due are sent
// exactly, the 2 in the store when the fence moves behind the clock still end, and none
// is sent after it, however long the pool waits at the fence.
func TestSendUntilFencesTheLoad(t *testing.T) {
	clk := clock.NewSim(simStart)
	w := testWorkload(t, func(w *config.Workload) {
		w.ReadRate, w.Readers, w.MaxReaders, w.WriteEnabled = 2000, 4, 4, false
	})
	e := newSimEngine(t, clk, simstore.New(clk, time.Millisecond), w)
	e.Collector().ResetAt(simStart)
	e.SendUntil(simStart.Add(time.Hour))
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	e.to(100 * time.Millisecond)
	// Due at 0 to 100 ms, one each 0.5 ms; those due at 99.5 and 100 ms are still in the
	// store (an operation is counted when it ends).
	if o := e.tick().Ops["read"]; o.Count != 199 || o.Errors != 0 {
		t.Fatalf("%d reads answered (%d failed) by 100 ms under a fence an hour ahead, want 199", o.Count, o.Errors)
	}
	e.SendUntil(clk.Now().Add(-time.Second))
	e.to(150 * time.Millisecond)
	if o := e.tick().Ops["read"]; o.Attempted != 2 {
		t.Fatalf("%d reads ended in the 50 ms after the fence passed, want the 2 that were in the store", o.Attempted)
	}
	e.to(time.Second)
	if o := e.tick().Ops["read"]; o.Attempted != 0 {
		t.Fatalf("%d reads sent past the fence", o.Attempted)
	}
	if !e.Running()["read"] {
		t.Fatal("the fenced pool lost its workers")
	}
	e.SendUntil(time.Time{})
	e.to(1200 * time.Millisecond)
	if o := e.tick().Ops["read"]; o.Count == 0 {
		t.Fatal("no reads after the fence was lifted")
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	e.to(1201 * time.Millisecond) // the reads in the store end
	waitIdle(t, e.Engine)
}
