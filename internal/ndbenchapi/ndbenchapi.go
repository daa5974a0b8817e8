package ndbenchapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/crossorigin"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/node"
)

// Prefix is where NDBench serves these routes and where the API server mounts Handler.
const Prefix = "/REST/ndbench/"

// Result is NDBench's response body for actions (RestUtil.Result): whether it worked and
// a message. Message is null only where NDBench sends null (readSingle of a missing key).
type Result struct {
	IsSuccess bool    `json:"isSuccess"`
	Message   *string `json:"message"`
}

// handlerFunc serves one route; rest is what follows the route's prefix for routes with
// a path parameter ({client}, {key}), and empty otherwise.
type handlerFunc func(w http.ResponseWriter, r *http.Request, rest string)

// effect is what a route does to the node. Every route in the table declares one, and
// the cross-site protection follows from it: NDBench's routes change state on GET, so a
// route that changes state refuses requests from pages on other sites whatever the
// method, and one added later cannot forget to.
type effect int

const (
	// reads routes only report (statistics, status, configuration, one key).
	reads effect = iota + 1
	// changes routes connect or disconnect drivers, start or stop load or backfills,
	// change configuration or write to the store.
	changes
)

// route is one NDBench resource method.
type route struct {
	methods []string
	effect  effect
	serve   handlerFunc
}

// api serves the routes of one instance. It holds no state of its own: everything it
// reports is read from the instance at request time.
type api struct {
	inst        Node
	origins     *crossorigin.Policy
	discovery   discovery.Discoverer // nil: this node alone
	clusterName string
	exact       map[string]route
	prefix      map[string]route // routes with a trailing path parameter, keyed by "driver/init/"
}

// Handler serves NDBench's REST API (ndbench-core's NdBenchResource and
// NDBenchConfigResource) for inst. It accepts both the full path (/REST/ndbench/driver/stats,
// as with mux.Handle(Prefix, Handler(inst, origins))) and the path with the prefix stripped
// (/driver/stats, as behind http.StripPrefix). Routes that change state refuse requests
// sent by pages on other sites (403), whatever the method, unless their origin is trusted
// by origins; a nil origins trusts no other origin.
func Handler(inst Node, origins *crossorigin.Policy) http.Handler {
	return NewHandler(inst, Options{Origins: origins})
}

// DefaultClusterName is the NDBench cluster name of members that are in no named cluster
// (every member but those of a clusters.json file), and of this node alone.
const DefaultClusterName = "ndbench"

// Options are what NewHandler serves besides the node.
type Options struct {
	// Origins are the other origins trusted to change state (see Handler); nil trusts
	// none.
	Origins *crossorigin.Policy
	// Discovery answers the cluster routes (cluster/list, cluster/{appname}/list); nil
	// answers them with this node alone, as NDBench's LocalClusterDiscovery does.
	Discovery discovery.Discoverer
	// ClusterName names the cluster of members that have none; DefaultClusterName when
	// empty.
	ClusterName string
}

// NewHandler is Handler with the cluster routes answered from opts.Discovery.
func NewHandler(inst Node, opts Options) http.Handler {
	if opts.ClusterName == "" {
		opts.ClusterName = DefaultClusterName
	}
	a := &api{inst: inst, origins: opts.Origins, discovery: opts.Discovery, clusterName: opts.ClusterName}
	a.table()
	return a
}

// Route describes one NDBench route, for documentation and tests.
type Route struct {
	Path         string   // full path, with {client} or {key} for a path parameter
	Methods      []string // methods it accepts besides OPTIONS
	ChangesState bool     // refuses cross-site requests whatever the method
	Summary      string   // what it does, in ndbench's terms
}

