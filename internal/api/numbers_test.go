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

// integerField is an integer property of a request body.
type integerField struct{ method, path, field string }

// requestIntegerFields walks the OpenAPI document for the integer properties of JSON
// request bodies.
func requestIntegerFields(e *env) []integerField {
	oapi := e.srv.OpenAPI()
	var out []integerField
	for path, item := range oapi.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Patch, item.Delete} {
			if op == nil || op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil {
				continue
			}
			s := op.RequestBody.Content["application/json"].Schema
			if s.Ref != "" {
				s = oapi.Components.Schemas.SchemaFromRef(s.Ref)
			}
			for name, p := range s.Properties {
				if p.Type == "integer" {
					out = append(out, integerField{op.Method, path, name})
				}
			}
		}
	}
	return out
}

// TestIntegralNumbersWhereIntegersAreDeclared: JSON has one number type, and the document
// says "integer": 2.0, 2e0 and 20E-1 are integers; 2.5 is not, and is refused naming the
// field.
func TestIntegralNumbersWhereIntegersAreDeclared(t *testing.T) {
	e := newEnv(t, "workload.numKeys=200")
	e.initMemory(nil)
	// Every integer field of every request body has a case here.
	type intCase struct {
		field integerField
		body  func(v string) string // the request body with the field set to v
		ok    int                   // the status of a request the server accepts
		after func()                // puts the node back for the next request
		// positive marks a field whose minimum is 1: zero is refused as a value, not as a
		// number.
		positive bool
	}
	backfillDone := func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var b struct {
				Running bool `json:"running"`
			}
			e.must(200, "GET", "/api/v1/backfill", nil, &b)
			if !b.Running {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("backfill did not end")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	at := time.Now().Format(time.RFC3339Nano)
	tests := []intCase{
		{field: integerField{"POST", "/api/v1/backfill/start", "workers"}, body: func(v string) string { return `{"workers":` + v + `}` }, ok: http.StatusAccepted,
			after: backfillDone},
		{field: integerField{"POST", "/api/v1/backfill/start", "keyStart"}, body: func(v string) string { return `{"keyStart":` + v + `,"keyEnd":100}` }, ok: http.StatusAccepted,
			after: backfillDone},
		{field: integerField{"POST", "/api/v1/backfill/start", "keyEnd"}, body: func(v string) string { return `{"keyEnd":` + v + `}` }, ok: http.StatusAccepted,
			after: backfillDone},
		{field: integerField{"POST", "/api/v1/cluster/beat", "leaseMs"}, body: func(v string) string { return `{"coordinator":"c","leaseMs":` + v + `,"sent":"` + at + `"}` }, ok: http.StatusOK,
			after: func() {}},
		{field: integerField{"POST", "/api/v1/cluster/measure", "warmupMs"}, body: func(v string) string { return `{"coordinator":"c","warmupMs":` + v + `}` },
			ok: http.StatusNoContent, after: func() {}},
		{field: integerField{"POST", "/api/v1/cluster/start", "leaseMs"}, body: func(v string) string {
			return `{"coordinator":"c","run":"r","leaseMs":` + v + `,"at":"` + at + `","ops":["read"]}`
		}, ok: http.StatusOK, positive: true,
			after: func() {
				e.must(http.StatusNoContent, "POST", "/api/v1/cluster/release", `{"coordinator":"c","run":"r"}`, nil)
				e.must(http.StatusOK, "POST", "/api/v1/load/stop", nil, nil)
			}},
	}
	found := requestIntegerFields(e)
	for _, f := range found {
		if !slices.ContainsFunc(tests, func(tt intCase) bool { return tt.field == f }) {
			t.Errorf("integer field %s %s %s has no case in this test", f.method, f.path, f.field)
		}
	}
	if len(found) == 0 {
		t.Fatal("no integer fields found in request bodies")
	}
	for _, tt := range tests {
		values := []string{"2", "2.0", "2.000", "2e0", "20E-1", "0.2e1", "0.0", "-0.0"}
		if tt.positive {
			values = values[:6]
		}
		for _, v := range values {
			st, data := e.call(tt.field.method, tt.field.path, tt.body(v))
			if st != tt.ok {
				t.Errorf("%s %s with %s=%s: %d %s, want %d", tt.field.method, tt.field.path, tt.field.field, v, st, data, tt.ok)
			}
			tt.after()
		}
		for _, v := range []string{"2.5", "1e-1", "-0.5"} {
			st, data := e.call(tt.field.method, tt.field.path, tt.body(v))
			var p Problem
			_ = json.Unmarshal(data, &p)
			named := slices.ContainsFunc(p.Errors, func(d *huma.ErrorDetail) bool {
				return d.Location == "body."+tt.field.field && strings.Contains(d.Message, "integer")
			})
			if st != http.StatusUnprocessableEntity || !named {
				t.Errorf("%s %s with %s=%s: %d %s, want 422 naming body.%s as an integer", tt.field.method, tt.field.path, tt.field.field, v, st, data, tt.field.field)
			}
		}
	}
}

// TestPatchAcceptsJSONNumbersAndBooleans (issue 11 #11): a PATCH may give values as JSON
// numbers and booleans, not only strings; numbers keep their exact text (a 64-bit seed does
// not round through float64), and anything else names the key.
func TestPatchAcceptsJSONNumbersAndBooleans(t *testing.T) {
	e := newEnv(t)
	e.must(200, "PATCH", "/api/v1/config",
		`{"values": {"workload.readRate": 2500, "workload.readEnabled": false, "workload.seed": 18446744073709551615, "workload.keyPrefix": "K"}}`, nil)
	var c ConfigBody
	e.must(200, "GET", "/api/v1/config", nil, &c)
	want := map[string]string{"workload.readRate": "2500", "workload.readEnabled": "false", "workload.seed": "18446744073709551615", "workload.keyPrefix": "K"}
	for _, en := range c.Entries {
		if w, ok := want[en.Key]; ok {
			if en.Value != w {
				t.Errorf("%s = %q, want %q", en.Key, en.Value, w)
			}
			delete(want, en.Key)
		}
	}
	if len(want) != 0 {
		t.Errorf("keys not in the config: %v", want)
	}
	for _, body := range []string{
		`{"values": {"workload.readRate": {"v": 1}}}`,
		`{"values": {"workload.readRate": [1]}}`,
		`{"values": {"workload.readRate": null}}`,
	} {
		st, data := e.call("PATCH", "/api/v1/config", body)
		if st != http.StatusUnprocessableEntity || !strings.Contains(string(data), "readRate") {
			t.Errorf("PATCH %s: %d %s, want 422 naming the key", body, st, data)
		}
	}
}

// TestWrongMethodIs405WithAllow (issue 11 #11): a route called with a method it does not
// have answers 405 with the Allow header, not 404 as if it did not exist.
func TestWrongMethodIs405WithAllow(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/config", "GET, HEAD, PATCH"},
		{"POST", "/api/v1/status", "GET, HEAD"},
		{"DELETE", "/api/v1/kv/T1", "GET, HEAD, PUT"},
	} {
		req, err := http.NewRequest(tc.method, e.ts.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want 405 and %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.allow)
		}
	}
	if st, _ := e.call("GET", "/api/v1/nothing", nil); st != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", st)
	}
}
