// Package api is ndbench's HTTP service: the REST API under /api/v1 (described by an
// OpenAPI 3.1 document at /openapi.json), live statistics over Server-Sent Events,
// Prometheus metrics at /metrics, NDBench's REST routes under /REST/ndbench/ and a health
// check at /health.
//
// It binds 127.0.0.1 unless a token is set: with a token every route but /health needs
// "Authorization: Bearer <token>". Cross-origin requests are allowed only from an explicit
// allowlist of origins. Every route declares whether it changes the node's state; those
// that do refuse requests sent by a page on another site whatever their HTTP method (see
// package crossorigin), and so do all requests with an unsafe method.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/validation"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/crossorigin"
	"github.com/ndbench/ndbench/internal/ndbenchapi"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/web"
)

// DefaultListen is where the service listens unless told otherwise: loopback only, so an
// unauthenticated API is never reachable from the network by default.
const DefaultListen = "127.0.0.1:8080"

// DefaultMaxBodyBytes bounds request bodies; the largest legitimate one (a config patch or
// a debug value) is far smaller.
const DefaultMaxBodyBytes = 1 << 20

// DefaultHeartbeat is how often an idle SSE stream gets a comment, so proxies and clients
// with idle timeouts keep it open.
const DefaultHeartbeat = 15 * time.Second

// Options configure a Server.
type Options struct {
	// Instance is the node the API controls. Required.
	Instance Node
	// Token, when set, is required as a bearer token on every route except /health.
	Token string
	// CORSOrigins are the origins (scheme://host[:port]) allowed to call the API from a
	// browser page served elsewhere. None by default.
	CORSOrigins []string
	// Logger gets request and stream logs; nil discards them.
	Logger *slog.Logger
	// Version is reported by /health and in the OpenAPI document.
	Version string
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Heartbeat is the SSE comment interval; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// UI, when set, serves every path outside the API's own (/api/, /REST/, /openapi.json,
	// /docs, /metrics, /health): the embedded web UI. Behind the same auth as the API.
	UI http.Handler
	// Agent, when set, serves the node side of a fleet (/api/v1/cluster/...).
	Agent *cluster.Agent
	// Coordinator, when set, adds the fleet's own routes (/api/v1/fleet/...): set on the
	// server whose Instance is the fleet view.
	Coordinator *cluster.Coordinator
	// Discovery, when set, answers NDBench's cluster routes (/REST/ndbench/cluster/...).
	Discovery discovery.Discoverer
	// Fleet, when set, is served under FleetPrefix behind this server's auth: the server
	// of the fleet view.
	Fleet http.Handler
	// Mounted says this server is served under another server's FleetPrefix (it is the
	// fleet view), behind that server's auth: it checks no token and no host of its own.
	// Without it, a server with no Token refuses every Host but loopback's (DNS
	// rebinding), and so would a fleet view that its node serves off loopback with a token.
	Mounted bool
	// History, when set, is the results store the read-only routes under
	// /api/v1/history read (the UI's History page); HistoryName is how they name it (a
	// PostgreSQL URL without its password).
	History     HistorySource
	HistoryName string
	// OnSessionEnd, when set, is given the report of each driver session that ends
	// through the API (POST /api/v1/driver/shutdown) and the collector it was built from
	// (whose histograms are the session's until the next one starts), so the caller can
	// record it.
	OnSessionEnd func(*report.Report, *stats.Collector)
	// PreviousServe, when set, is what the serve before this one lost (it ended without a
	// clean stop); GET /api/v1/status says it.
	PreviousServe *PreviousServe
	// ConfigSources, when set, returns the status of each dynamic configuration source
	// (etcd, a watched file); GET /api/v1/status says it, so a source that fails while
	// the node runs on its last good configuration shows.
	ConfigSources func() []source.Status
	// Certs, when set, makes Serve speak TLS with this certificate, re-read as its files
	// change (CertFiles.Watch).
	Certs *CertFiles
	// ClientCAs, when set with Certs, makes the TLS mutual: every request but /health
	// (a load balancer's or the kubelet's probe, which has no certificate) needs a
	// client certificate that chains to these CAs, else it is refused with 401 before
	// the token is looked at; a certificate that does not chain fails the handshake.
	// The fleet's coordinator presents its --peer-cert.
	ClientCAs *x509.CertPool
	// TokenChanged, when set, is called with the new token after a rotation
	// (SetToken, ReloadTokenFile, WatchTokenFile): a coordinator's calls to its nodes
	// follow the token file too.
	TokenChanged func(token string)
}

