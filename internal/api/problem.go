package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/stats"
)

// Problem is every error response: RFC 9457 problem details, the same shape huma uses for
// its own validation errors, plus the configuration keys that were rejected and, for an
// unknown driver, the registered ones, so a client can fix its request without guessing.
type Problem struct {
	Type     string              `json:"type,omitempty" doc:"URI reference to documentation of the problem type"`
	Title    string              `json:"title,omitempty" doc:"Short summary of the problem type (the HTTP status text)"`
	Status   int                 `json:"status,omitempty" doc:"HTTP status code"`
	Detail   string              `json:"detail,omitempty" doc:"What went wrong in this request"`
	Instance string              `json:"instance,omitempty" doc:"URI reference of this occurrence"`
	Errors   []*huma.ErrorDetail `json:"errors,omitempty" doc:"Request validation errors: where and what"`
	Fields   []FieldProblem      `json:"fields,omitempty" doc:"Rejected configuration keys or driver options"`
	Drivers  []string            `json:"drivers,omitempty" doc:"Registered drivers, when the request named another"`
}

// FieldProblem is one rejected key or option.
type FieldProblem struct {
	Field   string `json:"field" doc:"Key or option name, e.g. workload.readRate"`
	Value   string `json:"value" doc:"Rejected value (redacted for secrets)"`
	Allowed string `json:"allowed" doc:"What would have been accepted"`
	Source  string `json:"source,omitempty" doc:"Where the value came from, when known"`
}

// Error returns the detail, so a Problem is an error handlers can return.
func (p *Problem) Error() string { return p.Detail }

// GetStatus makes Problem a huma.StatusError: huma writes it with this status.
func (p *Problem) GetStatus() int { return p.Status }

// ContentType sends problems as application/problem+json, as RFC 9457 asks.
func (p *Problem) ContentType(ct string) string {
	if ct == "application/json" {
		return "application/problem+json"
	}
	return ct
}

// reflectProblem is the type registered as the schema of every error response.
var reflectProblem = reflect.TypeFor[Problem]()

// reflectSummary is the schema of one event of the stats stream.
var reflectSummary = reflect.TypeFor[stats.Summary]()

func newProblem(status int, detail string) *Problem {
	return &Problem{Status: status, Title: http.StatusText(status), Detail: detail}
}

// problemFor maps what the instance, the engine and the config store return onto an HTTP
// problem. Client mistakes and state conflicts get 4xx with the message; the only 5xx are
// the store's own failures (502/504), so a 500 always means a bug in ndbench.
func problemFor(err error) error {
	if err == nil {
		return nil
	}
	var se huma.StatusError
	if errors.As(err, &se) {
		return err
	}
	switch {
	case errors.Is(err, node.ErrNotInitialized), errors.Is(err, node.ErrAlreadyInitialized),
		errors.Is(err, engine.ErrBackfillRunning):
		return newProblem(http.StatusConflict, err.Error())
	case errors.Is(err, driver.ErrUnknownDriver):
		p := newProblem(http.StatusUnprocessableEntity, err.Error())
		p.Drivers = driver.Names()
		return p
	case errors.Is(err, driver.ErrNotFound):
		return newProblem(http.StatusNotFound, err.Error())
	case errors.Is(err, config.ErrTooManyKeys), errors.Is(err, engine.ErrUnknownClass):
		return newProblem(http.StatusUnprocessableEntity, err.Error())
	}
	if p := fleetProblem(err); p != nil {
		return p
	}
	// A value the operator did not allow from the API is refused, not malformed: 403, with
	// the fields (and the flag that would allow each) named as for any field error.
	status := http.StatusUnprocessableEntity
	var na *config.NotAllowedError
	if errors.As(err, &na) {
		status = http.StatusForbidden
	}
	if fes, ok := driver.AsFieldErrors(err); ok {
		p := newProblem(status, err.Error())
		for _, fe := range fes {
			p.Fields = append(p.Fields, FieldProblem{Field: fe.Field, Value: fe.Value, Allowed: fe.Allowed, Source: fe.Source})
		}
		return p
	}
	return nil
}

// storeProblem is the answer when the store itself failed an operation: a gateway error,
// since ndbench is a client of the store.
func storeProblem(err error) error {
	if p := problemFor(err); p != nil {
		return p
	}
	if driver.Classify(err) == driver.ClassTimeout {
		return newProblem(http.StatusGatewayTimeout, err.Error())
	}
	return newProblem(http.StatusBadGateway, err.Error())
}

// writeProblem writes a problem from plain net/http code (middleware, SSE), in the same
// shape as the API's.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(newProblem(status, detail))
}
