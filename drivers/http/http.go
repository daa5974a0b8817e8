// Package http is the ndbench driver for HTTP services: every operation is a request
// described in the configuration (method, URL template, headers, body template, how
// status codes count, how the answer is checked), sent over HTTP/1.1 with keep-alive or
// HTTP/2 (over TLS, or cleartext h2c).
//
// # Operations
//
// Operations are slots: read and write (what op classes read and write use), and
// read1, read2 (read-like), write1, write2 (send the generated value), other1, other2
// (get the key only) and delete (gets the key and removes it), which op classes mix by
// name like any driver's operations (workload.readMix=read:9,read1:1). A request that
// deletes the key belongs in the delete slot, of kind delete: validation then expects
// the key absent until it is written again, where the same request in other1 makes every
// later read of the key a "lost" write. Each slot has five options, named after it:
//
//	read          request line METHOD URL, e.g. GET /kv/{key}; empty = not configured
//	readHeaders   extra headers, Name: value, separated by | or newlines
//	readBody      body template
//	readStatus    status classes over the defaults, e.g. 200-299=ok,409=rejected
//	readCheck     body, none, json:PATH or json:PATH=TEMPLATE
//
// A URL starting with / is joined to the url option; one starting with http:// or
// https:// names its own host. Placeholders, in URLs (percent-encoded) and bodies (as
// is): {key}, {value} and {value64} (the generated value, raw or base64; write
// operations only), {seq} (a counter of the requests that use it, unique per driver), {op} (the slot's name).
// Other brace text is literal, so JSON bodies need no escaping. Headers are static.
//
// # Status codes and checks
//
// By default 2xx is success, 404 is a miss for read and delete operations (driver.ErrNotFound),
// 408 and 504 are timeouts, 429 is throttled, other 5xx are unavailable and everything
// else (3xx included: redirects are not followed) is rejected. Errors without a response
// are timeouts (deadline, timeout option) or unavailable (refused, reset, closed).
// The check decides what a successful answer returns: body (the default of read
// operations) returns the body as the value read, which the engine validates when
// workload.validate is on (it checks what read returns, not read1 or read2);
// json:PATH returns the field at PATH (dot-separated names and array indexes; a string
// field as its text, anything else as JSON); json:PATH=TEMPLATE fails the operation
// (class other) unless the field equals the expanded template; none ignores the body
// (a read then returns an empty value, which validation would report: keep readCheck at
// body when workload.validate is on).
//
// # Connections
//
// protocol: auto (HTTP/2 when a TLS server offers it, else HTTP/1.1), http1, or h2
// (HTTP/2 only: ALPN over TLS, prior-knowledge h2c over http://). maxConnsPerHost caps
// HTTP/1.1 connections per host (0: no cap; HTTP/1.1 then opens one per concurrent
// request, and requests beyond the cap wait for a connection), and maxIdleConnsPerHost
// should be at least the number of workers, or connections are closed and reopened.
// HTTP/2 multiplexes requests onto few connections, but net/http does not hold it to
// maxConnsPerHost exactly: a burst dials up to the cap before the first connection is
// up, and another connection opens when every open one has the server's limit of
// concurrent streams in use (a burst of 2,000 requests with maxConnsPerHost=32 used 38
// to 41 connections to a Go server). Its strict mode, which would hold the cap, stalled
// such a burst on one connection in tests, so it is not used.
//
// sourceAddrs spreads connections over several local addresses, each new connection
// starting from the next (e.g. 127.0.0.2,127.0.0.3 or 127.0.1.0/24; a block stands for
// its host addresses; at most 1,024). One source address reaches one server address and
// port with at most its ephemeral ports (28,232 by default on Linux,
// net.ipv4.ip_local_port_range), so past ~28,000 connections to one server a node needs
// several. Init binds each address once and fails naming it when the machine does not
// have it. Linux answers on every 127.x.y.z; macOS has only 127.0.0.1 until aliases are
// added (sudo ifconfig lo0 alias 127.0.0.2 up), and Windows only the loopback addresses
// configured on an adapter (netsh interface ipv4 add address). Each connection also
// takes a file descriptor, in the client and in the server.
//
// Each worker has one request in flight, so by default a node holds at most as many
// connections as it has workers (10,000 at most). connections=N (fasthttp engine only)
// opens N keep-alive connections per host at Init and hands out the idle one used
// longest ago, so that a few workers keep many mostly idle connections open and each
// carries a request in turn, every N/rate seconds. That must stay within the client's
// 90 s idle limit and the server's own: many servers close a connection that sends no
// request for a while (nginx keepalive_timeout 75 s and client_header_timeout 60 s; a Go
// server's ReadHeaderTimeout also runs from the connection's start until its first
// request). A connection the server closed fails one request, retried once on the next
// connection, and is replaced. 19,000 connections used in turn at 1,000 ops/s against a
// Go server with a 10 s header timeout failed 8% of the first 19 s of requests that way;
// at 2,500 ops/s none. Handing out the oldest costs a copy of N pointers per request
// (~25 µs at 50,000).
//
// An https:// URL uses TLS, set up by the tls* options (tlsCAFile,
// client certificates, tlsVerify, tlsServerName); basic authentication comes from
// username and password, and authHeader (secret) is a header such as Authorization:
// Bearer TOKEN sent with every request. Neither is ever logged or reported; URLs in
// messages have credentials masked.
//
// # Client engines
//
// engine chooses the HTTP client: fasthttp (github.com/valyala/fasthttp; HTTP/1.1 only,
// no allocation per request once warm and no goroutine per connection: the worker that
// sends a request reads its answer, and an idle connection holds no buffers) or nethttp
// (Go's net/http: HTTP/1.1 and HTTP/2). auto, the default, is fasthttp wherever every
// request is HTTP/1.1 (protocol http1, or protocol auto with no https:// operation) and
// nethttp otherwise; engine=fasthttp with protocol=h2 is refused. Measured side by side
// (docs/performance.md), fasthttp did 2.5 to 2.8 times net/http's GETs per client
// CPU-second. Requests, status classes, checks and errors are the same with both; what
// differs: with fasthttp the timeout option bounds reading the whole answer (net/http:
// its headers), a request in flight cannot be abandoned when the run stops (it ends at
// the op's deadline or the timeout option, whichever is first; one waiting beyond
// maxConnsPerHost for a connection, at the op's deadline), and maxIdleConnsPerHost
// does not apply (connections idle for 90 s are closed). The connection information
// names the engine and the open-files limit: each connection takes a file descriptor,
// and Go raises the soft RLIMIT_NOFILE to the hard limit at start, so that limit (less
// the few files the process holds) is the most connections one node opens.
//
// # Example
//
// A key-value service with a search route, validated reads, and a delete now and then,
// in a YAML configuration file:
//
//	driver:
//	  name: http
//	drivers:
//	  http:
//	    url: https://kv.internal:8443/v1
//	    protocol: h2
//	    tlsCAFile: /etc/ssl/private-ca.pem
//	    # authHeader (secret) from the environment, not the file:
//	    # NDBENCH_DRIVERS_HTTP_AUTHHEADER="Authorization: Bearer ..."
//	    read: GET /kv/{key}                            # the defaults, spelt out
//	    write: PUT /kv/{key}
//	    writeHeaders: "Content-Type: application/octet-stream"
//	    read1: POST /search                            # op "read1": a search
//	    read1Body: '{"query":"{key}","limit":10}'
//	    read1Headers: "Content-Type: application/json"
//	    read1Check: json:hits.0.id={key}               # the first hit must be the key
//	    delete: DELETE /kv/{key}                       # op "delete": 404 is a miss
//	workload:
//	  validate: true
//	  readMix: read:8,read1:2
//	  ops:
//	    cleanup: {rate: 50, workers: 2, mix: delete}
//
// or on the command line: ndbench run --set driver.name=http --set
// drivers.http.url=http://127.0.0.1:8080 --set workload.readRate=2000.
package http

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "http",
		Summary:    "HTTP/1.1 and HTTP/2 services, each operation a configured request",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Operations: declaredOperations(),
	})
}

