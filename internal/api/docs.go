package api

import (
	"html/template"
	"net/http"
	"sort"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// docsPage is the human documentation of the API, rendered from the OpenAPI document on
// the server. Unlike huma's built-in page it loads nothing from the internet, so it works
// on air-gapped hosts and under a strict CSP.
var docsPage = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} API</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code{background:#f3f3f3;padding:0 .2rem}
.op{border:1px solid #ddd;border-radius:4px;margin:.6rem 0;padding:.4rem .8rem}
.m{display:inline-block;min-width:4rem;font-weight:bold}
.GET{color:#1769aa}.POST{color:#2e7d32}.PUT{color:#8d6e00}.PATCH{color:#6a1b9a}
small{color:#666}
</style></head><body>
<h1>{{.Title}} API <small>{{.Version}}</small></h1>
<p>{{.Description}}</p>
<p>Machine-readable description: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).
With a server token, send <code>Authorization: Bearer &lt;token&gt;</code> on every route but <code>/health</code>.
Errors are <code>application/problem+json</code>. Metrics: <a href="/metrics">/metrics</a>.</p>
{{range .Ops}}<div class="op"><span class="m {{.Method}}">{{.Method}}</span> <code>{{.Path}}</code> — {{.Summary}}
{{if .Description}}<br><small>{{.Description}}</small>{{end}}
<br><small>responses: {{.Responses}}</small></div>
{{end}}</body></html>
`))

type docsOp struct {
	Method, Path, Summary, Description, Responses string
}

func (s *Server) docs(w http.ResponseWriter, _ *http.Request) {
	oapi := s.api.OpenAPI()
	var ops []docsOp
	for path, item := range oapi.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Put, item.Post, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			codes := make([]string, 0, len(op.Responses))
			for c := range op.Responses {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			ops = append(ops, docsOp{Method: op.Method, Path: path, Summary: op.Summary, Description: op.Description, Responses: strings.Join(codes, ", ")})
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].Path != ops[j].Path {
			return ops[i].Path < ops[j].Path
		}
		return ops[i].Method < ops[j].Method
	})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_ = docsPage.Execute(w, struct {
		Title, Version, Description string
		Ops                         []docsOp
	}{oapi.Info.Title, oapi.Info.Version, oapi.Info.Description, ops})
}
