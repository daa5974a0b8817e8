package cassandra

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "cassandra",
		Summary:    "Apache Cassandra, ScyllaDB and YugabyteDB YCQL over CQL (NDBench's generic CQL table)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		// mode=auto picks direct or gocql at Init, from the cluster's size: it is taken to
		// pipeline here, and the engine refuses workload.pipeline if Init chose gocql.
		Pipelines: func(opts any) bool {
			o, ok := opts.(*Options)
			return ok && o.Mode != "gocql"
		},
	})
}

const (
	readLevels  = "ONE,TWO,THREE,QUORUM,ALL,LOCAL_QUORUM,LOCAL_ONE,SERIAL,LOCAL_SERIAL"
	writeLevels = "ANY,ONE,TWO,THREE,QUORUM,ALL,LOCAL_QUORUM,EACH_QUORUM,LOCAL_ONE"
)

// Options configure the cassandra driver. Aliases are NDBench's property names.
type Options struct {
	Hosts                 []string              `opt:"hosts" alias:"host" default:"127.0.0.1" help:"contact points, comma-separated; the rest of the ring is discovered"`
	Port                  int                   `opt:"port" alias:"hostPort,host.port" default:"9042" min:"1" max:"65535" help:"CQL native transport port"`
	Mode                  string                `opt:"mode" default:"auto" enum:"auto,gocql,direct" help:"auto: direct against a single-node cluster (no peers) unless useBatchWrites with rowsPerPartition > 1, else gocql; gocql: the gocql driver, token-aware over the discovered ring; direct: each worker owns one CQL connection to a configured host (round robin, not token-aware) and sends up to workload.pipeline requests per write (least client CPU)"`
	Cluster               string                `opt:"cluster" default:"localhost" help:"a label for ConnectionInfo (NDBench's cluster name); the server's cluster_name is shown beside it"`
	LocalDC               string                `opt:"localDC" alias:"datacenter" default:"" help:"local data center: DC-aware token-aware routing; empty routes token-aware over all hosts"`
	Keyspace              string                `opt:"keyspace" default:"perftest" help:"keyspace of the table"`
	Table                 string                `opt:"table" alias:"cfname" default:"test1" help:"table (column family) name"`
	ReplicationClass      string                `opt:"replicationClass" default:"SimpleStrategy" enum:"SimpleStrategy,NetworkTopologyStrategy" help:"replication strategy when the keyspace is created; NetworkTopologyStrategy uses replicationFactor in every data center found"`
	ReplicationFactor     int                   `opt:"replicationFactor" default:"1" min:"1" max:"20" help:"replicas per data center when the keyspace is created"`
	CreateSchema          bool                  `opt:"createSchema" default:"true" help:"create the keyspace and table if missing"`
	ReadConsistencyLevel  string                `opt:"readConsistencyLevel" default:"LOCAL_ONE" enum:"ONE,TWO,THREE,QUORUM,ALL,LOCAL_QUORUM,LOCAL_ONE,SERIAL,LOCAL_SERIAL" live:"true" help:"consistency level of reads"`
	WriteConsistencyLevel string                `opt:"writeConsistencyLevel" default:"LOCAL_ONE" enum:"ANY,ONE,TWO,THREE,QUORUM,ALL,LOCAL_QUORUM,EACH_QUORUM,LOCAL_ONE" live:"true" help:"consistency level of writes"`
	ColsPerRow            int                   `opt:"colsPerRow" default:"1" min:"1" max:"1024" help:"value columns per row; a value is split across them and joined on read"`
	RowsPerPartition      int                   `opt:"rowsPerPartition" default:"1" min:"1" max:"10000" help:"rows (clustering keys) per partition; reads fetch the partition and return the newest row"`
	UseBatchWrites        bool                  `opt:"useBatchWrites" alias:"batchWrites" default:"false" help:"with rowsPerPartition > 1, write every row of the partition in one UNLOGGED batch instead of one row per op"`
	Auth                  driver.AuthOptions    `username.help:"user for PasswordAuthenticator; empty for no authentication" password.help:"password for PasswordAuthenticator"`
	TLS                   driver.TLSOptions     `tlsVerify.alias:"tlsVerifyHost"`
	Timeouts              driver.TimeoutOptions // connectTimeout and timeout, as gocql's ConnectTimeout and Timeout
	Retries               int                   `opt:"retries" default:"0" min:"0" max:"10" help:"retries of a failed request on the next host (SimpleRetryPolicy); 0 shows every failure"`
	NumConns              int                   `opt:"numConns" alias:"connections" default:"2" min:"1" max:"128" help:"connections per host"`
	SharedConns           int                   `opt:"sharedConns" default:"0" min:"0" max:"64" help:"mode=direct: connections per host that the workers share, CQL stream ids multiplexing their requests, concurrent workers' requests leaving in one write and the waiting workers reading the replies in turn (least client CPU with many workers and few requests each in flight); 0 gives each worker a connection of its own"`
	WriteCoalesceWait     time.Duration         `opt:"writeCoalesceWait" default:"0s" min:"0s" max:"10ms" help:"gather request frames for up to this long into one write syscall (gocql's default is 200us): fewer syscalls, but up to this much latency added to every op; 0 writes each frame at once"`
	SchemaTimeout         time.Duration         `opt:"schemaTimeout" default:"30s" min:"1s" max:"10m" help:"request timeout of the keyspace and table creation (createSchema), sent on a session of its own when longer than timeout: a schema change waits for the node to write it and the ring to agree, seconds on a busy node"`
	ReconnectInterval     time.Duration         `opt:"reconnectInterval" default:"1s" min:"100ms" max:"10m" help:"how often hosts marked down are retried, so a restarted node is used again quickly"`
}

