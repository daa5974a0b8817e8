package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "postgres",
		Summary:    "PostgreSQL, CockroachDB and YugabyteDB YSQL over pgx (upserts into a key/value table)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Pipelines: func(opts any) bool {
			o, ok := opts.(*Options)
			return ok && o.mode() == "direct"
		},
	})
}

// Options configure the postgres driver.
type Options struct {
	DSN          string `opt:"dsn" default:"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable" secret:"true" help:"connection string (URL or key=value); shown without its password"`
	PoolSize     int    `opt:"poolSize" default:"0" min:"0" max:"10000" help:"maximum connections of the pool, and in mode=direct of the workers' connections too: 0 opens one per worker with an operation in flight, at most 64; a number caps them instead; workers beyond the cap queue for a connection; keep it below the server's max_connections"`
	Table        string `opt:"table" default:"ndbench" help:"table name, optionally schema-qualified (schema.table)"`
	CreateSchema bool   `opt:"createSchema" default:"true" help:"create the table if it does not exist"`
	Mode         string `opt:"mode" default:"auto" enum:"auto,pool,direct" help:"direct: workers share poolSize connections with the statements prepared on them and pipeline their batches (workload.pipeline); pool: workers share a pgxpool; auto: direct, or pool when execMode is exec or simple_protocol"`
	PipelineSync string `opt:"pipelineSync" default:"op" enum:"op,batch" help:"mode=direct with workload.pipeline > 1: op sends a Sync after each operation (each its own transaction, as unpipelined); batch sends one per batch, making it one transaction as pgbench's \\startpipeline does (a failure rolls back the batch's writes)"`
	ExecMode     string `opt:"execMode" default:"cache_statement" enum:"cache_statement,cache_describe,describe_exec,exec,simple_protocol" help:"pgx query exec mode of the pool (mode=pool, and Read, Write and bulk calls); exec or simple_protocol behind PgBouncer without prepared-statement support"`
	// User, password and TLS (sslmode, sslrootcert, ...) live in the DSN, libpq's way, so
	// only the timeouts group applies; a request is bounded by the op's context deadline,
	// which pgx honours, so the group's timeout is omitted.
	Timeouts driver.TimeoutOptions `omit:"timeout" connectTimeout.help:"timeout for establishing one connection"`
}

