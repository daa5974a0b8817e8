//go:build integration

package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/internal/testserver"
)

// pidTable makes table, whose every insert or update logs the backend that ran it in
// table_pids, and sleeps 10 minutes for a key starting with "sleep": a store whose tail is
// past the operations' deadline.
func pidTable(t *testing.T, table string) {
	t.Helper()
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	for _, q := range []string{
		fmt.Sprintf("DROP TABLE IF EXISTS %s, %s_pids", table, table),
		fmt.Sprintf("CREATE TABLE %s (key TEXT PRIMARY KEY, value BYTEA NOT NULL)", table),
		fmt.Sprintf("CREATE TABLE %s_pids (pid INT NOT NULL)", table),
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s_trg() RETURNS trigger AS $$
BEGIN
	INSERT INTO %s_pids VALUES (pg_backend_pid());
	IF NEW.key LIKE 'sleep%%' THEN PERFORM pg_sleep(600); END IF;
	RETURN NEW;
END $$ LANGUAGE plpgsql`, table, table),
		fmt.Sprintf("CREATE TRIGGER %s_trg BEFORE INSERT OR UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION %s_trg()", table, table, table),
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// backends counts the backends that ran writes on table (see pidTable).
func backends(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := rawConn(t).QueryRow(drivertest.Context(t), fmt.Sprintf("SELECT count(DISTINCT pid) FROM %s_pids", table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// onPipelines runs f for each of workers workers at once, each on a pipeline of its own,
// and returns when all have ended.
func onPipelines(t *testing.T, d *Driver, workers int, f func(w int, pl driver.Pipeline)) {
	t.Helper()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl, err := d.NewPipeline(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			defer pl.Close()
			f(w, pl)
		}()
	}
	wg.Wait()
}

// writeFromWorkers has workers workers write writes keys each (prefix, the worker, the
// write) on pipelines of their own, and fails the test for every write that fails.
func writeFromWorkers(t *testing.T, d *Driver, workers, writes int, prefix string) {
	t.Helper()
	onPipelines(t, d, workers, func(w int, pl driver.Pipeline) {
		for i := range writes {
			key := fmt.Sprintf("%s%d-%d", prefix, w, i)
			if err := runOne(pl, key, 10*time.Second); err != nil {
				t.Errorf("write %s: %v", key, err)
			}
		}
	})
}

// runOne runs one write on pl under a deadline of d, with the engine's interrupt at the
// deadline (its watchdog calls Interrupt once an operation's context ended).
func runOne(pl driver.Pipeline, key string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	stop := context.AfterFunc(ctx, pl.Interrupt)
	defer stop()
	var got error
	pl.Run(ctx, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: key, Value: []byte("v")}}, func(_ int, _ []byte, err error) { got = err })
	return got
}

// TestDirectTimeoutsKeepConnections: in mode=direct, operations cut at their deadline
// (a trigger's pg_sleep past it) fail as timeouts at the deadline, and cost no
// connection: the query is cancelled and its connection reused, so the operations after
// them succeed on the same poolSize backends. Each timeout closed its connection and the
// next operation reconnected inside its own deadline: with opTimeout near the store's
// tail a run opened a backend per operation and measured nothing but failures.
func TestDirectTimeoutsKeepConnections(t *testing.T) {
	pidTable(t, "tmo")
	d := open(t, map[string]string{"table": "tmo", "createSchema": "false", "mode": "direct", "poolSize": "2"})
	onPipelines(t, d, 2, func(w int, pl driver.Pipeline) {
		for i := range 8 {
			// The operation ends at its deadline: the trigger's sleep is 10 minutes,
			// past the minute's patience.
			var err error
			if !testserver.Patiently(func() { err = runOne(pl, fmt.Sprintf("sleep-%d-%d", w, i), 200*time.Millisecond) }) {
				t.Error("a write with a 200ms deadline has not ended after a minute")
				return
			}
			if driver.Classify(err) != driver.ClassTimeout {
				t.Errorf("a write past its deadline: %v (class %v), want a timeout", err, driver.Classify(err))
			}
			if err := runOne(pl, fmt.Sprintf("ok-%d-%d", w, i), 10*time.Second); err != nil {
				t.Errorf("the write after a timeout: %v", err)
			}
		}
	})
	// Every write logs its backend before it sleeps or commits; the logs of the cut
	// ones roll back with them, so these are the backends that ran the writes that
	// succeeded.
	if n := backends(t, "tmo"); n > 2 {
		t.Errorf("the writes ran on %d backends, want the 2 of poolSize (a timeout cost its connection)", n)
	}
}

// TestDirectHonoursPoolSize: workers share mode=direct's connections, poolSize at most,
// however many there are (elastic pools grow past it). A connection per worker opened a
// backend per worker whatever poolSize said.
func TestDirectHonoursPoolSize(t *testing.T) {
	pidTable(t, "shared")
	d := open(t, map[string]string{"table": "shared", "createSchema": "false", "mode": "direct", "poolSize": "3"})
	writeFromWorkers(t, d, 12, 20, "k-")
	if n := backends(t, "shared"); n > 3 {
		t.Errorf("12 workers wrote on %d backends, want poolSize 3 at most", n)
	}
	// The queueing is counted, so a run beyond its pool says so on its driver line.
	if w := d.DriverStats()["pool_waits"]; w == 0 {
		t.Errorf("12 workers on 3 connections: pool_waits %d, want the waits counted", w)
	}
}

// TestDirectConnectionLimit: against a server out of connection slots for the role
// (CONNECTION LIMIT, the same refusal, SQLSTATE 53300, as max_connections), operations
// fail as unavailable (not the store throttling, which no backoff cures) with a message
// naming the limit and poolSize, at once and without a connect per operation; with room
// for a few connections, more workers than that share them and succeed.
func TestDirectConnectionLimit(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	for _, q := range []string{
		"DROP TABLE IF EXISTS limited", "CREATE TABLE limited (key TEXT PRIMARY KEY, value BYTEA NOT NULL)",
		"DROP ROLE IF EXISTS limited_role", "CREATE ROLE limited_role LOGIN CONNECTION LIMIT 1",
		"GRANT ALL ON limited TO limited_role",
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dsn := strings.Replace(srv.DSN(), "postgres://postgres@", "postgres://limited_role@", 1)
	// The driver's own pool (Init's check, backfill) holds the one slot: every
	// connection of mode=direct is refused.
	d := drivertest.Open(t, "postgres", map[string]string{"dsn": dsn}, map[string]string{"table": "limited", "createSchema": "false", "mode": "direct", "poolSize": "8"}).(*Driver)
	pl, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	// The backoff keeps the refusals from costing a connect each: 50 operations fail at
	// once, not after their deadlines, which are 10 minutes here, past the minute's
	// patience for all 50.
	var errs []error
	if !testserver.Patiently(func() {
		for i := range 50 {
			errs = append(errs, runOne(pl, fmt.Sprintf("k%d", i), 10*time.Minute))
		}
	}) {
		t.Fatal("50 writes with no connection slot left have not failed after a minute: they wait for their deadlines")
	}
	for _, err := range errs {
		if driver.Classify(err) != driver.ClassUnavailable || !strings.Contains(err.Error(), "CONNECTION LIMIT") || !strings.Contains(err.Error(), "poolSize=8") {
			t.Fatalf("a write with no connection slot left: %v (class %v), want unavailable naming the limit and poolSize", err, driver.Classify(err))
		}
	}

	// Room for 3 of the driver's connections: 12 workers share them.
	if _, err := raw.Exec(ctx, "ALTER ROLE limited_role CONNECTION LIMIT 4"); err != nil {
		t.Fatal(err)
	}
	d2 := drivertest.Open(t, "postgres", map[string]string{"dsn": dsn}, map[string]string{"table": "limited", "createSchema": "false", "mode": "direct", "poolSize": "8"}).(*Driver)
	_ = d.Close() // its pool's slot back
	writeFromWorkers(t, d2, 12, 10, "w")
}

// TestDefaultPoolFollowsTheWorkers: with poolSize left at its default, every worker with
// an operation in flight has a connection of its own, in either mode: 40 workers whose
// upserts wait on a row lock all reach the server. The old default of 32 queued the
// 33rd and later workers in the client, where their wait read as the store's latency.
func TestDefaultPoolFollowsTheWorkers(t *testing.T) {
	const workers = 40
	for _, mode := range []string{"direct", "pool"} {
		t.Run(mode, func(t *testing.T) {
			table := "follow_" + mode
			ctx := drivertest.Context(t)
			raw := rawConn(t)
			for _, q := range []string{
				fmt.Sprintf("DROP TABLE IF EXISTS %s", table),
				fmt.Sprintf("CREATE TABLE %s (key TEXT PRIMARY KEY, value BYTEA NOT NULL)", table),
				fmt.Sprintf("INSERT INTO %s VALUES ('locked', 'v')", table),
			} {
				if _, err := raw.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			d := open(t, map[string]string{"table": table, "createSchema": "false", "mode": mode})
			monitor := rawConn(t)
			var wg sync.WaitGroup
			defer wg.Wait()
			// The lock holder: every worker's upsert of the row waits behind it until
			// the rollback (deferred, so it runs before the wait for the workers).
			tx, err := raw.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET value = 'x' WHERE key = 'locked'", table)); err != nil {
				t.Fatal(err)
			}
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if mode == "pool" {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						if err := d.Write(ctx, "locked", []byte("v")); err != nil {
							t.Errorf("write: %v", err)
						}
						return
					}
					pl, err := d.NewPipeline(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					defer pl.Close()
					if err := runOne(pl, "locked", 30*time.Second); err != nil {
						t.Errorf("write: %v", err)
					}
				}()
			}
			// Waiting on the lock is the server's count of the workers that reached it.
			var waiting int
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				if err := monitor.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"+table+"%'").Scan(&waiting); err != nil {
					t.Fatal(err)
				}
				if waiting >= workers {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			if waiting != workers {
				t.Errorf("%d of %d workers' upserts reached the server: the rest queued for a connection in the client", waiting, workers)
			}
			if w := d.DriverStats()["pool_waits"]; mode == "direct" && w != 0 {
				t.Errorf("pool_waits %d with a connection per worker, want 0", w)
			}
		})
	}
}

// TestDirectWorkersKeepTheirConnections: with a connection for every worker, each worker
// runs its batches on the same backend (it keeps its connection between batches instead
// of taking one from the pool per operation); with fewer connections than workers, a
// connection kept by an idle worker serves the others at once; and Close closes the
// connections workers keep.
func TestDirectWorkersKeepTheirConnections(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	for _, q := range []string{
		"DROP TABLE IF EXISTS homes, homes_pids",
		"CREATE TABLE homes (key TEXT PRIMARY KEY, value BYTEA NOT NULL)",
		"CREATE TABLE homes_pids (key TEXT NOT NULL, pid INT NOT NULL)",
		`CREATE OR REPLACE FUNCTION homes_trg() RETURNS trigger AS $$
BEGIN
	INSERT INTO homes_pids VALUES (NEW.key, pg_backend_pid());
	RETURN NEW;
END $$ LANGUAGE plpgsql`,
		"CREATE TRIGGER homes_trg BEFORE INSERT OR UPDATE ON homes FOR EACH ROW EXECUTE FUNCTION homes_trg()",
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// backendsOf returns the distinct backends that wrote the keys starting with prefix.
	backendsOf := func(prefix string) []int {
		rows, err := raw.Query(ctx, "SELECT DISTINCT pid FROM homes_pids WHERE key LIKE $1 ORDER BY pid", prefix+"%")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var pids []int
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		return pids
	}
	newPipeline := func(d *Driver) driver.Pipeline {
		pl, err := d.NewPipeline(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}

	t.Run("a connection per worker", func(t *testing.T) {
		d := open(t, map[string]string{"table": "homes", "createSchema": "false", "mode": "direct", "poolSize": "4"})
		a, b := newPipeline(d), newPipeline(d)
		defer a.Close()
		defer b.Close()
		// Alternating, so that a worker taking from a shared pool would run on the
		// connection the other just gave back.
		for i := range 10 {
			for _, w := range []struct {
				name string
				pl   driver.Pipeline
			}{{"one", a}, {"two", b}} {
				if err := runOne(w.pl, fmt.Sprintf("%s-%d", w.name, i), 10*time.Second); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
		}
		one, two := backendsOf("one-"), backendsOf("two-")
		if len(one) != 1 || len(two) != 1 || one[0] == two[0] {
			t.Errorf("two workers' writes ran on backends %v and %v; want one backend each, not the same", one, two)
		}
		if w := d.DriverStats()["pool_waits"]; w != 0 {
			t.Errorf("2 workers on 4 connections: pool_waits %d, want 0", w)
		}
	})

	t.Run("fewer connections than workers", func(t *testing.T) {
		d := open(t, map[string]string{"table": "homes", "createSchema": "false", "mode": "direct", "poolSize": "1"})
		a, b := newPipeline(d), newPipeline(d)
		defer a.Close()
		defer b.Close()
		if err := runOne(a, "few-a", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		// a now sits idle with the only connection; b must get it, not wait for a's
		// next batch, which comes only after b's write: b would fail at its deadline (a
		// minute, a patience; it was 5 s, with a 2 s wall-clock bound).
		if err := runOne(b, "few-b", time.Minute); err != nil {
			t.Fatalf("a worker beside an idle one on a pool of 1: %v", err)
		}
		if err := runOne(a, "few-a2", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if n := len(backendsOf("few-")); n != 1 {
			t.Errorf("the writes ran on %d backends, want the 1 of poolSize", n)
		}
	})

	t.Run("close", func(t *testing.T) {
		d := open(t, map[string]string{"table": "homes", "createSchema": "false", "mode": "direct", "poolSize": "2"})
		a := newPipeline(d)
		if err := runOne(a, "close-a", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		pids := idlePIDs(d)
		if len(pids) != 1 {
			t.Fatalf("%d idle connections after one write, want 1", len(pids))
		}
		// The engine closes its pipelines before the driver; a driver closed first must
		// still close what a worker keeps.
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		var open int
		if err := raw.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int(pids[0])).Scan(&open); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for open != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if err := raw.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", int(pids[0])).Scan(&open); err != nil {
				t.Fatal(err)
			}
		}
		if open != 0 {
			t.Errorf("backend %d still connected after Close", pids[0])
		}
		_ = a.Close()
	})
}

// clientBackends counts the server's client backends other than raw's.
func clientBackends(t *testing.T, raw *pgx.Conn) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
	if err := raw.QueryRow(drivertest.Context(t), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDirectWarmOpensTheWorkersConnections: Warm opens mode=direct's connections for the
// workers before any operation, poolSize at most, and the workers then run on them
// without connecting: a run's first second measured the workers' connects beside the
// operations of those already connected (pgbench connects before its clock starts).
func TestDirectWarmOpensTheWorkersConnections(t *testing.T) {
	pidTable(t, "warm")
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	d := open(t, map[string]string{"table": "warm", "createSchema": "false", "mode": "direct"})
	before := clientBackends(t, raw)
	if err := d.Warm(ctx, 6); err != nil {
		t.Fatalf("warm: %v", err)
	}
	if n := clientBackends(t, raw) - before; n != 6 {
		t.Errorf("Warm(6) opened %d backends, want 6", n)
	}
	// Asked again, it opens nothing more: the six are open.
	if err := d.Warm(ctx, 4); err != nil {
		t.Fatalf("warm again: %v", err)
	}
	writeFromWorkers(t, d, 6, 10, "k-")
	if n := clientBackends(t, raw) - before; n != 6 {
		t.Errorf("after Warm(6) and six workers' writes: %d backends, want the 6 warmed", n)
	}
	if n := backends(t, "warm"); n > 6 {
		t.Errorf("six workers wrote on %d backends, want the 6 warmed", n)
	}

	// poolSize caps it.
	capped := open(t, map[string]string{"table": "warm", "createSchema": "false", "mode": "direct", "poolSize": "3"})
	before = clientBackends(t, raw)
	if err := capped.Warm(ctx, 10); err != nil {
		t.Fatalf("warm: %v", err)
	}
	if n := clientBackends(t, raw) - before; n != 3 {
		t.Errorf("Warm(10) with poolSize 3 opened %d backends, want 3", n)
	}
}