// ident reports whether s is an unquoted CQL identifier: a letter, then letters, digits
// and _, at most 48 characters. A loop rather than a regexp, which every ndbench process
// compiled at package init whatever its driver.
func ident(s string) bool {
	if len(s) < 1 || len(s) > 48 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

// Validate checks what the tags cannot. Names are spliced into CQL text, so they must be
// plain identifiers. driver.NewOptions calls it, so the config store rejects such options
// up front. The TLS group checks its own rules (a certificate needs its key); whether the
// TLS files exist and parse is checked at Init (checkFiles), on the node that reads them.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	for _, f := range []struct{ name, value string }{{"keyspace", o.Keyspace}, {"table", o.Table}} {
		if !ident(f.value) {
			errs = append(errs, &driver.FieldError{Field: f.name, Value: f.value,
				Allowed: "a letter then letters, digits or _, at most 48 characters"})
		}
	}
	if len(o.Hosts) == 0 {
		errs = append(errs, &driver.FieldError{Field: "hosts", Allowed: "one or more host names or addresses"})
	}
	if o.Mode == "direct" && o.RowsPerPartition > 1 && o.UseBatchWrites {
		errs = append(errs, &driver.FieldError{Field: "mode", Value: o.Mode, Allowed: "auto or gocql with useBatchWrites and rowsPerPartition > 1 (direct sends no BATCH)"})
	}
	if o.Auth.Username == "" && o.Auth.Password != "" {
		errs = append(errs, &driver.FieldError{Field: "username", Allowed: "a user name when password is set"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// checkFiles reads the TLS files given, on this node, into the TLS configuration (nil
// with tls off). A file that is missing or does not parse is a field error naming its
// option.
func (o *Options) checkFiles() (*tls.Config, error) {
	return o.TLS.Config()
}

// Driver is the cassandra driver. It is safe for concurrent use after Init.
type Driver struct {
	opts    Options // guarded by mu after Init (Reconfigure changes the levels)
	session *gocql.Session
	// beforeSchema, when set (by a test), runs right before the schema statements are
	// sent: a test stalls the node there to make them slower than the request timeout.
	beforeSchema func()

	// Immutable after Init, read by every op without locking.
	cols, rows int
	batch      bool
	password   string // only to scrub it from error text; never shown

	readCL, writeCL atomic.Uint32 // gocql.Consistency, switched live by Reconfigure
	rowSeq          atomic.Uint64 // next row for non-batch writes with several rows

	readSQL, writeSQL  string
	deleteSQL, scanSQL string
	clusterName        string
	version            string

	mu   sync.Mutex // guards info against Reconfigure
	info map[string]string

	directState // mode=direct
}

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.Reconfigurer     = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
	_ driver.Pipeliner        = (*Driver)(nil)
	_ driver.Deleter          = (*Driver)(nil)
	_ driver.Scanner          = (*Driver)(nil)
)

// Init connects, creates the schema when asked, and checks the table can hold values.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	tlsConf, err := o.checkFiles()
	if err != nil {
		return err
	}
	d.opts = *o
	d.tls = tlsConf
	d.cols, d.rows, d.batch = o.ColsPerRow, o.RowsPerPartition, o.UseBatchWrites
	d.password = o.Auth.Password
	if err := d.setLevels(o); err != nil {
		return err
	}
	d.buildStatements()

	cfg := clusterConfig(o, tlsConf, o.Timeouts.Request, o.NumConns)
	session, err := connect(ctx, cfg)
	if err != nil {
		return d.initError(fmt.Sprintf("connect to %s port %d", strings.Join(o.Hosts, ","), o.Port), err)
	}
	d.session = session

	if err := session.Query("SELECT cluster_name, release_version FROM system.local").
		ScanContext(ctx, &d.clusterName, &d.version); err != nil {
		return d.fail("read system.local", err)
	}
	if o.CreateSchema {
		if err := d.createSchema(ctx, tlsConf); err != nil {
			return err
		}
	}
	if err := d.checkTable(ctx); err != nil {
		return err
	}
	if d.opts.Mode == "auto" {
		mode, err := d.autoMode(ctx)
		if err != nil {
			return err
		}
		d.opts.Mode = mode
	}
	if d.opts.Mode == "direct" {
		// Check a direct connection can be set up (authentication, PREPARE) now rather
		// than fail every operation of the run.
		p := &pipeline{d: d, host: d.hostAddr(0)}
		err := p.connect(ctx)
		_ = p.Close()
		if err != nil {
			return classifyDirect(d.scrub(err))
		}
		d.warm = driver.NewWarmConns(0, nil, func(w warmed) { _ = w.nc.Close() })
	}
	d.refreshInfo()
	return nil
}

// autoMode picks mode=direct for a single-node cluster, where direct mode's lack of token
// awareness costs nothing, and gocql for a ring (or for batch writes, which direct mode
// does not send). docs/design-notes.md has the measurements.
func (d *Driver) autoMode(ctx context.Context) (string, error) {
	if d.rows > 1 && d.batch {
		return "gocql", nil
	}
	iter := d.session.Query("SELECT peer FROM system.peers").IterContext(ctx)
	var peer net.IP
	peers := 0
	for iter.Scan(&peer) {
		peers++
	}
	if err := iter.Close(); err != nil {
		return "", d.fail("read system.peers", err)
	}
	if peers > 0 {
		return "gocql", nil
	}
	return "direct", nil
}

// clusterConfig is gocql's configuration for o, with the given request timeout and
// connections per host. Each session needs one of its own: a token-aware host policy
// must not be shared between sessions.
func clusterConfig(o *Options, tlsConf *tls.Config, timeout time.Duration, numConns int) *gocql.ClusterConfig {
	cfg := gocql.NewCluster(o.Hosts...)
	cfg.Port = o.Port
	cfg.NumConns = numConns
	cfg.Timeout = timeout
	cfg.ConnectTimeout = o.Timeouts.Connect
	// gocql's connections are read and written with raw system calls (driver.RawIO), as
	// direct mode's are; gocql adds TLS (SslOpts) on top of what this returns. With
	// writeCoalesceWait set, gocql's coalesced writes are net.Buffers, whose WriteTo finds
	// the TCP connection's own writev through the wrapper: those take the runtime's path,
	// under the same socket lock.
	cfg.Dialer = dialFunc(driver.RawIODialer((&net.Dialer{Timeout: o.Timeouts.Connect}).DialContext))
	cfg.ReconnectInterval = o.ReconnectInterval
	cfg.WriteCoalesceWaitTime = o.WriteCoalesceWait
	cfg.Consistency = gocql.LocalOne
	if o.Retries > 0 {
		cfg.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: o.Retries}
	}
	if o.LocalDC != "" {
		cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(o.LocalDC))
	} else {
		cfg.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	}
	if o.Auth.Username != "" {
		cfg.Authenticator = gocql.PasswordAuthenticator{Username: o.Auth.Username, Password: o.Auth.Password}
	}
	if tlsConf != nil {
		// The files are already loaded into tlsConf; gocql sets each host's ServerName
		// when verifying and tlsServerName is empty.
		cfg.SslOpts = &gocql.SslOptions{Config: tlsConf, EnableHostVerification: o.TLS.Verify}
	}
	return cfg
}

