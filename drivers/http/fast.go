package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ndbench/ndbench/driver"
)

// The client engines (option engine). net/http speaks HTTP/1.1 and HTTP/2 and spends
// ~45 allocations and a goroutine per connection on a request; fasthttp speaks HTTP/1.1
// only, with no allocation per request in steady state and no goroutine per connection
// (the calling worker reads its answer), which is what a node holding ten thousand
// keep-alive connections needs. docs/performance.md has the figures that chose auto.
const (
	engineAuto     = "auto"
	engineFast     = "fasthttp"
	engineNetHTTP  = "nethttp"
	engineEnumList = engineAuto + ", " + engineFast + ", " + engineNetHTTP
)

// engineFor resolves the engine option: auto is fasthttp wherever every request is
// HTTP/1.1 (protocol http1, or auto with no https:// operation, since net/http speaks
// HTTP/2 over http:// only when told to), net/http otherwise. An explicit fasthttp with
// protocol h2 is an error: it would silently measure another protocol.
func (o *Options) engineFor(c *compiled) (string, error) {
	switch o.Engine {
	case engineNetHTTP:
		return engineNetHTTP, nil
	case engineFast:
		if o.Protocol == "h2" {
			return "", driver.FieldErrors{&driver.FieldError{Field: "engine", Value: o.Engine,
				Allowed: engineAuto + " or " + engineNetHTTP + " with protocol=h2 (fasthttp speaks HTTP/1.1 only)"}}
		}
		return engineFast, nil
	case engineAuto, "":
		switch o.Protocol {
		case "http1":
			return engineFast, nil
		case "h2":
			return engineNetHTTP, nil
		}
		for _, op := range c.ops {
			if op != nil && op.scheme == "https" {
				return engineNetHTTP, nil // auto over TLS may negotiate HTTP/2
			}
		}
		return engineFast, nil
	}
	return "", driver.FieldErrors{&driver.FieldError{Field: "engine", Value: o.Engine, Allowed: engineEnumList}}
}

// maxConnWait bounds a fasthttp request's wait for a connection beyond
// maxConnsPerHost. It is the longest workload.opTimeout, so the op's deadline always
// comes first; it only bounds a call without a deadline (net/http's would wait for ever).
const maxConnWait = 5 * time.Minute

// fastClients builds one fasthttp.HostClient per scheme and host the operations name;
// every operation's host is fixed when it is compiled, so the hot path needs no lookup.
func fastClients(o *Options, ops *[numSlots]*op, tlsConf *tls.Config, dial *dialer) [numSlots]*fasthttp.HostClient {
	var out [numSlots]*fasthttp.HostClient
	byHost := map[string]*fasthttp.HostClient{}
	maxConns := o.MaxConnsPerHost
	if maxConns == 0 {
		maxConns = math.MaxInt32 // net/http's 0: no cap (fasthttp's 0 would be 512)
	}
	for i, op := range ops {
		if op == nil {
			continue
		}
		key := op.scheme + "://" + op.host
		hc := byHost[key]
		if hc == nil {
			addr := op.host
			if _, _, err := net.SplitHostPort(addr); err != nil {
				if op.scheme == "https" {
					addr += ":443"
				} else {
					addr += ":80"
				}
			}
			hc = &fasthttp.HostClient{
				Addr:      addr,
				IsTLS:     op.scheme == "https",
				TLSConfig: tlsConf,
				Dial: func(addr string) (net.Conn, error) {
					return dial.DialContext(context.Background(), "tcp", addr)
				},
				MaxConns: maxConns,
				// Requests beyond the cap wait for a connection until the op's deadline
				// (DoDeadline), as net/http's do: the timeout option is about the answer,
				// and a wait bounded by it failed queued requests as "no free
				// connections" long before their deadline on a busy machine.
				MaxConnWaitTimeout:  maxConnWait,
				MaxIdleConnDuration: 90 * time.Second,
				// The timeout option bounds reading the answer; the op's deadline bounds
				// the whole request (DoDeadline).
				ReadTimeout:         o.Timeouts.Request,
				MaxResponseBodySize: int(min(int64(o.MaxResponseSize), math.MaxInt32)),
				// The URL template already escaped the path: send it as it is.
				DisablePathNormalizing:   true,
				NoDefaultUserAgentHeader: true,
				RetryIfErr:               retryLikeNetHTTP,
			}
			if o.Connections > 0 {
				// Oldest idle first, so that every connection opened at Init carries a
				// request in turn and none idles out.
				hc.ConnPoolStrategy = fasthttp.FIFO
			}
			byHost[key] = hc
		}
		out[i] = hc
	}
	return out
}

