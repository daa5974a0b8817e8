// Package memcached is the ndbench driver for memcached (and proxies that speak its text
// protocol, such as twemproxy), with two clients: its own (client=direct) and
// github.com/bradfitz/gomemcache, with optional EVCache-style replication across zones.
//
// # Clients
//
// client=direct (what client=auto picks unless two or more zones are set) gives each
// engine worker a connection of its own to each server and runs its hot loop itself
// (direct.go, text.go): the worker appends its requests (get, set, delete) to one buffer
// per server, writes each with one system call, and parses the replies in place, with no
// pool, lock or goroutine between it and the socket and no allocation per operation.
// Connections = workers × servers; a worker's connections close when it goes (an elastic
// pool shrinking). They are opened at Init, one per worker of the workload and server, 64
// connects in flight at a time (driver.Warmer), as memtier connects before its clock
// starts, so a worker's first operation on a server does not time a connect; a server
// that fails there stops only its own (the error names it), a connection that waits more
// than 30 s for its worker (a serve session not started yet) is closed, and those
// workers, like workers added while the load runs, connect on their first operation.
// workload.pipeline > 1 sends that many requests per write. It serves
// one zone (servers, or zones with a single zone): client=direct with two or more zones
// is refused. A batch ends at the earlier of the operation's deadline (workload.opTimeout)
// and timeout; a request that ended at its deadline closes its connection (its reply may
// still come, out of step), and the next operation on that server dials again within its
// own time. docs/performance.md (issue 41) has the measurements that made it the default.
//
// client=gomemcache sends each operation on a pooled connection of the library.
//
// # Servers and connections
//
// servers lists memcached nodes; keys are spread over them as gomemcache spreads them
// (the CRC-32 of the key modulo the number of servers, in the order listed), on both
// clients, so data written by either is read by the other. With client=gomemcache every
// operation in flight holds one connection, and after it gomemcache keeps at most
// maxIdleConns idle connections per server, closing the rest. Set maxIdleConns to at least
// the number of workers that may talk to one server at once (read plus write workers),
// otherwise connections are opened and closed on every operation and the benchmark measures
// TCP handshakes. The default, 64, covers NDBench's usual worker counts (with
// client=direct it bounds only the idle connections kept for calls outside the workers:
// backfill, the API). timeout bounds each operation's socket reads and writes and each
// dial (gomemcache has no per-call context; the driver checks the operation's context
// before every network call).
//
// # Zones (EVCache-style replication)
//
// zones replaces servers with named groups of servers, one copy of the data per zone:
//
//	zones=a=10.0.0.1:11211,10.0.0.2:11211;b=10.0.1.1:11211;c=10.0.2.1:11211
//
// Zones are separated by ';', a zone is name=server,server,... . localZone (default: the
// first zone listed; live) is where reads go first. A write goes to every zone in parallel;
// writeSuccess says when it counts as a success: any (default, as EVCache: at least one
// zone stored it; failures in other zones are counted per zone, and later reads there may
// miss or see an older value, which validation reports as stale), all (every zone stored
// it), or local (the local zone stored it). A read tries the local zone, then the other
// zones in the order listed, moving on after a miss or an error; the first hit wins. A read
// that hits nowhere is a miss (driver.ErrNotFound) if any zone answered "not found", and
// otherwise fails with the local zone's error. Per-zone counters (DriverStats):
// zone.NAME.reads, .misses, .read_errors, .fallbacks (reads that reached this zone because
// an earlier zone missed or failed), .writes and .write_errors.
//
// # Errors
//
// A cache miss is driver.ErrNotFound. No servers, refused or reset connections are
// unavailable; connect timeouts and socket timeouts are timeout; a malformed key (over 250
// bytes or with spaces/control characters), a value over maxValueSize (checked before
// sending; memcached's default item limit is 1 MB) and CLIENT_ERROR replies are rejected;
// "SERVER_ERROR out of memory" is throttled. Behind twemproxy (or Dynomite), the proxy's
// "SERVER_ERROR Connection timed out" is timeout and "SERVER_ERROR Connection refused" (or
// reset, host down, unreachable) is unavailable: a backend is down or stalled. Other server
// errors are other.
package memcached

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "memcached",
		Summary:    "memcached (text protocol, its own client or gomemcache), with EVCache-style zone replication",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Pipelines: func(opts any) bool {
			o, ok := opts.(*Options)
			return ok && o.direct()
		},
	})
}

