// Package redis is the ndbench driver for Redis and RESP-speaking stores, built on
// github.com/redis/go-redis/v9.
//
// # Shapes
//
// shape=string stores each value with SET (PX ttl when ttl > 0) and reads it with GET.
// shape=hash follows NDBench's Dyno hash plugin (DynoHashPipeline): the value lives in the
// hash hashKeyPrefix+key (default "HM__key"), split into hashFields fields named
// "HM__key__1", "HM__key__2", ... and written with one HSET (plus PEXPIRE when ttl > 0,
// sent in the same pipeline); a read is HGETALL and joins the fields back in order, so data
// validation works for both shapes. With ttl=0 a hash keeps any TTL it had before.
//
// # Scans
//
// Redis keeps no order among keys (SCAN walks its hash table in no useful order), so the
// operation scan (YCSB workload E's range read) needs an ordered structure that ndbench
// maintains: with scanIndex=true every write also sends ZADD scanIndexKey 0 key, and every
// delete ZREM, in the same round trip, so one sorted set (default "ndbench:keys") holds
// every key written, all with score 0, which Redis orders by the keys' bytes. A scan is
// then ZRANGEBYLEX scanIndexKey [start + LIMIT 0 n (the keys from start in byte order, in
// O(log N + n)) and a second round trip for the values (MGET, or one HGETALL per key with
// shape=hash); keys whose values are gone (ttl) are not counted. This is the layout Redis
// users build for range reads (a lexicographic sorted-set index), so its cost is the one
// an application would pay: each write is two commands, and the index is one key, held by
// one shard of a cluster or proxy, which takes every write's ZADD. ZRANGEBYLEX is used
// rather than ZRANGE ... BYLEX so servers before Redis 6.2 scan too. The index is off by
// default, as it changes what a write costs; a scan without it fails as rejected, naming
// the option. Keys written before the index was turned on, or by other tools, are not in
// it: backfill with scanIndex=true before scanning.
//
// # Modes
//
// mode=direct (what mode=auto picks unless cluster=true) gives each engine worker a
// connection of its own and runs its hot loop itself (direct.go, resp.go): the worker
// writes every operation that is due, up to workload.pipeline, in one system call and
// parses the replies in place, with no pool, per-command deadline or goroutine hand-off
// between it and the socket. Connections = workers (poolSize only bounds the idle
// connections kept for calls outside the workers, such as backfill and the API). It
// speaks RESP2 to one node: no cluster. With workload.pipeline=1 it is the plain
// one-command-per-round-trip client, the same load shape as pool mode at less CPU. The
// workers' connections are opened at Init, one per worker of the workload, 64 connects
// in flight at a time (driver.Warmer), as memtier and redis-benchmark connect before
// their clocks start: a worker's first operation then does not time a connect, a TLS
// handshake, AUTH or SELECT. A connection that waits more than 30 s for its worker (a
// serve session not started yet) is closed and the worker connects on its first
// operation; so do workers added while the load runs.
//
// spinRead (mode=direct, Linux, plain TCP; off by default) makes a worker poll its socket
// for up to that long after sending, yielding the processor between tries, before it
// parks and waits for the runtime's netpoller. It is meant for a client with idle cores,
// where waking a parked goroutine is a visible part of a round trip; on the 2-core machine
// of docs/performance.md it cost CPU and gave no lower latency, so it stays off unless
// measured to help on the machine at hand.
//
// mode=pool sends each operation on a pooled connection (poolSize connections; 0 means
// go-redis's default of 10 per CPU). mode=autopipeline uses go-redis's own autopipeliner
// (v9.22 AsyncAutoPipeline, ordered, one batch in flight): operations from all workers are
// queued and flushed together as one pipeline, each caller waiting for its own reply until
// its context ends. It raises throughput a lot when many workers share few connections, at
// the cost of some latency per operation; pipelineBatch bounds the batch size.
//
// # Proxies and clusters
//
// mode=direct works unchanged through RESP proxies such as twemproxy, Dynomite and the
// Envoy redis proxy: it speaks RESP2 from the first byte and only sends GET, SET, HSET,
// HGETALL, PEXPIRE, DEL, PING and INFO (AUTH and SELECT when configured; ZADD, ZREM,
// ZRANGEBYLEX and MGET with scanIndex). go-redis's modes need proxy=true there: go-redis v9 sends HELLO first on every connection and falls back to
// RESP2 only on an error reply, while twemproxy closes the connection on any command it
// does not know (redis/go-redis#2616); with proxy=true the driver answers that HELLO
// itself. Proxies close the connection on SELECT too, so proxy=true requires db=0. The
// proxies' own replies for a failed backend (-ERR Connection refused, -ERR Connection
// timed out) count as unavailable and timeout, not as rejected. cluster=true uses
// go-redis's ClusterClient against a Redis Cluster and requires db=0 and a go-redis mode.
//
// # TLS and authentication
//
// The options come from the driver's option groups (driver.TLSOptions, AuthOptions,
// TimeoutOptions): tls, tlsCAFile, tlsCertFile/tlsKeyFile (client certificate),
// tlsVerify (default true) and tlsServerName; username and password (AUTH);
// connectTimeout. Earlier names still work: dialTimeout is an alias of connectTimeout,
// and tlsSkipVerify=true, the inverse of tlsVerify, is kept as a deprecated option that
// also turns verification off. Without tlsServerName each node's certificate is checked
// against the host of the address dialled.
//
// # Errors
//
// A missing key (redis.Nil, or an empty hash) is driver.ErrNotFound. Failures are classified:
// context deadlines, socket timeouts and pool timeouts are timeout; refused, reset or closed
// connections and the server states LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN and
// READONLY (a failover in progress) are unavailable; OOM (maxmemory reached with the
// noeviction policy) and "max number of clients reached" are throttled, because they are
// the store shedding load that succeeds again when load drops, not bad requests; WRONGTYPE,
// NOAUTH, WRONGPASS, NOPERM and other ERR replies are rejected. go-redis's own retries are
// off by default (maxRetries=0) so failures are counted rather than hidden in latency.
package redis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "redis",
		Summary:    "Redis, Redis Cluster and RESP proxies (Dynomite, Envoy, twemproxy) via go-redis",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Pipelines: func(opts any) bool {
			o, ok := opts.(*Options)
			return ok && (o.Mode == "direct" || o.Mode == "auto" && !o.Cluster)
		},
	})
}