// Options configure the HTTP driver.
type Options struct {
	URL                 string      `opt:"url" default:"http://127.0.0.1:8080" reach:"target" help:"base URL that request paths starting with / are joined to"`
	Protocol            string      `opt:"protocol" default:"auto" enum:"auto,http1,h2" help:"auto: HTTP/2 if a TLS server offers it, else HTTP/1.1; http1; h2: HTTP/2 only (h2c over http://)"`
	Engine              string      `opt:"engine" default:"auto" enum:"auto,fasthttp,nethttp" help:"client engine: auto = fasthttp where every request is HTTP/1.1 (protocol http1, or auto without https://), else nethttp; fasthttp speaks HTTP/1.1 only"`
	MaxConnsPerHost     int         `opt:"maxConnsPerHost" default:"0" min:"0" max:"100000" help:"connections per host at most; 0 = no limit"`
	MaxIdleConnsPerHost int         `opt:"maxIdleConnsPerHost" default:"1024" min:"1" max:"100000" help:"idle connections kept per host; at least the workers, or connections churn"`
	KeepAlive           bool        `opt:"keepAlive" default:"true" help:"reuse connections (false: one connection per request, to measure set-up)"`
	Connections         int         `opt:"connections" default:"0" min:"0" max:"1000000" help:"keep-alive connections opened per host at Init and used in turn, for many mostly idle connections with fewer workers (fasthttp engine); 0 = opened on demand, one per request in flight"`
	SourceAddrs         string      `opt:"sourceAddrs" default:"" help:"local addresses connections start from, in turn: IPs and CIDR blocks separated by commas (e.g. 127.0.0.2,127.0.0.3 or 127.0.1.0/24; at most 1024); empty = the system's choice"`
	Headers             string      `opt:"headers" default:"" help:"headers of every request, Name: value, separated by | or newlines"`
	AuthHeader          string      `opt:"authHeader" default:"" secret:"true" help:"a header with credentials sent with every request, e.g. Authorization: Bearer TOKEN"`
	MaxResponseSize     driver.Size `opt:"maxResponseSize" default:"64MiB" min:"1" max:"1GiB" help:"largest response body read; larger answers fail (class other)"`
	Auth                driver.AuthOptions
	// The URL's scheme says whether a request uses TLS (https://), so the group's tls
	// switch is not offered: its other options apply to every https:// request.
	TLS      driver.TLSOptions     `omit:"tls"`
	Timeouts driver.TimeoutOptions `timeout.help:"time to wait for an answer's headers once the request is sent (the op's deadline bounds the whole request)"`
	Ops      opOptions
}

