package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// register adds one operation with its effect, its declared error responses (all as
// Problem; 401 on every route but /health, 403 on routes that change state) and maps the
// handler's errors onto problems. An operation that changes state refuses requests sent
// by pages on other sites, whatever its method.
func register[I, O any](s *Server, eff effect, op huma.Operation, errs []int, h func(context.Context, *I) (*O, error)) {
	s.declare(op.Method, op.Path, eff)
	oapi := s.api.OpenAPI()
	schema := oapi.Components.Schemas.Schema(reflectProblem, true, "Problem")
	if eff == changesState {
		errs = append(slices.Clone(errs), http.StatusForbidden)
		op.Middlewares = append(op.Middlewares, func(ctx huma.Context, next func(huma.Context)) {
			r, w := humago.Unwrap(ctx)
			if err := s.origins.Check(r); err != nil {
				writeCrossSite(w, err)
				return
			}
			next(ctx)
		})
	}
	if !public(op.Method, op.Path) {
		errs = append(errs, http.StatusUnauthorized)
		op.Security = []map[string][]string{{"bearer": {}}, {"session": {}}}
	} else {
		op.Security = []map[string][]string{}
	}
	op.Responses = map[string]*huma.Response{}
	for _, code := range errs {
		op.Responses[strconv.Itoa(code)] = &huma.Response{
			Description: http.StatusText(code),
			Content:     map[string]*huma.MediaType{"application/problem+json": {Schema: schema}},
		}
	}
	op.MaxBodyBytes = s.opts.MaxBodyBytes
	huma.Register(s.api, op, func(ctx context.Context, in *I) (*O, error) {
		out, err := h(ctx, in)
		if err != nil {
			if p := problemFor(err); p != nil {
				return nil, p
			}
			s.log.Error("request failed", "operation", op.OperationID, "err", err)
			return nil, newProblem(http.StatusInternalServerError, "internal error: "+err.Error())
		}
		return out, nil
	})
}

// Body-carrying operations can fail on malformed JSON (400), a body over the limit (413)
// or a schema violation such as an unknown field (422).
var bodyErrs = []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity}

type empty struct{}

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

// StatsBody is the latest interval and the cumulative view.
type StatsBody struct {
	Latest     stats.Summary `json:"latest" doc:"The last 1 s interval"`
	Cumulative stats.Summary `json:"cumulative" doc:"Since the driver was first initialized or the last reset"`
	// Errors explains the failures counted in Cumulative.
	Errors map[string][]stats.ErrorMessage `json:"errors" doc:"Per op class that failed in the cumulative span: the latest distinct failure messages, at most 10 per failure class, most recently seen first; credentials masked, cut at 200 bytes, runs of digits shown as N when messages differ only in them"`
}

// SeriesBody is the retained time series.
type SeriesBody struct {
	Points []stats.Point `json:"points" doc:"One point per interval, oldest first (at most an hour)"`
}

// OpHistograms are one op class's cumulative histograms.
type OpHistograms struct {
	Count        int64  `json:"count" doc:"Values recorded"`
	ResponseTime []byte `json:"responseTime" doc:"Response time histogram (from intended start), base64 of HdrHistogram V2 compressed encoding"`
	ServiceTime  []byte `json:"serviceTime" doc:"Service time histogram (from actual start), same encoding"`
}

// HistogramsBody carries cumulative histograms for cluster aggregation.
type HistogramsBody struct {
	Unit     string                  `json:"unit" example:"microseconds"`
	Encoding string                  `json:"encoding" example:"HdrHistogram V2 compressed, base64"`
	Start    time.Time               `json:"start" doc:"Start of the cumulative span"`
	End      time.Time               `json:"end" doc:"End of the last interval in it"`
	Ops      map[string]OpHistograms `json:"ops"`
}

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

// KVBody is one stored value.
type KVBody struct {
	Key   string `json:"key"`
	Value []byte `json:"value" doc:"The stored bytes, base64"`
	Size  int    `json:"size" doc:"Length of the value in bytes"`
}

// KVPut writes one value.
type KVPut struct {
	Value []byte `json:"value" doc:"Bytes to store, base64 (standard alphabet, padded)"`
}

