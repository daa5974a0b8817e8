package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dialect is what differs between the SQL databases the store runs on; the schema is the
// same (a column type may differ: a TEXT time in SQLite is a TIMESTAMPTZ in PostgreSQL,
// so Grafana charts it).
type dialect struct {
	name string
	// rebind turns the queries' ? placeholders into the database's.
	rebind func(string) string
	// timeArg is how a time is passed to the database.
	timeArg func(time.Time) any
	// lockSchema, run in the migration's transaction, keeps two processes from
	// migrating at once ("" when the transaction itself does).
	lockSchema string
}

// migration is one version of the schema: its statements per dialect name. A migration
// is applied once, in a transaction that also records its version in schema_version, and
// is never edited once released; a change is a new migration.
type migration struct {
	version int
	stmts   map[string][]string
}

// migrations are the schema's versions, oldest first.
var migrations = []migration{
	{version: 1, stmts: map[string][]string{
		"sqlite": {
			`CREATE TABLE runs (
				id INTEGER PRIMARY KEY AUTOINCREMENT,
				recorded_at TEXT NOT NULL,
				started_at TEXT NOT NULL,
				ended_at TEXT NOT NULL,
				seconds REAL NOT NULL,
				kind TEXT NOT NULL,
				driver TEXT NOT NULL,
				version TEXT NOT NULL,
				hostname TEXT NOT NULL,
				os TEXT NOT NULL,
				arch TEXT NOT NULL,
				cpus INTEGER NOT NULL,
				source TEXT NOT NULL,
				report TEXT NOT NULL)`,
			`CREATE INDEX runs_started ON runs (started_at)`,
			`CREATE TABLE run_tags (
				run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				key TEXT NOT NULL,
				value TEXT NOT NULL,
				PRIMARY KEY (run_id, key))`,
			`CREATE INDEX run_tags_kv ON run_tags (key, value)`,
			`CREATE TABLE figures (
				run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				series TEXT NOT NULL,
				metric TEXT NOT NULL,
				value REAL NOT NULL,
				PRIMARY KEY (run_id, series, metric))`,
			`CREATE INDEX figures_figure ON figures (series, metric)`,
			`CREATE TABLE histograms (
				run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				name TEXT NOT NULL,
				encoding TEXT NOT NULL,
				PRIMARY KEY (run_id, name))`,
		},
		"postgres": {
			`CREATE TABLE runs (
				id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				recorded_at TIMESTAMPTZ NOT NULL,
				started_at TIMESTAMPTZ NOT NULL,
				ended_at TIMESTAMPTZ NOT NULL,
				seconds DOUBLE PRECISION NOT NULL,
				kind TEXT NOT NULL,
				driver TEXT NOT NULL,
				version TEXT NOT NULL,
				hostname TEXT NOT NULL,
				os TEXT NOT NULL,
				arch TEXT NOT NULL,
				cpus INTEGER NOT NULL,
				source TEXT NOT NULL,
				report JSONB NOT NULL)`,
			`CREATE INDEX runs_started ON runs (started_at)`,
			`CREATE TABLE run_tags (
				run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				key TEXT NOT NULL,
				value TEXT NOT NULL,
				PRIMARY KEY (run_id, key))`,
			`CREATE INDEX run_tags_kv ON run_tags (key, value)`,
			`CREATE TABLE figures (
				run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				series TEXT NOT NULL,
				metric TEXT NOT NULL,
				value DOUBLE PRECISION NOT NULL,
				PRIMARY KEY (run_id, series, metric))`,
			`CREATE INDEX figures_figure ON figures (series, metric)`,
			`CREATE TABLE histograms (
				run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				name TEXT NOT NULL,
				encoding TEXT NOT NULL,
				PRIMARY KEY (run_id, name))`,
		},
	}},
	// The workload a run measured (a preset's or a scenario's name), so runs of one
	// workload can be selected without a tag given for it.
	{version: 2, stmts: map[string][]string{
		"sqlite":   {`ALTER TABLE runs ADD COLUMN workload TEXT NOT NULL DEFAULT ''`, `CREATE INDEX runs_driver ON runs (driver)`},
		"postgres": {`ALTER TABLE runs ADD COLUMN workload TEXT NOT NULL DEFAULT ''`, `CREATE INDEX runs_driver ON runs (driver)`},
	}},
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// sqlStore is the Store on database/sql, for every dialect.
type sqlStore struct {
	db *sql.DB
	d  dialect
}

// migrate brings db's schema up to the newest of ms, applying each missing version once.
func migrate(ctx context.Context, db *sql.DB, d dialect, ms []migration) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	for _, m := range ms {
		if err := applyOnce(ctx, db, d, m); err != nil {
			return fmt.Errorf("migrate results store to schema version %d: %w", m.version, err)
		}
	}
	return nil
}

