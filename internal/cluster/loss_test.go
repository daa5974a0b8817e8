package cluster_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster"
)

// beatLog notes the coordinator's clock reading of every beat sent to a node's address
// (whichever incarnation of the node answers it, if any); while cut, the node answers every call 503 (beats still noted), as a node cut
// off behind a proxy would.
type beatLog struct {
	mu   sync.Mutex
	sent []time.Time
	cut  bool
}

func logBeats(n *inNode) *beatLog {
	b := &beatLog{}
	n.beats.Store(b)
	return b
}

// serve notes a beat and passes the call to next, or answers 503 while cut.
func (b *beatLog) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.URL.Path == "/api/v1/cluster/beat" {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req cluster.BeatRequest
		_ = json.Unmarshal(body, &req)
		b.mu.Lock()
		b.sent = append(b.sent, req.Sent)
		b.mu.Unlock()
	}
	b.mu.Lock()
	cut := b.cut
	b.mu.Unlock()
	if cut {
		http.Error(w, "cut off", http.StatusServiceUnavailable)
		return
	}
	next.ServeHTTP(w, r)
}

// mark returns how many beats the node has been sent so far.
func (b *beatLog) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sent)
}

// since counts the beats that came after the first mark ones and were sent at or after at.
func (b *beatLog) since(mark int, at time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.sent[mark:] {
		if !s.Before(at) {
			n++
		}
	}
	return n
}

func (b *beatLog) setCut(cut bool) {
	b.mu.Lock()
	b.cut = cut
	b.mu.Unlock()
}

// beatenAt waits until every node has been sent two more beats at sim's current reading:
// the coordinator sends a node its next beat only once it has taken in the answer (or
// failure) of the one before, so every beat before the second, the first of them
// included, has been judged at this instant. (Counting beats sent before the call as
// well, an answer from before the cut was once taken in after the next Advance, and the
// silent node's last answer moved a step later.) The beats go out on real time; the
// patience only turns a coordinator that stopped beating into a failure.
func beatenAt(t *testing.T, sim *clock.Sim, logs []*beatLog) {
	t.Helper()
	now := sim.Now()
	marks := make([]int, len(logs))
	for i, l := range logs {
		marks[i] = l.mark()
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		done := true
		for i, l := range logs {
			done = done && l.since(marks[i], now) >= 2
		}
		if done {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the nodes were not beaten at %v within 30 s", now)
		}
	}
}

// TestLossIsJudgedOnTheCoordinatorsClock: a node that stops answering its beats is suspect
// once SuspectAfter has passed since its last answer and lost once LostAfter has, on the
// coordinator's clock, at the first beat that fails after that instant and not one step
// before; the nodes that answer stay alive throughout. On a simulated clock this holds
// exactly however slowly a loaded machine runs the beats. On real time it did not: at load
// 30 a paused node was found lost 9.1 s after its pause (LostAfter 6 s), and the
// in-process fleets' 1 s beat timeout once took a healthy node for lost.
func TestLossIsJudgedOnTheCoordinatorsClock(t *testing.T) {
	const suspectAfter, lostAfter, step = 600 * time.Millisecond, time.Second, 100 * time.Millisecond
	sim := clock.NewSim(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	nodes, coord, _ := inFleetWith(t, 3, func(o *cluster.Options) {
		o.Clock = sim
		o.BeatEvery, o.SuspectAfter, o.LostAfter = 20*time.Millisecond, suspectAfter, lostAfter
	})
	logs := make([]*beatLog, len(nodes))
	for i, n := range nodes {
		logs[i] = logBeats(n)
	}
	beaten := func() { beatenAt(t, sim, logs) }
	health := func() map[string]cluster.Health {
		h := map[string]cluster.Health{}
		for _, m := range coord.Members() {
			h[m.Addr] = m.Health
		}
		return h
	}
	addr := func(n *inNode) string { return n.ts.Listener.Addr().String() }

	beaten()
	for i, n := range nodes {
		if h := health()[addr(n)]; h != cluster.Alive {
			t.Fatalf("node %d is %s before any cut, want alive", i, h)
		}
	}
	logs[2].setCut(true)
	beaten() // its last answer is taken in, at the current instant
	for elapsed := time.Duration(0); elapsed <= lostAfter+3*step; elapsed += step {
		if elapsed > 0 {
			sim.Advance(step)
		}
		beaten()
		h := health()
		want := cluster.Alive
		switch {
		case elapsed >= lostAfter:
			want = cluster.Lost
		case elapsed >= suspectAfter:
			want = cluster.Suspect
		}
		if got := h[addr(nodes[2])]; got != want {
			t.Errorf("%v after its last answer the silent node is %s, want %s (suspect after %v, lost after %v)",
				elapsed, got, want, suspectAfter, lostAfter)
		}
		for i, n := range nodes[:2] {
			if got := h[addr(n)]; got != cluster.Alive {
				t.Errorf("%v after the cut, answering node %d is %s, want alive", elapsed, i, got)
			}
		}
	}
}
