package geode

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "geode",
		Summary:    "Apache Geode regions over the developer REST API (get and put by key, values as JSON)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
	})
}

// Options configure the geode driver.
type Options struct {
	URL      string `opt:"url" default:"http://127.0.0.1:7070/geode/v1" help:"base URL of the REST API of a Geode server (started with start-dev-rest-api=true; https:// with tls options)"`
	Region   string `opt:"region" default:"ndbench" help:"region to get from and put into; it must exist (NDBench's Geode plugin used ndbench)"`
	PoolSize int    `opt:"poolSize" default:"64" min:"1" max:"10000" help:"HTTP connections kept open to the server; at least the number of workers"`

	Auth     driver.AuthOptions `username.help:"user name for HTTP basic authentication (a server with a SecurityManager); empty for none"`
	TLS      driver.TLSOptions
	Timeouts driver.TimeoutOptions
}

// Validate checks the URL and the region name, which goes into the URL path.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		errs = append(errs, &driver.FieldError{Field: "url", Value: driver.Shown(false, o.URL),
			Allowed: "an http:// or https:// URL of the REST API, e.g. http://127.0.0.1:7070/geode/v1 (credentials go in username and password)"})
	}
	if o.Region == "" || strings.ContainsAny(o.Region, "/?#%, ") {
		errs = append(errs, &driver.FieldError{Field: "region", Value: o.Region,
			Allowed: "a region name without /, ?, #, %, comma or space"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Driver is the geode driver. It is safe for concurrent use after Init.
type Driver struct {
	opts   Options
	client *http.Client
	base   string // URL up to and including the region, with a trailing /
	closed atomic.Bool
}

var errClosed = errors.New("geode driver closed")

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
)

// value is the JSON document a value is stored as: Geode's REST API stores JSON objects
// (as PDX), not raw bytes, so the value travels as base64 text in one field.
type value struct {
	V string `json:"v"`
}

// Init builds the HTTP client and checks the region exists.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	tlsConf, err := o.TLS.Config()
	if err != nil {
		return err
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: o.Timeouts.Connect}).DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: o.Timeouts.Connect,
		MaxIdleConnsPerHost: o.PoolSize,
		MaxIdleConns:        o.PoolSize,
		IdleConnTimeout:     90 * time.Second,
	}
	d.client = &http.Client{Transport: tr, Timeout: o.Timeouts.Request,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	d.base = strings.TrimSuffix(o.URL, "/") + "/" + o.Region + "/"
	// GET on the region lists its keys' values; limit=0 keeps the answer empty.
	status, body, err := d.do(ctx, http.MethodGet, strings.TrimSuffix(d.base, "/")+"?limit=0", nil)
	if err != nil {
		return fmt.Errorf("check region %s at %s: %w", o.Region, o.URL, err)
	}
	if status != http.StatusOK {
		return d.statusError("check region "+o.Region+" at "+o.URL, status, body)
	}
	return nil
}

// keyURL is the URL of key. Geode's REST API (Spring behind Jetty) cannot address every
// key: a comma splits the segment into a list of keys, an escaped %, ;, / or \ and the
// keys . and .. are refused with HTTP 500, and a non-ASCII key is stored under one name
// and looked up under another (a put then a get of "e-é" missed). Such keys are refused
// before they are sent, rather than misread.
func (d *Driver) keyURL(key string) (string, error) {
	ok := key != "" && key != "." && key != ".."
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = c >= 0x20 && c < 0x7f && !strings.ContainsRune(",%;/\\", rune(c))
	}
	if !ok {
		return "", driver.Wrap(driver.ClassRejected, fmt.Errorf("key %q: Geode's REST API addresses printable ASCII keys without , %% ; / or \\ (and not . or ..)", key))
	}
	return d.base + url.PathEscape(key), nil
}