func applyOnce(ctx context.Context, db *sql.DB, d dialect, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if d.lockSchema != "" {
		if _, err := tx.ExecContext(ctx, d.lockSchema); err != nil {
			return err
		}
	}
	// Read under the transaction, so another process that migrated meanwhile is seen.
	var newest sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&newest); err != nil {
		return err
	}
	if newest.Valid && int(newest.Int64) >= m.version {
		return nil
	}
	stmts, ok := m.stmts[d.name]
	if !ok {
		return fmt.Errorf("no statements for %s", d.name)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`),
		m.version, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) Record(ctx context.Context, r *Run) (int64, error) {
	if r == nil {
		return 0, errors.New("record run: nil run")
	}
	report := r.Report
	if len(report) == 0 {
		report = json.RawMessage("{}")
	}
	recorded := r.Recorded
	if recorded.IsZero() {
		recorded = time.Now()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("record run: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var id int64
	err = tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO runs (recorded_at, started_at, ended_at, seconds, kind, driver, version,
		hostname, os, arch, cpus, source, report, workload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		s.d.timeArg(recorded), s.d.timeArg(r.Started), s.d.timeArg(r.Ended), r.Seconds, r.Kind, r.Driver, r.Version,
		r.Host.Name, r.Host.OS, r.Host.Arch, r.Host.CPUs, r.Source, string(report), r.Workload).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record run: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(r.Tags)) {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO run_tags (run_id, key, value) VALUES (?, ?, ?)`), id, k, r.Tags[k]); err != nil {
			return 0, fmt.Errorf("record run: tag %s: %w", k, err)
		}
	}
	for f, v := range r.Figures {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO figures (run_id, series, metric, value) VALUES (?, ?, ?, ?)`), id, f.Series, f.Metric, v); err != nil {
			return 0, fmt.Errorf("record run: figure %s: %w", f, err)
		}
	}
	for name, enc := range r.Histograms {
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO histograms (run_id, name, encoding) VALUES (?, ?, ?)`), id, name, enc); err != nil {
			return 0, fmt.Errorf("record run: histogram %s: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record run: %w", err)
	}
	return id, nil
}

