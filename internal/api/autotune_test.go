package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/autotune"
)

// TestAutotuneRoutes starts a search through the API on a memory store whose capacity is
// above the maximum rate, follows its steps, and reads the result; a second start while
// it runs is a conflict, and stop ends a hold.
func TestAutotuneRoutes(t *testing.T) {
	e := newEnv(t, "workload.writeEnabled=false", "workload.readers=8", "drivers.memory.serviceTime=100us")
	var st AutotuneStatus
	if code, body := e.call("POST", "/api/v1/autotune", map[string]any{}); code != http.StatusConflict {
		t.Fatalf("before init: status %d, want 409; %s", code, body)
	}
	e.must(200, "POST", "/api/v1/driver/init", map[string]any{"driver": "memory"}, nil)
	if code, body := e.call("POST", "/api/v1/autotune", map[string]any{"latency": "soon"}); code != http.StatusUnprocessableEntity {
		t.Fatalf("bad latency: status %d, want 422; %s", code, body)
	}
	req := map[string]any{"percentile": 90, "latency": "50ms", "start": 1000, "maxRate": 2000, "settle": "0s", "window": "1s", "confirm": "1s", "hold": true}
	e.must(http.StatusAccepted, "POST", "/api/v1/autotune", req, &st)
	if !st.Running {
		t.Fatalf("after start: %+v", st)
	}
	if code, _ := e.call("POST", "/api/v1/autotune", req); code != http.StatusConflict {
		t.Errorf("second start while running: status %d, want 409", code)
	}
	for _, path := range []string{"/api/v1/load/start", "/api/v1/load/stop"} {
		if code, body := e.call("POST", path, map[string]any{}); code != http.StatusConflict || !strings.Contains(string(body), "capacity search is running") {
			t.Errorf("%s while a search runs: status %d, want 409 saying a search runs; %s", path, code, body)
		}
	}
	deadline := time.Now().Add(90 * time.Second) // a loaded machine under -race stretches the steps
	holding := false
	for {
		e.must(200, "GET", "/api/v1/autotune", nil, &st)
		for _, s := range st.Steps {
			holding = holding || s.Phase == autotune.PhaseHold
		}
		if holding || !st.Running || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.must(200, "POST", "/api/v1/autotune/stop", nil, &st)
	if st.Running || st.Result == nil {
		t.Fatalf("after stop: running %v, result %+v", st.Running, st.Result)
	}
	// The routes carry the search's result whatever it is: which one a real-time search
	// reaches depends on the machine (on a starved one a step is client-bound), and the
	// search's logic is tested on simulated time in package autotune. What the routes
	// owe: the steps taken, a result, and the hold the request asked for once one began.
	if len(st.Steps) == 0 || st.Result.Status == "" || st.Result.Status == autotune.StatusError {
		t.Errorf("result %q after %d steps (%s): want the search's steps and a result", st.Result.Status, len(st.Steps), st.Result.Message)
	}
	if holding && st.Result.Hold == nil {
		t.Errorf("result %s %.0f (%s) without the hold that was running when stopped", st.Result.Status, st.Result.Capacity, st.Result.Message)
	}
	if st.Result.Status == autotune.StatusAboveMax && st.Result.Capacity != 2000 {
		t.Errorf("above-max at %.0f, want the maximum, 2000", st.Result.Capacity)
	}
	if s := e.status(); s.ReadsRunning {
		t.Errorf("reads still running after the search: %+v", s.Running)
	}
}

// TestAutotuneFieldErrors: a value the search's validation rejects names the request's
// field (not the whole body), so the UI marks the control it came from.
func TestAutotuneFieldErrors(t *testing.T) {
	e := newEnv(t, "workload.writeEnabled=false")
	e.must(200, "POST", "/api/v1/driver/init", map[string]any{"driver": "memory"}, nil)
	for _, tc := range []struct {
		req   map[string]any
		field string
	}{
		{map[string]any{"percentile": 150}, "percentile"},
		{map[string]any{"tolerance": "150%"}, "tolerance"},
		{map[string]any{"start": 5000, "maxRate": 1000}, "start"},
		{map[string]any{"window": "500ms"}, "window"},
		{map[string]any{"window": "10s", "confirm": "2s"}, "confirm"},
		{map[string]any{"maxErrors": "150%"}, "maxErrors"},
		{map[string]any{"minAchieved": "NaN"}, "minAchieved"},
		{map[string]any{"maxRate": 1e308}, "maxRate"},
		{map[string]any{"start": 1e18, "maxRate": 1e18}, "maxRate"},
		{map[string]any{"sla": map[string]any{"read": map[string]any{"achieved": "x"}}}, "sla.read.achieved"},
	} {
		code, body := e.call("POST", "/api/v1/autotune", tc.req)
		var p Problem
		if err := json.Unmarshal(body, &p); err != nil || code != http.StatusUnprocessableEntity {
			t.Fatalf("%v: status %d, %s", tc.req, code, body)
		}
		if len(p.Fields) != 1 || p.Fields[0].Field != tc.field || p.Fields[0].Allowed == "" {
			t.Errorf("%v: fields %+v, want one naming %q with what is allowed", tc.req, p.Fields, tc.field)
		}
	}
}
