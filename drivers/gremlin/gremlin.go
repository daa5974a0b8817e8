package gremlin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "gremlin",
		Summary:    "JanusGraph and any TinkerPop Gremlin Server (vertices keyed by a property, over WebSocket with GraphBinary or GraphSON)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
	})
}

// Options configure the gremlin driver. The label and property names default to those of
// NDBench's JanusGraph plugin, so a graph it filled reads the same.
type Options struct {
	Addrs           []string    `opt:"addrs" default:"127.0.0.1:8182" help:"Gremlin Server or JanusGraph Server addresses (host:port); connections are spread over them"`
	Path            string      `opt:"path" default:"/gremlin" help:"WebSocket path of the Gremlin endpoint"`
	TraversalSource string      `opt:"traversalSource" default:"g" help:"name of the server's traversal source the scripts run against (aliased to g)"`
	VertexLabel     string      `opt:"vertexLabel" default:"level1" help:"label of the vertices written and read (NDBench's janusgraph plugin: level1)"`
	KeyProperty     string      `opt:"keyProperty" default:"prop_customId" help:"property holding the key; index it (NDBench's janusgraph plugin: prop_customId)"`
	ValueProperty   string      `opt:"valueProperty" default:"metadata" help:"property holding the value, base64 text (NDBench's janusgraph plugin: metadata)"`
	Upsert          bool        `opt:"upsert" default:"true" live:"true" help:"true: a write updates the key's vertex or creates it (one vertex per key); false: every write adds a vertex, as NDBench did, and a read returns the latest one"`
	PoolSize        int         `opt:"poolSize" default:"8" min:"1" max:"1024" help:"WebSocket connections; each carries many requests at once"`
	Serializer      string      `opt:"serializer" default:"graphbinary" enum:"graphbinary,graphson3" help:"message format: graphbinary (GraphBinary 1.0, TinkerPop 3.5+ and JanusGraph 0.6+ servers) or graphson3 (GraphSON 3.0 JSON, for servers that offer no GraphBinary serializer)"`
	MaxMessageSize  driver.Size `opt:"maxMessageSize" default:"2MiB" min:"64KiB" max:"256MiB" help:"largest request the driver sends (values up to about 3/4 of it, as base64); each is one WebSocket frame built in a buffer this large, lent to a connection only while it writes. Keep it within the server's maxContentLength"`

	Auth     driver.AuthOptions
	TLS      driver.TLSOptions
	Timeouts driver.TimeoutOptions `timeout.help:"client-side timeout of one request, also sent as the request's evaluationTimeout so the server gives up too (the op's context deadline applies as well)"`
}