// connect creates the session without outliving ctx: gocql's CreateSession takes no
// context and may try every contact point with its own timeouts.
func connect(ctx context.Context, cfg *gocql.ClusterConfig) (*gocql.Session, error) {
	type result struct {
		s   *gocql.Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := cfg.CreateSession()
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() { // close the session if it comes up after we gave up
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

func (d *Driver) setLevels(o *Options) error {
	r, err := gocql.ParseConsistencyWrapper(o.ReadConsistencyLevel)
	if err != nil {
		return &driver.FieldError{Field: "readConsistencyLevel", Value: o.ReadConsistencyLevel, Allowed: readLevels}
	}
	w, err := gocql.ParseConsistencyWrapper(o.WriteConsistencyLevel)
	if err != nil {
		return &driver.FieldError{Field: "writeConsistencyLevel", Value: o.WriteConsistencyLevel, Allowed: writeLevels}
	}
	d.readCL.Store(uint32(r))
	d.writeCL.Store(uint32(w))
	return nil
}

func (d *Driver) qualified() string { return d.opts.Keyspace + "." + d.opts.Table }

func valueCols(n int) []string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = "value" + strconv.Itoa(i)
	}
	return cols
}

func (d *Driver) buildStatements() {
	cols := strings.Join(valueCols(d.opts.ColsPerRow), ", ")
	marks := strings.Repeat(", ?", d.opts.ColsPerRow)
	d.writeSQL = "INSERT INTO " + d.qualified() + " (key, column1, " + cols + ") VALUES (?, ?" + marks + ")"
	if d.opts.RowsPerPartition == 1 {
		d.readSQL = "SELECT " + cols + " FROM " + d.qualified() + " WHERE key = ? AND column1 = 0"
	} else {
		d.readSQL = "SELECT writetime(value0), " + cols + " FROM " + d.qualified() + " WHERE key = ?"
	}
	d.deleteSQL = "DELETE FROM " + d.qualified() + " WHERE key = ?"
	// One row per partition, so n counts keys whatever rowsPerPartition is.
	d.scanSQL = "SELECT key, " + cols + " FROM " + d.qualified() + " WHERE token(key) >= token(?) PER PARTITION LIMIT 1 LIMIT ?"
}

func (d *Driver) createSchema(ctx context.Context, tlsConf *tls.Config) error {
	if ok, err := d.tableExists(ctx); err != nil {
		return err
	} else if ok {
		return nil // checkTable judges its columns
	}
	repl := fmt.Sprintf("{'class': 'SimpleStrategy', 'replication_factor': %d}", d.opts.ReplicationFactor)
	if d.opts.ReplicationClass == "NetworkTopologyStrategy" {
		dcs, err := d.dataCenters(ctx)
		if err != nil {
			return err
		}
		parts := []string{"'class': 'NetworkTopologyStrategy'"}
		for _, dc := range dcs {
			parts = append(parts, fmt.Sprintf("'%s': %d", strings.ReplaceAll(dc, "'", "''"), d.opts.ReplicationFactor))
		}
		repl = "{" + strings.Join(parts, ", ") + "}"
	}
	ddl := []string{
		"CREATE KEYSPACE IF NOT EXISTS " + d.opts.Keyspace + " WITH replication = " + repl,
		"CREATE TABLE IF NOT EXISTS " + d.qualified() + " (key text, column1 int, " +
			strings.Join(valueCols(d.opts.ColsPerRow), " blob, ") + " blob, PRIMARY KEY ((key), column1))",
	}
	// A schema change waits for the node to write it and for the ring to agree, seconds on
	// a busy node: under the run's request timeout (often ~1 s, chosen for operations) the
	// creation failed while the node was merely slow. It gets a session of its own with
	// schemaTimeout, for the few statements it sends.
	s := d.session
	if d.opts.SchemaTimeout > d.opts.Timeouts.Request && d.opts.Timeouts.Request > 0 {
		ddlSession, err := connect(ctx, clusterConfig(&d.opts, tlsConf, d.opts.SchemaTimeout, 1))
		if err != nil {
			return d.initError(fmt.Sprintf("connect to %s port %d to create the schema", strings.Join(d.opts.Hosts, ","), d.opts.Port), err)
		}
		defer closeSession(ddlSession, sessionCloseWait)
		s = ddlSession
	}
	if d.beforeSchema != nil {
		d.beforeSchema()
	}
	for _, q := range ddl {
		if err := s.Query(q).ExecContext(ctx); err != nil {
			var exists *gocql.RequestErrAlreadyExists
			if errors.As(err, &exists) { // another node created it first
				continue
			}
			return d.fail("create schema ("+q+")", err)
		}
	}
	return nil
}

// tableExists says whether the table is in the node's schema, so that a run against an
// existing table sends no schema statement (and opens no session for one).
func (d *Driver) tableExists(ctx context.Context) (bool, error) {
	ks, tb := strings.ToLower(d.opts.Keyspace), strings.ToLower(d.opts.Table)
	var name string
	err := d.session.Query("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?", ks, tb).ScanContext(ctx, &name)
	switch {
	case errors.Is(err, gocql.ErrNotFound):
		return false, nil
	case err != nil:
		return false, d.fail("look up table "+d.qualified(), err)
	}
	return true, nil
}

// dataCenters lists the data centers of the ring, for NetworkTopologyStrategy.
func (d *Driver) dataCenters(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var dc string
	if err := d.session.Query("SELECT data_center FROM system.local").ScanContext(ctx, &dc); err != nil {
		return nil, d.fail("read data center", err)
	}
	seen[dc] = true
	iter := d.session.Query("SELECT data_center FROM system.peers").IterContext(ctx)
	for iter.Scan(&dc) {
		seen[dc] = true
	}
	if err := iter.Close(); err != nil {
		return nil, d.fail("read peers' data centers", err)
	}
	if d.opts.LocalDC != "" {
		seen[d.opts.LocalDC] = true
	}
	dcs := make([]string, 0, len(seen))
	for k := range seen {
		dcs = append(dcs, k)
	}
	sort.Strings(dcs)
	return dcs, nil
}

// checkTable verifies the columns the statements use exist with the types they need, so a
// table left by NDBench (text values) or made with fewer columns fails Init with the fix.
func (d *Driver) checkTable(ctx context.Context) error {
	ks, tb := strings.ToLower(d.opts.Keyspace), strings.ToLower(d.opts.Table)
	iter := d.session.Query("SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?", ks, tb).IterContext(ctx)
	types := map[string]string{}
	var name, typ string
	for iter.Scan(&name, &typ) {
		types[name] = typ
	}
	if err := iter.Close(); err != nil {
		return d.fail("read columns of "+d.qualified(), err)
	}
	if len(types) == 0 {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("table %s does not exist; set createSchema=true or create it", d.qualified()))
	}
	want := map[string]string{"key": "text", "column1": "int"}
	for _, c := range valueCols(d.opts.ColsPerRow) {
		want[c] = "blob"
	}
	var bad []string
	for _, c := range append([]string{"key", "column1"}, valueCols(d.opts.ColsPerRow)...) {
		if got := types[c]; got != want[c] {
			if got == "" {
				got = "missing"
			}
			bad = append(bad, fmt.Sprintf("%s is %s, want %s", c, got, want[c]))
		}
	}
	if len(bad) > 0 {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("table %s cannot hold ndbench values (%s): use another table (option table/cfname) or drop it",
			d.qualified(), strings.Join(bad, "; ")))
	}
	return nil
}

