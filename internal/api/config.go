package api

import (
	"context"
	"slices"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// The configuration's routes: the effective configuration with its sources, and changes.

// ConfigEntry is one effective configuration key.
type ConfigEntry struct {
	Key    string `json:"key"`
	Value  string `json:"value" doc:"Effective value; secrets are redacted"`
	Source string `json:"source" doc:"Layer that set it: default, file ..., env ..., etcd ..., --set"`
	Secret bool   `json:"secret"`
}

// ConfigBody is the effective configuration.
type ConfigBody struct {
	Version        uint64          `json:"version" doc:"Increases with every applied change"`
	Entries        []ConfigEntry   `json:"entries"`
	Notices        []string        `json:"notices"`
	Pending        []string        `json:"pending" doc:"Changed keys that take effect at the next driver init"`
	WorkloadSchema []driver.Option `json:"workloadSchema"`
	// OpClassSchema lets a client offer the options of a class it adds.
	OpClassSchema []driver.Option `json:"opClassSchema" doc:"Options of one op class beyond read and write: set as workload.ops.<class>.<option>"`
}

// PatchRequest changes configuration keys atomically.
type PatchRequest struct {
	Values map[string]ConfigValue `json:"values" minProperties:"1" maxProperties:"1000" doc:"Key to value, e.g. {\"workload.readRate\": 5000} or {\"workload.readRate\": \"5000\"}; at most 1000 keys per change (config.MaxChangeKeys)"`
}

// PatchBody says what a change did.
type PatchBody struct {
	Config  ConfigBody `json:"config"`
	Pending []string   `json:"pending" doc:"Changed keys that take effect at the next driver init (options that are not live)"`
}

func (s *Server) getConfig(context.Context, *empty) (*out[ConfigBody], error) {
	return &out[ConfigBody]{s.configBody(s.inst.Config(), s.inst.Status().Pending)}, nil
}

func (s *Server) patchConfig(_ context.Context, in *struct{ Body PatchRequest }) (*out[PatchBody], error) {
	values := make(map[string]string, len(in.Body.Values))
	for k, v := range in.Body.Values {
		values[k] = string(v)
	}
	res, err := s.inst.Patch(values)
	if err != nil {
		return nil, err
	}
	pending := res.Pending
	if pending == nil {
		pending = []string{}
	}
	return &out[PatchBody]{PatchBody{Config: s.configBody(res.Snapshot, pending), Pending: pending}}, nil
}

func (s *Server) configBody(snap *config.Snapshot, pending []string) ConfigBody {
	b := ConfigBody{Version: snap.Version, Entries: make([]ConfigEntry, 0, len(snap.Entries)),
		Notices: slices.Clone(snap.Notices), Pending: pending, WorkloadSchema: config.WorkloadSchema(),
		OpClassSchema: config.OpClassSchema()}
	for _, e := range snap.Entries {
		b.Entries = append(b.Entries, ConfigEntry{Key: e.Key, Value: e.Value, Source: e.Source, Secret: e.Secret})
	}
	if b.Notices == nil {
		b.Notices = []string{}
	}
	if b.Pending == nil {
		b.Pending = []string{}
	}
	return b
}