// Options configure the redis driver.
type Options struct {
	Addrs         []string           `opt:"addrs" default:"127.0.0.1:6379" help:"server addresses host:port (cluster: seed nodes; pool mode uses the first)" alias:"host,hosts,addr"`
	DB            int                `opt:"db" default:"0" min:"0" max:"65535" help:"database number (SELECT); must be 0 for cluster and proxies"`
	Auth          driver.AuthOptions `username.help:"ACL user name (Redis 6+); empty uses the default user" password.help:"password (AUTH); never logged or reported"`
	TLS           driver.TLSOptions
	TLSSkipVerify bool `opt:"tlsSkipVerify" default:"false" help:"deprecated, use tlsVerify=false: with tls, accept any server certificate (testing only)"`
	PoolSize      int  `opt:"poolSize" default:"0" min:"0" max:"10000" help:"connections per node; 0 = go-redis default (10 per CPU)"`
	// Redis has socket read and write timeouts rather than one per request, so the group's
	// timeout is omitted; connectTimeout keeps the bounds dialTimeout had.
	Timeouts      driver.TimeoutOptions `omit:"timeout" connectTimeout.alias:"dialTimeout" connectTimeout.min:"1ms" connectTimeout.max:"1h" connectTimeout.help:"timeout to open a connection"`
	ReadTimeout   time.Duration         `opt:"readTimeout" default:"3s" min:"1ms" max:"1h" help:"socket read timeout (the op context's deadline also applies)"`
	WriteTimeout  time.Duration         `opt:"writeTimeout" default:"3s" min:"1ms" max:"1h" help:"socket write timeout (the op context's deadline also applies)"`
	MaxRetries    int                   `opt:"maxRetries" default:"0" min:"0" max:"10" help:"go-redis retries of a failed command; 0 counts every failure"`
	Mode          string                `opt:"mode" default:"auto" enum:"auto,pool,autopipeline,direct" help:"auto: direct, or pool with cluster=true; pool: go-redis, one command per round trip on pooled connections; autopipeline: go-redis batches concurrent commands from all workers into pipelines; direct: each worker owns a connection and sends up to workload.pipeline commands per write (fastest; no cluster)"`
	PipelineBatch int                   `opt:"pipelineBatch" default:"300" min:"1" max:"10000" help:"autopipeline: target commands per pipeline flush"`
	Cluster       bool                  `opt:"cluster" default:"false" help:"use Redis Cluster (ClusterClient); addrs are seed nodes"`
	Proxy         bool                  `opt:"proxy" default:"false" help:"addrs is a RESP proxy (twemproxy, Dynomite): pool and autopipeline answer go-redis's HELLO locally, as proxies close the connection on it; db must be 0"`
	TTL           time.Duration         `opt:"ttl" default:"0s" min:"0s" max:"87600h" live:"true" help:"expiry of written keys; 0 = no expiry"`
	Shape         string                `opt:"shape" default:"string" enum:"string,hash" help:"string: SET/GET; hash: HSET/HGETALL like NDBench's Dyno hash plugin"`
	HashFields    int                   `opt:"hashFields" default:"2" min:"1" max:"64" help:"hash shape: fields the value is split across"`
	HashKeyPrefix string                `opt:"hashKeyPrefix" default:"HM__" help:"hash shape: prefix of hash keys (NDBench uses HM__)"`
	ScanIndex     bool                  `opt:"scanIndex" default:"false" help:"keep a sorted set of every key written (ZADD beside each write, ZREM beside each delete, in the same round trip) so the operation scan can read keys in byte order (ZRANGEBYLEX, then the values); costs every write a second command; off: scan fails as rejected"`
	ScanIndexKey  string                `opt:"scanIndexKey" default:"ndbench:keys" help:"scanIndex: the sorted set's key (one key: on a cluster or behind a proxy it lives on one shard)"`
	SpinRead      time.Duration         `opt:"spinRead" default:"0s" min:"0s" max:"1ms" help:"mode=direct, Linux, without TLS: after sending, poll the socket for a reply for up to this long before the worker parks; costs client CPU, try it only where a profile shows goroutine wake-ups in the round trip; 0 parks at once"`
}