// summaries say what each route does (keyed as the route table), for the OpenAPI
// document; a test checks that every route has one.
var summaries = map[string]string{
	"driver/start":                    "Start reads and writes (NDBench's query parameters, e.g. loadPattern, set the workload first)",
	"driver/startReads":               "Start the read class",
	"driver/startWrites":              "Start the write class",
	"driver/stop":                     "Stop reads and writes",
	"driver/stopReads":                "Stop the read class",
	"driver/stopWrites":               "Stop the write class",
	"driver/startDataFill":            "Backfill every key and wait for it to end",
	"driver/startDataFillAsync":       "Start a backfill of every key in the background",
	"driver/stopDataFill":             "Stop the backfill",
	"driver/shutdownDataFill":         "Stop the backfill (NDBench's alias)",
	"driver/startConditionalDataFill": "Not supported: answers why and what to use instead",
	"driver/startVerifyDataFill":      "Not supported: answers why and what to use instead (workload.backfillVerify)",
	"driver/initfromscript":           "Not supported: Groovy plugins cannot run in ndbench",
	"driver/runworkflow":              "Not supported yet",
	"driver/stats":                    "NDBench's statistics: rates, counts and latency percentiles of reads and writes",
	"driver/getserverstatus":          "The node's status: driver, load running, backfill",
	"driver/getdrivers":               "The drivers this build has",
	"driver/getReadStatus":            "Whether reads run",
	"driver/getWriteStatus":           "Whether writes run",
	"driver/shutdownclient":           "Stop all load and disconnect the driver",
	"config/list":                     "Every configuration property with its value (NDBench's names)",
	"config/tunable/list":             "The properties that can change while the load runs",
	"config/set":                      "Set properties (JSON object or query parameters), validated whole",
	"config/tunable/set":              "Set live properties, validated whole",
	"cluster/list":                    "The NDBench clusters and their nodes, from discovery",
	"driver/init/":                    "Connect the driver {client} (an ndbench driver name or NDBench plugin name)",
	"driver/readSingle/":              "Read one key through the driver",
	"driver/writeSingle/":             "Write one key through the driver",
	"cluster/":                        "The nodes of NDBench cluster {appname}",
}

// Routes lists every NDBench route Handler serves, sorted by path.
func Routes() []Route {
	a := &api{}
	a.table()
	var out []Route
	for p, rt := range a.exact {
		out = append(out, Route{Path: Prefix + p, Methods: slices.Clone(rt.methods), ChangesState: rt.effect == changes, Summary: summaries[p]})
	}
	for p, rt := range a.prefix {
		out = append(out, Route{Path: Prefix + p + paramOf(p), Methods: slices.Clone(rt.methods), ChangesState: rt.effect == changes, Summary: summaries[p]})
	}
	slices.SortFunc(out, func(x, y Route) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// paramOf is what follows a prefix route's prefix, as Routes shows it.
func paramOf(prefix string) string {
	switch prefix {
	case "driver/init/":
		return "{client}"
	case "cluster/":
		return "{appname}/list"
	}
	return "{key}"
}

// table builds the route table. Entries are positional so that none can leave out its
// effect.
func (a *api) table() {
	get := []string{http.MethodGet, http.MethodPost}
	set := []string{http.MethodPost, http.MethodPut, http.MethodGet}
	a.exact = map[string]route{
		"driver/start":              {get, changes, a.start()},
		"driver/startReads":         {get, changes, a.start(opRead)},
		"driver/startWrites":        {get, changes, a.start(opWrite)},
		"driver/stop":               {get, changes, a.stop()},
		"driver/stopReads":          {get, changes, a.stop(opRead)},
		"driver/stopWrites":         {get, changes, a.stop(opWrite)},
		"driver/startDataFill":      {get, changes, a.startDataFill},
		"driver/startDataFillAsync": {get, changes, a.startDataFillAsync},
		"driver/stopDataFill":       {get, changes, a.stopDataFill},
		"driver/shutdownDataFill":   {get, changes, a.stopDataFill},
		// The routes ndbench does not implement change state in NDBench: declared so, they
		// stay protected should they ever be implemented.
		"driver/startConditionalDataFill": {get, changes, notSupported("startConditionalDataFill",
			"a backfill writes every key; there is no conditional (write-if-missing) mode")},
		"driver/startVerifyDataFill": {get, changes, notSupported("startVerifyDataFill",
			"set workload.backfillVerify=true (config/set backfillVerify=true) and call startDataFill: the backfill then reads every key back")},
		"driver/initfromscript": {[]string{http.MethodPost}, changes, notSupported("initfromscript",
			"Groovy plugins cannot run in ndbench; write a Go driver (see docs/drivers.md) or use the script driver")},
		"driver/runworkflow":     {get, changes, notSupported("runworkflow", "workflows are not available through this API yet")},
		"driver/stats":           {get, reads, a.stats},
		"driver/getserverstatus": {get, reads, a.serverStatus},
		"driver/getdrivers":      {get, reads, a.drivers},
		"driver/getReadStatus":   {get, reads, a.readStatus},
		"driver/getWriteStatus":  {get, reads, a.writeStatus},
		"driver/shutdownclient":  {get, changes, a.shutdownClient},
		"config/list":            {get, reads, a.configList(false)},
		"config/tunable/list":    {get, reads, a.configList(true)},
		"config/set":             {set, changes, a.configSet("Properties have been applied")},
		"config/tunable/set":     {set, changes, a.configSet("Tunable Properties have been applied")},
		"cluster/list":           {[]string{http.MethodGet}, reads, a.clusterList},
	}
	a.prefix = map[string]route{
		"driver/init/":        {get, changes, a.init},
		"driver/readSingle/":  {get, reads, a.readSingle},
		"driver/writeSingle/": {get, changes, a.writeSingle},
		"cluster/":            {[]string{http.MethodGet}, reads, a.clusterHosts},
	}
	for p, rt := range a.exact {
		checkEffect(p, rt)
	}
	for p, rt := range a.prefix {
		checkEffect(p, rt)
	}
}

// checkEffect refuses a table entry whose effect is neither reads nor changes.
func checkEffect(path string, rt route) {
	if rt.effect != reads && rt.effect != changes {
		panic("ndbenchapi: route " + path + " declares no effect (reads or changes)")
	}
}

// ServeHTTP finds the route. Paths are matched exactly (NDBench's JAX-RS paths are case
// sensitive); a trailing slash is tolerated.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if s, ok := strings.CutPrefix(p, strings.TrimSuffix(Prefix, "/")); ok {
		p = s
	}
	p = strings.TrimPrefix(p, "/")
	rt, rest, ok := a.lookup(p)
	if !ok {
		writeResult(w, http.StatusNotFound, false, "no NDBench route "+r.URL.Path+"; routes: "+strings.Join(a.routeNames(), ", "))
		return
	}
	if rt.effect == changes {
		// Before anything else, OPTIONS and unknown methods included: NDBench's routes
		// change state on GET, which browsers send cross-site from <img src> or a link.
		if err := a.origins.Check(r); err != nil {
			writeResult(w, http.StatusForbidden, false, err.Error()+"; a page on another site may not change this node's state "+
				"(same-origin pages, clients that send neither Origin nor Sec-Fetch-Site, and origins given with --cors-origin may)")
			return
		}
	}
	if r.Method == http.MethodOptions {
		// NDBench answers the CORS preflight of config/set itself; here CORS is the API
		// server's (an allowlist), so this only says which methods exist.
		w.Header().Set("Allow", strings.Join(append(slices.Clone(rt.methods), http.MethodOptions), ", "))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !slices.Contains(rt.methods, r.Method) {
		w.Header().Set("Allow", strings.Join(append(slices.Clone(rt.methods), http.MethodOptions), ", "))
		writeResult(w, http.StatusMethodNotAllowed, false, "method "+r.Method+" not allowed; use "+strings.Join(rt.methods, " or "))
		return
	}
	rt.serve(w, r, rest)
}

func (a *api) lookup(p string) (route, string, bool) {
	if rt, ok := a.exact[strings.TrimSuffix(p, "/")]; ok {
		return rt, "", true
	}
	for pre, rt := range a.prefix {
		if rest, ok := strings.CutPrefix(p, pre); ok && rest != "" {
			return rt, rest, true
		}
	}
	return route{}, "", false
}

func (a *api) routeNames() []string {
	names := make([]string, 0, len(a.exact)+len(a.prefix))
	for n := range a.exact {
		names = append(names, n)
	}
	for n := range a.prefix {
		names = append(names, n+paramOf(n))
	}
	slices.Sort(names)
	return names
}

// notSupported answers an NDBench route that ndbench deliberately does not implement, so
// a script gets a reason instead of a 404.
func notSupported(name, why string) handlerFunc {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		writeResult(w, http.StatusNotImplemented, false, name+" is not supported: "+why)
	}
}

