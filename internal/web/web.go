// Package web is ndbench's browser UI: one server-rendered page (html/template) with
// small vanilla scripts and uPlot charts, every file embedded in the binary, so neither
// the build nor the page needs Node or the internet. The page talks to one or more
// ndbench instances through their REST API (/api/v1); it holds no state on the server.
//
// Mount it beside the API: GET / is the page and GET /ui/static/ its assets. The HTML run
// report draws the same charts: its callers hand it Charts(), so neither this package nor
// internal/report imports the other.
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed static templates
var files embed.FS

// StaticPrefix is where the page's assets are served.
const StaticPrefix = "/ui/static/"

// Instance is one ndbench node the page controls. The page's data model is a list of
// them, so a cluster view can add nodes without reshaping the UI.
type Instance struct {
	// ID is a short stable name used in element ids and test hooks, e.g. "local".
	ID string `json:"id"`
	// Name is what the page shows; ID when empty.
	Name string `json:"name"`
	// BaseURL is the instance's API root ("" = the origin that served the page). Another
	// origin must list this page's origin in its --cors-origin.
	BaseURL string `json:"baseURL"`
}

// Options configure the UI handler.
type Options struct {
	// Title is the page title; "ndbench" when empty.
	Title string
	// Version is shown in the page footer.
	Version string
	// Instances the page controls; one same-origin instance ("local") when empty.
	Instances []Instance
	// Fleet makes the page a fleet's view: its instance is a coordinator's fleet API
	// (BaseURL "/fleet"), and above the controls and charts a Nodes panel lists the
	// fleet's members (GET <BaseURL>/api/v1/fleet/members) with per-node start and stop.
	// The charts mark the seconds merged without some node's data (partial).
	Fleet bool
}

// asset is one embedded static file, prepared once: its content, a gzipped copy when
// that is smaller, and a content hash for cache busting.
type asset struct {
	body  []byte
	gz    []byte
	ctype string
	hash  string
}

type handler struct {
	page   []byte // the rendered page; it depends only on Options
	login  []byte // the rendered login page
	assets map[string]*asset
}

// Handler returns the UI: the page at GET / and its assets under /ui/static/. Asset URLs
// in the page carry a content hash, so assets are cached for good and a new build is
// picked up at once. Other paths get 404, so the handler can also be mounted at "/".
func Handler(opts Options) http.Handler {
	h, err := newHandler(opts)
	if err != nil {
		// The template and assets are embedded: failing here is a build defect that every
		// test of this package catches, not a runtime condition.
		panic(err)
	}
	return h
}

func newHandler(opts Options) (*handler, error) {
	if opts.Title == "" {
		opts.Title = "ndbench"
	}
	if len(opts.Instances) == 0 {
		opts.Instances = []Instance{{ID: "local", Name: "this node"}}
	}
	for i := range opts.Instances {
		if opts.Instances[i].Name == "" {
			opts.Instances[i].Name = opts.Instances[i].ID
		}
	}
	h := &handler{assets: map[string]*asset{}}
	err := fs.WalkDir(files, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &asset{body: b, hash: hex.EncodeToString(sum[:6]), ctype: mime.TypeByExtension(path.Ext(p))}
		if a.ctype == "" {
			a.ctype = "text/plain; charset=utf-8"
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		_, _ = zw.Write(b)
		_ = zw.Close()
		if gz.Len() < len(b) {
			a.gz = gz.Bytes()
		}
		h.assets[strings.TrimPrefix(p, "static/")] = a
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: read embedded assets: %w", err)
	}
	tmpl, err := template.New("index.html").Funcs(template.FuncMap{
		"asset": func(name string) (string, error) {
			a, ok := h.assets[name]
			if !ok {
				return "", fmt.Errorf("no asset %q", name)
			}
			return StaticPrefix + name + "?v=" + a.hash, nil
		},
	}).ParseFS(files, "templates/index.html", "templates/login.html")
	if err != nil {
		return nil, fmt.Errorf("web: parse page template: %w", err)
	}
	inst, err := json.Marshal(opts.Instances)
	if err != nil {
		return nil, fmt.Errorf("web: encode instances: %w", err)
	}
	var page bytes.Buffer
	err = tmpl.Execute(&page, map[string]any{
		"Title":     opts.Title,
		"Version":   opts.Version,
		"Instances": opts.Instances,
		"Fleet":     opts.Fleet,
		// encoding/json escapes <, > and &, so this cannot close the script element.
		"InstancesJSON": template.JS(inst),
	})
	if err != nil {
		return nil, fmt.Errorf("web: render page: %w", err)
	}
	h.page = page.Bytes()
	var login bytes.Buffer
	if err := tmpl.ExecuteTemplate(&login, "login.html", map[string]any{"Title": opts.Title, "Version": opts.Version}); err != nil {
		return nil, fmt.Errorf("web: render login page: %w", err)
	}
	h.login = login.Bytes()
	return h, nil
}

// contentSecurityPolicy allows only this origin's scripts and styles: the page loads
// nothing from elsewhere, and an injected inline script would not run. connect-src is
// wider because instances of a cluster may live on other origins.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self' http: https:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// LoginPage returns the page a browser without a session gets from a token-protected
// node, at any path: a form that exchanges the token for a session cookie (POST
// /api/v1/session) and reloads. It shows no data. Its assets are the UI's, served under
// StaticPrefix by Handler.
func LoginPage(opts Options) http.Handler {
	h, err := newHandler(opts)
	if err != nil {
		panic(err) // embedded files: a build defect, as in Handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", loginSecurityPolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// Never cached: after login the same URL is the UI.
		w.Header().Set("Cache-Control", "no-store")
		// 401: the page is the way to authenticate, not the resource asked for.
		w.WriteHeader(http.StatusUnauthorized)
		if r.Method == http.MethodGet {
			_, _ = w.Write(h.login)
		}
	})
}

// loginSecurityPolicy is the UI's policy with requests limited to this origin: the login
// page talks to no other instance.
const loginSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/ui" || r.URL.Path == "/ui/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		// The page is tiny and names hashed assets: always revalidate it.
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(h.page)
	case strings.HasPrefix(r.URL.Path, StaticPrefix):
		a, ok := h.assets[strings.TrimPrefix(r.URL.Path, StaticPrefix)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.serveAsset(w, r, a)
	default:
		http.NotFound(w, r)
	}
}

func (h *handler) serveAsset(w http.ResponseWriter, r *http.Request, a *asset) {
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("ETag", `"`+a.hash+`"`)
	w.Header().Set("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == a.hash {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, `"`+a.hash+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		w.Header().Set("Content-Encoding", "gzip")
		body = a.gz
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// ChartAssets are the files a self-contained page needs to draw ndbench's charts:
// uPlot's script and stylesheet, the shared chart code (charts.js: series from stats
// points, chart layout, units) and the UI's stylesheet. The HTML run report inlines them
// (its callers convert them to report.Charts, which has the same fields), so the report
// and the live page draw the same charts.
type ChartAssets struct {
	UPlotJS, UPlotCSS, ChartsJS, StyleCSS string
}

// Charts returns the embedded chart assets.
func Charts() ChartAssets {
	read := func(name string) string {
		b, err := files.ReadFile("static/" + name)
		if err != nil {
			panic("web: embedded asset missing: " + name) // a build defect, caught by tests
		}
		return string(b)
	}
	return ChartAssets{
		UPlotJS:  read("vendor/uPlot.iife.min.js"),
		UPlotCSS: read("vendor/uPlot.min.css"),
		ChartsJS: read("charts.js"),
		StyleCSS: read("app.css"),
	}
}