// Driver is the redis driver. It is safe for concurrent use after Init.
type Driver struct {
	opts   Options
	client goredis.UniversalClient
	ap     *goredis.AutoPipeliner // set in autopipeline mode
	direct *directPool            // set in direct mode, which has no go-redis client
	closed atomic.Bool            // direct mode: Close was called; pipelines never reconnect
	tls    *tls.Config
	ttl    atomic.Int64 // time.Duration; live via Reconfigure

	infoMu sync.Mutex
	info   map[string]string
}

// autoPipeliners are the go-redis clients (Client, ClusterClient) that offer the deferred
// autopipeliner, whose futures can be waited for with a context.
type autoPipeliners interface {
	AsyncAutoPipelineWithOptions(*goredis.AutoPipelineOptions) (*goredis.AutoPipeliner, error)
}

// Init connects, checks the server answers PING and reads its version.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	if o.Mode == "auto" {
		// Resolved on the driver's copy: the options object is the configuration's.
		d.opts.Mode = "direct"
		if o.Cluster {
			d.opts.Mode = "pool"
		}
	}
	o = &d.opts
	d.ttl.Store(int64(o.TTL))

	// Without tlsServerName the name verified is each dialled node's host (crypto/tls
	// takes it from the address), which a cluster's nodes need.
	tlsConf, err := o.TLS.Config()
	if err != nil {
		return err
	}
	if tlsConf != nil && o.TLSSkipVerify {
		tlsConf.InsecureSkipVerify = true // the deprecated inverse of tlsVerify
	}
	d.tls = tlsConf
	if o.Mode == "direct" {
		return d.initDirect(ctx)
	}
	// go-redis treats 0 as "default 3 retries" and -1 as none.
	retries := o.MaxRetries
	if retries == 0 {
		retries = -1
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if o.Cluster {
		d.client = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: o.Addrs, Dialer: goredisDialer(o.Timeouts.Connect, tlsConf, false),
			Username: o.Auth.Username, Password: o.Auth.Password, TLSConfig: tlsConf,
			PoolSize: o.PoolSize, DialTimeout: o.Timeouts.Connect, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, MaxRetries: retries, ContextTimeoutEnabled: true,
			DialerRetries: 1, DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	} else {
		d.client = goredis.NewClient(&goredis.Options{
			Addr: o.Addrs[0], DB: o.DB, Dialer: goredisDialer(o.Timeouts.Connect, tlsConf, o.Proxy), Username: o.Auth.Username, Password: o.Auth.Password, TLSConfig: tlsConf,
			PoolSize: o.PoolSize, DialTimeout: o.Timeouts.Connect, ReadTimeout: o.ReadTimeout,
			WriteTimeout: o.WriteTimeout, MaxRetries: retries, ContextTimeoutEnabled: true,
			// One dial attempt per op: an outage shows as errors, not as latency.
			DialerRetries: 1,
			// Proxies reject CLIENT SETINFO and maintenance-notification handshakes.
			DisableIdentity: true, MaintNotificationsConfig: maint,
		})
	}
	if err := d.client.Ping(ctx).Err(); err != nil {
		if errors.Is(err, io.EOF) && !o.Proxy && !o.Cluster {
			// What a RESP proxy does to go-redis's HELLO: say how to get through.
			err = fmt.Errorf("%w (the server closed the connection on the first command: if this is a RESP proxy such as twemproxy or Dynomite, set proxy=true or use mode=direct)", err)
		}
		// go-redis quotes what it could not parse ("redis: invalid reply: ...", "redis:
		// can't parse map reply: ..."): name the server it came from.
		if msg := err.Error(); strings.HasPrefix(msg, "redis: ") && strings.Contains(msg, `"`) {
			if quoted, qerr := strconv.QuotedPrefix(msg[strings.Index(msg, `"`):]); qerr == nil {
				if line, uerr := strconv.Unquote(quoted); uerr == nil {
					if what := foreignServer([]byte(strings.TrimRight(line, "\r\n"))); what != "" {
						err = fmt.Errorf("%w: this is not a Redis server: %s", err, what)
					}
				}
			}
		}
		return classify(fmt.Errorf("connect to redis at %s: %w", strings.Join(o.Addrs, ","), err))
	}
	if o.Mode == "autopipeline" {
		c, ok := d.client.(autoPipeliners)
		if !ok {
			return fmt.Errorf("redis client %T has no autopipeliner", d.client)
		}
		d.ap, err = c.AsyncAutoPipelineWithOptions(&goredis.AutoPipelineOptions{
			MaxBatchSize:         o.PipelineBatch,
			MaxConcurrentBatches: 1, // ordered: a worker's write then read of a key stay in order
		})
		if err != nil {
			return fmt.Errorf("start redis autopipeliner: %w", err)
		}
	}
	d.info = map[string]string{
		"addrs":          strings.Join(o.Addrs, ","),
		"mode":           o.Mode,
		"shape":          o.Shape,
		"cluster":        strconv.FormatBool(o.Cluster),
		"db":             strconv.Itoa(o.DB),
		"tls":            strconv.FormatBool(o.TLS.Enable),
		"scanIndex":      scanIndexInfo(o),
		"server_version": serverVersion(ctx, d.client),
	}
	return nil
}