// Validate checks the rules the tags cannot express. Names are sent as bindings, never
// spliced into the script, so any non-empty text is safe.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if len(o.Addrs) == 0 {
		errs = append(errs, &driver.FieldError{Field: "addrs", Allowed: "one or more host:port addresses"})
	}
	for _, a := range o.Addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			errs = append(errs, &driver.FieldError{Field: "addrs", Value: a, Allowed: "host:port (e.g. 127.0.0.1:8182)"})
		}
	}
	if !strings.HasPrefix(o.Path, "/") {
		errs = append(errs, &driver.FieldError{Field: "path", Value: o.Path, Allowed: "a URL path starting with / (Gremlin Server's is /gremlin)"})
	}
	for _, f := range []struct{ name, v string }{
		{"traversalSource", o.TraversalSource}, {"vertexLabel", o.VertexLabel},
		{"keyProperty", o.KeyProperty}, {"valueProperty", o.ValueProperty},
	} {
		if strings.TrimSpace(f.v) == "" {
			errs = append(errs, &driver.FieldError{Field: f.name, Value: f.v, Allowed: "a non-empty name"})
		}
	}
	if o.KeyProperty != "" && o.KeyProperty == o.ValueProperty {
		errs = append(errs, &driver.FieldError{Field: "valueProperty", Value: o.ValueProperty,
			Allowed: "a property other than keyProperty " + o.KeyProperty})
	}
	if o.KeyProperty == writtenAtProperty || o.ValueProperty == writtenAtProperty {
		errs = append(errs, &driver.FieldError{Field: "keyProperty", Value: writtenAtProperty,
			Allowed: "a property other than " + writtenAtProperty + " (the driver's write time with upsert=false)"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// writtenAtProperty holds a vertex's write time (Unix nanoseconds of the writing client)
// when upsert is false, so a read can return the latest of a key's vertices.
const writtenAtProperty = "ndbenchWrittenAt"

// The scripts. Everything that varies is a binding, so Gremlin Server compiles each script
// once and caches it.
const (
	// upsertScript updates every vertex of the key (normally one) or creates one.
	upsertScript = "g.V().has(l, kp, k).fold().coalesce(unfold(), addV(l).property(kp, k)).property(single, vp, v).iterate()"
	// insertScript adds a vertex per write, as NDBench's janusgraph plugin did.
	insertScript = "g.addV(l).property(kp, k).property(vp, v).property(tp, ts).iterate()"
	// readScript returns the value of the key's latest vertex: vertices written by an
	// upsert carry no write time and sort as the oldest.
	readScript = "g.V().has(l, kp, k).order().by(coalesce(values(tp), constant(0L)), desc).limit(1).values(vp)"
	// readOneScript is the read when every write is an upsert: any vertex of the key holds
	// the latest value (an upsert sets it on all of them), so no sort is needed.
	readOneScript = "g.V().has(l, kp, k).limit(1).values(vp)"
	// bulkUpsertScript and bulkInsertScript are WriteBulk's: the single-key scripts in a
	// loop over the bindings ks and vs, one request and (on a transactional graph such as
	// JanusGraph) one transaction per batch. A key given twice ends with its last value.
	bulkUpsertScript = "for (int i = 0; i < ks.size(); i++) { g.V().has(l, kp, ks[i]).fold().coalesce(unfold(), addV(l).property(kp, ks[i])).property(single, vp, vs[i]).iterate() }"
	bulkInsertScript = "for (int i = 0; i < ks.size(); i++) { g.addV(l).property(kp, ks[i]).property(vp, vs[i]).property(tp, ts + i).iterate() }"
	// pingScript checks the traversal source exists.
	pingScript = "g.inject(0)"
)

// Driver is the gremlin driver. It is safe for concurrent use after Init.
type Driver struct {
	opts     Options
	pool     *pool
	ids      *idSource
	codec    *codec
	upsert   atomic.Bool
	password string // only to scrub it from error text; never shown

	maxMessage int // maxMessageSize: a larger request is refused before it is sent
}

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.Reconfigurer     = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
)

// Init builds the connection pool and checks the server runs a script against the
// traversal source.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	d.password = o.Auth.Password
	d.upsert.Store(o.Upsert)
	tlsConf, err := o.TLS.Config()
	if err != nil {
		return err
	}
	scheme := "ws"
	if tlsConf != nil {
		scheme = "wss"
	}
	d.ids = newIDSource()
	d.codec = codecs[o.Serializer]
	if d.codec == nil { // options built in code, past the enum check
		d.codec = codecs["graphbinary"]
	}
	wp := &writePool{}
	cfgs := make([]*dialConfig, len(o.Addrs))
	for i, a := range o.Addrs {
		cfgs[i] = &dialConfig{
			url: scheme + "://" + a + o.Path, addr: a, tls: tlsConf,
			username: o.Auth.Username, password: o.Auth.Password,
			timeout: o.Timeouts.Connect, ids: d.ids,
			maxMessage: int(o.MaxMessageSize), writePool: wp, codec: d.codec,
		}
	}
	d.pool = newPool(cfgs, o.PoolSize)
	d.maxMessage = int(o.MaxMessageSize)
	if _, err := d.submit(ctx, pingScript); err != nil {
		return d.fail("check traversal source "+o.TraversalSource+" on "+strings.Join(o.Addrs, ","), err)
	}
	return nil
}

// Read returns the value of key's vertex, or driver.ErrNotFound when no vertex has it.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	script := readOneScript
	if !d.upsert.Load() {
		script = readScript
	}
	data, err := d.submit(ctx, script, "l", d.opts.VertexLabel, "kp", d.opts.KeyProperty, "k", key,
		"vp", d.opts.ValueProperty, "tp", writtenAtProperty)
	if err != nil {
		return nil, d.fail("read", err)
	}
	if len(data) == 0 {
		return nil, driver.ErrNotFound
	}
	s, ok := data[0].(string)
	if !ok {
		return nil, fmt.Errorf("read: property %s of key %q is a %T, not the base64 text the driver writes", d.opts.ValueProperty, key, data[0])
	}
	v, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("read: property %s of key %q is not base64 (written by another tool?): %w", d.opts.ValueProperty, key, err)
	}
	return v, nil
}