// Server serves the API of one instance. Close releases its subscriptions.
type Server struct {
	opts     Options
	inst     Node
	log      *slog.Logger
	api      huma.API
	mux      *http.ServeMux
	handler  http.Handler
	reg      *prometheus.Registry
	metrics  *metrics
	hub      *hub
	unsub    func()
	tokens   *tokens             // the token and, after a rotation, the previous one for its grace
	sessions *sessions           // browser sessions (POST /api/v1/session)
	login    http.Handler        // the login page for browsers without a session; nil without a token or UI
	origins  *crossorigin.Policy // the CORS allowlist, also trusted by the cross-site checks
	declared []declaredRoute     // every route with its declared effect, in registration order
	tune     *tuner              // the node's capacity search (autotune.go)
}

// New builds the server for opts.Instance. It subscribes to the instance's statistics
// (for metrics and streams) until Close.
func New(opts Options) (*Server, error) {
	if opts.Instance == nil {
		return nil, errors.New("api: no instance")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if err := CheckToken(opts.Token); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if opts.ClientCAs != nil && opts.Certs == nil {
		return nil, errors.New("api: client certificates (--tls-client-ca) need the node to serve TLS (--tls-cert, --tls-key)")
	}
	origins, err := crossorigin.New(opts.CORSOrigins)
	if err != nil {
		return nil, fmt.Errorf("api: CORS origin: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: opts, inst: opts.Instance, log: log, mux: http.NewServeMux(), reg: prometheus.NewRegistry(), hub: newHub(), origins: origins,
		sessions: newSessions()}
	if opts.Token != "" && opts.UI != nil {
		s.login = web.LoginPage(web.Options{Version: opts.Version})
	}
	s.tokens = &tokens{now: time.Now, cur: sha256.Sum256([]byte(opts.Token))}

	m, err := newMetrics(s.reg)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if err := s.reg.Register(driverStats{status: opts.Instance.Status}); err != nil {
		return nil, fmt.Errorf("register driver metrics: %w", err)
	}

	cfg := huma.DefaultConfig("ndbench", opts.Version)
	// No $schema links in bodies and no /schemas route: the document at /openapi.json is
	// the one description clients need. The built-in docs page loads scripts from a CDN,
	// so /docs is our own self-contained page instead.
	cfg.CreateHooks = nil
	cfg.SchemasPath = ""
	cfg.DocsPath = ""
	cfg.RejectUnknownQueryParameters = true
	cfg.Info.Description = "Control and observe one ndbench node: driver lifecycle, load, backfill, live configuration and statistics."
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer":  {Type: "http", Scheme: "bearer", Description: "Required when the server was started with a token (--token or NDBENCH_TOKEN)."},
		"session": {Type: "apiKey", In: "cookie", Name: SessionCookie, Description: "The alternative for browsers: the session cookie POST /api/v1/session sets in exchange for the token."},
	}
	cfg.Transformers = append(cfg.Transformers, hideRejectedValues)
	// A map of our own: huma's DefaultFormats is shared by every huma API in the process.
	cfg.Formats = map[string]huma.Format{"application/json": jsonFormat, "json": jsonFormat}
	s.api = humago.New(s.mux, cfg)
	s.tune = &tuner{}
	s.routes()
	s.autotuneRoutes()
	s.clusterRoutes()
	s.fleetRoutes()
	s.sessionRoutes()
	s.historyRoutes()
	s.streamRoute()
	s.handle(readOnly, "GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s.handle(readOnly, "GET /docs", http.HandlerFunc(s.docs))
	// NDBench's own routes, so its scripts and pipelines work unchanged (same auth). Its
	// route table declares which of them change state, and applies the same policy.
	s.mux.Handle(ndbenchapi.Prefix, ndbenchapi.NewHandler(s.inst, ndbenchapi.Options{Origins: s.origins, Discovery: opts.Discovery}))
	s.documentNDBench()
	if opts.Fleet != nil {
		// The fleet view is a server of its own (its Instance is the fleet); it is reached
		// through this one, so this server's auth, CORS and cross-site checks apply to it.
		s.mux.Handle(FleetPrefix+"/", http.StripPrefix(FleetPrefix, opts.Fleet))
		s.mux.Handle(FleetPrefix, http.RedirectHandler(FleetPrefix+"/", http.StatusFound))
	} else {
		// A node that coordinates no fleet says how to make it one, rather than a bare 404
		// to whoever followed a link or the docs to /fleet/.
		noFleet := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, http.StatusNotFound, "this node coordinates no fleet: start ndbench serve with --peers host:port,... "+
				"or --discovery (static:, dns:, etcd:, file:) to serve the fleet's view at "+FleetPrefix+"/ (docs/fleet.md)")
		})
		s.handle(readOnly, "GET "+FleetPrefix+"/", noFleet)
		s.handle(readOnly, "GET "+FleetPrefix, noFleet)
	}
	// The UI only serves pages and assets (GET and HEAD).
	s.handle(readOnly, "/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.UI != nil && !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/REST/") {
			opts.UI.ServeHTTP(w, r)
			return
		}
		if allow := s.allowedMethods(r.URL.Path); len(allow) > 0 {
			// The route exists with other methods: say which (RFC 9110 §15.5.6).
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeProblem(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+" is not allowed; allowed: "+strings.Join(allow, ", "))
			return
		}
		writeProblem(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path+"; see /openapi.json")
	}))

	unsubIv, unsubAmend := s.inst.Collector().Subscribe(s.interval), s.inst.Collector().SubscribeAmended(s.hub.publishAmend)
	s.unsub = func() { unsubIv(); unsubAmend() }
	s.handler = s.recoverer(s.cors(s.refuseCrossSiteUnsafe(s.auth(s.admitFleet(s.limitBody(s.mux))))))
	return s, nil
}

