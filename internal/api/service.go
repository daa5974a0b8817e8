package api

import (
	"context"
	"fmt"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
)

// The service's own routes: health, status and the drivers this build has.

// HealthBody answers /health.
type HealthBody struct {
	Status  string `json:"status" example:"ok" doc:"Always ok while the process serves requests"`
	Version string `json:"version" doc:"ndbench version"`
}

// DriverInfo describes one registered driver.
type DriverInfo struct {
	Name       string             `json:"name"`
	Summary    string             `json:"summary"`
	Operations []driver.Operation `json:"operations" doc:"Operations op classes may mix: read, write, and those the driver declares (kind read, write or other)"`
	Options    []driver.Option    `json:"options" doc:"Option schema: names, types, defaults, bounds, live and secret flags"`
}

// InitRequest connects a driver.
type InitRequest struct {
	Driver  string            `json:"driver" minLength:"1" doc:"Registered driver name (GET /api/v1/drivers)"`
	Options map[string]string `json:"options,omitempty" maxProperties:"1000" doc:"Driver options (name to value), over the configured ones; at most 1000 (config.MaxChangeKeys)"`
}

func (s *Server) health(context.Context, *empty) (*out[HealthBody], error) {
	return &out[HealthBody]{HealthBody{Status: "ok", Version: s.opts.Version}}, nil
}

// StatusBody is what GET /api/v1/status answers: the node's status, and what the
// service lost when the serve before it on this address ended without a clean stop.
type StatusBody struct {
	node.Status
	PreviousServe *PreviousServe `json:"previousServe,omitempty" doc:"Set when the serve before this one on the same address ended without a clean stop (killed, crashed, the machine lost power): what it was doing and what of it was lost"`
	ConfigSources []ConfigSource `json:"configSources,omitempty" doc:"The dynamic configuration sources (--config-etcd, a watched --config file): what each last applied and, while one fails (etcd not answering, a rejected edit), failing, its error and failingSince; the last good configuration stays applied meanwhile"`
}

// ConfigSource is what a dynamic configuration source last did (its own name in the
// OpenAPI schema: another package's Status is taken).
type ConfigSource struct {
	source.Status
}

// PreviousServe is what a restarted serve found of the one before it, which did not stop
// cleanly: its last sign of life and the driver session it lost.
type PreviousServe struct {
	PID      int       `json:"pid" doc:"The previous serve's process id"`
	Started  time.Time `json:"started" doc:"When it started"`
	LastSeen time.Time `json:"lastSeen" doc:"Its last sign of life (it notes one every second): it ended between this and the next second"`
	// Driver and SessionSince describe the driver session it had open, if any.
	Driver       string    `json:"driver,omitempty" doc:"The driver of the session it had open (\"\" when none was)"`
	SessionSince time.Time `json:"sessionSince,omitzero" doc:"When that driver session began"`
	Running      []string  `json:"running,omitempty" doc:"The op classes it ran at its last sign of life"`
	Panic        string    `json:"panic,omitempty" doc:"The value it panicked with, when it ended in a panic of its own (at most 300 bytes)"`
	// Message says it in a sentence, as serve's log does.
	Message string `json:"message" doc:"What was lost, in a sentence (as serve logs it at start)"`
}

func (s *Server) getStatus(context.Context, *empty) (*out[StatusBody], error) {
	body := StatusBody{Status: s.inst.Status(), PreviousServe: s.opts.PreviousServe}
	if s.opts.ConfigSources != nil {
		for _, st := range s.opts.ConfigSources() {
			body.ConfigSources = append(body.ConfigSources, ConfigSource{st})
		}
	}
	return &out[StatusBody]{body}, nil
}

func (s *Server) listDrivers(context.Context, *empty) (*out[[]DriverInfo], error) {
	var list []DriverInfo
	for _, n := range driver.Names() {
		def, _ := driver.Lookup(n)
		schema, err := driver.Schema(def.NewOptions())
		if err != nil {
			return nil, fmt.Errorf("schema of driver %s: %w", n, err)
		}
		list = append(list, DriverInfo{Name: n, Summary: def.Summary, Operations: def.AllOperations(), Options: schema})
	}
	return &out[[]DriverInfo]{list}, nil
}

func (s *Server) initDriver(ctx context.Context, in *struct{ Body InitRequest }) (*out[node.Status], error) {
	if _, ok := driver.Lookup(in.Body.Driver); !ok {
		return nil, driver.UnknownDriverError(in.Body.Driver)
	}
	initCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.inst.Init(initCtx, in.Body.Driver, in.Body.Options); err != nil {
		if p := problemFor(err); p != nil {
			return nil, p
		}
		return nil, storeProblem(err)
	}
	return &out[node.Status]{s.inst.Status()}, nil
}

func (s *Server) shutdownDriver(context.Context, *empty) (*out[node.Status], error) {
	driverName := s.inst.Status().Driver
	if err := s.inst.Shutdown(); err != nil {
		return nil, err
	}
	if s.opts.OnSessionEnd != nil {
		// After the shutdown the report still covers the session that ended; a
		// fleet's names no driver any more (its nodes have none), so it is named here.
		rep := s.currentReport()
		if rep.Driver.Name == "" {
			rep.Driver.Name = driverName
		}
		s.opts.OnSessionEnd(rep, s.inst.Collector())
	}
	return &out[node.Status]{s.inst.Status()}, nil
}