// Write stores value under key: an upsert of the key's vertex, or (upsert=false) a new
// vertex. The value goes out as base64 text, so every graph backend stores it as a plain
// string property and every byte comes back as written.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	v := base64.StdEncoding.EncodeToString(value)
	var err error
	if d.upsert.Load() {
		_, err = d.submit(ctx, upsertScript, "l", d.opts.VertexLabel, "kp", d.opts.KeyProperty, "k", key,
			"vp", d.opts.ValueProperty, "v", v)
	} else {
		_, err = d.submit(ctx, insertScript, "l", d.opts.VertexLabel, "kp", d.opts.KeyProperty, "k", key,
			"vp", d.opts.ValueProperty, "v", v, "tp", writtenAtProperty, "ts", time.Now().UnixNano())
	}
	if err != nil {
		return d.fail("write", err)
	}
	return nil
}

// WriteBulk writes a batch (the backfill's) in one request: upserts, or with upsert=false
// new vertices whose write times keep the batch's order. A batch larger than
// maxMessageSize is rejected as a whole, before anything is sent.
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("bulk write: %d keys but %d values", len(keys), len(values)))
	}
	if len(keys) == 0 {
		return nil
	}
	ks, vs := make([]any, len(keys)), make([]any, len(keys))
	for i, k := range keys {
		ks[i], vs[i] = k, base64.StdEncoding.EncodeToString(values[i])
	}
	var err error
	if d.upsert.Load() {
		_, err = d.submit(ctx, bulkUpsertScript, "l", d.opts.VertexLabel, "kp", d.opts.KeyProperty,
			"vp", d.opts.ValueProperty, "ks", ks, "vs", vs)
	} else {
		_, err = d.submit(ctx, bulkInsertScript, "l", d.opts.VertexLabel, "kp", d.opts.KeyProperty,
			"vp", d.opts.ValueProperty, "tp", writtenAtProperty, "ks", ks, "vs", vs, "ts", time.Now().UnixNano())
	}
	if err != nil {
		return d.fail("bulk write", err)
	}
	return nil
}

// submit runs a script with bindings (name, value pairs) and returns its results. It
// returns when the reply arrives or the context (bounded by the timeout option) ends,
// whichever is first.
func (d *Driver) submit(ctx context.Context, script string, bindings ...any) ([]any, error) {
	return d.submitWith(ctx, d.opts.Timeouts.Request, script, bindings...)
}

// submitWith is submit with the client-side timeout given; the server's evaluationTimeout
// is still the timeout option (tests make the two differ).
func (d *Driver) submitWith(ctx context.Context, timeout time.Duration, script string, bindings ...any) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := d.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	id := d.ids.next()
	msg, err := d.codec.encode(nil, id, "eval", "",
		"gremlin", script,
		"language", "gremlin-groovy",
		"aliases", kv{"g", d.opts.TraversalSource},
		"bindings", kv(bindings),
		"evaluationTimeout", d.opts.Timeouts.Request.Milliseconds())
	if err != nil {
		return nil, err
	}
	if len(msg) > d.maxMessage {
		return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("request of %d bytes exceeds maxMessageSize %d (values are sent as base64, 4/3 of their size)", len(msg), d.maxMessage))
	}
	cl := c.register(id)
	if err := c.write(ctx, msg); err != nil {
		c.forget(id)
		return nil, err
	}
	return c.wait(ctx, id, cl)
}

