package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
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
	if op.Responses == nil {
		// A route whose handler writes its own body (GET /api/v1/stats/series) declares
		// its 200 response: huma cannot derive it from a func body.
		op.Responses = map[string]*huma.Response{}
	}
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

type out[T any] struct{ Body T }

// routes is the node's route table: each operation with its effect, documentation and
// declared errors, and the handler that serves it (in the file of its area: service.go,
// load.go, stats.go, config.go, kv.go, report.go).
func (s *Server) routes() {
	conflict := http.StatusConflict
	register(s, readOnly, huma.Operation{OperationID: "health", Method: http.MethodGet, Path: "/health", Tags: []string{"service"},
		Summary: "Health check (no auth)", Description: "Answers while the process serves requests; needs no token."},
		[]int{http.StatusUnprocessableEntity}, s.health)
	register(s, readOnly, huma.Operation{OperationID: "get-status", Method: http.MethodGet, Path: "/api/v1/status", Tags: []string{"service"},
		Summary: "What the node is doing", Description: "Driver, running op classes, backfill, config version, pending changes, last error."},
		nil, s.getStatus)
	register(s, readOnly, huma.Operation{OperationID: "get-report", Method: http.MethodGet, Path: "/api/v1/report", Tags: []string{"stats"},
		Summary: "The run report (JSON)", Description: "The same document `ndbench run --report` and `ndbench serve --report` write: results per op class, config with sources, time series, client CPU, warnings. Covers the current or last driver session (before the first, the node's life)."},
		nil, s.getReport)
	register(s, readOnly, huma.Operation{OperationID: "get-report-html", Method: http.MethodGet, Path: "/api/v1/report.html", Tags: []string{"stats"},
		Summary: "The run report as a self-contained HTML page", Description: "The JSON report rendered with the same charts as the UI; opens offline."},
		nil, s.reportHTML)
	register(s, readOnly, huma.Operation{OperationID: "list-drivers", Method: http.MethodGet, Path: "/api/v1/drivers", Tags: []string{"driver"},
		Summary: "Registered drivers and their option schemas"},
		nil, s.listDrivers)
	register(s, changesState, huma.Operation{OperationID: "init-driver", Method: http.MethodPost, Path: "/api/v1/driver/init", Tags: []string{"driver"},
		Summary: "Connect a driver", Description: "Validates the options, connects and builds the engine; load does not start. " +
			"422 names every bad option (or lists the registered drivers); 403 names an option the operator did not allow from the API (a script, a file path, an http/grpc target outside the allow-list) and the `serve --allow` flag that would; 409 when a driver is already connected; 502 when the store cannot be reached."},
		append(slices.Clone(bodyErrs), conflict, http.StatusBadGateway), s.initDriver)
	register(s, changesState, huma.Operation{OperationID: "shutdown-driver", Method: http.MethodPost, Path: "/api/v1/driver/shutdown", Tags: []string{"driver"},
		Summary: "Stop all load and disconnect the driver"},
		[]int{conflict}, s.shutdownDriver)
	for _, act := range []struct {
		name string
		f    func(...string) error
	}{{"start", s.inst.StartLoad}, {"stop", s.inst.Stop}} {
		register(s, changesState, huma.Operation{OperationID: act.name + "-load", Method: http.MethodPost, Path: "/api/v1/load/" + act.name, Tags: []string{"load"},
			Summary: strUpper(act.name) + " op classes", Description: `Body {"ops": ["read"]}; no body or empty ops = every class of the workload (read, write and those of workload.ops). 422 names the classes for an unknown one; 409 before a driver is initialized or while a capacity search (POST /api/v1/autotune) runs.`},
			append(slices.Clone(bodyErrs), conflict), s.loadAction(act.f))
	}
	register(s, changesState, huma.Operation{OperationID: "start-backfill", Method: http.MethodPost, Path: "/api/v1/backfill/start", Tags: []string{"load"},
		Summary: "Write every key once, in the background", DefaultStatus: http.StatusAccepted,
		Description: "Progress at GET /api/v1/backfill. 409 before init or while a backfill runs."},
		append(slices.Clone(bodyErrs), conflict), s.startBackfill)
	register(s, changesState, huma.Operation{OperationID: "stop-backfill", Method: http.MethodPost, Path: "/api/v1/backfill/stop", Tags: []string{"load"},
		Summary: "Stop a running backfill"},
		[]int{conflict}, s.stopBackfill)
	register(s, readOnly, huma.Operation{OperationID: "get-backfill", Method: http.MethodGet, Path: "/api/v1/backfill", Tags: []string{"load"},
		Summary: "Backfill progress"},
		[]int{conflict}, s.getBackfill)
	register(s, readOnly, huma.Operation{OperationID: "get-stats", Method: http.MethodGet, Path: "/api/v1/stats", Tags: []string{"stats"},
		Summary: "Latest interval and cumulative statistics", Description: "Latencies in microseconds; rates per second."},
		nil, s.getStats)
	register(s, readOnly, huma.Operation{OperationID: "get-series", Method: http.MethodGet, Path: "/api/v1/stats/series", Tags: []string{"stats"},
		Summary: "Time series of intervals",
		Description: "With since (RFC 3339), only the points whose interval ended after it. With limit, at most that many " +
			"points, oldest first; more is true when points after the last one were left out: ask again with since set " +
			"to the last point's t to page through the series. A poller passes the t of the last point it has as since, " +
			"and gets only the new points.",
		Responses: s.seriesResponses()},
		[]int{http.StatusUnprocessableEntity}, s.getSeries)
	register(s, readOnly, huma.Operation{OperationID: "get-histograms", Method: http.MethodGet, Path: "/api/v1/stats/histograms", Tags: []string{"stats"},
		Summary: "Cumulative HDR histograms per op class, encoded for aggregation"},
		nil, s.getHistograms)
	register(s, readOnly, huma.Operation{OperationID: "get-intervals", Method: http.MethodGet, Path: "/api/v1/stats/intervals", Tags: []string{"stats"},
		Summary: "The 1 s intervals with their histograms, encoded for merging",
		Description: "Every interval from since on that the node still holds (the last 5 minutes), oldest first, each with a " +
			"sequence number, its counters and its response, service and start-lag histograms (HdrHistogram V2 " +
			"compressed, base64, microseconds), and due, when its tick was due on the node's 1 s schedule (the end of " +
			"the second it belongs to; absent without a schedule). Ask again from next: no interval is skipped or repeated; missed " +
			"counts the requested intervals no longer held. Merging every interval of one spanStart gives exactly " +
			"that span's cumulative histograms. A node encodes intervals only while someone reads them: the first " +
			"call starts it."},
		nil, s.getIntervals)
	register(s, changesState, huma.Operation{OperationID: "reset-stats", Method: http.MethodPost, Path: "/api/v1/stats/reset", Tags: []string{"stats"},
		Summary: "Start a new cumulative span", Description: "The series and Prometheus counters are kept (counters never go down)."},
		[]int{http.StatusUnprocessableEntity}, s.resetStats)
	register(s, readOnly, huma.Operation{OperationID: "get-config", Method: http.MethodGet, Path: "/api/v1/config", Tags: []string{"config"},
		Summary: "Effective configuration with the source of every value", Description: "Secrets are redacted."},
		nil, s.getConfig)
	register(s, changesState, huma.Operation{OperationID: "patch-config", Method: http.MethodPatch, Path: "/api/v1/config", Tags: []string{"config"},
		Summary: "Change configuration keys while running",
		Description: "All or nothing: the whole configuration is validated with the change; any bad key gives 422 naming every one, and nothing is applied; " +
			"a script, a file path or an http/grpc target outside the allow-list gives 403 naming the key and the `serve --allow` flag the operator would have to start the server with. " +
			"Live keys apply at once; others are listed in pending until the next driver init."},
		slices.Clone(bodyErrs), s.patchConfig)
	register(s, readOnly, huma.Operation{OperationID: "read-key", Method: http.MethodGet, Path: "/api/v1/kv/{key}", Tags: []string{"debug"},
		Summary: "Read one key through the driver", Description: "For debugging. 404 when the store has no such key; 502/504 when the store fails."},
		[]int{http.StatusNotFound, conflict, http.StatusUnprocessableEntity, http.StatusBadGateway, http.StatusGatewayTimeout},
		s.readKey)
	register(s, changesState, huma.Operation{OperationID: "write-key", Method: http.MethodPut, Path: "/api/v1/kv/{key}", Tags: []string{"debug"},
		Summary: "Write one key through the driver", Description: `For debugging. Body {"value": "<base64>"}. Note that validating reads flag values not written by ndbench.`},
		append(slices.Clone(bodyErrs), conflict, http.StatusBadGateway, http.StatusGatewayTimeout),
		s.writeKey)
}
