package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// bodyRoute is an operation that takes a JSON body, with its body's properties.
type bodyRoute struct {
	method, path string
	props        []string
}

// bodyRoutes walks the OpenAPI document for every operation with a JSON request body.
func bodyRoutes(e *env) []bodyRoute {
	oapi := e.srv.OpenAPI()
	var out []bodyRoute
	for path, item := range oapi.Paths {
		for _, op := range []*huma.Operation{item.Put, item.Post, item.Patch, item.Delete} {
			if op == nil || op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil {
				continue
			}
			s := op.RequestBody.Content["application/json"].Schema
			if s.Ref != "" {
				s = oapi.Components.Schemas.SchemaFromRef(s.Ref)
			}
			r := bodyRoute{method: op.Method, path: strings.ReplaceAll(path, "{key}", "k1")}
			for name := range s.Properties {
				r.props = append(r.props, name)
			}
			slices.Sort(r.props)
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b bodyRoute) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return out
}

// namesBodyField reports whether a problem names the fields a client can find in its
// request: each field error is on a property of r's body (or a key inside it, for a map
// such as PATCH's values or autotune's sla), or on the body, and the problem names prop
// or some property.
func namesBodyField(data []byte, r bodyRoute, prop string) bool {
	var p Problem
	if json.Unmarshal(data, &p) != nil {
		return false
	}
	known := func(f string) bool {
		f = strings.TrimPrefix(f, "body.")
		head, _, _ := strings.Cut(f, ".")
		head, _, _ = strings.Cut(head, "[")
		return f == "body" || slices.Contains(r.props, head) ||
			(prop == "values" || prop == "options") // the keys of a map of settings
	}
	for _, f := range p.Fields {
		if !known(f.Field) {
			return false
		}
	}
	for _, d := range p.Errors {
		if !known(d.Location) {
			return false
		}
	}
	return len(p.Fields)+len(p.Errors) > 0 || strings.Contains(p.Detail, prop)
}

// hostileJSON are values of the wrong shape for any field: objects and arrays where
// scalars belong (and inside arrays, where a uniqueness check once hashed a map and
// panicked), numbers past float64, deep nesting, and a long string.
var hostileJSON = []string{
	`null`, `true`, `-1`, `0`, `2147483647`, `1000000000000`, `9007199254740993`, `1e308`, `-1e308`, `1e999`, `18446744073709551616`, `0.5`, `""`, `"x"`,
	`"NaN"`, `"+Inf"`, `{}`, `{"a":1}`, `{"a":{"b":[1,{"c":2}]}}`, `[]`, `[1]`, `[{"a":1}]`, `[{"a":1},{"a":1}]`,
	`[[1],[1]]`, `["read",{"a":1}]`, `["read","read"]`, `[null]`, `[true,false]`,
	strings.Repeat(`[`, 2000) + strings.Repeat(`]`, 2000),
	`"` + strings.Repeat("x", 1<<16) + `"`,
}

// hostileBodies are whole bodies that are not the object the route takes.
var hostileBodies = []string{
	``, `null`, `[]`, `1`, `"s"`, `{`, `{"a":`, `{"a":1,"a":2}`, `[{}]`, "\xff\xfe",
	strings.Repeat(`{"a":`, 2000) + `1` + strings.Repeat(`}`, 2000),
}

// TestHostileBodiesOnEveryRoute sends every route that takes a JSON body (from the
// OpenAPI document, so a new route is walked without a change here) each hostile body,
// and each of its properties each hostile value. Nothing answers 5xx (a panic is a 500);
// a 400 or 422 for a bad property names it; whatever was accepted is undone, and the node
// answers status after every request.
func TestHostileBodiesOnEveryRoute(t *testing.T) {
	e := newEnv(t)
	e.initMemory(nil)
	routes := bodyRoutes(e)
	if len(routes) < 10 {
		t.Fatalf("found %d routes with a JSON body, want all of them", len(routes))
	}
	// undo puts the node back after an accepted request: no load, backfill, capacity
	// search or fleet run left behind, and the memory driver connected.
	undo := func() {
		if st, body := e.call(http.MethodPost, "/api/v1/cluster/release", `{"coordinator":"c","run":"r"}`); st >= 500 {
			t.Errorf("release after a hostile request: %d %s", st, body)
		}
		for _, p := range []string{"/api/v1/load/stop", "/api/v1/backfill/stop", "/api/v1/autotune/stop"} {
			if st, body := e.call(http.MethodPost, p, nil); st >= 500 {
				t.Errorf("POST %s after a hostile request: %d %s", p, st, body)
			}
		}
		var s struct {
			Driver string `json:"driver"`
		}
		e.must(http.StatusOK, http.MethodGet, "/api/v1/status", nil, &s)
		if s.Driver == "" {
			e.initMemory(nil)
		}
	}
	check := func(r bodyRoute, prop, body string) {
		t.Helper()
		began := time.Now()
		st, data := e.call(r.method, r.path, body)
		what := r.method + " " + r.path + " " + body
		if len(what) > 120 {
			what = what[:120] + "..."
		}
		switch {
		case st >= 500 && st != http.StatusBadGateway:
			t.Errorf("%s: %d %s", what, st, data)
		case prop != "" && (st == http.StatusBadRequest || st == http.StatusUnprocessableEntity) && !namesBodyField(data, r, prop):
			t.Errorf("%s: %d does not name %s, another field of the body, or the body: %s", what, st, prop, data)
		case st < 300:
			undo()
		}
		if took := time.Since(began); took > 5*time.Second {
			t.Errorf("%s took %v", what, took)
		}
		e.must(http.StatusOK, http.MethodGet, "/api/v1/status", nil, nil)
	}
	// Bodies a route accepts, so that a hostile value of one property is tried beside
	// good values of the others (a body with one property mostly fails on the missing
	// required ones first). The fleet's run is this test's coordinator "c", run "r".
	at := time.Now().Add(50 * time.Millisecond).Format(time.RFC3339Nano)
	valid := map[string]map[string]any{
		"POST /api/v1/cluster/start": {"coordinator": "c", "run": "r", "leaseMs": 2000, "at": at, "ops": []string{"read"}},
		"POST /api/v1/cluster/beat":  {"coordinator": "c", "run": "r", "leaseMs": 2000, "sent": at},
		"POST /api/v1/cluster/shape": {"coordinator": "c", "run": "r", "class": "read", "shape": map[string]any{"kind": "constant", "rate": 5}},
		"POST /api/v1/driver/init":   {"driver": "memory"},
		"PUT /api/v1/kv/k1":          {"value": "v"},
	}
	for _, r := range routes {
		for _, b := range hostileBodies {
			check(r, "", b)
		}
		for _, prop := range r.props {
			for _, v := range hostileJSON {
				check(r, prop, `{"`+prop+`":`+v+`}`)
				if base, ok := valid[r.method+" "+r.path]; ok {
					body := map[string]json.RawMessage{}
					for k, bv := range base {
						j, _ := json.Marshal(bv)
						body[k] = j
					}
					body[prop] = json.RawMessage(v)
					j, _ := json.Marshal(body)
					check(r, prop, string(j))
				}
			}
		}
	}
}