type keyPath struct {
	Key string `path:"key" minLength:"1" maxLength:"1024" doc:"Key, e.g. T42"`
}

type out[T any] struct{ Body T }

func (s *Server) routes() {
	conflict := http.StatusConflict
	register(s, readOnly, huma.Operation{OperationID: "health", Method: http.MethodGet, Path: "/health", Tags: []string{"service"},
		Summary: "Health check (no auth)", Description: "Answers while the process serves requests; needs no token."},
		[]int{http.StatusUnprocessableEntity}, func(context.Context, *empty) (*out[HealthBody], error) {
			return &out[HealthBody]{HealthBody{Status: "ok", Version: s.opts.Version}}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-status", Method: http.MethodGet, Path: "/api/v1/status", Tags: []string{"service"},
		Summary: "What the node is doing", Description: "Driver, running op classes, backfill, config version, pending changes, last error."},
		nil, func(context.Context, *empty) (*out[node.Status], error) {
			return &out[node.Status]{s.inst.Status()}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-report", Method: http.MethodGet, Path: "/api/v1/report", Tags: []string{"stats"},
		Summary: "The run report (JSON)", Description: "The same document `ndbench run --report` and `ndbench serve --report` write: results per op class, config with sources, time series, client CPU, warnings. Covers the current or last driver session (before the first, the node's life)."},
		nil, func(context.Context, *empty) (*out[*report.Report], error) {
			return &out[*report.Report]{s.currentReport()}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-report-html", Method: http.MethodGet, Path: "/api/v1/report.html", Tags: []string{"stats"},
		Summary: "The run report as a self-contained HTML page", Description: "The JSON report rendered with the same charts as the UI; opens offline."},
		nil, s.reportHTML)
	register(s, readOnly, huma.Operation{OperationID: "list-drivers", Method: http.MethodGet, Path: "/api/v1/drivers", Tags: []string{"driver"},
		Summary: "Registered drivers and their option schemas"},
		nil, func(context.Context, *empty) (*out[[]DriverInfo], error) {
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
		})
	register(s, changesState, huma.Operation{OperationID: "init-driver", Method: http.MethodPost, Path: "/api/v1/driver/init", Tags: []string{"driver"},
		Summary: "Connect a driver", Description: "Validates the options, connects and builds the engine; load does not start. " +
			"422 names every bad option (or lists the registered drivers); 403 names an option the operator did not allow from the API (a script, a file path, an http/grpc target outside the allow-list) and the `serve --allow` flag that would; 409 when a driver is already connected; 502 when the store cannot be reached."},
		append(slices.Clone(bodyErrs), conflict, http.StatusBadGateway), func(ctx context.Context, in *struct{ Body InitRequest }) (*out[node.Status], error) {
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
		})
	register(s, changesState, huma.Operation{OperationID: "shutdown-driver", Method: http.MethodPost, Path: "/api/v1/driver/shutdown", Tags: []string{"driver"},
		Summary: "Stop all load and disconnect the driver"},
		[]int{conflict}, func(context.Context, *empty) (*out[node.Status], error) {
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
		})
	for _, act := range []struct {
		name string
		f    func(...string) error
	}{{"start", startLoad(s.inst)}, {"stop", s.inst.Stop}} {
		register(s, changesState, huma.Operation{OperationID: act.name + "-load", Method: http.MethodPost, Path: "/api/v1/load/" + act.name, Tags: []string{"load"},
			Summary: strUpper(act.name) + " op classes", Description: `Body {"ops": ["read"]}; no body or empty ops = every class of the workload (read, write and those of workload.ops). 422 names the classes for an unknown one; 409 before a driver is initialized or while a capacity search (POST /api/v1/autotune) runs.`},
			append(slices.Clone(bodyErrs), conflict), func(_ context.Context, in *struct {
				Body *LoadRequest
			}) (*out[node.Status], error) {
				var req LoadRequest
				if in.Body != nil {
					req = *in.Body
				}
				// A capacity search starts, stops and sets the rate of the classes it
				// tunes: a start or stop beside it would spoil its measurements.
				if s.tune.status().Running {
					return nil, newProblem(conflict, "a capacity search is running and controls the load: stop it first (POST /api/v1/autotune/stop)")
				}
				if err := opsOnce(req.Ops); err != nil {
					return nil, err
				}
				if err := act.f(req.Ops...); err != nil {
					return nil, err
				}
				return &out[node.Status]{s.inst.Status()}, nil
			})
	}
	register(s, changesState, huma.Operation{OperationID: "start-backfill", Method: http.MethodPost, Path: "/api/v1/backfill/start", Tags: []string{"load"},
		Summary: "Write every key once, in the background", DefaultStatus: http.StatusAccepted,
		Description: "Progress at GET /api/v1/backfill. 409 before init or while a backfill runs."},
		append(slices.Clone(bodyErrs), conflict), func(_ context.Context, in *struct {
			Body *BackfillRequest
		}) (*out[engine.BackfillStatus], error) {
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
		})
	register(s, changesState, huma.Operation{OperationID: "stop-backfill", Method: http.MethodPost, Path: "/api/v1/backfill/stop", Tags: []string{"load"},
		Summary: "Stop a running backfill"},
		[]int{conflict}, func(context.Context, *empty) (*out[engine.BackfillStatus], error) {
			if err := s.inst.StopBackfill(); err != nil {
				return nil, err
			}
			return s.backfillStatus()
		})
	register(s, readOnly, huma.Operation{OperationID: "get-backfill", Method: http.MethodGet, Path: "/api/v1/backfill", Tags: []string{"load"},
		Summary: "Backfill progress"},
		[]int{conflict}, func(context.Context, *empty) (*out[engine.BackfillStatus], error) {
			return s.backfillStatus()
		})
	register(s, readOnly, huma.Operation{OperationID: "get-stats", Method: http.MethodGet, Path: "/api/v1/stats", Tags: []string{"stats"},
		Summary: "Latest interval and cumulative statistics", Description: "Latencies in microseconds; rates per second."},
		nil, func(context.Context, *empty) (*out[StatsBody], error) {
			c := s.inst.Collector()
			return &out[StatsBody]{StatsBody{Latest: c.Latest(), Cumulative: c.Cumulative(), Errors: c.Errors()}}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-series", Method: http.MethodGet, Path: "/api/v1/stats/series", Tags: []string{"stats"},
		Summary: "Time series of intervals", Description: "With since (RFC 3339), only the points whose interval ended after it."},
		[]int{http.StatusUnprocessableEntity}, func(_ context.Context, in *struct {
			Since string `query:"since" doc:"RFC 3339 time, e.g. 2026-01-02T15:04:05Z"`
		}) (*out[SeriesBody], error) {
			var since time.Time
			if in.Since != "" {
				t, err := time.Parse(time.RFC3339Nano, in.Since)
				if err != nil {
					p := newProblem(http.StatusUnprocessableEntity, "since: want an RFC 3339 time such as 2026-01-02T15:04:05Z")
					p.Errors = []*huma.ErrorDetail{{Message: "invalid RFC 3339 time", Location: "query.since", Value: in.Since}}
					return nil, p
				}
				since = t
			}
			return &out[SeriesBody]{SeriesBody{Points: s.inst.Collector().SeriesSince(since)}}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-histograms", Method: http.MethodGet, Path: "/api/v1/stats/histograms", Tags: []string{"stats"},
		Summary: "Cumulative HDR histograms per op class, encoded for aggregation"},
		nil, func(context.Context, *empty) (*out[HistogramsBody], error) {
			c := s.inst.Collector()
			cum := c.Cumulative()
			b := HistogramsBody{Unit: "microseconds", Encoding: "HdrHistogram V2 compressed, base64", Start: cum.Start, End: cum.End, Ops: map[string]OpHistograms{}}
			for i, name := range c.Names() {
				resp, svc := c.CumulativeHistograms(stats.Op(i))
				re, err := stats.EncodeHistogram(resp)
				if err != nil {
					return nil, fmt.Errorf("encode %s histogram: %w", name, err)
				}
				se, err := stats.EncodeHistogram(svc)
				if err != nil {
					return nil, fmt.Errorf("encode %s histogram: %w", name, err)
				}
				b.Ops[name] = OpHistograms{Count: resp.TotalCount(), ResponseTime: re, ServiceTime: se}
			}
			return &out[HistogramsBody]{b}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-intervals", Method: http.MethodGet, Path: "/api/v1/stats/intervals", Tags: []string{"stats"},
		Summary: "The 1 s intervals with their histograms, encoded for merging",
		Description: "Every interval from since on that the node still holds (the last 5 minutes), oldest first, each with a " +
			"sequence number, its counters and its response, service and start-lag histograms (HdrHistogram V2 " +
			"compressed, base64, microseconds). Ask again from next: no interval is skipped or repeated; missed " +
			"counts the requested intervals no longer held. Merging every interval of one spanStart gives exactly " +
			"that span's cumulative histograms. A node encodes intervals only while someone reads them: the first " +
			"call starts it."},
		nil, func(_ context.Context, in *struct {
			Since uint64 `query:"since" doc:"sequence number of the first interval wanted (the previous answer's next)"`
		}) (*out[stats.IntervalsPage], error) {
			return &out[stats.IntervalsPage]{s.inst.Intervals(in.Since)}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "reset-stats", Method: http.MethodPost, Path: "/api/v1/stats/reset", Tags: []string{"stats"},
		Summary: "Start a new cumulative span", Description: "The series and Prometheus counters are kept (counters never go down)."},
		[]int{http.StatusUnprocessableEntity}, func(context.Context, *empty) (*struct{}, error) {
			s.inst.Collector().Reset()
			return &struct{}{}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-config", Method: http.MethodGet, Path: "/api/v1/config", Tags: []string{"config"},
		Summary: "Effective configuration with the source of every value", Description: "Secrets are redacted."},
		nil, func(context.Context, *empty) (*out[ConfigBody], error) {
			return &out[ConfigBody]{s.configBody(s.inst.Config(), s.inst.Status().Pending)}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "patch-config", Method: http.MethodPatch, Path: "/api/v1/config", Tags: []string{"config"},
		Summary: "Change configuration keys while running",
		Description: "All or nothing: the whole configuration is validated with the change; any bad key gives 422 naming every one, and nothing is applied; " +
			"a script, a file path or an http/grpc target outside the allow-list gives 403 naming the key and the `serve --allow` flag the operator would have to start the server with. " +
			"Live keys apply at once; others are listed in pending until the next driver init."},
		slices.Clone(bodyErrs), func(_ context.Context, in *struct{ Body PatchRequest }) (*out[PatchBody], error) {
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
		})
	register(s, readOnly, huma.Operation{OperationID: "read-key", Method: http.MethodGet, Path: "/api/v1/kv/{key}", Tags: []string{"debug"},
		Summary: "Read one key through the driver", Description: "For debugging. 404 when the store has no such key; 502/504 when the store fails."},
		[]int{http.StatusNotFound, conflict, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusGatewayTimeout},
		func(ctx context.Context, in *keyPath) (*out[KVBody], error) {
			v, err := s.inst.Read(ctx, in.Key)
			if err != nil {
				if errors.Is(err, driver.ErrNotFound) {
					return nil, newProblem(http.StatusNotFound, "key "+strconv.Quote(in.Key)+" not found")
				}
				return nil, storeProblem(err)
			}
			return &out[KVBody]{KVBody{Key: in.Key, Value: v, Size: len(v)}}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "write-key", Method: http.MethodPut, Path: "/api/v1/kv/{key}", Tags: []string{"debug"},
		Summary: "Write one key through the driver", Description: `For debugging. Body {"value": "<base64>"}. Note that validating reads flag values not written by ndbench.`},
		append(slices.Clone(bodyErrs), conflict, http.StatusBadGateway, http.StatusGatewayTimeout),
		func(ctx context.Context, in *struct {
			Key  string `path:"key" minLength:"1" maxLength:"1024" doc:"Key, e.g. T42"`
			Body KVPut
		}) (*struct{}, error) {
			if err := s.inst.Write(ctx, in.Key, in.Body.Value); err != nil {
				return nil, storeProblem(err)
			}
			return &struct{}{}, nil
		})
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

// startLoad is a node's Start as a user's request: with a node that warms up
// (node.Node.StartLoad), a start from idle honours workload.warmup.
func startLoad(n interface{ Start(...string) error }) func(...string) error {
	if w, ok := n.(interface{ StartLoad(...string) error }); ok {
		return w.StartLoad
	}
	return n.Start
}