// writeJSON writes v as NDBench does (application/json).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeResult(w http.ResponseWriter, status int, ok bool, msg string) {
	writeJSON(w, status, Result{IsSuccess: ok, Message: &msg})
}

func success(w http.ResponseWriter, msg string) { writeResult(w, http.StatusOK, true, msg) }

// fail answers with NDBench's error body, prefix being NDBench's own message for the
// route ("NdBench start failed!"), and an HTTP status that tells whose fault it is.
func fail(w http.ResponseWriter, prefix string, err error) {
	writeResult(w, statusOf(err), false, prefix+" "+oneLine(err))
}

// statusOf maps an error onto an HTTP status. NDBench answers every failure with 500;
// here a request the caller can fix gets a 4xx, with the same body.
func statusOf(err error) int {
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		return http.StatusBadRequest
	case errors.Is(err, node.ErrNotInitialized), errors.Is(err, node.ErrAlreadyInitialized),
		errors.Is(err, engine.ErrBackfillRunning):
		return http.StatusConflict
	case errors.Is(err, driver.ErrUnknownDriver), errors.Is(err, config.ErrTooManyKeys):
		return http.StatusBadRequest
	}
	if _, ok := driver.AsFieldErrors(err); ok {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// badRequest is a request parameter the caller got wrong.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badParam(msg string) error { return &badRequest{msg: msg} }

// oneLine joins a multi-line error (driver.FieldErrors has one line per key).
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
