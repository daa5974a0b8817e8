package web

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var assetRef = regexp.MustCompile(`(?:src|href)="(/ui/static/[^"]+)"`)

func TestPageServedAsHTMLWithEmbeddedAssets(t *testing.T) {
	h := Handler(Options{Version: "v1.2.3"})
	r := get(t, h, "/")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", r.StatusCode)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP = %q", csp)
	}
	page := body(t, r)
	for _, want := range []string{"<title>ndbench</title>", "v1.2.3", `data-instance="local"`,
		`"id":"local"`, `data-action="connect"`, `data-action="report-json"`, `data-action="autotune-start"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	refs := assetRef.FindAllStringSubmatch(page, -1)
	if len(refs) != 8 {
		t.Fatalf("page references %d assets, want 8 (uPlot js+css, charts.js, autotune.js, app.js, app.css, history.js, history.css): %v", len(refs), refs)
	}
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, ref := range refs {
		u := strings.ReplaceAll(ref[1], "&amp;", "&")
		r := get(t, h, u, "Accept-Encoding", "gzip")
		if r.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d", u, r.StatusCode)
			continue
		}
		ext := u[strings.LastIndex(u, "."):strings.Index(u, "?")]
		if ct := r.Header.Get("Content-Type"); ct != wantType[ext] {
			t.Errorf("%s: Content-Type %q, want %q", u, ct, wantType[ext])
		}
		if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: hashed asset not cached for good: %q", u, cc)
		}
		if len(body(t, r)) < 500 {
			t.Errorf("%s: suspiciously small", u)
		}
	}
}

func TestInstancesRenderedSafely(t *testing.T) {
	h := Handler(Options{Title: "bench <lab>", Instances: []Instance{{ID: "n1", Name: "</script><b>x", BaseURL: "http://10.0.0.1:8080"}}})
	page := body(t, get(t, h, "/"))
	if strings.Contains(page, "</script><b>") {
		t.Error("instance name not escaped")
	}
	if !strings.Contains(page, "bench &lt;lab&gt;") || !strings.Contains(page, `data-instance="n1"`) {
		t.Error("title or instance missing")
	}
}

func TestUnknownPathsAndMethods(t *testing.T) {
	h := Handler(Options{})
	if r := get(t, h, "/ui/static/nope.js"); r.StatusCode != http.StatusNotFound {
		t.Errorf("missing asset = %d", r.StatusCode)
	}
	if r := get(t, h, "/elsewhere"); r.StatusCode != http.StatusNotFound {
		t.Errorf("other path = %d", r.StatusCode)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d", rec.Code)
	}
	r := get(t, h, "/ui/static/app.js", "If-None-Match", `"`+h.(*handler).assets["app.js"].hash+`"`)
	if r.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation = %d, want 304", r.StatusCode)
	}
}

// urlPattern finds absolute and protocol-relative URLs.
var urlPattern = regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9][a-z0-9.-]*\.[a-z]{2,}[^\s"'<>)]*`)

// allowedURLs are URLs that appear in served files but are never fetched: uPlot's banner
// comment, and the SVG/XHTML namespaces.
var allowedURLs = map[string]bool{
	"https://github.com/leeoniya/uPlot": true,
	"http://www.w3.org/2000/svg":        true,
}

func TestNoExternalURLsInServedFiles(t *testing.T) {
	h := Handler(Options{}).(*handler)
	files := map[string]string{"/": string(h.page)}
	for name, a := range h.assets {
		files[name] = string(a.body)
	}
	if len(files) < 6 {
		t.Fatalf("only %d files served", len(files))
	}
	for name, content := range files {
		for _, u := range urlPattern.FindAllString(content, -1) {
			if !allowedURLs[strings.TrimRight(u, ".,;")] {
				t.Errorf("%s references an external URL: %s", name, u)
			}
		}
	}
}

func TestChartAssetsForTheReport(t *testing.T) {
	c := Charts()
	if !strings.Contains(c.UPlotJS, "uPlot") || !strings.Contains(c.ChartsJS, "NDCharts") ||
		!strings.Contains(c.UPlotCSS, ".uplot") || !strings.Contains(c.StyleCSS, ".chart-grid") {
		t.Error("chart assets incomplete")
	}
}

// A fleet's page (Options.Fleet) has the Nodes panel and the partial-seconds note; a
// node's page has neither.
func TestFleetPage(t *testing.T) {
	fleet := body(t, get(t, Handler(Options{Fleet: true, Instances: []Instance{{ID: "fleet", Name: "fleet", BaseURL: "/fleet"}}}), "/"))
	for _, want := range []string{`data-fleet="true"`, `data-role="nodes-panel"`, `data-role="nodes"`, `data-role="nodes-summary"`,
		`data-role="partial"`, `"baseURL":"/fleet"`, `data-action="connect"`} {
		if !strings.Contains(fleet, want) {
			t.Errorf("fleet page lacks %s", want)
		}
	}
	node := body(t, get(t, Handler(Options{}), "/"))
	for _, not := range []string{"data-fleet", "nodes-panel", `data-role="partial"`, "fleet"} {
		if strings.Contains(node, not) {
			t.Errorf("node page has %s", not)
		}
	}
}