// ident reports whether s is a plain PostgreSQL identifier: a letter or _, then up to 62
// letters, digits or _. A loop rather than a regexp: compiling `{0,62}` at package init
// cost every ndbench process, whatever its driver, millions of instructions and garbage.
func ident(s string) bool {
	if len(s) < 1 || len(s) > 63 || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Validate checks what the tags cannot: the table must be a plain identifier because it is
// spliced into SQL text. driver.NewOptions calls it, so the config store rejects such
// options up front. (Whether the DSN parses is left to Init: pgx reads service and password
// files while parsing.)
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	parts := strings.Split(o.Table, ".")
	ok := len(parts) <= 2
	for _, p := range parts {
		ok = ok && ident(p)
	}
	if !ok {
		errs = append(errs, &driver.FieldError{Field: "table", Value: o.Table,
			Allowed: "an identifier of letters, digits and _ (not starting with a digit), optionally schema.table"})
	}
	if o.Mode == "direct" && !o.prepares() {
		errs = append(errs, &driver.FieldError{Field: "mode", Value: o.Mode,
			Allowed: "pool or auto with execMode " + o.ExecMode + " (mode=direct prepares statements)"})
	}
	if strings.TrimSpace(o.DSN) == "" {
		errs = append(errs, &driver.FieldError{Field: "dsn", Allowed: "a postgres:// URL or key=value connection string"})
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// prepares reports whether execMode lets the driver prepare statements on the server.
func (o *Options) prepares() bool {
	return o.ExecMode != "exec" && o.ExecMode != "simple_protocol"
}

// mode resolves mode=auto: direct, unless the statements may not be prepared (a pooler
// without prepared-statement support), where the pool's exec modes do without.
func (o *Options) mode() string {
	if o.Mode == "auto" || o.Mode == "" {
		if o.prepares() {
			return "direct"
		}
		return "pool"
	}
	return o.Mode
}

// perWorkerPool is the cap of a poolSize=0 pool, which opens connections as workers need
// them. A fixed default of 32 silently queued the 33rd and later workers for a
// connection: that wait read as the store's latency, and each reply woke a queued worker
// (1.3-1.8 context switches per operation against 0.3-0.5 with a connection each, issue
// 42). Without a cap an elastic pool growing behind a slow server opened connections
// until the server refused them ("too many clients"), failing operations: 64 covers the
// usual worker counts, and with the backfill pool beside it stays within PostgreSQL's
// default max_connections of 100 for a 50-worker run.
const perWorkerPool = 64

// poolCap is how many connections the pool may open.
func (o *Options) poolCap() int {
	if o.PoolSize == 0 {
		return perWorkerPool
	}
	return o.PoolSize
}

// poolLabel names the pool's size in messages.
func (o *Options) poolLabel() string {
	if o.PoolSize == 0 {
		return fmt.Sprintf("poolSize=0 (one per worker, at most %d)", perWorkerPool)
	}
	return "poolSize=" + strconv.Itoa(o.PoolSize)
}

func (o *Options) execMode() pgx.QueryExecMode {
	switch o.ExecMode {
	case "cache_describe":
		return pgx.QueryExecModeCacheDescribe
	case "describe_exec":
		return pgx.QueryExecModeDescribeExec
	case "exec":
		return pgx.QueryExecModeExec
	case "simple_protocol":
		return pgx.QueryExecModeSimpleProtocol
	}
	return pgx.QueryExecModeCacheStatement
}

// Driver is the postgres driver. It is safe for concurrent use after Init.
type Driver struct {
	opts     Options
	pool     *pgxpool.Pool
	password string // only to scrub it from error text; never shown
	version  string
	mode     string         // pool or direct (mode=auto resolved)
	pgcfg    *pgconn.Config // mode=direct: the workers' connections
	direct   *directPool    // mode=direct: the workers' connections, poolSize at most
	closed   atomic.Bool    // set by Close, so no pipeline connects again

	readSQL, writeSQL, readBulkSQL, writeBulkSQL string
	insertSQL                                    string
	deleteSQL, scanSQL                           string
	scanOrder                                    string // how scans order keys, for ConnectionInfo
}

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.BulkReader       = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
	_ driver.Pipeliner        = (*Driver)(nil)
	_ driver.Deleter          = (*Driver)(nil)
	_ driver.Scanner          = (*Driver)(nil)
	_ driver.StatsReporter    = (*Driver)(nil)
)

// Init connects the pool, checks the server answers and creates the table when asked.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	d.mode = o.mode()
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// pgx's parse errors already redact, but a malformed DSN may not parse far enough to
		// know where the password is, so the message is never passed on verbatim.
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("parse dsn %s: invalid connection string", RedactDSN(o.DSN)))
	}
	d.password = cfg.ConnConfig.Password
	cfg.MaxConns = int32(o.poolCap())
	cfg.ConnConfig.ConnectTimeout = o.Timeouts.Connect
	cfg.ConnConfig.DefaultQueryExecMode = o.execMode()
	// The pool's connections are read and written with raw system calls (driver.RawIO),
	// as direct mode's are; pgconn adds TLS on top of what this returns.
	cfg.ConnConfig.DialFunc = driver.RawIODialer(cfg.ConnConfig.DialFunc)

	table := quoteTable(o.Table)
	d.readSQL = "SELECT value FROM " + table + " WHERE key = $1"
	d.writeSQL = "INSERT INTO " + table + " (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
	d.insertSQL = "INSERT INTO " + table + " (key, value) VALUES ($1, $2)"
	d.readBulkSQL = "SELECT key, value FROM " + table + " WHERE key = ANY($1)"
	d.writeBulkSQL = "INSERT INTO " + table + " (key, value) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
	d.deleteSQL = "DELETE FROM " + table + " WHERE key = $1"

	if d.mode == "direct" {
		// A config of its own, parsed as the pool's was: ConnectConfig only reads it, so
		// every worker's connection shares it.
		pc, err := pgconn.ParseConfig(o.DSN)
		if err != nil {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("parse dsn %s: invalid connection string", RedactDSN(o.DSN)))
		}
		pc.ConnectTimeout = o.Timeouts.Connect
		// The worker's connection is read and written with raw system calls
		// (driver.RawIO); pgconn adds TLS on top of what this returns.
		pc.DialFunc = driver.RawIODialer(pc.DialFunc)
		d.pgcfg = pc
		d.direct = newDirectPool(d, o.poolCap())
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return d.fail("create pool", err)
	}
	d.pool = pool
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&d.version); err != nil {
		return d.fail("connect to "+RedactDSN(o.DSN), err)
	}
	if o.CreateSchema {
		if err := d.createTable(ctx, table); err != nil {
			return err
		}
	}
	provider, locale := d.keyCollation(ctx, table)
	d.scanSQL, d.scanOrder = scanStatement(table, provider, locale)
	return nil
}