// scanIndexInfo is ConnectionInfo's scanIndex: the sorted set's key, or "off".
func scanIndexInfo(o *Options) string {
	if o.ScanIndex {
		return o.ScanIndexKey
	}
	return "off"
}

// Validate checks what the tags cannot: addresses are host:port and a cluster has one
// database. driver.NewOptions calls it, so the config store rejects such options up front.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if len(o.Addrs) == 0 {
		errs = append(errs, &driver.FieldError{Field: "addrs", Allowed: "one or more host:port addresses"})
	}
	for _, a := range o.Addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			errs = append(errs, &driver.FieldError{Field: "addrs", Value: a, Allowed: "host:port"})
		}
	}
	if o.Cluster && o.Mode == "direct" {
		errs = append(errs, &driver.FieldError{Field: "mode", Value: o.Mode, Allowed: "pool or autopipeline when cluster=true (direct speaks to one node)"})
	}
	if o.Proxy && o.DB != 0 {
		errs = append(errs, &driver.FieldError{Field: "db", Value: strconv.Itoa(o.DB), Allowed: "0 when proxy=true (RESP proxies do not support SELECT)"})
	}
	if o.Proxy && o.Cluster {
		errs = append(errs, &driver.FieldError{Field: "proxy", Value: "true", Allowed: "false when cluster=true (a proxy hides the cluster)"})
	}
	if o.ScanIndex && o.ScanIndexKey == "" {
		errs = append(errs, &driver.FieldError{Field: "scanIndexKey", Allowed: "a key name when scanIndex=true"})
	}
	if o.Cluster && o.DB != 0 {
		errs = append(errs, &driver.FieldError{Field: "db", Value: strconv.Itoa(o.DB), Allowed: "0 when cluster=true (Redis Cluster has one database)"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// serverVersion asks INFO server; proxies may refuse, which is not an error for the driver.
func serverVersion(ctx context.Context, c goredis.UniversalClient) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "unknown"
	}
	return versionFromInfo(info)
}

// versionFromInfo finds redis_version in an INFO reply.
func versionFromInfo(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

// Read returns the value of key, or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if d.direct != nil {
		return d.direct.do(ctx, driver.PipelineOp{Op: driver.PipelineRead, Key: key})
	}
	if d.opts.Shape == "hash" {
		return d.readHash(ctx, key)
	}
	cmd := goredis.NewStringCmd(ctx, "get", key)
	if err := d.do(ctx, cmd); err != nil {
		if errors.Is(err, goredis.Nil) {
			return nil, driver.ErrNotFound
		}
		return nil, classify(fmt.Errorf("redis GET %s: %w", key, err))
	}
	return cmd.Bytes()
}

