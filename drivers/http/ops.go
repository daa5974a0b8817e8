package http

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// numSlots is the number of operation slots: read and write (Driver.Read and Write), then
// the declared operations below.
const numSlots = 9

// slots names the operation slots in the order of opOptions.raw: index 0 is Read, 1 is
// Write, 2+i is Definition.Operations[i]. driver.Definition.Operations is static per
// registration (the workload is checked against it before any driver is opened), so the
// HTTP driver cannot declare operations named by its configuration; it declares generic
// slots of each kind instead, and the configuration gives each slot its request.
var slots = [numSlots]struct {
	name string
	kind driver.Kind
}{
	{driver.OpRead, driver.KindRead},
	{driver.OpWrite, driver.KindWrite},
	{"read1", driver.KindRead},
	{"read2", driver.KindRead},
	{"write1", driver.KindWrite},
	{"write2", driver.KindWrite},
	{"other1", driver.KindOther},
	{"other2", driver.KindOther},
	// Named like the built-in operation, so a workload's mix "delete" means the same on
	// every store; of kind delete, so validation expects the key absent afterwards rather
	// than calling the miss lost.
	{driver.OpDelete, driver.KindDelete},
}

// declaredOperations are the slots beyond read and write, for the driver's Definition.
func declaredOperations() []driver.Operation {
	help := map[driver.Kind]string{
		driver.KindRead:   "a configured request whose answer is read like Driver.Read's (404 = miss)",
		driver.KindWrite:  "a configured request that sends the generated value",
		driver.KindOther:  "a configured request that gets the key only",
		driver.KindDelete: "a configured request that removes the key (404 = miss; validation then expects it absent)",
	}
	var out []driver.Operation
	for _, s := range slots[2:] {
		out = append(out, driver.Operation{Name: s.name, Kind: s.kind, Help: help[s.kind]})
	}
	return out
}

// rawOp is one slot's option values: request line, headers, body, status and check.
type rawOp struct{ request, headers, body, status, check string }

// outcome is what a response status means.
type outcome uint8

const (
	outOK outcome = iota
	outMiss
	outTimeout
	outUnavailable
	outThrottled
	outRejected
	outOther
)

var outcomeNames = map[string]outcome{
	"ok": outOK, "miss": outMiss, "timeout": outTimeout, "unavailable": outUnavailable,
	"throttled": outThrottled, "rejected": outRejected, "other": outOther,
}

// class returns the failure class of a failed outcome.
func (o outcome) class() driver.Class {
	switch o {
	case outTimeout:
		return driver.ClassTimeout
	case outUnavailable:
		return driver.ClassUnavailable
	case outThrottled:
		return driver.ClassThrottled
	case outRejected:
		return driver.ClassRejected
	}
	return driver.ClassOther
}

// checkKind is how a response is checked beyond its status.
type checkKind uint8

const (
	checkNone checkKind = iota // status only; the body is discarded
	checkBody                  // the body is the value read (the engine validates it)
	checkJSON                  // a JSON field is the value read, or must equal a template
)

// op is one configured operation, compiled for the hot path.
type op struct {
	name     string
	kind     driver.Kind
	method   string
	scheme   string
	host     string   // host[:port], the request's Host and URL.Host
	path     template // path and query, expanded with escaping into URL.Opaque
	display  string   // method and URL template for messages, credentials masked
	body     template
	hasBody  bool
	header   http.Header   // shared by all requests of the op, never modified after Init
	proto    *http.Request // what every request of the op copies: method, header, host
	statuses [600]outcome
	check    checkKind
	jsonPath []string
	jsonWant *template   // json:PATH=TEMPLATE
	usesSeq  bool        // some template has {seq}: only then is the shared counter touched
	fastHdr  [][2]string // header as name, value pairs, for the fasthttp engine
}

