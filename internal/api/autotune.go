package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/autotune"
)

// AutotuneRequest starts a capacity search on this node (docs/autotune.md); every field is
// optional and takes the CLI's default.
type AutotuneRequest struct {
	Class       string  `json:"class,omitempty" doc:"Tune this op class only; default every enabled class with a rate, ratio kept"`
	Percentile  float64 `json:"percentile,omitempty" doc:"Response-time percentile the SLA bounds; default 99"`
	Latency     string  `json:"latency,omitempty" doc:"Bound on that percentile (a duration); default 10ms"`
	MaxErrors   string  `json:"maxErrors,omitempty" doc:"Bound on failed/attempted (ratio or percentage); default 1%"`
	MinAchieved string  `json:"minAchieved,omitempty" doc:"Least achieved/target (ratio or percentage); default 97%"`
	// SLA has per-class fields: {"write": {"latency": "20ms"}}.
	SLA       map[string]map[string]string `json:"sla,omitempty" doc:"A class's own SLA fields (percentile, latency, errors, achieved)"`
	Start     float64                      `json:"start,omitempty" doc:"First total rate in ops/s; default the configured total, at least 1000"`
	MaxRate   float64                      `json:"maxRate,omitempty" doc:"Highest total rate tried; default 10M"`
	Tolerance string                       `json:"tolerance,omitempty" doc:"Bisection ends at hi/lo <= 1+tolerance; default 2%"`
	Settle    string                       `json:"settle,omitempty" doc:"Settle period of each step; default 2s"`
	Window    string                       `json:"window,omitempty" doc:"Least measuring window; default 5s"`
	Confirm   string                       `json:"confirm,omitempty" doc:"Least confirmation window; default three windows"`
	Hold      bool                         `json:"hold,omitempty" doc:"Hold the highest rate within SLA afterwards (AIMD)"`
	Duration  string                       `json:"duration,omitempty" doc:"With hold: how long; default until stopped"`
}

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

// settings turns a request into search settings; errors name the field.
func (r AutotuneRequest) settings() (autotune.Settings, error) {
	s := autotune.Settings{SLA: autotune.DefaultSLA, Start: r.Start, MaxRate: r.MaxRate, Hold: r.Hold}
	field := func(name string, f func() error) error {
		if err := f(); err != nil {
			return &driver.FieldError{Field: name, Value: fmt.Sprint(err), Allowed: "see docs/autotune.md"}
		}
		return nil
	}
	if r.Percentile != 0 {
		s.SLA.Percentile = r.Percentile
	}
	for name, v := range map[string]string{"latency": r.Latency, "errors": r.MaxErrors, "achieved": r.MinAchieved} {
		if v != "" {
			if err := s.SLA.SetField(name, v); err != nil {
				return s, &driver.FieldError{Field: name, Value: v, Allowed: err.Error()}
			}
		}
	}
	for class, fields := range r.SLA {
		if s.Classes == nil {
			s.Classes = map[string]autotune.SLA{}
		}
		sla := s.SLA
		for k, v := range fields {
			if err := sla.SetField(k, v); err != nil {
				return s, &driver.FieldError{Field: "sla." + class + "." + k, Value: v, Allowed: err.Error()}
			}
		}
		s.Classes[class] = sla
	}
	if r.Tolerance != "" {
		if err := field("tolerance", func() (err error) { s.Tolerance, err = autotune.ParseRatio(r.Tolerance); return }); err != nil {
			return s, err
		}
	}
	for name, d := range map[string]struct {
		v   string
		dst *time.Duration
	}{"settle": {r.Settle, &s.Settle}, "window": {r.Window, &s.Window}, "confirm": {r.Confirm, &s.Confirm}, "duration": {r.Duration, &s.HoldFor}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil {
			return s, &driver.FieldError{Field: name, Value: d.v, Allowed: "a duration, e.g. 5s"}
		}
		*d.dst = v
	}
	if err := s.WithDefaults().Validate(); err != nil {
		return s, validationField(err)
	}
	return s, nil
}

// validationField turns a settings validation error ("max-rate: invalid value 0; allowed:
// ...", the form every check of autotune.Settings.Validate uses) into a field error naming
// the request's field (maxRate), so a client can mark the control it came from. An error of
// another form, or of a class's SLA, stays on the request body.
func validationField(err error) *driver.FieldError {
	msg := err.Error()
	name, rest, ok := strings.Cut(msg, ": invalid value ")
	value, allowed, ok2 := strings.Cut(rest, "; allowed: ")
	if !ok || !ok2 || strings.ContainsAny(name, " .") {
		return &driver.FieldError{Field: "body", Allowed: msg}
	}
	// The CLI's flag names are kebab-case; the request's fields camelCase.
	if head, tail, dash := strings.Cut(name, "-"); dash && tail != "" {
		name = head + strings.ToUpper(tail[:1]) + tail[1:]
	}
	return &driver.FieldError{Field: name, Value: value, Allowed: allowed}
}

func (s *Server) autotuneRoutes() {
	conflict := http.StatusConflict
	register(s, changesState, huma.Operation{OperationID: "start-autotune", Method: http.MethodPost, Path: "/api/v1/autotune", Tags: []string{"load"},
		Summary: "Start a capacity search within an SLA on this node", DefaultStatus: http.StatusAccepted,
		Description: "Returns at once; progress and the result at GET /api/v1/autotune, stop with POST /api/v1/autotune/stop. " +
			"The search starts the classes it tunes and gives them their configured rates back when it ends. 409 before init or while a search runs."},
		append(slices.Clone(bodyErrs), conflict, http.StatusNotImplemented), func(_ context.Context, in *struct {
			Body *AutotuneRequest
		}) (*out[AutotuneStatus], error) {
			var req AutotuneRequest
			if in.Body != nil {
				req = *in.Body
			}
			node, ok := s.inst.(autotune.Node)
			if !ok {
				return nil, newProblem(http.StatusNotImplemented, "this server's node cannot run a search")
			}
			if !node.Status().Initialized {
				return nil, newProblem(conflict, "no driver is initialized: init one first")
			}
			settings, err := req.settings()
			if err != nil {
				return nil, err
			}
			prober, err := autotune.NewNodeProber(node, req.Class)
			if err != nil {
				return nil, &driver.FieldError{Field: "class", Value: req.Class, Allowed: err.Error()}
			}
			if settings.Start == 0 {
				total := 0.0
				w := node.Config().Config.Workload
				for c := range prober.Classes() {
					spec, _ := w.Class(c)
					total += spec.Rate
				}
				settings.Start = max(1000, total)
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