// Options configure the memcached driver.
type Options struct {
	Servers      []string `opt:"servers" default:"127.0.0.1:11211" help:"memcached servers host:port (ignored when zones is set)" alias:"host,hosts"`
	Zones        string   `opt:"zones" default:"" help:"replication zones, e.g. a=h1:11211,h2:11211;b=h3:11211 (replaces servers)"`
	LocalZone    string   `opt:"localZone" default:"" live:"true" help:"zone read first (default: the first zone listed)"`
	WriteSuccess string   `opt:"writeSuccess" default:"any" enum:"any,all,local" help:"with zones, a write succeeds when any zone, all zones or the local zone stored it"`
	// gomemcache has one timeout for dialling, reading and writing, so the group's
	// connectTimeout is omitted and its timeout keeps the default and bounds it had here.
	Timeouts     driver.TimeoutOptions `omit:"connectTimeout" timeout.default:"1s" timeout.min:"1ms" timeout.max:"1h" timeout.help:"bound of each operation: its dial and socket reads and writes (client=gomemcache), its batch's deadline with the operation's own (client=direct)"`
	MaxIdleConns int                   `opt:"maxIdleConns" default:"64" min:"1" max:"100000" help:"idle connections kept per server; at least the workers hitting one server at once (client=direct: only calls outside the workers, such as backfill, use them)"`
	MaxValueSize int                   `opt:"maxValueSize" default:"1048000" min:"1" max:"1073741824" help:"largest value sent; larger writes are rejected without a round trip (memcached -I, default 1 MB incl. overhead)"`
	TTL          time.Duration         `opt:"ttl" default:"0s" min:"0s" max:"87600h" live:"true" help:"expiry of written items, rounded up to whole seconds; 0 = no expiry"`
	Client       string                `opt:"client" default:"auto" enum:"auto,direct,gomemcache" help:"auto: direct, or gomemcache with two or more zones; direct: each worker owns a connection per server and speaks the text protocol itself (least client CPU and tail, workload.pipeline > 1 allowed; one zone only); gomemcache: the gomemcache library's pooled connections (maxIdleConns)"`
}

// direct reports whether the options resolve to client=direct.
func (o *Options) direct() bool {
	switch o.Client {
	case "direct":
		return true
	case "gomemcache":
		return false
	}
	zones, err := parseZones(o.Zones, o.Servers)
	return err == nil && len(zones) == 1
}

// zone is one copy of the data: a set of servers with its own client and counters.
type zone struct {
	name   string
	addrs  []string
	client *memcache.Client

	reads, misses, readErrors, fallbacks, writes, writeErrors atomic.Int64
}

// Driver is the memcached driver. It is safe for concurrent use after Init.
type Driver struct {
	opts  Options
	zones []*zone
	local atomic.Int32 // index into zones; live via Reconfigure
	ttl   atomic.Int64 // time.Duration; live via Reconfigure
	// closed is set by Close. gomemcache clients stay usable after Close (they dial
	// again), so without it an operation after Close would reopen what Close released.
	closed atomic.Bool
	direct *directPool // set with client=direct, which serves the plain servers (one zone)

	version string
}

// errClosed is returned by operations on a closed driver.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("memcached: driver is closed"))

// Init parses the zones, checks every server answers, and reads the server version.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	zones, local, err := o.zones()
	if err != nil {
		return err
	}
	d.opts = *o
	d.local.Store(int32(local))
	d.ttl.Store(int64(o.TTL))
	if o.direct() {
		d.opts.Client = "direct"
		d.zones = []*zone{{name: zones[0].name, addrs: zones[0].addrs}}
		return d.initDirect(ctx)
	}
	d.opts.Client = "gomemcache"
	for _, z := range zones {
		c := memcache.New(z.addrs...)
		c.Timeout = o.Timeouts.Request
		c.MaxIdleConns = o.MaxIdleConns
		// Dials as gomemcache does by default (its ctx carries the timeout), through RawIO.
		c.DialContext = driver.RawIODialer((&net.Dialer{}).DialContext)
		d.zones = append(d.zones, &zone{name: z.name, addrs: z.addrs, client: c})
	}
	for _, z := range d.zones {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("connect to memcached: %w", err)
		}
		if err := z.client.Ping(); err != nil {
			return classify(fmt.Errorf("ping memcached zone %s (%s): %w", z.name, strings.Join(z.addrs, ","), err))
		}
	}
	d.version = serverVersion(ctx, d.zones[0].addrs[0], o.Timeouts.Request)
	return nil
}