// keyCollation returns the collation the key column of table (quoted) sorts by: its provider
// (c libc, i ICU, b builtin) and locale, the database's when the column has the default;
// "" when the catalog does not say (no such table yet, a wire-compatible store with
// another catalog). to_jsonb reads columns that only some versions have
// (datlocprovider since PostgreSQL 15) as null rather than failing the query.
func (d *Driver) keyCollation(ctx context.Context, table string) (provider, locale string) {
	const q = `SELECT
	  CASE WHEN c.collprovider = 'd' THEN COALESCE(to_jsonb(db) ->> 'datlocprovider', 'c') ELSE c.collprovider::text END,
	  CASE WHEN c.collprovider = 'd' THEN db.datcollate ELSE COALESCE(c.collcollate, '') END
	FROM pg_attribute a
	JOIN pg_collation c ON c.oid = a.attcollation
	JOIN pg_database db ON db.datname = current_database()
	WHERE a.attrelid = to_regclass($1) AND a.attname = 'key'`
	if err := d.pool.QueryRow(ctx, q, table).Scan(&provider, &locale); err != nil {
		return "", ""
	}
	return provider, locale
}

// scanStatement returns the scan's SQL for table and how it orders keys. Scanner wants
// keys in byte order. A key column whose collation sorts by bytes (C, POSIX, C.UTF-8 of
// libc; the builtin provider's code point order) is scanned as it is, so the primary
// key's index serves the range; any other collation (a language's, ICU's) would order
// "B" after "a", so the scan compares and sorts under COLLATE "C": the right keys, but
// read by scanning the table rather than an index range. Tables the driver creates have
// key TEXT COLLATE "C", so only a table made elsewhere can take the slow path.
func scanStatement(table, provider, locale string) (string, string) {
	bytewise := provider == "b"
	if provider == "c" {
		switch strings.ToLower(locale) {
		case "c", "posix", "c.utf-8", "c.utf8":
			bytewise = true
		}
	}
	if bytewise {
		return "SELECT key, value FROM " + table + " WHERE key >= $1 ORDER BY key LIMIT $2",
			"key index (collation " + locale + " is byte order)"
	}
	why := "collation " + provider + ":" + locale + " is not byte order"
	if provider == "" {
		why = "collation unknown (no table, or a catalog without it)"
	}
	return "SELECT key, value FROM " + table + ` WHERE key COLLATE "C" >= $1 ORDER BY key COLLATE "C" LIMIT $2`,
		`COLLATE "C" sort, no index range (` + why + ")"
}