// Read returns the newest row of key's partition, its value columns joined, or
// driver.ErrNotFound when the partition is empty.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	n := d.cols
	q := d.session.Query(d.readSQL, key).
		Consistency(gocql.Consistency(d.readCL.Load())).Idempotent(true)
	parts := make([][]byte, n)
	dest := make([]any, 0, n+1)
	var wt int64
	if d.rows > 1 {
		dest = append(dest, &wt)
	}
	for i := range parts {
		dest = append(dest, &parts[i])
	}
	if d.rows == 1 {
		if err := q.ScanContext(ctx, dest...); err != nil {
			if errors.Is(err, gocql.ErrNotFound) {
				return nil, driver.ErrNotFound
			}
			return nil, d.fail("read", err)
		}
		return join(parts), nil
	}
	iter := q.IterContext(ctx)
	var best [][]byte
	bestWT := int64(-1 << 63)
	for iter.Scan(dest...) {
		if best == nil || wt > bestWT {
			best, bestWT = parts, wt
			parts = make([][]byte, n)
			for i := range parts {
				dest[i+1] = &parts[i]
			}
		}
	}
	if err := iter.Close(); err != nil {
		return nil, d.fail("read", err)
	}
	if best == nil {
		return nil, driver.ErrNotFound
	}
	return join(best), nil
}