// Validate checks what the tags cannot: the zones and servers parse, and localZone names
// one of the zones. driver.NewOptions calls it, so the config store rejects a localZone
// that names no zone instead of accepting a change that Init or Reconfigure would refuse.
func (o *Options) Validate() error {
	zones, _, err := o.zones()
	if err != nil {
		return err
	}
	if o.Client == "direct" && len(zones) > 1 {
		return driver.FieldErrors{&driver.FieldError{Field: "client", Value: o.Client,
			Allowed: "auto or gomemcache with two or more zones (client=direct serves one zone: servers, or zones with one zone)"}}
	}
	return nil
}

// zones parses the zones (or servers) and finds the local zone's index.
func (o *Options) zones() ([]zoneSpec, int, error) {
	zones, err := parseZones(o.Zones, o.Servers)
	if err != nil {
		return nil, 0, err
	}
	local, err := localIndex(zones, o.LocalZone)
	if err != nil {
		return nil, 0, err
	}
	return zones, local, nil
}

type zoneSpec struct {
	name  string
	addrs []string
}

// parseZones reads "a=h1:p,h2:p;b=h3:p"; without zones, servers form one zone "default".
func parseZones(spec string, servers []string) ([]zoneSpec, error) {
	bad := func(value, allowed string) error {
		return driver.FieldErrors{&driver.FieldError{Field: "zones", Value: value, Allowed: allowed}}
	}
	if strings.TrimSpace(spec) == "" {
		if len(servers) == 0 {
			return nil, driver.FieldErrors{&driver.FieldError{Field: "servers", Allowed: "one or more host:port addresses"}}
		}
		for _, s := range servers {
			if _, _, err := net.SplitHostPort(s); err != nil {
				return nil, driver.FieldErrors{&driver.FieldError{Field: "servers", Value: s, Allowed: "host:port"}}
			}
		}
		return []zoneSpec{{name: "default", addrs: servers}}, nil
	}
	const syntax = "zones separated by ';', each name=host:port,host:port"
	var out []zoneSpec
	for _, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, list, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " ,.") {
			return nil, bad(part, syntax)
		}
		if slices.ContainsFunc(out, func(z zoneSpec) bool { return z.name == name }) {
			return nil, bad(part, "distinct zone names")
		}
		z := zoneSpec{name: name}
		for _, a := range strings.Split(list, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, bad(part, syntax)
			}
			z.addrs = append(z.addrs, a)
		}
		if len(z.addrs) == 0 {
			return nil, bad(part, syntax)
		}
		out = append(out, z)
	}
	if len(out) == 0 {
		return nil, bad(spec, syntax)
	}
	return out, nil
}

func localIndex(zones []zoneSpec, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	names := make([]string, len(zones))
	for i, z := range zones {
		if z.name == name {
			return i, nil
		}
		names[i] = z.name
	}
	return 0, driver.FieldErrors{&driver.FieldError{Field: "localZone", Value: name, Allowed: "one of the zones: " + strings.Join(names, ", ")}}
}

