package engine

import (
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

// A fenced engine sends nothing once its clock passes the fence, whatever its schedule
// has overdue, until the fence is lifted; a fence ahead lets the load run.
func TestSendUntilFencesTheLoad(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.ReadRate, w.Readers, w.WriteEnabled = 2000, 4, false
	})
	e := newEngine(t, openMemory(t, nil), w)
	e.SendUntil(time.Now().Add(time.Hour))
	if err := e.Start("read"); err != nil {
		t.Fatal(err)
	}
	if s := measure(e, 100*time.Millisecond); s.Ops["read"].Count == 0 {
		t.Fatal("a fence an hour ahead held the load")
	}
	e.SendUntil(time.Now().Add(-time.Second))
	// An operation already past its wait when the fence moved may still finish.
	if s := measure(e, 50*time.Millisecond); s.Ops["read"].Count > int64(w.Readers) {
		t.Fatalf("%d reads after the fence passed, want at most the %d in flight", s.Ops["read"].Count, w.Readers)
	}
	if s := measure(e, 200*time.Millisecond); s.Ops["read"].Count != 0 {
		t.Fatalf("%d reads sent past the fence", s.Ops["read"].Count)
	}
	if !e.Running()["read"] {
		t.Fatal("the fenced pool lost its workers")
	}
	e.SendUntil(time.Time{})
	if s := measure(e, 200*time.Millisecond); s.Ops["read"].Count == 0 {
		t.Fatal("no reads after the fence was lifted")
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, e)
}