// retryLikeNetHTTP retries once what net/http retries or never sends: a GET, HEAD,
// OPTIONS or TRACE whose kept-alive connection broke, and any request on a connection
// the server had closed before answering (EOF, reset, broken pipe). net/http notices
// such a connection while it is idle, with a goroutine reading each one; fasthttp has no
// such goroutine and finds out by sending, so without the retry a write after an idle
// spell longer than the server's keep-alive would fail where net/http's succeeds. A
// timeout is never retried: it would double the op's time and hide the timeout.
func retryLikeNetHTTP(req *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	if attempts > 1 || isTimeout(err) || errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return false, false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return false, true
	}
	h := &req.Header
	return false, h.IsGet() || h.IsHead() || h.IsOptions() || h.IsTrace()
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout() || errors.Is(err, fasthttp.ErrNoFreeConns)
}

// fastHeaders is the op's headers as name, value pairs, for the hot path.
func (o *op) fastHeaders() [][2]string {
	var out [][2]string
	for name, values := range o.header {
		for _, v := range values {
			out = append(out, [2]string{name, v})
		}
	}
	return out
}

// doFast is do over fasthttp: the same request, status table and checks.
func (d *Driver) doFast(ctx context.Context, o *op, hc *fasthttp.HostClient, s *scratch, v *vars, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, d.transportError(ctx, o, key, err)
	}
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(o.method)
	// As net/http: no Content-Type but the configured one.
	req.Header.SetNoDefaultContentType(true)
	req.SetRequestURIBytes(s.url)
	req.Header.SetHost(o.host)
	if o.scheme == "https" {
		req.URI().SetScheme("https")
	}
	for _, h := range o.fastHdr {
		req.Header.Add(h[0], h[1])
	}
	if !d.opts.KeepAlive {
		req.SetConnectionClose()
	}
	if o.hasBody {
		s.bodyBuf = o.body.expand(s.bodyBuf[:0], v, false)
		req.SetBodyRaw(s.bodyBuf) // sent before Do returns; the buffer is reused after
	}
	var err error
	if dl, ok := ctx.Deadline(); ok {
		err = hc.DoDeadline(req, resp, dl)
	} else {
		// No way to abort a fasthttp request on cancellation: the timeout option
		// (ReadTimeout) bounds it instead.
		err = hc.Do(req, resp)
	}
	if err != nil {
		return nil, d.fastError(ctx, o, key, err)
	}
	if d.proto.Load() == nil {
		proto := "HTTP/1.1"
		d.proto.Store(&proto)
	}
	code := resp.StatusCode()
	out := outOther
	if code >= 100 && code < len(o.statuses) {
		out = o.statuses[code]
	}
	switch out {
	case outOK:
	case outMiss:
		return nil, driver.ErrNotFound
	default:
		return nil, driver.Wrap(out.class(), fmt.Errorf("http %s: %s %s (key %s): %d %s", o.name, o.method, o.displayURL(), key, code, http.StatusText(code)))
	}
	switch o.check {
	case checkBody:
		// The value read belongs to the engine; the response's buffer goes back to the pool.
		b := resp.Body()
		return append(make([]byte, 0, len(b)), b...), nil
	case checkJSON:
		return o.checkJSON(resp.Body(), v, key)
	}
	if o.kind == driver.KindRead {
		return []byte{}, nil
	}
	return nil, nil
}

// fastError classifies a fasthttp failure like transportError classifies net/http's:
// fasthttp's own timeout errors are not net.Errors, and a request that waited past its
// deadline for a free connection timed out.
func (d *Driver) fastError(ctx context.Context, o *op, key string, err error) error {
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return d.bodyError(ctx, o, key, errTooLarge)
	}
	if ctx.Err() == nil && !d.closed.Load() && isTimeout(err) {
		return driver.Wrap(driver.ClassTimeout, fmt.Errorf("http %s: %s %s (key %s): %w", o.name, o.method, o.displayURL(), key, err))
	}
	return d.transportError(ctx, o, key, err)
}
