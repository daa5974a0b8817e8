package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/workload"
)

// The load's routes: starting and stopping op classes, and the backfill.

// LoadRequest selects op classes; empty or absent means reads and writes.
type LoadRequest struct {
	// Not uniqueItems: huma checks uniqueness by hashing the decoded items before it checks
	// their type, and an object in ops panicked into a 500. The handler refuses a class
	// named twice (opsOnce).
	Ops []string `json:"ops,omitempty" maxItems:"16" doc:"Op classes to start or stop: read, write, or a class of workload.ops, each once; empty = every class of the workload"`
}

// opsOnce refuses a LoadRequest that names an op class twice, naming the field.
func opsOnce(ops []string) error {
	for i, op := range ops {
		if slices.Contains(ops[:i], op) {
			return &driver.FieldError{Field: "ops", Value: op, Allowed: "each op class at most once"}
		}
	}
	return nil
}

// BackfillRequest starts a backfill; zero values keep the configured setting.
type BackfillRequest struct {
	Workers int     `json:"workers,omitempty" minimum:"0" maximum:"10000" doc:"Parallel workers; 0 = workload.backfillWorkers"`
	Rate    float64 `json:"rate,omitempty" minimum:"0" maximum:"1000000000" doc:"Writes per second, at most 1e9 (as workload.backfillRate); 0 = workload.backfillRate (0 there = unlimited)"`
	Verify  bool    `json:"verify,omitempty" doc:"Read every key back afterwards (also on when workload.backfillVerify is)"`
	// KeyStart and KeyEnd give a fleet node its part of the keyspace.
	KeyStart int64 `json:"keyStart,omitempty" minimum:"0" doc:"First key index to write; with keyEnd, a part of the keyspace (a fleet gives each node its own); both 0 = every key"`
	KeyEnd   int64 `json:"keyEnd,omitempty" minimum:"0" doc:"Key index after the last to write (at most workload.numKeys); 0 = every key"`
}

// loadAction is the handler of a start or stop of op classes, act being the node's.
func (s *Server) loadAction(act func(...string) error) func(context.Context, *struct{ Body *LoadRequest }) (*out[node.Status], error) {
	return func(_ context.Context, in *struct{ Body *LoadRequest }) (*out[node.Status], error) {
		var req LoadRequest
		if in.Body != nil {
			req = *in.Body
		}
		// A capacity search starts, stops and sets the rate of the classes it
		// tunes: a start or stop beside it would spoil its measurements.
		if s.tune.status().Running {
			return nil, newProblem(http.StatusConflict, "a capacity search is running and controls the load: stop it first (POST /api/v1/autotune/stop)")
		}
		if err := opsOnce(req.Ops); err != nil {
			return nil, err
		}
		if err := act(req.Ops...); err != nil {
			return nil, err
		}
		return &out[node.Status]{s.inst.Status()}, nil
	}
}

func (s *Server) startBackfill(_ context.Context, in *struct{ Body *BackfillRequest }) (*out[engine.BackfillStatus], error) {
	var req BackfillRequest
	if in.Body != nil {
		req = *in.Body
	}
	if req.KeyEnd < req.KeyStart || (req.KeyStart > 0 && req.KeyEnd == 0) {
		return nil, &driver.FieldError{Field: "keyEnd", Value: strconv.FormatInt(req.KeyEnd, 10), Allowed: "more than keyStart (" + strconv.FormatInt(req.KeyStart, 10) + "), at most workload.numKeys"}
	}
	opts := engine.BackfillOptions{Workers: req.Workers, Rate: req.Rate, Verify: req.Verify, Keys: workload.Range{Start: req.KeyStart, End: req.KeyEnd}}
	if err := s.inst.StartBackfill(opts); err != nil {
		return nil, err
	}
	return s.backfillStatus()
}

func (s *Server) stopBackfill(context.Context, *empty) (*out[engine.BackfillStatus], error) {
	if err := s.inst.StopBackfill(); err != nil {
		return nil, err
	}
	return s.backfillStatus()
}

func (s *Server) getBackfill(context.Context, *empty) (*out[engine.BackfillStatus], error) {
	return s.backfillStatus()
}
func strUpper(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func (s *Server) backfillStatus() (*out[engine.BackfillStatus], error) {
	st := s.inst.Status()
	if st.Backfill == nil {
		return nil, node.ErrNotInitialized
	}
	return &out[engine.BackfillStatus]{*st.Backfill}, nil
}