// serverVersion asks one server for its version in the text protocol; "unknown" on failure.
func serverVersion(ctx context.Context, addr string, timeout time.Duration) string {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var dialer net.Dialer
	c, err := dialer.DialContext(dctx, "tcp", addr)
	if err != nil {
		return "unknown"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("version\r\n")); err != nil {
		return "unknown"
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if v, ok := strings.CutPrefix(strings.TrimSpace(line), "VERSION "); err == nil && ok {
		return v
	}
	return "unknown"
}

// Read returns the value of key from the local zone, falling back to the other zones.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if d.closed.Load() {
		return nil, errClosed
	}
	if d.direct != nil {
		return d.direct.do(ctx, driver.PipelineOp{Op: driver.PipelineRead, Key: key})
	}
	local := int(d.local.Load())
	var firstErr error
	missed := false
	for i := range d.zones {
		z := d.zones[(local+i)%len(d.zones)]
		if err := ctx.Err(); err != nil {
			return nil, classify(fmt.Errorf("memcached get %s: %w", key, err))
		}
		if i > 0 {
			z.fallbacks.Add(1)
		}
		z.reads.Add(1)
		it, err := z.client.Get(key)
		switch {
		case err == nil:
			return it.Value, nil
		case errors.Is(err, memcache.ErrCacheMiss):
			z.misses.Add(1)
			missed = true
		default:
			z.readErrors.Add(1)
			if firstErr == nil {
				firstErr = fmt.Errorf("memcached get %s from zone %s: %w", key, z.name, err)
			}
		}
	}
	if missed {
		return nil, driver.ErrNotFound
	}
	return nil, classify(firstErr)
}

// Write stores value under key in every zone (in parallel when there are several) and
// applies the writeSuccess policy.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if d.closed.Load() {
		return errClosed
	}
	if d.direct != nil {
		_, err := d.direct.do(ctx, driver.PipelineOp{Op: driver.PipelineWrite, Key: key, Value: value})
		return err
	}
	if len(value) > d.opts.MaxValueSize {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("memcached set %s: value of %d bytes exceeds maxValueSize %d", key, len(value), d.opts.MaxValueSize))
	}
	if err := ctx.Err(); err != nil {
		return classify(fmt.Errorf("memcached set %s: %w", key, err))
	}
	item := &memcache.Item{Key: key, Value: value, Expiration: expiration(time.Duration(d.ttl.Load()), time.Now())}
	if len(d.zones) == 1 {
		return classify(d.zones[0].set(item))
	}
	errs := make([]error, len(d.zones))
	var wg sync.WaitGroup
	for i, z := range d.zones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = z.set(item) // gomemcache only reads item, so zones can share it
		}()
	}
	wg.Wait() // value must not be used after Write returns
	local := int(d.local.Load())
	var ok int
	var firstErr error
	for i, err := range errs {
		if err == nil {
			ok++
		} else if firstErr == nil || i == local {
			firstErr = err
		}
	}
	switch d.opts.WriteSuccess {
	case "all":
		if ok < len(d.zones) {
			return classify(firstErr)
		}
	case "local":
		return classify(errs[local])
	default: // any
		if ok == 0 {
			return classify(firstErr)
		}
	}
	return nil
}

func (z *zone) set(item *memcache.Item) error {
	z.writes.Add(1)
	if err := z.client.Set(item); err != nil {
		z.writeErrors.Add(1)
		return fmt.Errorf("memcached set %s in zone %s: %w", item.Key, z.name, err)
	}
	return nil
}

// expiration converts a TTL to memcached's expiration field: whole seconds rounded up, or
// an absolute Unix time beyond 30 days, where memcached stops reading it as relative.
func expiration(ttl time.Duration, now time.Time) int32 {
	if ttl <= 0 {
		return 0
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	const relativeLimit = 30 * 24 * 3600
	if secs > relativeLimit {
		secs += now.Unix()
	}
	if secs > 1<<31-1 {
		secs = 1<<31 - 1
	}
	return int32(secs)
}

// Delete removes key from every zone; a key missing anywhere is not an error. A
// composition in front of a database uses it to invalidate on writes.
func (d *Driver) Delete(ctx context.Context, key string) error {
	if d.closed.Load() {
		return errClosed
	}
	if d.direct != nil {
		_, err := d.direct.do(ctx, driver.PipelineOp{Op: opDelete, Key: key})
		return err
	}
	var errs []error
	for _, z := range d.zones {
		if err := ctx.Err(); err != nil {
			return classify(fmt.Errorf("memcached delete %s: %w", key, err))
		}
		if err := z.client.Delete(key); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			errs = append(errs, fmt.Errorf("memcached delete %s in zone %s: %w", key, z.name, err))
		}
	}
	return classify(errors.Join(errs...))
}

