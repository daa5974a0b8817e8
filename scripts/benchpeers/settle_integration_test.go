//go:build integration

package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ndbench/ndbench/internal/testserver"
)

// TestSettlePostgres: before each tool's run the table holds no dead rows and the
// server has checkpointed, so the next tool does not meet the clean-up of the last one's
// upserts. The rows are made dead with autovacuum off for the table, so only settle can
// remove them.
func TestSettlePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := testserver.Postgres(ctx)
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`CREATE TABLE ndbench (key TEXT COLLATE "C" PRIMARY KEY, value BYTEA NOT NULL) WITH (autovacuum_enabled = false)`,
		`INSERT INTO ndbench SELECT 'T' || i, '\x00' FROM generate_series(0, 1999) AS i`,
		`UPDATE ndbench SET value = '\x01'`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var before string
	if err := conn.QueryRow(ctx, `SELECT checkpoint_lsn::text FROM pg_control_checkpoint()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	dead := func() (n, vacuums int64) {
		t.Helper()
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables WHERE relname = 'ndbench'`).Scan(&n, &vacuums); err != nil {
			t.Fatal(err)
		}
		return n, vacuums
	}
	// The update's dead rows reach the statistics when its backend reports them, which
	// may lag the statement: wait for them, so the check after settle is not vacuous.
	for n, _ := dead(); n < 2000; n, _ = dead() {
		if ctx.Err() != nil {
			t.Fatalf("the update's 2,000 dead rows never showed in pg_stat_user_tables (%d)", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := settlePostgres(ctx, s.DSN()); err != nil {
		t.Fatalf("settle: %v", err)
	}
	if n, vacuums := dead(); n != 0 || vacuums != 1 {
		t.Errorf("after settle: %d dead rows, %d vacuums; want 0 and 1", n, vacuums)
	}
	var after string
	if err := conn.QueryRow(ctx, `SELECT checkpoint_lsn::text FROM pg_control_checkpoint()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("no checkpoint: its LSN stayed %s", after)
	}
}