func (d *Driver) createTable(ctx context.Context, table string) error {
	// COLLATE "C": keys sort by their bytes, whatever the database's locale, so a scan's
	// key range is a range of the primary key's index (see scanStatement).
	_, err := d.pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+table+` (key TEXT COLLATE "C" PRIMARY KEY, value BYTEA NOT NULL)`)
	var pe *pgconn.PgError
	// Two nodes creating the table at once race in the catalog; the loser sees a
	// duplicate, and the table exists either way.
	if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07") {
		err = nil
	}
	if err != nil {
		return d.fail("create table "+d.opts.Table, err)
	}
	return nil
}

// quoteTable quotes each part so reserved words and mixed case work as given.
func quoteTable(name string) string {
	return pgx.Identifier(strings.Split(name, ".")).Sanitize()
}

// Read returns the value of key or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := d.pool.QueryRow(ctx, d.readSQL, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, driver.ErrNotFound
	}
	if err != nil {
		return nil, d.fail("read", err)
	}
	return v, nil
}

// Write upserts value under key.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if _, err := d.pool.Exec(ctx, d.writeSQL, key, value); err != nil {
		return d.fail("write", err)
	}
	return nil
}

// Insert adds key's row with a plain INSERT (driver.Inserter), the operation insert: a
// key that exists violates the primary key and fails as rejected.
func (d *Driver) Insert(ctx context.Context, key string, value []byte) error {
	if _, err := d.pool.Exec(ctx, d.insertSQL, key, value); err != nil {
		return d.fail("insert", err)
	}
	return nil
}

// Delete removes key's row; deleting a missing key is not an error (driver.Deleter).
func (d *Driver) Delete(ctx context.Context, key string) error {
	if _, err := d.pool.Exec(ctx, d.deleteSQL, key); err != nil {
		return d.fail("delete", err)
	}
	return nil
}

// Scan reads up to n rows, keys and values, in byte order of the keys from start and
// returns how many it read; none is driver.ErrNotFound. The values come over the wire as
// a range read's would, and are counted, not kept.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	rows, err := d.pool.Query(ctx, d.scanSQL, start, n)
	if err != nil {
		return 0, d.fail("scan", err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		got++
	}
	if err := rows.Err(); err != nil {
		return 0, d.fail("scan", err)
	}
	if got == 0 {
		return 0, driver.ErrNotFound
	}
	return got, nil
}

// ReadBulk reads keys in one round trip; a missing key has a nil value.
func (d *Driver) ReadBulk(ctx context.Context, keys []string) ([][]byte, error) {
	rows, err := d.pool.Query(ctx, d.readBulkSQL, keys)
	if err != nil {
		return nil, d.fail("bulk read", err)
	}
	defer rows.Close()
	found := make(map[string][]byte, len(keys))
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, d.fail("bulk read", err)
		}
		found[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, d.fail("bulk read", err)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
}

// WriteBulk upserts every pair in one statement. ON CONFLICT cannot touch a row twice in
// one statement, so a repeated key keeps only its last value, as sequential writes would.
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("bulk write: %d keys but %d values", len(keys), len(values)))
	}
	last := make(map[string]int, len(keys))
	for i, k := range keys {
		last[k] = i
	}
	ks, vs := keys, values
	if len(last) != len(keys) {
		ks = make([]string, 0, len(last))
		vs = make([][]byte, 0, len(last))
		for i, k := range keys {
			if last[k] == i {
				ks = append(ks, k)
				vs = append(vs, values[i])
			}
		}
	}
	if _, err := d.pool.Exec(ctx, d.writeBulkSQL, ks, vs); err != nil {
		return d.fail("bulk write", err)
	}
	return nil
}

// ConnectionInfo describes the connection without secrets.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{
		"dsn":            RedactDSN(d.opts.DSN),
		"table":          d.opts.Table,
		"poolSize":       strings.TrimPrefix(d.opts.poolLabel(), "poolSize="),
		"mode":           d.mode,
		"pipelineSync":   d.opts.PipelineSync,
		"execMode":       d.opts.ExecMode,
		"server_version": d.version,
		"scanOrder":      d.scanOrder,
	}
	if d.pool != nil {
		st := d.pool.Stat()
		info["pool_total_conns"] = strconv.Itoa(int(st.TotalConns()))
	}
	return info
}

