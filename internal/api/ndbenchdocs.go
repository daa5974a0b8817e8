package api

import (
	"net/http"
	"reflect"
	"regexp"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/internal/ndbenchapi"
)

// ndbenchResult is NDBench's response body for actions, as its scripts parse it.
type ndbenchResult struct {
	IsSuccess bool    `json:"isSuccess" doc:"Whether the action worked"`
	Message   *string `json:"message" doc:"What happened, or why not"`
}

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// documentNDBench adds NDBench's routes (served by package ndbenchapi, outside huma) to
// the OpenAPI document, so /openapi.json and /docs describe everything the server
// answers. Their bodies are NDBench's: a Result for actions, NDBench's own JSON for
// reports (left untyped: it is NDBench's format, not ours).
func (s *Server) documentNDBench() {
	oapi := s.api.OpenAPI()
	result := oapi.Components.Schemas.Schema(reflect.TypeFor[ndbenchResult](), true, "NDBenchResult")
	for _, rt := range ndbenchapi.Routes() {
		var params []*huma.Param
		for _, m := range pathParam.FindAllStringSubmatch(rt.Path, -1) {
			params = append(params, &huma.Param{Name: m[1], In: "path", Required: true, Schema: &huma.Schema{Type: "string"}})
		}
		for _, method := range rt.Methods {
			op := &huma.Operation{
				OperationID: "ndbench-" + strings.ToLower(method) + "-" + strings.NewReplacer(ndbenchapi.Prefix, "", "/", "-", "{", "", "}", "").Replace(rt.Path),
				Method:      method,
				Path:        rt.Path,
				Summary:     rt.Summary,
				Description: "NDBench-compatible route (NdBenchResource/NDBenchConfigResource), kept so NDBench's scripts work unchanged.",
				Tags:        []string{"ndbench"},
				Parameters:  params,
				Security:    []map[string][]string{{"bearer": {}}, {"session": {}}},
				Responses: map[string]*huma.Response{
					"200": {Description: "NDBench's report, in NDBench's JSON", Content: map[string]*huma.MediaType{"application/json": {}}},
					"401": {Description: http.StatusText(http.StatusUnauthorized)},
				},
			}
			if rt.ChangesState {
				op.Responses["200"] = &huma.Response{Description: "NDBench's result: whether the action worked, and a message",
					Content: map[string]*huma.MediaType{"application/json": {Schema: result}}}
				op.Responses["403"] = &huma.Response{Description: "A request from a page on another site: this route changes state, whatever the method"}
			}
			oapi.AddOperation(op)
		}
	}
}
