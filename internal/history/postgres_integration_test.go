//go:build integration

package history

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ndbench/ndbench/internal/testserver"
)

var pg *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.Postgres, func(s *testserver.Server) { pg = s }))
}

var pgDatabases atomic.Int64

// TestPostgresStore runs the store suite the SQLite file passes against a real
// PostgreSQL, each test in a database of its own.
func TestPostgresStore(t *testing.T) {
	testStores(t, func(t *testing.T) func([]migration) *sqlStore {
		name := fmt.Sprintf("history_%d", pgDatabases.Add(1))
		admin, err := sql.Open("pgx", pg.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
			t.Fatal(err)
		}
		dsn := strings.Replace(pg.DSN(), "/postgres?", "/"+name+"?", 1)
		return func(ms []migration) *sqlStore {
			if ms == nil {
				ms = migrations
			}
			s, err := openPostgres(context.Background(), dsn, ms)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestPostgresOpenSelectsByURL: Open takes a postgres:// URL to PostgreSQL, and the
// schema is there for Grafana's PostgreSQL data source to chart (times as timestamptz).
func TestPostgresOpenSelectsByURL(t *testing.T) {
	st, err := Open(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := record(t, st, sampleRun(1, map[string]string{"store": "redis"}, 2))
	var typ string
	db := st.(*sqlStore).db
	if err := db.QueryRow(`SELECT pg_typeof(started_at)::text FROM runs WHERE id = $1`, id).Scan(&typ); err != nil || typ != "timestamp with time zone" {
		t.Errorf("started_at is %q (%v), want timestamp with time zone", typ, err)
	}
	var v float64
	if err := db.QueryRow(`SELECT f.value FROM figures f JOIN runs r ON r.id = f.run_id WHERE f.series = 'read' AND f.metric = 'p99' AND r.report->>'formatVersion' = '1' AND r.id = $1`, id).Scan(&v); err != nil || v != 2 {
		t.Errorf("a Grafana-style query of read.p99: %v (%v), want 2", v, err)
	}
}
