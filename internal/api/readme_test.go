package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/ndbenchapi"
)

// TestReadmeJQExamplesWork: every `curl .../api/v1/... | jq .a.b` line of the README names
// a path that exists in what the route returns, so a user who copies it gets numbers, not
// null (the README once read .ops.read from /api/v1/stats, whose ops are under latest and
// cumulative).
func TestReadmeJQExamplesWork(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`curl -s \S+?(/api/v1/\S+) \| jq (\.[\w.]+)`)
	found := re.FindAllStringSubmatch(string(text), -1)
	if len(found) == 0 {
		t.Fatal("no curl | jq example in README.md: update this test with the README")
	}
	e := newEnvToken(t, "", "workload.readRate=200", "workload.writeRate=50")
	e.initMemory(nil)
	e.must(200, "POST", "/api/v1/load/start", nil, nil)
	for _, m := range found {
		route, path := m[1], m[2]
		var doc any
		e.must(200, "GET", route, nil, &doc)
		v := doc
		for _, key := range strings.Split(strings.TrimPrefix(path, "."), ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("README: curl %s | jq %s: %q is not an object", route, path, key)
			}
			if v, ok = obj[key]; !ok {
				keys := make([]string, 0, len(obj))
				for k := range obj {
					keys = append(keys, k)
				}
				t.Fatalf("README: curl %s | jq %s: no %q here (keys: %v)", route, path, key, keys)
			}
		}
		if out, _ := json.Marshal(v); v == nil || string(out) == "null" {
			t.Errorf("README: curl %s | jq %s gives null", route, path)
		}
	}
}

// TestOpenAPIHasNDBenchRoutes: /openapi.json describes NDBench's routes too, each method
// with a summary, its path parameters, and 403 where the route changes state.
func TestOpenAPIHasNDBenchRoutes(t *testing.T) {
	e := newEnv(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Summary    string                      `json:"summary"`
			Tags       []string                    `json:"tags"`
			Parameters []struct{ Name, In string } `json:"parameters"`
			Responses  map[string]any              `json:"responses"`
		} `json:"paths"`
	}
	e.must(200, "GET", "/openapi.json", nil, &doc)
	routes := ndbenchapi.Routes()
	if len(routes) < 25 {
		t.Fatalf("%d NDBench routes", len(routes))
	}
	for _, rt := range routes {
		ops, ok := doc.Paths[rt.Path]
		if !ok {
			t.Errorf("%s is not in /openapi.json", rt.Path)
			continue
		}
		for _, m := range rt.Methods {
			op, ok := ops[strings.ToLower(m)]
			if !ok {
				t.Errorf("%s %s is not in /openapi.json", m, rt.Path)
				continue
			}
			if op.Summary == "" || !slices.Contains(op.Tags, "ndbench") {
				t.Errorf("%s %s: summary %q, tags %v", m, rt.Path, op.Summary, op.Tags)
			}
			if _, ok := op.Responses["403"]; ok != rt.ChangesState {
				t.Errorf("%s %s: 403 documented = %v, changes state = %v", m, rt.Path, ok, rt.ChangesState)
			}
			if strings.Contains(rt.Path, "{") && (len(op.Parameters) == 0 || op.Parameters[0].In != "path") {
				t.Errorf("%s %s: path parameter not documented: %+v", m, rt.Path, op.Parameters)
			}
		}
	}
}