func join(parts [][]byte) []byte {
	if len(parts) == 1 {
		if parts[0] == nil {
			return []byte{}
		}
		return parts[0]
	}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	out := make([]byte, 0, size)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// split cuts value into n contiguous pieces of near-equal size. Pieces are never nil, so
// an empty piece is stored as an empty blob (which has a WRITETIME) rather than a null.
func split(value []byte, n int) []any {
	if value == nil {
		value = []byte{}
	}
	out := make([]any, n)
	l := len(value)
	for i := range n {
		out[i] = value[i*l/n : (i+1)*l/n]
	}
	return out
}

// Write stores value under key: one row, or every row of the partition in an UNLOGGED
// batch when useBatchWrites is set (see the package doc).
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	cl := gocql.Consistency(d.writeCL.Load())
	pieces := split(value, d.cols)
	rows := d.rows
	if rows > 1 && d.batch {
		b := d.session.Batch(gocql.UnloggedBatch).Consistency(cl)
		for r := range rows {
			b.Query(d.writeSQL, rowArgs(key, r, pieces)...)
		}
		if err := b.ExecContext(ctx); err != nil {
			return d.fail("batch write", err)
		}
		return nil
	}
	row := 0
	if rows > 1 {
		row = int((d.rowSeq.Add(1) - 1) % uint64(rows))
	}
	err := d.session.Query(d.writeSQL, rowArgs(key, row, pieces)...).
		Consistency(cl).Idempotent(true).ExecContext(ctx)
	if err != nil {
		return d.fail("write", err)
	}
	return nil
}

