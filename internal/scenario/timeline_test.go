package scenario

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// TestTimelineOnASimulatedClock: the runner starts each phase, fires each hook and its
// undo, and ends the run at the instants the scenario gives, exactly, on a simulated
// clock; nothing happens before its instant. On real time these instants stretch with
// the machine's load, so the end-to-end test cannot check them.
func TestTimelineOnASimulatedClock(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	sc, inst := nodeFor(t, `
name: timeline
config:
  driver: {name: memory}
  workload: {readRate: 50, writeRate: 10, numKeys: 100}
phases:
  - {name: one, duration: 3s}
  - {name: two, duration: 2s, set: {workload.readRate: 80}}
hooks:
  - name: toxic
    at: one + 1500ms
    http: {url: "`+srv.URL+`/toxic", method: post, expectStatus: 204}
    for: 2s
    undo: {http: {url: "`+srv.URL+`/toxic", method: delete}}
`)
	sim := clock.NewSim(time.Now())
	var mu sync.Mutex
	var start time.Time
	var got []string
	inFlight := 0 // hook actions the runner has not seen return
	logf := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if start.IsZero() {
			start = sim.Now()
		}
		// When an HTTP action returns is real time, not the timeline's: the clock is held
		// while one is in flight, and the lines saying so are not compared.
		if strings.HasPrefix(s, "hook toxic: ") {
			inFlight++
		}
		if strings.Contains(s, "returned;") {
			inFlight--
		}
		if strings.Contains(s, "ended after") || strings.Contains(s, "returned;") {
			return
		}
		got = append(got, sim.Now().Sub(start).String()+" "+strings.SplitN(s, ",", 2)[0])
	}
	type result struct {
		out *Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := Run(context.Background(), inst, sc, RunOptions{Log: logf, Clock: sim})
		done <- result{out, err}
	}()
	// Step the clock 100 ms at a time, each step once the runner waits on its timer again,
	// until the run returns.
	var res result
	steps, deadline := 0, time.Now().Add(60*time.Second)
	for ended := false; !ended; {
		select {
		case res = <-done:
			ended = true
			continue
		default:
		}
		if time.Now().After(deadline) || steps > 80 {
			t.Fatalf("the run did not end after %d steps of 100 ms; timeline so far: %q", steps, got)
		}
		mu.Lock()
		busy := inFlight > 0
		mu.Unlock()
		if busy {
			time.Sleep(time.Millisecond)
			continue
		}
		if sim.WaitTimers(1, 50*time.Millisecond) {
			sim.Advance(100 * time.Millisecond)
			steps++
		}
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"0s phase one started",
		"1.5s hook toxic: POST " + srv.URL + "/toxic",
		"3s phase one ended",
		"3s phase two started",
		"3.5s hook toxic undo: DELETE " + srv.URL + "/toxic",
		"5s phase two ended",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("timeline on the simulated clock:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d := res.out.Ended.Sub(res.out.Started); d != 5*time.Second {
		t.Errorf("run lasted %v on the simulated clock, want 5s", d)
	}
}
