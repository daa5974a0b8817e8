package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/internal/cluster"
)

// FleetPrefix is where a coordinating node serves the fleet view: the same routes as a
// node's (stats, SSE, Prometheus, reports, load control), for the whole fleet.
const FleetPrefix = "/fleet"

// clusterRoutes adds the node side of a fleet (beats, synchronized start, release). They
// refuse every caller on a node without a token: a node never takes control from a peer
// it cannot authenticate.
func (s *Server) clusterRoutes() {
	a := s.opts.Agent
	if a == nil {
		return
	}
	errs := []int{http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity}
	needToken := func() error {
		if s.opts.Token == "" {
			return newProblem(http.StatusForbidden, "this node has no token (--token or NDBENCH_TOKEN): it accepts no fleet control")
		}
		return nil
	}
	register(s, changesState, huma.Operation{OperationID: "cluster-beat", Method: http.MethodPost, Path: "/api/v1/cluster/beat", Tags: []string{"cluster"},
		Summary: "A fleet coordinator's heartbeat", Description: "Renews the lease of the run it names; the answer carries the node's state and the timestamps of a clock offset sample. 409 when another coordinator's run holds the node."},
		errs, func(_ context.Context, in *struct{ Body cluster.BeatRequest }) (*out[cluster.BeatResponse], error) {
			if err := needToken(); err != nil {
				return nil, err
			}
			resp, err := a.Beat(in.Body)
			if err != nil {
				return nil, err
			}
			return &out[cluster.BeatResponse]{resp}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "cluster-start", Method: http.MethodPost, Path: "/api/v1/cluster/start", Tags: []string{"cluster"},
		Summary: "Start op classes at an instant, for a fleet run", Description: "Takes the run's lease: without a beat for leaseMs the node stops its load by itself."},
		errs, func(_ context.Context, in *struct{ Body cluster.StartRequest }) (*out[startAnswer], error) {
			if err := needToken(); err != nil {
				return nil, err
			}
			if err := a.Start(in.Body); err != nil {
				return nil, err
			}
			return &out[startAnswer]{startAnswer{At: in.Body.At}}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "cluster-shape", Method: http.MethodPost, Path: "/api/v1/cluster/shape", Tags: []string{"cluster"},
		Summary: "Set or clear an op class's load shape at an instant, for a fleet", Description: "The shape's rates are this node's share of the fleet's; the call returns when it applied. dryRun checks it only. 409 when another coordinator's run holds the node."},
		errs, func(ctx context.Context, in *struct{ Body cluster.ShapeRequest }) (*struct{}, error) {
			if err := needToken(); err != nil {
				return nil, err
			}
			return nil, a.SetShape(ctx, in.Body)
		})
	register(s, changesState, huma.Operation{OperationID: "cluster-measure", Method: http.MethodPost, Path: "/api/v1/cluster/measure", Tags: []string{"cluster"},
		Summary: "Start the span this node's figures cover, after a fleet run's warm-up", Description: "As the coordinator's fleet figures start theirs: the node's report leaves out the run's warm-up. 409 when another coordinator's run holds the node."},
		errs, func(_ context.Context, in *struct{ Body cluster.MeasureRequest }) (*struct{}, error) {
			if err := needToken(); err != nil {
				return nil, err
			}
			return nil, a.StartMeasuring(in.Body)
		})
	register(s, changesState, huma.Operation{OperationID: "cluster-release", Method: http.MethodPost, Path: "/api/v1/cluster/release", Tags: []string{"cluster"},
		Summary: "End this node's part in a fleet run", Description: "The node keeps no lease afterwards."},
		errs, func(_ context.Context, in *struct{ Body cluster.ReleaseRequest }) (*struct{}, error) {
			if err := needToken(); err != nil {
				return nil, err
			}
			return nil, a.Release(in.Body)
		})
}

type startAnswer struct {
	At time.Time `json:"at" doc:"When the op classes start (this node's clock)"`
}

// FleetMembersBody lists the fleet's nodes.
type FleetMembersBody struct {
	Members []cluster.MemberStatus `json:"members"`
	// Run is the current fleet run's id ("" when the fleet runs no load).
	Run    string `json:"run"`
	Driver string `json:"driver"`
	// StartAt is the common start instant of the last fleet start (coordinator clock).
	StartAt time.Time `json:"startAt,omitzero"`
}

// FleetConfigRequest changes fleet configuration values at one scope.
type FleetConfigRequest struct {
	Scope  string                 `json:"scope,omitempty" doc:"fleet (default), group:<label>=<value> or node:<id>; a rate at fleet or group scope is that scope's total, divided among its nodes by weight; at node scope it is the node's own"`
	Values map[string]ConfigValue `json:"values" minProperties:"1" maxProperties:"1000" doc:"Key to value, as PATCH /api/v1/config takes them"`
}