// where renders f as a WHERE clause over runs (aliased r) and its arguments.
func (s *sqlStore) where(f Filter) (string, []any) {
	var conds []string
	var args []any
	for _, k := range slices.Sorted(maps.Keys(f.Tags)) {
		conds = append(conds, `EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.key = ? AND t.value = ?)`)
		args = append(args, k, f.Tags[k])
	}
	for _, c := range []struct{ col, v string }{{"driver", f.Driver}, {"kind", f.Kind}, {"workload", f.Workload}} {
		if c.v != "" {
			conds = append(conds, `r.`+c.col+` = ?`)
			args = append(args, c.v)
		}
	}
	if !f.Since.IsZero() {
		conds = append(conds, `r.started_at >= ?`)
		args = append(args, s.d.timeArg(f.Since))
	}
	if !f.Until.IsZero() {
		conds = append(conds, `r.started_at < ?`)
		args = append(args, s.d.timeArg(f.Until))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// newest wraps a query over runs ordered oldest first so that it keeps the newest
// limit rows, still oldest first.
func newest(q string, limit int) string {
	if limit <= 0 {
		return q + ` ORDER BY r.started_at, r.id`
	}
	return `SELECT * FROM (` + q + ` ORDER BY r.started_at DESC, r.id DESC LIMIT ` + strconv.Itoa(limit) + `) x ORDER BY x.started_at, x.id`
}

const runColumns = `r.id, r.recorded_at, r.started_at, r.ended_at, r.seconds, r.kind, r.driver, r.version, r.hostname, r.os, r.arch, r.cpus, r.source, r.workload`

func scanRun(sc interface{ Scan(...any) error }, extra ...any) (Run, error) {
	var r Run
	dest := append([]any{&r.ID, timeScanner{&r.Recorded}, timeScanner{&r.Started}, timeScanner{&r.Ended}, &r.Seconds, &r.Kind, &r.Driver,
		&r.Version, &r.Host.Name, &r.Host.OS, &r.Host.Arch, &r.Host.CPUs, &r.Source, &r.Workload}, extra...)
	err := sc.Scan(dest...)
	return r, err
}

func (s *sqlStore) List(ctx context.Context, f Filter) ([]Run, error) {
	where, args := s.where(f)
	rows, err := s.db.QueryContext(ctx, s.d.rebind(newest(`SELECT `+runColumns+` FROM runs r`+where, f.Limit)), args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	ids := make([]int64, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
	}
	tags, err := s.tags(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range runs {
		runs[i].Tags = tags[runs[i].ID]
	}
	return runs, nil
}

// tags returns the tags of the runs ids, in batches (a query's parameters are bounded).
func (s *sqlStore) tags(ctx context.Context, ids []int64) (map[int64]map[string]string, error) {
	out := make(map[int64]map[string]string, len(ids))
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		q := `SELECT run_id, key, value FROM run_tags WHERE run_id IN (?` + strings.Repeat(`, ?`, len(batch)-1) + `)`
		rows, err := s.db.QueryContext(ctx, s.d.rebind(q), args...)
		if err != nil {
			return nil, fmt.Errorf("read tags: %w", err)
		}
		for rows.Next() {
			var id int64
			var k, v string
			if err := rows.Scan(&id, &k, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read tags: %w", err)
			}
			if out[id] == nil {
				out[id] = map[string]string{}
			}
			out[id][k] = v
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read tags: %w", err)
		}
	}
	return out, nil
}

func (s *sqlStore) Get(ctx context.Context, id int64) (*Run, error) {
	var report string
	r, err := scanRun(s.db.QueryRowContext(ctx, s.d.rebind(`SELECT `+runColumns+`, r.report FROM runs r WHERE r.id = ?`), id), &report)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %d: %w", id, err)
	}
	r.Report = json.RawMessage(report)
	tags, err := s.tags(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	r.Tags = tags[id]
	r.Figures = map[Figure]float64{}
	rows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT series, metric, value FROM figures WHERE run_id = ?`), id)
	if err != nil {
		return nil, fmt.Errorf("read run %d figures: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var f Figure
		var v float64
		if err := rows.Scan(&f.Series, &f.Metric, &v); err != nil {
			return nil, fmt.Errorf("read run %d figures: %w", id, err)
		}
		r.Figures[f] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run %d figures: %w", id, err)
	}
	hrows, err := s.db.QueryContext(ctx, s.d.rebind(`SELECT name, encoding FROM histograms WHERE run_id = ?`), id)
	if err != nil {
		return nil, fmt.Errorf("read run %d histograms: %w", id, err)
	}
	defer hrows.Close()
	for hrows.Next() {
		var name, enc string
		if err := hrows.Scan(&name, &enc); err != nil {
			return nil, fmt.Errorf("read run %d histograms: %w", id, err)
		}
		if r.Histograms == nil {
			r.Histograms = map[string]string{}
		}
		r.Histograms[name] = enc
	}
	if err := hrows.Err(); err != nil {
		return nil, fmt.Errorf("read run %d histograms: %w", id, err)
	}
	return &r, nil
}

func (s *sqlStore) Trend(ctx context.Context, f Filter, fig Figure) ([]Point, error) {
	where, args := s.where(f)
	join := ` JOIN figures fg ON fg.run_id = r.id AND fg.series = ? AND fg.metric = ?`
	q := newest(`SELECT r.id, r.started_at, fg.value FROM runs r`+join+where, f.Limit)
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), append([]any{fig.Series, fig.Metric}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("read trend of %s: %w", fig, err)
	}
	defer rows.Close()
	var pts []Point
	for rows.Next() {
		var p Point
		if err := rows.Scan(&p.RunID, timeScanner{&p.Started}, &p.Value); err != nil {
			return nil, fmt.Errorf("read trend of %s: %w", fig, err)
		}
		pts = append(pts, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read trend of %s: %w", fig, err)
	}
	ids := make([]int64, len(pts))
	for i := range pts {
		ids[i] = pts[i].RunID
	}
	tags, err := s.tags(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i := range pts {
		pts[i].Tags = tags[pts[i].RunID]
	}
	return pts, nil
}

func (s *sqlStore) Figures(ctx context.Context, f Filter) ([]Figure, error) {
	where, args := s.where(f)
	// The limit selects the newest runs first, as List and Trend do.
	q := `SELECT DISTINCT fg.series, fg.metric FROM figures fg WHERE fg.run_id IN (SELECT id FROM (` +
		newest(`SELECT r.id, r.started_at FROM runs r`+where, f.Limit) + `) sel) ORDER BY fg.series, fg.metric`
	rows, err := s.db.QueryContext(ctx, s.d.rebind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("list figures: %w", err)
	}
	defer rows.Close()
	var figs []Figure
	for rows.Next() {
		var fg Figure
		if err := rows.Scan(&fg.Series, &fg.Metric); err != nil {
			return nil, fmt.Errorf("list figures: %w", err)
		}
		figs = append(figs, fg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list figures: %w", err)
	}
	return figs, nil
}

// sqliteTime is how SQLite keeps times: fixed-width UTC text, so that text order is
// time order and range filters work on the column.
const sqliteTime = "2006-01-02T15:04:05.000000000Z"

// timeScanner reads a time column whichever way the driver hands it over.
type timeScanner struct{ t *time.Time }

func (ts timeScanner) Scan(v any) error {
	switch x := v.(type) {
	case time.Time:
		*ts.t = x.UTC()
	case string:
		return ts.parse(x)
	case []byte:
		return ts.parse(string(x))
	case nil:
		*ts.t = time.Time{}
	default:
		return fmt.Errorf("time column: unexpected %T", v)
	}
	return nil
}

func (ts timeScanner) parse(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("time column: %w", err)
	}
	*ts.t = t.UTC()
	return nil
}