// effect is what a route does to the node. Every route declares one when it is registered
// (register, handle), and the cross-site protection follows from it: a route that changes
// state refuses requests from pages on other sites whatever its method, so a GET route
// that starts load cannot forget the protection.
type effect int

const (
	// readOnly routes only report; a page on another site may send them (it cannot read
	// the answer unless its origin is in the CORS allowlist).
	readOnly effect = iota + 1
	// changesState routes connect drivers, start or stop load, change configuration or
	// write to the store.
	changesState
)

// declaredRoute is one registered route and its effect, kept so tests can walk them.
type declaredRoute struct {
	method, path string
	effect       effect
}

// declare records a route's effect, refusing a route that declares none.
func (s *Server) declare(method, path string, eff effect) {
	if eff != readOnly && eff != changesState {
		panic(fmt.Sprintf("api: route %s %s declares no effect (readOnly or changesState)", method, path))
	}
	s.declared = append(s.declared, declaredRoute{method: method, path: path, effect: eff})
}

// handle registers a plain net/http route with its declared effect.
func (s *Server) handle(eff effect, pattern string, h http.Handler) {
	method, path, found := strings.Cut(pattern, " ")
	if !found {
		method, path = "", pattern
	}
	s.declare(method, path, eff)
	if eff == changesState {
		h = s.guard(h)
	}
	s.mux.Handle(pattern, h)
}