// Validate compiles the operations, so that a bad template or status list is a field
// error when the configuration changes, not at Init. It reads no files and opens nothing.
func (o *Options) Validate() error {
	c, err := o.compile()
	if err != nil {
		return err
	}
	if _, err := parseSourceAddrs(o.SourceAddrs); err != nil {
		return err
	}
	engine, err := o.engineFor(c)
	if err != nil {
		return err
	}
	return o.checkConnections(engine)
}

// compiled is what Init builds from the options.
type compiled struct {
	base *url.URL
	ops  [numSlots]*op
}

func (o *Options) compile() (*compiled, error) {
	var errs driver.FieldErrors
	add := func(err error) {
		var fe driver.FieldErrors
		if errors.As(err, &fe) {
			errs = append(errs, fe...)
		} else if err != nil {
			errs = append(errs, &driver.FieldError{Field: "?", Allowed: err.Error()})
		}
	}
	c := &compiled{}
	if s := strings.TrimSpace(o.URL); s != "" {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, driver.FieldErrors{&driver.FieldError{Field: "url", Value: driver.Shown(false, s),
				Allowed: "http://host[:port][/path] or https://..., without user info, query or fragment (credentials go in username/password or authHeader)"}}
		}
		c.base = u
	}
	common := http.Header{}
	if err := parseHeaders(o.Headers, common); err != nil {
		add(driver.FieldErrors{&driver.FieldError{Field: "headers", Value: o.Headers, Allowed: err.Error()}})
	}
	if o.AuthHeader != "" {
		// The value is secret: the error shows neither it nor the parser's view of it.
		if err := parseHeaders(o.AuthHeader, common); err != nil {
			add(driver.FieldErrors{&driver.FieldError{Field: "authHeader", Value: driver.Redacted, Allowed: "one Name: value header"}})
		}
	}
	if o.Auth.Username != "" {
		common.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(o.Auth.Username+":"+o.Auth.Password)))
	}
	for i, r := range o.Ops.raw() {
		op, err := parseOp(i, r, c.base, common)
		add(err)
		c.ops[i] = op
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// Driver is the HTTP driver. It is safe for concurrent use after Init.
type Driver struct {
	opts      Options
	ops       [numSlots]*op
	transport *http.Transport
	fast      [numSlots]*fasthttp.HostClient // per op, when the engine is fasthttp
	engine    string
	maxBody   int64
	seq       atomic.Uint64
	closed    atomic.Bool
	proto     atomic.Pointer[string] // protocol of the last answer ("HTTP/2.0"), for ConnectionInfo
}

// errClosed is returned by operations on a closed driver.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("http: driver is closed"))

// Init compiles the operations and builds the transport. It sends no request: an HTTP
// service has no universal health check, and the first operations show at once whether
// it answers.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	c, err := o.compile()
	if err != nil {
		return err
	}
	tlsOpts := o.TLS
	tlsOpts.Enable = true // the scheme decides; Config needs it set to build anything
	tlsConf, err := tlsOpts.Config()
	if err != nil {
		return err
	}
	engine, err := o.engineFor(c)
	if err != nil {
		return err
	}
	src, err := parseSourceAddrs(o.SourceAddrs)
	if err != nil {
		return err
	}
	if err := checkSourceAddrs(src); err != nil {
		return err
	}
	dial := newDialer(o.Timeouts.Connect, src)
	d.opts, d.ops, d.engine = *o, c.ops, engine
	d.maxBody = int64(o.MaxResponseSize)
	if err := o.checkConnections(engine); err != nil {
		return err
	}
	if engine == engineFast {
		d.fast = fastClients(o, &c.ops, tlsConf, dial)
		for _, op := range c.ops {
			if op != nil {
				op.fastHdr = op.fastHeaders()
			}
		}
		if err := openConnections(ctx, d.fast, o.Connections, o.Timeouts.Connect); err != nil {
			d.Close()
			return err
		}
	} else {
		d.transport = newTransport(o, tlsConf, dial)
	}
	return nil
}