// Read returns the value of key, or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	u, err := d.keyURL(key)
	if err != nil {
		return nil, err
	}
	status, body, err := d.do(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	switch {
	case status == http.StatusOK:
	case status == http.StatusNotFound && fromGeode(body):
		return nil, driver.ErrNotFound
	default:
		return nil, d.statusError("read", status, body)
	}
	var v value
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("read key %q: the stored document is not the driver's {\"v\": base64} (written by another tool?): %w", key, err)
	}
	b, err := base64.StdEncoding.DecodeString(v.V)
	if err != nil {
		return nil, fmt.Errorf("read key %q: field v is not base64 (written by another tool?): %w", key, err)
	}
	return b, nil
}

// Write puts value under key (a put replaces any earlier value).
func (d *Driver) Write(ctx context.Context, key string, val []byte) error {
	u, err := d.keyURL(key)
	if err != nil {
		return err
	}
	body, err := json.Marshal(value{V: base64.StdEncoding.EncodeToString(val)})
	if err != nil {
		return err
	}
	status, reply, err := d.do(ctx, http.MethodPut, u, body)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return d.statusError("write", status, reply)
	}
	return nil
}

// do sends one request and reads the whole answer. Errors without an answer are
// classified (the op's deadline and the timeout option: timeout; refused and reset
// connections: unavailable).
func (d *Driver) do(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	if d.closed.Load() {
		return 0, nil, driver.Wrap(driver.ClassUnavailable, errClosed)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, driver.Wrap(driver.ClassRejected, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if d.opts.Auth.Username != "" {
		req.SetBasicAuth(d.opts.Auth.Username, d.opts.Auth.Password)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, nil, classify(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, classify(err)
	}
	return resp.StatusCode, b, nil
}

// classify wraps a transport error: net/http hides the deadline of its own Timeout in an
// error whose Timeout() is true, which driver.Classify sees; refused and reset
// connections it sees too. url.Error's text carries the URL, which has no credentials.
func classify(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if c := driver.Classify(err); c != driver.ClassOther {
		return driver.Wrap(c, err)
	}
	return driver.Wrap(driver.ClassUnavailable, err)
}

// fromGeode reports whether an answer came from Geode's REST application, which states
// its reason as JSON ({"cause": ...}). The web server answers 404 with an empty body while
// the application is not deployed yet (a server starting), which is an outage, not a miss.
func fromGeode(body []byte) bool {
	return bytes.Contains(body, []byte(`"cause"`))
}

// statusError classifies an HTTP status of the REST API and keeps the start of its body,
// where Geode puts its reason ({"cause": ...}).
func (d *Driver) statusError(what string, status int, body []byte) error {
	geode := fromGeode(body)
	if len(body) > 200 {
		body = body[:200]
	}
	err := fmt.Errorf("%s: HTTP %d: %s", what, status, bytes.TrimSpace(body))
	switch {
	case status == http.StatusNotFound && !geode:
		return driver.Wrap(driver.ClassUnavailable, fmt.Errorf("%w (the REST API is not deployed: a server starting, or a wrong url)", err))
	case status == http.StatusTooManyRequests:
		return driver.Wrap(driver.ClassThrottled, err)
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return driver.Wrap(driver.ClassTimeout, err)
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway:
		return driver.Wrap(driver.ClassUnavailable, err)
	case status >= 400 && status < 500:
		return driver.Wrap(driver.ClassRejected, err)
	}
	return driver.Wrap(driver.ClassOther, err)
}

// ConnectionInfo describes the connection without secrets.
func (d *Driver) ConnectionInfo() map[string]string {
	return map[string]string{
		"url":      driver.Shown(false, d.opts.URL),
		"region":   d.opts.Region,
		"poolSize": strconv.Itoa(d.opts.PoolSize),
		"username": d.opts.Auth.Username,
		"tls":      strconv.FormatBool(d.opts.TLS.Enable),
	}
}

// Close releases idle connections; it copes with a failed Init. Later operations fail
// without connecting.
func (d *Driver) Close() error {
	d.closed.Store(true)
	if d.client != nil {
		d.client.CloseIdleConnections()
	}
	return nil
}