// guard refuses requests to h that a page on another site sent.
func (s *Server) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.origins.Check(r); err != nil {
			writeCrossSite(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// refuseCrossSiteUnsafe applies the cross-site check to every request with an unsafe
// method, on any path, whatever the route declares: browsers send "simple" cross-site
// POSTs without a preflight, and a route registered with the wrong effect must still not
// take one. Routes that change state on GET are covered by their declaration.
func (s *Server) refuseCrossSiteUnsafe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if err := s.origins.Check(r); err != nil {
				writeCrossSite(w, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// admitFleet refuses a coordinator's state-changing call (any unsafe method; the
// coordinator names itself and its run in headers) while another fleet run holds this
// node, before any route applies anything: a second coordinator must not stop or re-rate
// load that a run it does not own holds. The /api/v1/cluster/ routes carry the run in
// their bodies and check it themselves.
func (s *Server) admitFleet(next http.Handler) http.Handler {
	a := s.opts.Agent
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if !strings.HasPrefix(r.URL.Path, "/api/v1/cluster/") {
				if err := a.Admit(r.Header.Get(cluster.HeaderCoordinator), r.Header.Get(cluster.HeaderRun)); err != nil {
					writeProblem(w, http.StatusConflict, err.Error())
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeCrossSite(w http.ResponseWriter, err error) {
	writeProblem(w, http.StatusForbidden, err.Error()+"; a page on another site may not change this node's state "+
		"(same-origin pages, clients that send neither Origin nor Sec-Fetch-Site, and origins given with --cors-origin may)")
}

// Handler returns the server's HTTP handler, with auth, CORS and body limits applied.
func (s *Server) Handler() http.Handler { return s.handler }

// OpenAPI returns the API description, as served at /openapi.json.
func (s *Server) OpenAPI() *huma.OpenAPI { return s.api.OpenAPI() }

// Close stops feeding metrics and ends every open event stream.
func (s *Server) Close() {
	s.tune.stop()
	s.unsub()
	s.hub.close()
}

// interval runs on the collector's tick goroutine once a second: it must not block, so
// it computes the summary once and hands copies to the metrics and to stream buffers.
func (s *Server) interval(iv *stats.Interval) {
	sum := iv.Summary()
	s.metrics.observe(iv, sum)
	s.hub.publish(sum)
}

// CheckListen refuses a listen address other than loopback when no token is set: the API
// can start load against production stores and must not be open to the network. Off
// loopback it also wants TLS (tlsOn), since the token would otherwise cross the network
// in clear text, unless the operator said the network is trusted or a proxy in front
// terminates TLS (insecure: serve's --insecure-listen).
func CheckListen(addr, token string, tlsOn, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w (want host:port, e.g. %s)", addr, err, DefaultListen)
	}
	if isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "all interfaces"
	}
	if token == "" {
		return fmt.Errorf("refusing to listen on %s (%s) without a token: anyone who can reach it could drive load against your stores; "+
			"set --token or NDBENCH_TOKEN, or listen on 127.0.0.1", addr, shown)
	}
	if !tlsOn && !insecure {
		return fmt.Errorf("refusing to listen on %s (%s) without TLS: the token would cross the network in clear text; "+
			"give --tls-cert and --tls-key, or --insecure-listen when a proxy in front terminates TLS or the network is trusted", addr, shown)
	}
	return nil
}

// MinTokenLength is the shortest token accepted: 22 characters, the base64 of 16 random
// bytes (128 bits). The token is all that stands between a network and the stores a
// node can drive load against, and an API caller can try tokens as fast as it can send
// requests (only the browser login backs off).
const MinTokenLength = 22

// tokenHowTo says how to make a token that passes CheckToken.
const tokenHowTo = "make one with `openssl rand -base64 24` or `head -c 24 /dev/urandom | base64`"

// CheckToken refuses a token no request could ever match, so a server never starts locked
// against everyone: a blank one, one with whitespace around it (a request's token is
// read without it) or with a control character (which a header cannot carry). It also
// refuses a weak one: shorter than MinTokenLength, or a short pattern repeated
// ("aaaa…", "abcabc…"), which a guess finds first. "" means no token. The error never
// repeats the token.
func CheckToken(token string) error {
	switch {
	case token == "":
		return nil
	case strings.TrimSpace(token) == "":
		return errors.New("the token is blank, so no request could ever match it: " +
			"set a token of visible characters (--token or NDBENCH_TOKEN), or none to serve on loopback only")
	case strings.TrimSpace(token) != token:
		return errors.New("the token begins or ends with whitespace, which no request can send: remove it")
	case strings.ContainsFunc(token, unicode.IsControl):
		return errors.New("the token contains a control character, which no request header can carry: use visible characters")
	case utf8.RuneCountInString(token) < MinTokenLength:
		return fmt.Errorf("the token has %d characters, fewer than the %d of 16 random bytes in base64 (128 bits): %s",
			utf8.RuneCountInString(token), MinTokenLength, tokenHowTo)
	case repeats(token):
		return fmt.Errorf("the token is a short pattern repeated, which a guess finds first: %s", tokenHowTo)
	}
	return nil
}

// repeats reports whether s is a run of some prefix of 8 bytes or fewer ("aaaa",
// "abab", "12345678123456781234"), a possibly incomplete last copy included.
func repeats(s string) bool {
	for period := 1; period <= 8 && period < len(s); period++ {
		if s[period:] == s[:len(s)-period] {
			return true
		}
	}
	return false
}

// bearerToken returns the token of an Authorization header of the Bearer scheme. The
// scheme is matched without regard to case (RFC 7235 section 2.1); blanks separate it
// from the token.
func bearerToken(header string) (string, bool) {
	i := strings.IndexAny(header, " \t")
	if i < 0 || !strings.EqualFold(header[:i], "Bearer") {
		return "", false
	}
	tok := strings.TrimSpace(header[i:])
	return tok, tok != ""
}

// IsLoopbackListen tells whether a listen address (host:port) is on loopback only.
func IsLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopback(host)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requireClientCert refuses a request that came without a verified client certificate,
// but the health probe's. The TLS layer has already refused a certificate that does not
// chain to the CAs; this refuses the connection that presented none, which TLS lets
// through so that probes work.
func requireClientCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
			writeProblem(w, http.StatusUnauthorized, "a client certificate signed by the node's --tls-client-ca is required (mutual TLS)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Serve serves on ln (over TLS with Options.Certs) until ctx ends, then shuts down gracefully (open streams end at
// once; other requests get a few seconds to finish).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// Event streams lift this deadline for their own connection.
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	srv.RegisterOnShutdown(s.hub.close)
	errc := make(chan error, 1)
	if s.opts.Certs != nil {
		srv.TLSConfig = s.opts.Certs.ServerConfig()
		if s.opts.ClientCAs != nil {
			srv.TLSConfig.ClientCAs = s.opts.ClientCAs
			srv.TLSConfig.ClientAuth = tls.VerifyClientCertIfGiven
			srv.Handler = requireClientCert(s.handler)
		}
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shut down HTTP server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// public tells whether a route needs no credentials: the health check, and the login,
// which checks the token itself.
func public(method, path string) bool {
	return path == "/health" || (method == http.MethodPost && path == "/api/v1/session")
}

// auth requires the bearer token, or the cookie of a session opened with it, on every
// route but the public ones (and CORS preflights, which browsers send without
// credentials). A browser without a session that asks for a page gets the login page
// (and the UI's static assets, which hold no data), nothing else. Tokens are compared as
// hashes in constant time, so neither their content nor their length leaks through timing.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.opts.Mounted {
		return next
	}
	if s.opts.Token == "" {
		// Without a token the server listens on loopback only. A request naming another
		// host came through DNS rebinding (a web page whose domain now resolves to
		// 127.0.0.1) and is refused.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !isLoopback(strings.Trim(host, "[]")) {
				writeProblem(w, http.StatusForbidden, "host "+r.Host+" refused: without a token only loopback names are served")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r.Method, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if got, ok := bearerToken(r.Header.Get("Authorization")); ok && s.checkToken(got) {
			next.ServeHTTP(w, r)
			return
		}
		if s.sessions.valid(sessionFrom(r)) {
			next.ServeHTTP(w, r)
			return
		}
		if s.login != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && uiPath(r.URL.Path) {
			if strings.HasPrefix(r.URL.Path, web.StaticPrefix) {
				s.opts.UI.ServeHTTP(w, r)
			} else {
				s.login.ServeHTTP(w, r)
			}
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="ndbench"`)
		writeProblem(w, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token> (browsers: log in at / for a session cookie)")
	})
}

// uiPath tells whether a path belongs to the UI rather than to the API's own routes.
func uiPath(p string) bool {
	for _, prefix := range []string{"/api/", "/REST/", "/openapi", "/docs", "/metrics", "/health"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return true
}

// cors answers browsers from allowlisted origins only; other origins get no CORS headers,
// so their pages cannot read responses.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		allowed := s.origins.Trusted(origin)
		w.Header().Add("Vary", "Origin")
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if allowed {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Set("Access-Control-Expose-Headers", "Content-Type, WWW-Authenticate")
		}
		if !preflight {
			next.ServeHTTP(w, r)
			return
		}
		if !allowed {
			writeProblem(w, http.StatusForbidden, "origin "+origin+" is not allowed (see --cors-origin)")
			return
		}
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

// limitBody rejects a declared oversized body before reading it and caps bodies of
// unknown length; the API's operations also stop reading at the same limit.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.opts.MaxBodyBytes {
			writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, s.opts.MaxBodyBytes))
			return
		}
		if r.Body != nil {
			// One byte over the limit, so huma's own limit (which counts to it) sees the
			// overflow and answers 413 instead of a read error.
			r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes+1)
		}
		next.ServeHTTP(w, r)
	})
}

// recoverer turns a panic in a handler into a 500 problem without a stack trace in the
// response; the panic is logged for the operator.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeProblem(w, http.StatusInternalServerError, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// hideRejectedValues keeps request validation errors from echoing values that may be
// secrets: huma names the rejected value of a field, and for a property the route does not
// take, or a body it cannot decode, the object around it, which can be the whole body.
// Huma's own errors and the problems handlers build (query.since) pass here alike.
// What is shown:
//   - config values (body.values.KEY) as config.Redact shows them, driver options never;
//   - booleans, and numbers that missed a numeric field's bound (a number where a string
//     belongs may be a token or a password typed as a number);
//   - strings of the query and the path without URL passwords;
//   - no other string of a body (a token, a password under any name) and no object or
//     list at all.
func hideRejectedValues(_ huma.Context, _ string, v any) (any, error) {
	var details []*huma.ErrorDetail
	switch m := v.(type) {
	case *huma.ErrorModel:
		details = m.Errors
	case *Problem:
		details = m.Errors
	default:
		return v, nil
	}
	for _, d := range details {
		if d == nil {
			continue
		}
		d.Location = unescapeLocation(d.Location)
		if d.Value == nil {
			continue
		}
		switch val := d.Value.(type) {
		case bool, float64, float32, int, int64, json.Number:
			switch {
			case strings.HasPrefix(d.Location, "body.values."):
				d.Value = config.Redact(strings.TrimPrefix(d.Location, "body.values."), fmt.Sprint(val))
			case strings.HasPrefix(d.Location, "body.options"):
				d.Value = driver.Redacted
			case !isBool(val) && !missedNumericBound(d.Message):
				d.Value = driver.Redacted
			}
		case string:
			switch {
			case strings.HasPrefix(d.Location, "body.values."):
				d.Value = config.Redact(strings.TrimPrefix(d.Location, "body.values."), val)
			case strings.HasPrefix(d.Location, "query."), strings.HasPrefix(d.Location, "path."):
				d.Value = driver.Shown(false, val)
			default:
				d.Value = driver.Redacted
			}
		default:
			d.Value = nil
		}
	}
	return v, nil
}

func isBool(v any) bool {
	_, ok := v.(bool)
	return ok
}

// numericBounds are the beginnings of huma's messages for a number that a numeric field
// refuses (out of its range, not an integer, not a multiple): the one case a rejected
// number is known not to stand where a string, a token or a password, belongs.
var numericBounds = func() []string {
	var b []string
	for _, m := range []string{validation.MsgExpectedMinimumNumber, validation.MsgExpectedExclusiveMinimumNumber,
		validation.MsgExpectedMaximumNumber, validation.MsgExpectedExclusiveMaximumNumber,
		validation.MsgExpectedNumberBeMultipleOf, validation.MsgExpectedInteger} {
		if p, _, _ := strings.Cut(m, "%"); p != "" {
			b = append(b, p)
		}
	}
	return b
}()

// missedNumericBound reports whether a validation message says a numeric field refused
// its number.
func missedNumericBound(msg string) bool {
	for _, p := range numericBounds {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// allowedMethods returns the methods the OpenAPI document has for path (templates such as
// /api/v1/kv/{key} match one segment per parameter), sorted; nil for an unknown path.
func (s *Server) allowedMethods(path string) []string {
	var out []string
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for p, item := range s.api.OpenAPI().Paths {
		tpl := strings.Split(strings.Trim(p, "/"), "/")
		if len(tpl) != len(segs) {
			continue
		}
		match := true
		for i := range tpl {
			if !strings.HasPrefix(tpl[i], "{") && tpl[i] != segs[i] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		for m, op := range map[string]*huma.Operation{http.MethodGet: item.Get, http.MethodPut: item.Put, http.MethodPost: item.Post,
			http.MethodPatch: item.Patch, http.MethodDelete: item.Delete} {
			if op != nil && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	if slices.Contains(out, http.MethodGet) {
		out = append(out, http.MethodHead)
	}
	slices.Sort(out)
	return out
}
