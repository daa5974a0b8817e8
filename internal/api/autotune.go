package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/autotune"
)

// AutotuneRequest starts a capacity search on this node: autotune.Spec, documented there
// and in docs/autotune.md.
type AutotuneRequest = autotune.Spec

// AutotuneStatus is the search on this node: running, its steps so far and, once it
// ended, its result.
type AutotuneStatus struct {
	Running bool             `json:"running"`
	Started time.Time        `json:"started,omitzero"`
	Steps   []autotune.Step  `json:"steps"`
	Result  *autotune.Result `json:"result,omitempty"`
}

// tuner runs at most one search at a time on the server's node.
type tuner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	st     AutotuneStatus
}

func (t *tuner) status() AutotuneStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.st
	st.Steps = slices.Clone(t.st.Steps)
	if st.Steps == nil {
		st.Steps = []autotune.Step{}
	}
	return st
}

// stop cancels a running search and waits for it to give the load back.
func (t *tuner) stop() {
	t.mu.Lock()
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (s *Server) autotuneRoutes() {
	conflict := http.StatusConflict
	register(s, changesState, huma.Operation{OperationID: "start-autotune", Method: http.MethodPost, Path: "/api/v1/autotune", Tags: []string{"load"},
		Summary: "Start a capacity search within an SLA on this node", DefaultStatus: http.StatusAccepted,
		Description: "Returns at once; progress and the result at GET /api/v1/autotune, stop with POST /api/v1/autotune/stop. " +
			"The search starts the classes it tunes and gives them their configured rates back when it ends. 409 before init or while a search runs."},
		append(slices.Clone(bodyErrs), conflict), func(_ context.Context, in *struct {
			Body *AutotuneRequest
		}) (*out[AutotuneStatus], error) {
			var req AutotuneRequest
			if in.Body != nil {
				req = *in.Body
			}
			node := s.inst
			if !node.Status().Initialized {
				return nil, newProblem(conflict, "no driver is initialized: init one first")
			}
			settings, err := req.Settings()
			if err != nil {
				return nil, err
			}
			prober, err := autotune.NewNodeProber(node, req.Class)
			if err != nil {
				return nil, &driver.FieldError{Field: "class", Value: req.Class, Allowed: err.Error()}
			}
			if settings.Start == 0 {
				settings.Start = autotune.DefaultStart(node, prober)
			}
			t := s.tune
			t.mu.Lock()
			if t.st.Running {
				t.mu.Unlock()
				return nil, newProblem(conflict, "a search is running: stop it first (POST /api/v1/autotune/stop)")
			}
			ctx, cancel := context.WithCancel(context.Background())
			t.cancel, t.done = cancel, make(chan struct{})
			t.st = AutotuneStatus{Running: true, Started: time.Now(), Steps: []autotune.Step{}}
			done := t.done
			t.mu.Unlock()
			settings.OnStep = func(st autotune.Step) {
				t.mu.Lock()
				t.st.Steps = append(t.st.Steps, st)
				t.mu.Unlock()
			}
			prober.Begin()
			go func() {
				defer close(done)
				defer cancel()
				res := autotune.Search(ctx, prober, settings)
				if err := prober.End(); err != nil && !errors.Is(err, context.Canceled) {
					s.log.Warn("end auto-tune", "err", err)
				}
				t.mu.Lock()
				t.st.Running, t.st.Result, t.cancel = false, res, nil
				t.mu.Unlock()
			}()
			return &out[AutotuneStatus]{t.status()}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-autotune", Method: http.MethodGet, Path: "/api/v1/autotune", Tags: []string{"load"},
		Summary: "The capacity search: running, its steps, and its result once it ended"},
		nil, func(context.Context, *empty) (*out[AutotuneStatus], error) {
			return &out[AutotuneStatus]{s.tune.status()}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "stop-autotune", Method: http.MethodPost, Path: "/api/v1/autotune/stop", Tags: []string{"load"},
		Summary: "Stop the capacity search (a hold ends here too); its result so far stays readable"},
		nil, func(context.Context, *empty) (*out[AutotuneStatus], error) {
			s.tune.stop()
			return &out[AutotuneStatus]{s.tune.status()}, nil
		})
}