// Write stores value under key, with the current TTL.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if d.direct != nil {
		_, err := d.direct.do(ctx, driver.PipelineOp{Op: driver.PipelineWrite, Key: key, Value: value})
		return err
	}
	if d.opts.Shape == "hash" {
		return d.writeHash(ctx, key, value)
	}
	var v any = value
	if d.ap != nil {
		// An abandoned wait (ctx ended) leaves the command queued; the engine reuses
		// value's buffer as soon as Write returns, so the pipeline gets its own copy.
		v = string(value)
	}
	args := []any{"set", key, v}
	if ttl := time.Duration(d.ttl.Load()); ttl > 0 {
		args = append(args, "px", ttl.Milliseconds())
	}
	if err := d.do(ctx, d.indexed(ctx, key, goredis.NewStatusCmd(ctx, args...))...); err != nil {
		return classify(fmt.Errorf("redis SET %s: %w", key, err))
	}
	return nil
}

// indexed returns cmds, followed with scanIndex by the ZADD that adds key to the scan
// index, for one round trip.
func (d *Driver) indexed(ctx context.Context, key string, cmds ...goredis.Cmder) []goredis.Cmder {
	if d.opts.ScanIndex {
		cmds = append(cmds, goredis.NewIntCmd(ctx, "zadd", d.opts.ScanIndexKey, 0, key))
	}
	return cmds
}

// Delete removes key (its hash with shape=hash); a missing key is not an error. A
// composition in front of a database uses it to invalidate on writes.
func (d *Driver) Delete(ctx context.Context, key string) error {
	orig := key
	if d.opts.Shape == "hash" {
		key = d.hashKey(key)
	}
	if d.direct != nil {
		if _, err := d.direct.command(ctx, "DEL", key); err != nil || !d.opts.ScanIndex {
			return err
		}
		_, err := d.direct.command(ctx, "ZREM", d.opts.ScanIndexKey, orig)
		return err
	}
	cmds := []goredis.Cmder{goredis.NewIntCmd(ctx, "del", key)}
	if d.opts.ScanIndex {
		cmds = append(cmds, goredis.NewIntCmd(ctx, "zrem", d.opts.ScanIndexKey, orig))
	}
	if err := d.do(ctx, cmds...); err != nil {
		return classify(fmt.Errorf("redis DEL %s: %w", key, err))
	}
	return nil
}

