package history

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

var postgresDialect = dialect{
	name: "postgres",
	rebind: func(q string) string {
		var b strings.Builder
		n := 0
		for _, c := range q {
			if c == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(c)
		}
		return b.String()
	},
	timeArg:    func(t time.Time) any { return t.UTC() },
	lockSchema: `LOCK TABLE schema_version IN EXCLUSIVE MODE`,
}

// openPostgres connects to the PostgreSQL database dsn names.
func openPostgres(ctx context.Context, dsn string, ms []migration) (*sqlStore, error) {
	name := redactURL(dsn)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open results store %s: %s", name, redactErr(err, dsn))
	}
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open results store %s: %s", name, redactErr(err, dsn))
	}
	if err := migrate(ctx, db, postgresDialect, ms); err != nil {
		db.Close()
		return nil, fmt.Errorf("open results store %s: %s", name, redactErr(err, dsn))
	}
	return &sqlStore{db: db, d: postgresDialect}, nil
}

// redactURL hides a URL's password, so that no error or line of output shows it.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable postgres URL)"
	}
	return u.Redacted()
}

// redactErr is err's text without dsn's password, should a driver quote it.
func redactErr(err error, dsn string) string {
	msg := err.Error()
	if u, perr := url.Parse(dsn); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}