// parseOp compiles slot i's options. base is the parsed url option; common holds the
// headers every request carries. Errors are field errors naming the slot's options.
func parseOp(i int, r rawOp, base *url.URL, common http.Header) (*op, error) {
	name, kind := slots[i].name, slots[i].kind
	if strings.TrimSpace(r.request) == "" {
		return nil, nil
	}
	bad := func(suffix, value, allowed string) error {
		return driver.FieldErrors{&driver.FieldError{Field: name + suffix, Value: driver.Shown(false, value), Allowed: allowed}}
	}
	method, target, ok := strings.Cut(strings.TrimSpace(r.request), " ")
	target = strings.TrimSpace(target)
	if !ok || target == "" || !validToken(method) {
		return nil, bad("", r.request, "METHOD URL, e.g. GET /kv/{key} or POST http://host:8080/search?q={key}")
	}
	o := &op{name: name, kind: kind, method: method, display: driver.Shown(false, method+" "+target)}
	switch {
	case strings.HasPrefix(target, "/"):
		if base == nil {
			return nil, bad("", r.request, "an absolute URL (http://host/...) when the url option is empty")
		}
		o.scheme, o.host = base.Scheme, base.Host
		target = strings.TrimSuffix(base.EscapedPath(), "/") + target
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		scheme, rest, _ := strings.Cut(target, "://")
		host, path, _ := strings.Cut(rest, "/")
		if host == "" || strings.ContainsAny(host, "{}@") {
			return nil, bad("", r.request, "a URL whose host:port has no placeholders and no user info")
		}
		o.scheme, o.host, target = scheme, host, "/"+path
	default:
		return nil, bad("", r.request, "a URL starting with / (joined to the url option), http:// or https://")
	}
	if strings.ContainsAny(target, " \t\r\n#") {
		return nil, bad("", r.request, "a URL without spaces or a #fragment")
	}
	o.path = compile(target)

	o.header = common.Clone()
	if o.header == nil {
		o.header = http.Header{}
	}
	if err := parseHeaders(r.headers, o.header); err != nil {
		return nil, bad("Headers", r.headers, err.Error())
	}
	if r.body != "" {
		o.body, o.hasBody = compile(r.body), true
		if kind != driver.KindWrite && (o.body.uses(phValue) || o.body.uses(phValue64)) {
			return nil, bad("Body", r.body, "a template without {value}: only write operations get a value")
		}
	}
	if kind != driver.KindWrite && (o.path.uses(phValue) || o.path.uses(phValue64)) {
		return nil, bad("", r.request, "a URL without {value}: only write operations get a value")
	}
	o.proto = &http.Request{Method: method, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: o.header, Host: o.host, Body: http.NoBody}
	if err := o.parseStatuses(r.status); err != nil {
		return nil, bad("Status", r.status, err.Error())
	}
	if err := o.parseCheck(r.check); err != nil {
		return nil, bad("Check", r.check, err.Error())
	}
	o.usesSeq = o.path.uses(phSeq) || o.body.uses(phSeq) || (o.jsonWant != nil && o.jsonWant.uses(phSeq))
	return o, nil
}

// validToken reports whether s is an HTTP method token (RFC 9110: tchar).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// parseHeaders adds "Name: value" entries, separated by | or newlines, to h.
func parseHeaders(s string, h http.Header) error {
	for _, line := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == '\n' || r == '\r' }) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || !validToken(name) {
			return fmt.Errorf("entries Name: value separated by | or newlines")
		}
		h.Add(textproto.CanonicalMIMEHeaderKey(name), value)
	}
	return nil
}

// parseStatuses fills the status table: the defaults (2xx ok, 404 miss for read and
// delete operations, 408 and 504 timeout, 429 throttled, other 5xx unavailable, everything else
// rejected), then the op's entries CODE[-CODE]=outcome, later entries winning.
func (o *op) parseStatuses(spec string) error {
	for c := range o.statuses {
		switch {
		case c >= 200 && c <= 299:
			o.statuses[c] = outOK
		case c == 404 && (o.kind == driver.KindRead || o.kind == driver.KindDelete):
			o.statuses[c] = outMiss
		case c == 408 || c == 504:
			o.statuses[c] = outTimeout
		case c == 429:
			o.statuses[c] = outThrottled
		case c >= 500:
			o.statuses[c] = outUnavailable
		default:
			o.statuses[c] = outRejected
		}
	}
	const allowed = "CODE[-CODE]=CLASS entries separated by commas, CLASS one of ok, miss (read and delete operations), timeout, unavailable, throttled, rejected, other"
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		codes, class, ok := strings.Cut(e, "=")
		out, known := outcomeNames[strings.TrimSpace(class)]
		if !ok || !known || (out == outMiss && o.kind != driver.KindRead && o.kind != driver.KindDelete) {
			return fmt.Errorf("%s", allowed)
		}
		lo, hi, isRange := strings.Cut(strings.TrimSpace(codes), "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 100 || b > 599 || a > b {
			return fmt.Errorf("%s; codes 100 to 599", allowed)
		}
		for c := a; c <= b; c++ {
			o.statuses[c] = out
		}
	}
	return nil
}

// parseCheck reads body, none, json:PATH or json:PATH=TEMPLATE.
func (o *op) parseCheck(spec string) error {
	spec = strings.TrimSpace(spec)
	switch {
	case spec == "" || spec == "none":
		o.check = checkNone
	case spec == "body":
		if o.kind != driver.KindRead {
			return fmt.Errorf("none or json:PATH=TEMPLATE: only read operations return the body as the value read")
		}
		o.check = checkBody
	case strings.HasPrefix(spec, "json:"):
		path, want, hasWant := strings.Cut(strings.TrimPrefix(spec, "json:"), "=")
		path = strings.TrimSpace(path)
		if path == "" {
			return fmt.Errorf("json:PATH with PATH like data.items.0.id")
		}
		if !hasWant && o.kind != driver.KindRead {
			return fmt.Errorf("json:PATH=TEMPLATE: only read operations return a field as the value read")
		}
		o.check, o.jsonPath = checkJSON, strings.Split(path, ".")
		if hasWant {
			t := compile(want)
			o.jsonWant = &t
		}
	default:
		return fmt.Errorf("body, none, json:PATH or json:PATH=TEMPLATE")
	}
	return nil
}