// Delete removes key's partition, every row of it, at the write consistency level; a
// missing partition is no error (a delete in Cassandra is a tombstone either way).
func (d *Driver) Delete(ctx context.Context, key string) error {
	err := d.session.Query(d.deleteSQL, key).
		Consistency(gocql.Consistency(d.writeCL.Load())).Idempotent(true).ExecContext(ctx)
	if err != nil {
		return d.fail("delete", err)
	}
	return nil
}

// Scan reads up to n partitions (keys) with their values, one row each, in the ring's
// token order from start's token, at the read consistency level, and returns how many
// it read; none is driver.ErrNotFound. Token order is the order the partitioner gives:
// with Murmur3Partitioner (the default) it is a hash's, not the keys' byte order, so the
// keys read are n neighbours on the ring, as YCSB's Cassandra binding reads workload E's
// scans (token(key) >= token(?) LIMIT n), not the keys that follow start by name. The
// scan does not wrap past the ring's last token.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	iter := d.session.Query(d.scanSQL, start, n).
		Consistency(gocql.Consistency(d.readCL.Load())).Idempotent(true).IterContext(ctx)
	// The rows' columns are read off the wire (a scan's cost) but not decoded: counted.
	sc := iter.Scanner()
	got := 0
	for sc.Next() {
		got++
	}
	if err := sc.Err(); err != nil {
		return 0, d.fail("scan", err)
	}
	if got == 0 {
		return 0, driver.ErrNotFound
	}
	return got, nil
}

// ScanOrder says Scan reads in the ring's token order, not the keys' byte order
// (driver.ScanOrderer).
func (d *Driver) ScanOrder() driver.ScanOrder { return driver.ScanStore }

func rowArgs(key string, row int, pieces []any) []any {
	args := make([]any, 0, 2+len(pieces))
	args = append(args, key, row)
	return append(args, pieces...)
}

// Reconfigure switches the consistency levels without reconnecting; the registry only
// passes options that differ in live fields.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := d.setLevels(o); err != nil {
		return err
	}
	d.mu.Lock()
	d.opts.ReadConsistencyLevel, d.opts.WriteConsistencyLevel = o.ReadConsistencyLevel, o.WriteConsistencyLevel
	d.mu.Unlock()
	d.refreshInfo()
	return nil
}