// errNoScanIndex is Scan's answer without scanIndex.
var errNoScanIndex = driver.Wrap(driver.ClassRejected, errors.New("redis scan: set drivers.redis.scanIndex=true (a sorted set of the keys, kept on write) to scan; Redis has no ordered key range of its own"))

// Scan reads up to n keys from start in byte order from the scan index (scanIndex):
// ZRANGEBYLEX [start + LIMIT 0 n, then the keys' values in one more round trip (MGET, or
// one HGETALL per key with shape=hash), and returns how many values it read; none is
// driver.ErrNotFound. A key in the index whose value is gone (expired by ttl, deleted by
// another client) is not counted.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	if !d.opts.ScanIndex {
		return 0, errNoScanIndex
	}
	if d.direct != nil {
		return d.direct.scan(ctx, start, n)
	}
	rng := goredis.NewStringSliceCmd(ctx, "zrangebylex", d.opts.ScanIndexKey, "["+start, "+", "limit", 0, n)
	if err := d.do(ctx, rng); err != nil {
		return 0, classify(fmt.Errorf("redis ZRANGEBYLEX %s: %w", d.opts.ScanIndexKey, err))
	}
	keys := rng.Val()
	if len(keys) == 0 {
		return 0, driver.ErrNotFound
	}
	got := 0
	if d.opts.Shape == "hash" {
		cmds := make([]goredis.Cmder, len(keys))
		for i, k := range keys {
			cmds[i] = goredis.NewMapStringStringCmd(ctx, "hgetall", d.hashKey(k))
		}
		if err := d.do(ctx, cmds...); err != nil {
			return 0, classify(fmt.Errorf("redis scan HGETALL: %w", err))
		}
		for _, c := range cmds {
			if len(c.(*goredis.MapStringStringCmd).Val()) > 0 {
				got++
			}
		}
	} else {
		args := make([]any, 0, 1+len(keys))
		args = append(args, "mget")
		for _, k := range keys {
			args = append(args, k)
		}
		vals := goredis.NewSliceCmd(ctx, args...)
		if err := d.do(ctx, vals); err != nil {
			return 0, classify(fmt.Errorf("redis scan MGET: %w", err))
		}
		for _, v := range vals.Val() {
			if v != nil {
				got++
			}
		}
	}
	if got == 0 {
		return 0, driver.ErrNotFound
	}
	return got, nil
}

func (d *Driver) hashKey(key string) string { return d.opts.HashKeyPrefix + key }

func (d *Driver) writeHash(ctx context.Context, key string, value []byte) error {
	hk := d.hashKey(key)
	n := d.opts.HashFields
	args := make([]any, 0, 2+2*n)
	args = append(args, "hset", hk)
	for i := 0; i < n; i++ {
		// Always a copy: the parts must outlive Write in autopipeline mode, and
		// strings cost the same as sub-slices for go-redis to send.
		args = append(args, hk+"__"+strconv.Itoa(i+1), string(value[i*len(value)/n:(i+1)*len(value)/n]))
	}
	cmds := []goredis.Cmder{goredis.NewIntCmd(ctx, args...)}
	if ttl := time.Duration(d.ttl.Load()); ttl > 0 {
		cmds = append(cmds, goredis.NewBoolCmd(ctx, "pexpire", hk, ttl.Milliseconds()))
	}
	if err := d.do(ctx, d.indexed(ctx, key, cmds...)...); err != nil {
		return classify(fmt.Errorf("redis HSET %s: %w", hk, err))
	}
	return nil
}

