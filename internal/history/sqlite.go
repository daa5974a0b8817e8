package history

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite: no cgo, so every platform's build keeps working
)

var sqliteDialect = dialect{
	name:    "sqlite",
	rebind:  func(q string) string { return q },
	timeArg: func(t time.Time) any { return t.UTC().Format(sqliteTime) },
}

// openSQLite opens (creating it and its directory if needed) the SQLite file at path.
func openSQLite(ctx context.Context, path string, ms []migration) (*sqlStore, error) {
	if strings.ContainsRune(path, '?') {
		// The driver takes what follows a '?' as its options.
		return nil, fmt.Errorf("open results store %s: a path with '?' is not supported; allowed: a file path without '?', or a postgres:// URL", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open results store %s: %w", path, err)
		}
	}
	// Another ndbench may be recording or migrating at the same moment: transactions take
	// the write lock when they begin (a deferred one that reads the schema version and
	// then writes would fail instead of waiting), and wait for the other's; foreign keys
	// are off in SQLite unless asked for.
	q := url.Values{"_pragma": {"busy_timeout(10000)", "foreign_keys(1)"}, "_txlock": {"immediate"}}
	// A plain path, not a file: URI, so that a Windows path or a '#' or '%' in a name is
	// the file's name as written; the driver strips the options after the '?'.
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open results store %s: %w", path, err)
	}
	// One connection: SQLite serializes writers anyway, and a second connection of the
	// same process would only meet a lock.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open results store %s: %w", path, err)
	}
	if err := migrate(ctx, db, sqliteDialect, ms); err != nil {
		db.Close()
		return nil, fmt.Errorf("open results store %s: %w", path, err)
	}
	return &sqlStore{db: db, d: sqliteDialect}, nil
}