// newTransport builds the one transport every request goes through.
func newTransport(o *Options, tlsConf *tls.Config, dial *dialer) *http.Transport {
	t := &http.Transport{
		DialContext:           dial.DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   o.Timeouts.Connect,
		MaxIdleConns:          0, // no global cap: maxIdleConnsPerHost is the limit
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		DisableKeepAlives:     !o.KeepAlive,
		DisableCompression:    true, // measure the bytes the service sends, not gzip
		ResponseHeaderTimeout: o.Timeouts.Request,
		// A proxy from the environment would measure the proxy; none unless asked.
		Proxy:           nil,
		WriteBufferSize: 16 << 10,
		ReadBufferSize:  16 << 10,
	}
	var p http.Protocols
	switch o.Protocol {
	case "http1":
		p.SetHTTP1(true)
	case "h2":
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
	default:
		p.SetHTTP1(true)
		p.SetHTTP2(true)
	}
	t.Protocols = &p
	return t
}

// Read runs the read operation.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	return d.do(ctx, 0, key, nil)
}

// Write runs the write operation with value as {value}.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	_, err := d.do(ctx, 1, key, value)
	return err
}

// Do runs declared operation i (read1, read2, write1, write2, other1, other2, delete).
func (d *Driver) Do(ctx context.Context, i int, key string, value []byte) ([]byte, error) {
	if i < 0 || i+2 >= numSlots {
		return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("http: no operation %d", i))
	}
	return d.do(ctx, i+2, key, value)
}

// ConnectionInfo shows the base URL (credentials masked), protocol settings and the
// protocol of the last answer; never headers, which may hold credentials.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{
		"url":             driver.Shown(false, d.opts.URL),
		"protocol":        d.opts.Protocol,
		"maxConnsPerHost": fmt.Sprint(d.opts.MaxConnsPerHost),
		"engine":          d.engine,
	}
	var names []string
	for _, o := range d.ops {
		if o != nil {
			names = append(names, o.name+"="+o.display)
		}
	}
	info["operations"] = strings.Join(names, "; ")
	if p := d.proto.Load(); p != nil {
		info["negotiated"] = *p
	}
	if f := openFilesInfo(); f != "" {
		info["openFilesLimit"] = f
	}
	return info
}

// Close closes idle connections; later operations fail as unavailable. Safe after a
// failed Init.
func (d *Driver) Close() error {
	d.closed.Store(true)
	if d.transport != nil {
		d.transport.CloseIdleConnections()
	}
	for _, hc := range d.fast {
		if hc != nil {
			hc.CloseIdleConnections()
		}
	}
	return nil
}