// DriverStats reports pool_waits in mode=direct: the operations that waited for a
// connection because all poolSize were in use (workers beyond the cap queue in the
// client, and that wait is in their latency).
func (d *Driver) DriverStats() map[string]int64 {
	if d.direct == nil {
		return nil
	}
	return map[string]int64{"pool_waits": d.direct.capWaits.Load()}
}

// Close closes the pool; it copes with a failed Init. The engine closes its pipelines
// before the driver.
func (d *Driver) Close() error {
	d.closed.Store(true)
	if d.direct != nil {
		d.direct.close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
	return nil
}

// fail classifies err and prefixes what was being done, scrubbing the password in case a
// library message carried it.
func (d *Driver) fail(what string, err error) error {
	class := Classify(err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == tooManyConnections {
		what += fmt.Sprintf(" (the server's max_connections, or the role's or database's CONNECTION LIMIT, is reached: each ndbench node opens up to %s connections, and twice that in mode=direct while backfill or the API run; set poolSize below the limit or raise it)", d.opts.poolLabel())
	}
	msg := what + ": " + err.Error()
	if d.password != "" && strings.Contains(msg, d.password) {
		return driver.Wrap(class, errors.New(strings.ReplaceAll(msg, d.password, "xxxxx")))
	}
	return driver.Wrap(class, fmt.Errorf("%s: %w", what, err))
}

// Classify maps a pgx error to a driver class, by SQLSTATE for server errors.
func Classify(err error) driver.Class {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return classifySQLState(pe.Code)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return driver.ClassTimeout
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return driver.ClassUnavailable
	}
	if c := driver.Classify(err); c != driver.ClassOther {
		return c
	}
	// SafeToRetry marks failures before anything reached the server (a dial that failed,
	// a connection found closed): the server is not there to take the request.
	if pgconn.SafeToRetry(err) {
		return driver.ClassUnavailable
	}
	return driver.ClassOther
}

// tooManyConnections is SQLSTATE 53300: "sorry, too many clients already", "too many
// connections for role" and "too many connections for database".
const tooManyConnections = "53300"

func classifySQLState(code string) driver.Class {
	switch code {
	case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return driver.ClassUnavailable
	case tooManyConnections:
		// The server has no room for another client (max_connections, or a role's or
		// database's CONNECTION LIMIT): the store is not slowing work down, it cannot be
		// reached, and no backoff on the operations brings a connection back.
		return driver.ClassUnavailable
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return driver.ClassThrottled
	case "57014": // query_canceled (statement_timeout or cancel)
		return driver.ClassTimeout
	}
	if len(code) < 2 {
		return driver.ClassOther
	}
	switch code[:2] {
	case "08":
		return driver.ClassUnavailable
	case "53":
		return driver.ClassThrottled
	case "22", "23", "42", "28", "3D", "3F":
		return driver.ClassRejected
	}
	return driver.ClassOther
}

// The DSN redaction's patterns, compiled on first use (sync.OnceValue): at package init
// every ndbench process paid for them, whatever its driver.
var (
	kvPasswordQuoted = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(password|sslpassword)\s*=\s*'(?:[^'\\]|\\.)*'`)
	})
	kvPasswordPlain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(password|sslpassword)\s*=\s*[^\s&']*`)
	})
	// Greedy up to the last '@' so a password holding '/' or '@' unescaped is still cut.
	urlUserinfo = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*://[^:@/]*):.*@`)
	})
)

// RedactDSN returns dsn without its passwords, in URL or key=value form, for display.
func RedactDSN(dsn string) string {
	s := dsn
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.User(u.User.Username())
			s = u.String()
		}
	} else {
		s = urlUserinfo().ReplaceAllString(dsn, "$1@")
	}
	s = kvPasswordQuoted().ReplaceAllString(s, "$1=xxxxx")
	s = kvPasswordPlain().ReplaceAllString(s, "$1=xxxxx")
	return s
}