func (d *Driver) refreshInfo() {
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.opts
	d.info = map[string]string{
		"cluster":               o.Cluster,
		"cluster_name":          d.clusterName,
		"release_version":       d.version,
		"hosts":                 strings.Join(o.Hosts, ","),
		"port":                  strconv.Itoa(o.Port),
		"localDC":               o.LocalDC,
		"keyspace":              o.Keyspace,
		"table":                 o.Table,
		"readConsistencyLevel":  o.ReadConsistencyLevel,
		"writeConsistencyLevel": o.WriteConsistencyLevel,
		"colsPerRow":            strconv.Itoa(o.ColsPerRow),
		"rowsPerPartition":      strconv.Itoa(o.RowsPerPartition),
		"useBatchWrites":        strconv.FormatBool(o.UseBatchWrites),
		"numConns":              strconv.Itoa(o.NumConns),
		"mode":                  o.Mode,
		"tls":                   strconv.FormatBool(o.TLS.Enable),
		"username":              o.Auth.Username,
	}
}

// ConnectionInfo describes the connection; it never includes the password.
func (d *Driver) ConnectionInfo() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]string, len(d.info))
	for k, v := range d.info {
		out[k] = v
	}
	return out
}

// Close closes the session; it copes with a failed Init. Pipelines still open keep
// their connections until the engine closes them, but never reconnect.
func (d *Driver) Close() error {
	d.closed.Store(true)
	d.warm.Close()
	d.closeShared()
	if d.session != nil {
		closeSession(d.session, sessionCloseWait)
	}
	return nil
}

// sessionCloseWait bounds how long Close waits for gocql's Session.Close, which on a
// starved or stalled node waited over 20 s for its control connection (a reconnect or a
// schema refresh in flight); past it the session finishes closing in the background.
var sessionCloseWait = 5 * time.Second

// closeSession closes s, waiting at most wait; it reports whether the close finished.
func closeSession(s interface{ Close() }, wait time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.Close()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		slog.Warn("cassandra: the gocql session is still closing; it finishes in the background (a stalled or starved node?)", "waited", wait)
		return false
	}
}

// initError classifies a failed session creation. gocql flattens the cause into text, so
// only bad credentials are told apart (rejected); anything else means no node answered.
func (d *Driver) initError(what string, err error) error {
	class := driver.ClassUnavailable
	var re gocql.RequestError
	if errors.As(err, &re) || errors.Is(err, context.DeadlineExceeded) {
		class = Classify(err)
	}
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "authenticat") || strings.Contains(msg, "credentials") {
		class = driver.ClassRejected
	}
	return driver.Wrap(class, d.scrub(fmt.Errorf("%s: %w", what, err)))
}

// fail classifies err and prefixes what was being done.
func (d *Driver) fail(what string, err error) error {
	return driver.Wrap(Classify(err), d.scrub(fmt.Errorf("%s: %w", what, err)))
}

// scrub removes the password from err's text in case a library message carried it; the
// error chain is kept when there is nothing to remove.
func (d *Driver) scrub(err error) error {
	if d.password != "" && strings.Contains(err.Error(), d.password) {
		return errors.New(strings.ReplaceAll(err.Error(), d.password, "xxxxx"))
	}
	return err
}

// Classify maps a gocql error to a driver class.
func Classify(err error) driver.Class {
	var re gocql.RequestError
	if errors.As(err, &re) {
		switch re.Code() {
		case gocql.ErrCodeUnavailable, gocql.ErrCodeBootstrapping:
			return driver.ClassUnavailable
		case gocql.ErrCodeWriteTimeout, gocql.ErrCodeReadTimeout:
			return driver.ClassTimeout
		case gocql.ErrCodeOverloaded:
			return driver.ClassThrottled
		case gocql.ErrCodeSyntax, gocql.ErrCodeInvalid, gocql.ErrCodeUnauthorized,
			gocql.ErrCodeCredentials, gocql.ErrCodeConfig, gocql.ErrCodeAlreadyExists:
			return driver.ClassRejected
		}
		return driver.ClassOther
	}
	switch {
	case errors.Is(err, gocql.ErrTimeoutNoResponse), errors.Is(err, context.DeadlineExceeded):
		return driver.ClassTimeout
	case errors.Is(err, gocql.ErrNoConnections), errors.Is(err, gocql.ErrConnectionClosed),
		errors.Is(err, gocql.ErrSessionClosed), errors.Is(err, gocql.ErrUnavailable):
		return driver.ClassUnavailable
	case errors.Is(err, gocql.ErrNoStreams):
		return driver.ClassThrottled
	}
	return driver.Classify(err)
}

// dialFunc is a dial function as a gocql.Dialer.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialContext dials with f.
func (f dialFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}
