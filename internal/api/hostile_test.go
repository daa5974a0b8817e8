package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestHostileBodiesGetProblems: a body whose JSON has the wrong shape where an array of
// strings or a number belongs (an object or an array inside ops, whose uniqueness check
// once hashed a map and panicked into a 500) gets a 4xx problem naming the field, on
// every route that takes such a field, and the node keeps answering.
func TestHostileBodiesGetProblems(t *testing.T) {
	e := newEnv(t)
	e.initMemory(nil)
	for _, tc := range []struct{ path, body, field string }{
		{"/api/v1/load/start", `{"ops": [{"a": 1}]}`, "ops"},
		{"/api/v1/load/start", `{"ops": [{"a": 1}, {"a": 1}]}`, "ops"},
		{"/api/v1/load/start", `{"ops": [["read"], ["read"]]}`, "ops"},
		{"/api/v1/load/start", `{"ops": ["read", {"a": 1}]}`, "ops"},
		{"/api/v1/load/stop", `{"ops": [{"a": [1, {"b": 2}]}]}`, "ops"},
		{"/api/v1/load/start", `{"ops": {"read": true}}`, "ops"},
		{"/api/v1/backfill/start", `{"workers": {"n": 1}}`, "workers"},
		{"/api/v1/backfill/start", `{"rate": 1e308}`, "rate"},
		{"/api/v1/backfill/start", `{"rate": 1e999}`, ""}, // beyond float64: huma's decoder says so, without the field
		{"/api/v1/load/start", `{"ops": ["read", "read"]}`, "ops"},
	} {
		st, body := e.call(http.MethodPost, tc.path, tc.body)
		if st < 400 || st >= 500 {
			t.Errorf("POST %s %s: status %d, want a 4xx problem; body %s", tc.path, tc.body, st, body)
			continue
		}
		var p struct {
			Errors []struct {
				Location string `json:"location"`
			} `json:"errors"`
			Detail string `json:"detail"`
		}
		_ = json.Unmarshal(body, &p)
		named := tc.field == "" || strings.Contains(p.Detail, tc.field)
		for _, fe := range p.Errors {
			named = named || strings.Contains(fe.Location, tc.field)
		}
		if !named {
			t.Errorf("POST %s %s: problem does not name %s: %s", tc.path, tc.body, tc.field, body)
		}
	}
	e.must(http.StatusOK, http.MethodGet, "/api/v1/status", nil, nil)
}