func (d *Driver) readHash(ctx context.Context, key string) ([]byte, error) {
	hk := d.hashKey(key)
	cmd := goredis.NewMapStringStringCmd(ctx, "hgetall", hk)
	if err := d.do(ctx, cmd); err != nil {
		return nil, classify(fmt.Errorf("redis HGETALL %s: %w", hk, err))
	}
	m := cmd.Val()
	if len(m) == 0 {
		return nil, driver.ErrNotFound
	}
	size := 0
	for _, v := range m {
		size += len(v)
	}
	out := make([]byte, 0, size)
	for i := 1; i <= len(m); i++ {
		part, ok := m[hk+"__"+strconv.Itoa(i)]
		if !ok {
			// Written by another tool or with another field layout: report it rather than
			// hand validation a value that silently lost parts.
			return nil, driver.Wrap(driver.ClassOther, fmt.Errorf("redis HGETALL %s: %d fields but no field %s__%d", hk, len(m), hk, i))
		}
		out = append(out, part...)
	}
	return out, nil
}

// do runs cmds in one round trip: through the autopipeliner, as one command, or as a
// (non-transactional) pipeline. It returns the first command error.
func (d *Driver) do(ctx context.Context, cmds ...goredis.Cmder) error {
	if d.ap != nil {
		// The autopipeliner queues a command whatever its context, and WaitContext returns
		// the result of a batch that is already done before it looks at the context: an
		// operation the engine has abandoned would still be sent, and could succeed
		// (TestCancelledOperationsNeverReachTheServer).
		if err := ctx.Err(); err != nil {
			return err
		}
		var buf [2]goredis.AutoFuture
		futs := buf[:0]
		for _, c := range cmds {
			futs = append(futs, d.ap.Submit(ctx, c))
		}
		for _, f := range futs {
			if err := f.WaitContext(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	if len(cmds) == 1 {
		return d.client.Process(ctx, cmds[0])
	}
	pipe := d.client.Pipeline()
	for _, c := range cmds {
		_ = pipe.Process(ctx, c)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Reconfigure applies live options (ttl) without reconnecting.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	d.ttl.Store(int64(o.TTL))
	return nil
}

// ConnectionInfo describes the connection: addresses, mode, shape, database, TLS and the
// server version. It never includes credentials.
func (d *Driver) ConnectionInfo() map[string]string {
	d.infoMu.Lock()
	defer d.infoMu.Unlock()
	out := make(map[string]string, len(d.info)+1)
	for k, v := range d.info {
		out[k] = v
	}
	out["ttl"] = time.Duration(d.ttl.Load()).String()
	return out
}

// Close stops the autopipeliner and closes every connection. Safe after a failed Init.
func (d *Driver) Close() error {
	var errs []error
	d.closed.Store(true)
	if d.direct != nil {
		d.direct.close()
	}
	if d.ap != nil {
		if err := d.ap.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
			errs = append(errs, fmt.Errorf("close redis autopipeliner: %w", err))
		}
	}
	if d.client != nil {
		if err := d.client.Close(); err != nil && !errors.Is(err, goredis.ErrClosed) {
			errs = append(errs, fmt.Errorf("close redis client: %w", err))
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
	switch {
	case errors.Is(err, goredis.ErrPoolTimeout), errors.Is(err, goredis.ErrAutoPipelineTimeout):
		return driver.ClassTimeout
	case errors.Is(err, goredis.ErrClosed), errors.Is(err, goredis.ErrPoolExhausted):
		return driver.ClassUnavailable
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		return serverClass(rerr.Error())
	}
	var re replyError // mode=direct
	if errors.As(err, &re) {
		return serverClass(string(re))
	}
	return driver.Classify(err)
}

// serverClass classifies a Redis error reply by its leading code.
func serverClass(msg string) driver.Class {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY":
		return driver.ClassUnavailable
	case "OOM":
		return driver.ClassThrottled
	case "ERR":
		if c, ok := proxyErrorClass(msg); ok {
			return c
		}
		if strings.Contains(msg, "max number of clients reached") {
			return driver.ClassThrottled
		}
		return driver.ClassRejected
	case "WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "EXECABORT", "NOSCRIPT", "CROSSSLOT":
		return driver.ClassRejected
	case "MOVED", "ASK":
		// The cluster client follows redirections; one that escapes means a
		// non-cluster client talks to a cluster node.
		return driver.ClassRejected
	}
	return driver.ClassOther
}