// Reconfigure switches upsert while the load runs.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	// Only the atomic changes: workers read d.opts concurrently, so it stays as Init set it.
	d.upsert.Store(o.Upsert)
	return nil
}

// ConnectionInfo describes the connection without secrets.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{
		"addrs":           strings.Join(d.opts.Addrs, ","),
		"path":            d.opts.Path,
		"traversalSource": d.opts.TraversalSource,
		"vertexLabel":     d.opts.VertexLabel,
		"keyProperty":     d.opts.KeyProperty,
		"valueProperty":   d.opts.ValueProperty,
		"upsert":          strconv.FormatBool(d.upsert.Load()), // live: d.opts keeps Init's value
		"poolSize":        strconv.Itoa(d.opts.PoolSize),
		"serializer":      d.opts.Serializer,
		"tls":             strconv.FormatBool(d.opts.TLS.Enable),
		"username":        d.opts.Auth.Username,
	}
	if d.pool != nil {
		info["connections_open"] = strconv.Itoa(d.pool.open())
	}
	return info
}

// Close closes every connection; it copes with a failed Init.
func (d *Driver) Close() error {
	if d.pool != nil {
		d.pool.close()
	}
	return nil
}

// fail classifies err and prefixes what was being done, scrubbing the password in case
// some message carried it.
func (d *Driver) fail(what string, err error) error {
	class := Classify(err)
	msg := what + ": " + err.Error()
	if d.password != "" && strings.Contains(msg, d.password) {
		return driver.Wrap(class, errors.New(strings.ReplaceAll(msg, d.password, driver.CredentialMask)))
	}
	return driver.Wrap(class, fmt.Errorf("%s: %w", what, err))
}

// Classify maps an error of the driver's client to a driver class: Gremlin Server's
// status codes first, then WebSocket and network failures.
func Classify(err error) driver.Class {
	var se *statusError
	if errors.As(err, &se) {
		if se.code == statusEvaluation && isConflict(se.message) {
			return driver.ClassThrottled
		}
		return classifyStatus(se.code)
	}
	if errors.Is(err, errClosed) {
		return driver.ClassUnavailable
	}
	if errors.Is(err, websocket.ErrBadHandshake) {
		// Something answered HTTP but refused the upgrade: a wrong path or not a
		// Gremlin endpoint, which retrying will not fix.
		return driver.ClassRejected
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) || errors.Is(err, websocket.ErrCloseSent) {
		return driver.ClassUnavailable
	}
	return driver.Classify(err)
}

// isConflict reports whether a failed evaluation was a transaction that lost to another
// (JanusGraph's locking exceptions, TinkerTransactionGraph's conflicts): the store
// refusing work because of contention on hot keys, counted as throttled like a
// serialization failure in SQL stores; the driver does not retry it.
func isConflict(msg string) bool {
	return strings.Contains(msg, "Conflict") || strings.Contains(msg, "LockingException") ||
		strings.Contains(msg, "ConcurrentModification")
}

func classifyStatus(code int32) driver.Class {
	switch code {
	case statusTooManyRequests:
		return driver.ClassThrottled
	case statusServerTimeout:
		return driver.ClassTimeout
	case statusTemporary:
		return driver.ClassUnavailable
	case statusUnauthorized, statusAuthenticate, statusMalformed, statusInvalidArgs,
		statusEvaluation, statusSerializationErr, statusFailStep:
		return driver.ClassRejected
	}
	return driver.ClassOther
}