// Reconfigure applies live options: ttl and localZone.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	specs := make([]zoneSpec, len(d.zones))
	for i, z := range d.zones {
		specs[i] = zoneSpec{name: z.name}
	}
	local, err := localIndex(specs, o.LocalZone)
	if err != nil {
		return err
	}
	d.local.Store(int32(local))
	d.ttl.Store(int64(o.TTL))
	return nil
}

// ConnectionInfo describes the servers, zones and policies; memcached has no credentials.
func (d *Driver) ConnectionInfo() map[string]string {
	zones := make([]string, len(d.zones))
	for i, z := range d.zones {
		zones[i] = z.name + "=" + strings.Join(z.addrs, ",")
	}
	info := map[string]string{
		"zones":          strings.Join(zones, ";"),
		"server_version": d.version,
		"ttl":            time.Duration(d.ttl.Load()).String(),
		"timeout":        d.opts.Timeouts.Request.String(),
		"maxIdleConns":   strconv.Itoa(d.opts.MaxIdleConns),
		"client":         d.opts.Client,
	}
	if len(d.zones) > 0 {
		info["localZone"] = d.zones[d.local.Load()].name
	}
	if len(d.zones) > 1 {
		info["writeSuccess"] = d.opts.WriteSuccess
	}
	return info
}

// DriverStats returns the per-zone counters (see the package doc).
func (d *Driver) DriverStats() map[string]int64 {
	out := make(map[string]int64, 6*len(d.zones))
	for _, z := range d.zones {
		p := "zone." + z.name + "."
		out[p+"reads"] = z.reads.Load()
		out[p+"misses"] = z.misses.Load()
		out[p+"read_errors"] = z.readErrors.Load()
		out[p+"fallbacks"] = z.fallbacks.Load()
		out[p+"writes"] = z.writes.Load()
		out[p+"write_errors"] = z.writeErrors.Load()
	}
	return out
}

// Close closes the idle connections of every zone; later operations fail as unavailable.
// Safe after a failed Init.
func (d *Driver) Close() error {
	d.closed.Store(true)
	if d.direct != nil {
		d.direct.close()
	}
	var errs []error
	for _, z := range d.zones {
		if z.client == nil {
			continue
		}
		if err := z.client.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close memcached zone %s: %w", z.name, err))
		}
	}
	return errors.Join(errs...)
}

// classify wraps err with its failure class (see the package doc).
func classify(err error) error {
	if err == nil {
		return nil
	}
	return driver.Wrap(classOf(err), err)
}

func classOf(err error) driver.Class {
	var cte *memcache.ConnectTimeoutError
	switch {
	case errors.As(err, &cte):
		return driver.ClassTimeout
	case errors.Is(err, memcache.ErrNoServers):
		return driver.ClassUnavailable
	case errors.Is(err, memcache.ErrMalformedKey):
		return driver.ClassRejected
	case errors.Is(err, memcache.ErrServerError):
		return driver.ClassOther
	}
	// gomemcache reports unexpected reply lines as text.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "SERVER_ERROR out of memory"):
		return driver.ClassThrottled
	case strings.Contains(msg, "SERVER_ERROR Connection timed out"):
		// A proxy (twemproxy, Dynomite) whose backend did not answer within its timeout.
		return driver.ClassTimeout
	case proxyBackendDown(msg):
		return driver.ClassUnavailable
	case strings.Contains(msg, "SERVER_ERROR object too large"), strings.Contains(msg, "CLIENT_ERROR"):
		return driver.ClassRejected
	case strings.Contains(msg, "SERVER_ERROR"):
		return driver.ClassOther
	}
	return driver.Classify(err)
}

// proxyBackendDown reports whether msg is a proxy's reply for a backend it cannot reach.
// twemproxy and Dynomite answer "SERVER_ERROR " followed by the C library's text for the
// errno of the backend connection; memcached itself never sends these, and without this
// a dead backend behind a proxy would count as other instead of unavailable.
func proxyBackendDown(msg string) bool {
	for _, e := range []string{"Connection refused", "Connection reset by peer", "Host is down",
		"No route to host", "Network is unreachable", "Broken pipe"} {
		if strings.Contains(msg, "SERVER_ERROR "+e) {
			return true
		}
	}
	return false
}