// FleetConfigBody is the fleet's configuration by scope.
type FleetConfigBody struct {
	Scopes map[string]map[string]string `json:"scopes" doc:"Values set per scope (secrets redacted)"`
}

// fleetRoutes adds the fleet's own routes to the server of the fleet view.
func (s *Server) fleetRoutes() {
	c := s.opts.Coordinator
	if c == nil {
		return
	}
	register(s, readOnly, huma.Operation{OperationID: "fleet-members", Method: http.MethodGet, Path: "/api/v1/fleet/members", Tags: []string{"fleet"},
		Summary: "The fleet's nodes", Description: "Each node's health, state, clock offset, assigned and achieved rates, p99 and flags (saturated: below 95% of its assigned rate, so its numbers are the generator's)."},
		nil, func(context.Context, *empty) (*out[FleetMembersBody], error) {
			return &out[FleetMembersBody]{FleetMembersBody{Members: c.Members(), Run: c.RunID(), Driver: c.Driver(), StartAt: c.StartedAt()}}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "fleet-get-config", Method: http.MethodGet, Path: "/api/v1/fleet/config", Tags: []string{"fleet"},
		Summary: "The fleet's configuration values by scope"},
		nil, func(context.Context, *empty) (*out[FleetConfigBody], error) {
			return &out[FleetConfigBody]{FleetConfigBody{Scopes: c.Scopes()}}, nil
		})
	register(s, changesState, huma.Operation{OperationID: "fleet-patch-config", Method: http.MethodPatch, Path: "/api/v1/fleet/config", Tags: []string{"fleet"},
		Summary: "Change configuration for the fleet, a group or a node", Description: "Validated for every node concerned before any is told; nodes that refuse are named."},
		append(slices.Clone(bodyErrs), http.StatusConflict, http.StatusBadGateway), func(ctx context.Context, in *struct{ Body FleetConfigRequest }) (*out[FleetConfigBody], error) {
			sc, err := cluster.ParseScope(in.Body.Scope)
			if err != nil {
				return nil, err
			}
			vals := make(map[string]string, len(in.Body.Values))
			for k, v := range in.Body.Values {
				vals[k] = string(v)
			}
			if _, err := c.SetConfig(ctx, sc, vals); err != nil {
				return nil, err
			}
			return &out[FleetConfigBody]{FleetConfigBody{Scopes: c.Scopes()}}, nil
		})
	for _, act := range []struct {
		name, summary string
		f             func(ctx context.Context, id string, classes ...string) error
	}{
		{"start", "Start op classes on one node of the fleet, with its share of the fleet's rates", c.StartNode},
		{"stop", "Stop op classes on one node of the fleet", c.StopNode},
	} {
		register(s, changesState, huma.Operation{OperationID: "fleet-node-" + act.name, Method: http.MethodPost, Path: "/api/v1/fleet/nodes/{id}/load/" + act.name, Tags: []string{"fleet"},
			Summary: act.summary},
			append(slices.Clone(bodyErrs), http.StatusNotFound, http.StatusConflict, http.StatusBadGateway), func(ctx context.Context, in *struct {
				ID   string `path:"id" doc:"The node's id (GET /api/v1/fleet/members)"`
				Body *LoadRequest
			}) (*out[FleetMembersBody], error) {
				var req LoadRequest
				if in.Body != nil {
					req = *in.Body
				}
				if err := act.f(ctx, in.ID, req.Ops...); err != nil {
					return nil, err
				}
				return &out[FleetMembersBody]{FleetMembersBody{Members: c.Members(), Run: c.RunID(), Driver: c.Driver(), StartAt: c.StartedAt()}}, nil
			})
	}
}

// fleetProblem maps a fleet command's failure: the nodes' own refusals keep their status
// (all 4xx alike: that status; otherwise 502, the fleet being the gateway to its nodes).
func fleetProblem(err error) error {
	switch {
	case errors.Is(err, cluster.ErrNoMembers), errors.Is(err, cluster.ErrClaimed), errors.Is(err, cluster.ErrStartRefused):
		return newProblem(http.StatusConflict, err.Error())
	case errors.Is(err, cluster.ErrUnknownNode):
		return newProblem(http.StatusNotFound, err.Error())
	}
	var fe *cluster.FleetError
	if !errors.As(err, &fe) {
		return nil
	}
	status := 0
	for _, n := range fe.Nodes {
		var pe *cluster.PeerError
		if !errors.As(n.Err, &pe) || pe.Status < 400 || pe.Status >= 500 || (status != 0 && status != pe.Status) {
			status = http.StatusBadGateway
			break
		}
		status = pe.Status
	}
	return newProblem(status, strings.TrimSpace(fe.Error()))
}
