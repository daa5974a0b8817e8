//go:build integration

package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/enginerun"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.Postgres, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "postgres", map[string]string{"dsn": srv.DSN()}, values).(*Driver)
}

// rawConn is a plain pgx connection for checking and tampering behind the driver's back.
func rawConn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatalf("raw connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func TestWriteReadMiss(t *testing.T) {
	d := open(t, map[string]string{"table": "rw"})
	ctx := drivertest.Context(t)
	values := map[string][]byte{
		"k-binary": {0, 1, 2, 0xff, 0, 'x'},
		"k-text":   []byte("hello, world"),
		"k-empty":  {},
		"k-big":    bytes.Repeat([]byte("0123456789"), 10_000),
	}
	for k, v := range values {
		if err := d.Write(ctx, k, v); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	for k, want := range values {
		got, err := d.Read(ctx, k)
		if err != nil {
			t.Fatalf("read %s: %v", k, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("read %s: got %d bytes, want %d bytes (%q...)", k, len(got), len(want), trunc(got))
		}
	}
	// An overwrite is an upsert, not a conflict.
	if err := d.Write(ctx, "k-text", []byte("second")); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if got, err := d.Read(ctx, "k-text"); err != nil || string(got) != "second" {
		t.Errorf("read after overwrite: %q, %v", got, err)
	}
	if _, err := d.Read(ctx, "never-written"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a missing key: want ErrNotFound, got %v", err)
	}
}

func trunc(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}

func TestExecModes(t *testing.T) {
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			d := open(t, map[string]string{"table": "modes", "execMode": mode})
			ctx := drivertest.Context(t)
			val := []byte{0, 'a', 0xfe, '\'', '\\'}
			if err := d.Write(ctx, "m-"+mode, val); err != nil {
				t.Fatalf("write: %v", err)
			}
			got, err := d.Read(ctx, "m-"+mode)
			if err != nil || !bytes.Equal(got, val) {
				t.Fatalf("read: %q, %v; want %q", got, err, val)
			}
		})
	}
}

func TestTableOption(t *testing.T) {
	raw := rawConn(t)
	ctx := drivertest.Context(t)
	if _, err := raw.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS bench"); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"Custom_Table", "bench.kv", "select"} {
		t.Run(table, func(t *testing.T) {
			d := open(t, map[string]string{"table": table})
			if err := d.Write(ctx, "tk", []byte("tv")); err != nil {
				t.Fatalf("write: %v", err)
			}
			var got []byte
			q := "SELECT value FROM " + pgx.Identifier(strings.Split(table, ".")).Sanitize() + " WHERE key = 'tk'"
			if err := raw.QueryRow(ctx, q).Scan(&got); err != nil || string(got) != "tv" {
				t.Fatalf("row in %s: %q, %v", table, got, err)
			}
		})
	}
}

func TestCreateSchema(t *testing.T) {
	ctx := drivertest.Context(t)
	// Idempotent: a second driver on the same table keeps the data of the first.
	d1 := open(t, map[string]string{"table": "idem"})
	if err := d1.Write(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	d2 := open(t, map[string]string{"table": "idem", "createSchema": "true"})
	if got, err := d2.Read(ctx, "a"); err != nil || string(got) != "1" {
		t.Fatalf("read through a second driver: %q, %v", got, err)
	}
	// Without createSchema a missing table is the user's mistake: rejected, not retried.
	d3 := open(t, map[string]string{"table": "never_created", "createSchema": "false"})
	err := d3.Write(ctx, "a", []byte("1"))
	if c := driver.Classify(err); c != driver.ClassRejected {
		t.Fatalf("write to a missing table: class %v (%v), want rejected", c, err)
	}
	var n int
	if err := rawConn(t).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'never_created'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("createSchema=false created the table (count %d, %v)", n, err)
	}
}

func TestBulk(t *testing.T) {
	d := open(t, map[string]string{"table": "bulk"})
	ctx := drivertest.Context(t)
	keys := []string{"b1", "b2", "b1", "b3"}
	vals := [][]byte{[]byte("first"), []byte("two"), []byte("last"), {0, 3}}
	if err := d.WriteBulk(ctx, keys, vals); err != nil {
		t.Fatalf("bulk write with a repeated key: %v", err)
	}
	got, err := d.ReadBulk(ctx, []string{"b3", "missing", "b1", "b2"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{{0, 3}, nil, []byte("last"), []byte("two")}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) || (want[i] == nil) != (got[i] == nil) {
			t.Errorf("bulk read [%d] = %q, want %q", i, got[i], want[i])
		}
	}
	if err := d.WriteBulk(ctx, []string{"x"}, nil); driver.Classify(err) != driver.ClassRejected {
		t.Errorf("mismatched bulk write: %v, want rejected", err)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	const pw = "Sup3rS3cret"
	// Trust auth ignores the password, so the driver connects and we can inspect it.
	dsn := strings.Replace(srv.DSN(), "postgres@", "postgres:"+pw+"@", 1)
	d := open(t, map[string]string{"dsn": dsn, "table": "secret"})
	for k, v := range d.ConnectionInfo() {
		if strings.Contains(v, pw) {
			t.Errorf("ConnectionInfo[%s] shows the password: %q", k, v)
		}
	}
	if d.ConnectionInfo()["server_version"] == "" {
		t.Error("ConnectionInfo has no server_version")
	}
	// A failed connect names the target without the password, and is unavailable.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	for _, bad := range []string{
		fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", pw, port),
		fmt.Sprintf("host=127.0.0.1 port=%d user=postgres password=%s sslmode=disable", port, pw),
	} {
		_, _, err = driver.Open(drivertest.Context(t), "postgres", map[string]string{"dsn": bad})
		if err == nil {
			t.Fatal("connect to a closed port succeeded")
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
		if c := driver.Classify(err); c != driver.ClassUnavailable {
			t.Errorf("connect to a closed port: class %v (%v), want unavailable", c, err)
		}
	}
	// Option listings redact the DSN.
	opts, _ := driver.NewOptions("postgres", map[string]string{"dsn": dsn})
	if v := driver.Values(opts, true)["dsn"]; v != driver.Redacted {
		t.Errorf("Values(redact) dsn = %q", v)
	}
}

// TestErrorClasses provokes each class with the real server.
func TestErrorClasses(t *testing.T) {
	raw := rawConn(t)
	ctx := drivertest.Context(t)
	// A table whose inserts sleep, to exceed a statement_timeout (57014) and a ctx deadline.
	for _, q := range []string{
		"CREATE TABLE IF NOT EXISTS slow (key TEXT PRIMARY KEY, value BYTEA NOT NULL)",
		"CREATE OR REPLACE FUNCTION slow_ins() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(3); RETURN NEW; END $$ LANGUAGE plpgsql",
		"DROP TRIGGER IF EXISTS slow_ins ON slow",
		"CREATE TRIGGER slow_ins BEFORE INSERT ON slow FOR EACH ROW EXECUTE FUNCTION slow_ins()",
		"CREATE TABLE IF NOT EXISTS small (key TEXT PRIMARY KEY, value BYTEA NOT NULL CHECK (length(value) < 4))",
	} {
		if _, err := raw.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Run("statement timeout", func(t *testing.T) {
		d := open(t, map[string]string{"table": "slow", "createSchema": "false",
			"dsn": srv.DSN() + "&options=-c%20statement_timeout%3D200"})
		err := d.Write(ctx, "k", []byte("v"))
		if c := driver.Classify(err); c != driver.ClassTimeout {
			t.Fatalf("class %v (%v), want timeout", c, err)
		}
	})
	t.Run("ctx deadline", func(t *testing.T) {
		d := open(t, map[string]string{"table": "slow", "createSchema": "false"})
		octx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := d.Write(octx, "k", []byte("v"))
		if c := driver.Classify(err); c != driver.ClassTimeout {
			t.Fatalf("class %v (%v), want timeout", c, err)
		}
	})
	t.Run("constraint", func(t *testing.T) {
		d := open(t, map[string]string{"table": "small", "createSchema": "false"})
		err := d.Write(ctx, "k", []byte("too long"))
		if c := driver.Classify(err); c != driver.ClassRejected {
			t.Fatalf("class %v (%v), want rejected", c, err)
		}
	})
	t.Run("too many connections", func(t *testing.T) {
		// The test server allows 200 connections; a role limited to 1 hits 53300 at once.
		if _, err := raw.Exec(ctx, "DO $$ BEGIN CREATE ROLE limited LOGIN NOSUPERUSER CONNECTION LIMIT 1; EXCEPTION WHEN duplicate_object THEN NULL; END $$"); err != nil {
			t.Fatal(err)
		}
		dsn := strings.Replace(srv.DSN(), "postgres@", "limited@", 1)
		hold, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close(context.Background())
		_, _, err = driver.Open(ctx, "postgres", map[string]string{"dsn": dsn})
		// A refused login is a connect error wrapping SQLSTATE 53300: the server has no
		// room for another client, which no backoff on the operations cures.
		if c := driver.Classify(err); c != driver.ClassUnavailable {
			t.Fatalf("class %v (%v), want unavailable", c, err)
		}
		if !strings.Contains(err.Error(), "max_connections") || !strings.Contains(err.Error(), "poolSize=") {
			t.Errorf("%v: want max_connections and poolSize named", err)
		}
	})
}

// TestPipelineFailureIsolation sends a batch whose middle write breaks a CHECK
// constraint: with pipelineSync=op the other operations go through, each its own
// transaction; with pipelineSync=batch the batch is one transaction, so the write before
// the failure is rolled back and the read after it skipped.
func TestPipelineFailureIsolation(t *testing.T) {
	ctx := drivertest.Context(t)
	if _, err := rawConn(t).Exec(ctx, "CREATE TABLE IF NOT EXISTS small (key TEXT PRIMARY KEY, value BYTEA NOT NULL CHECK (length(value) < 4))"); err != nil {
		t.Fatal(err)
	}
	for _, sync := range []string{"op", "batch"} {
		t.Run(sync, func(t *testing.T) {
			d := open(t, map[string]string{"table": "small", "createSchema": "false", "mode": "direct", "pipelineSync": sync})
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Close()
			// Keys of this run's own: with -count=2 the first run's writes are still in the
			// table.
			prefix := fmt.Sprintf("iso-%s-%d-", sync, time.Now().UnixNano())
			k := prefix + "1"
			// pipelineSync=batch sends a batch in key order (against deadlocks between
			// batches), so the read after the failure is of a key that sorts after it.
			after := k
			if sync == "batch" {
				after = prefix + "3"
			}
			ops := []driver.PipelineOp{
				{Op: driver.PipelineWrite, Key: k, Value: []byte("ok")},
				{Op: driver.PipelineWrite, Key: prefix + "2", Value: []byte("too long")},
				{Op: driver.PipelineRead, Key: after},
			}
			errs := make([]error, len(ops))
			vals := make([]string, len(ops))
			n := 0
			pl.Run(ctx, ops, func(i int, v []byte, err error) {
				n++
				errs[i], vals[i] = err, string(v)
			})
			if n != len(ops) {
				t.Fatalf("done called %d times for %d operations", n, len(ops))
			}
			if c := driver.Classify(errs[1]); c != driver.ClassRejected {
				t.Errorf("the failing write: class %v (%v), want rejected", c, errs[1])
			}
			got, rerr := d.Read(ctx, k)
			if sync == "op" {
				if errs[0] != nil || errs[2] != nil || vals[2] != "ok" {
					t.Errorf("independent operations around a failure: write %v, read %q %v", errs[0], vals[2], errs[2])
				}
				if rerr != nil || string(got) != "ok" {
					t.Errorf("Read after the batch: %q, %v; want the write before the failure kept", got, rerr)
				}
				return
			}
			if errs[0] == nil || errs[2] == nil {
				t.Errorf("one transaction: write before the failure %v, read after it %v; want both failed", errs[0], errs[2])
			}
			if !errors.Is(rerr, driver.ErrNotFound) {
				t.Errorf("Read after the batch: %q, %v; want the write rolled back", got, rerr)
			}
			// The connection carries on.
			ops = ops[:1]
			ops[0].Value = []byte("ok2")
			pl.Run(ctx, ops, func(i int, v []byte, err error) { errs[i] = err })
			if errs[0] != nil {
				t.Errorf("write after a failed batch: %v", errs[0])
			}
		})
	}
}

// TestDirectMissingTable: in mode=direct a statement the server refuses to prepare (the
// table does not exist and createSchema is false) fails the batch as rejected, and the
// operations after it fail the same way at once, without a connect each, until the
// backoff lets a connect try again; once the table exists the writes go on.
func TestDirectMissingTable(t *testing.T) {
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	if _, err := raw.Exec(ctx, "DROP TABLE IF EXISTS late"); err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"table": "late", "createSchema": "false", "mode": "direct"})
	pl, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	ops := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "k", Value: []byte("v")}}
	var got error
	for range 20 {
		pl.Run(ctx, ops, func(_ int, _ []byte, err error) { got = err })
		if c := driver.Classify(got); c != driver.ClassRejected || !strings.Contains(got.Error(), "late") {
			t.Fatalf("write to a missing table: class %v (%v), want rejected naming the table", c, got)
		}
	}
	if _, err := raw.Exec(ctx, "CREATE TABLE late (key TEXT PRIMARY KEY, value BYTEA NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // the backoff is 5 s at most
	for {
		pl.Run(ctx, ops, func(_ int, _ []byte, err error) { got = err })
		if got == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("write once the table exists: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pids := idlePIDs(d); len(pids) != 1 {
		t.Errorf("%d idle connections, want 1", len(pids))
	}
}

// idlePIDs returns the backends of mode=direct's idle connections: those in the free
// channel and those kept in the workers' homes between batches. Call it between batches.
func idlePIDs(d *Driver) []uint32 {
	var cs []*dconn
	for len(d.direct.free) > 0 {
		cs = append(cs, <-d.direct.free)
	}
	pids := make([]uint32, len(cs))
	for i, c := range cs {
		pids[i] = c.pc.PID()
		d.direct.free <- c
	}
	d.direct.homesMu.Lock()
	defer d.direct.homesMu.Unlock()
	for h := range d.direct.homes {
		if c := h.Load(); c != nil {
			pids = append(pids, c.pc.PID())
		}
	}
	return pids
}

// TestValidationDetectsCorruption writes a validated value, flips a byte with raw SQL and
// checks the engine's codec sees the corruption in what the driver reads back.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, map[string]string{"table": "valid"})
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key:     "vkey",
		Seq:     42,
		Payload: bytes.Repeat([]byte("abcdefgh"), 16),
		Change: func(ctx context.Context, key string, _ []byte) error {
			_, err := rawConn(t).Exec(ctx, "UPDATE valid SET value = overlay(value placing 'Z'::bytea from 60 for 1) WHERE key = $1", key)
			return err
		},
	})
}

// TestConformance runs the public driver conformance suite (driver/drivertest) in both
// modes, pausing and killing the shared server. It is last in the file because its outage
// check restarts the server.
func TestConformance(t *testing.T) {
	for _, mode := range []string{"direct", "direct-batch", "pool"} {
		t.Run(mode, func(t *testing.T) {
			opts := map[string]string{"dsn": srv.DSN(), "table": "conformance", "mode": mode}
			if mode == "direct-batch" {
				opts["mode"], opts["pipelineSync"] = "direct", "batch"
			}
			drivertest.Run(t, drivertest.Harness{
				Name:    "postgres",
				Options: opts,
				Pause:   srv.Pause,
				Outage: &drivertest.Outage{
					Stop:          srv.Kill,
					Start:         srv.Restart,
					RecoverWithin: 10 * time.Second,
					Options:       map[string]string{"poolSize": "8"},
				},
			})
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	d := open(b, map[string]string{"table": "bench", "poolSize": "32"})
	val := bytes.Repeat([]byte("x"), 128)
	testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
		return d.Write(ctx, fmt.Sprintf("bk%d", i%10_000), val)
	})
}

func BenchmarkRead(b *testing.B) {
	d := open(b, map[string]string{"table": "bench", "poolSize": "32"})
	val := bytes.Repeat([]byte("x"), 128)
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("bk%d", i)
	}
	vals := make([][]byte, len(keys))
	for i := range vals {
		vals[i] = val
	}
	if err := d.WriteBulk(context.Background(), keys, vals); err != nil {
		b.Fatal(err)
	}
	testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
		_, err := d.Read(ctx, keys[i%uint64(len(keys))])
		return err
	})
}

// BenchmarkPipelineRun measures mode=direct's Run, one worker: a batch of one through
// ExecStatement or through pipeline mode (singleViaPipeline), and batches of 8 with a
// Sync per operation (pipeline API) or per batch (ExecBatch); 80% reads,
// 20% upserts of 100-byte values. It reports the process's CPU per operation beside the
// time, since the time is mostly the server's round trip.
//
//	go test -tags integration -run '^$' -bench PipelineRun -benchmem ./drivers/postgres/
func BenchmarkPipelineRun(b *testing.B) {
	d := open(b, map[string]string{"table": "bench", "mode": "direct"})
	const nkeys = 10_000
	keys := make([]string, nkeys)
	vals := make([][]byte, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("pk%d", i)
		vals[i] = bytes.Repeat([]byte("v"), 100)
	}
	if err := d.WriteBulk(context.Background(), keys, vals); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		n        int
		pipeline bool
		sync     string
	}{{"n=1/exec", 1, false, "op"}, {"n=1/pipeline", 1, true, "op"}, {"n=8/pipeline", 8, true, "op"}, {"n=8/batch", 8, true, "batch"}} {
		b.Run(tc.name, func(b *testing.B) {
			singleViaPipeline, d.opts.PipelineSync = tc.pipeline, tc.sync
			defer func() { singleViaPipeline, d.opts.PipelineSync = false, "op" }()
			pl, err := d.NewPipeline(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer pl.Close()
			ops := make([]driver.PipelineOp, tc.n)
			var failed error
			done := func(_ int, _ []byte, err error) {
				if err != nil && failed == nil {
					failed = err
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i += tc.n {
				for j := range ops {
					k := (i + j) * 7919 % nkeys
					if (i+j)%5 == 4 {
						ops[j] = driver.PipelineOp{Op: driver.PipelineWrite, Key: keys[k], Value: vals[k]}
					} else {
						ops[j] = driver.PipelineOp{Op: driver.PipelineRead, Key: keys[k]}
					}
				}
				pl.Run(ctx, ops, done)
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/1e3, "client-µs/op")
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}

// processCPU is the user plus system CPU time of this process so far (report.ReadUsage
// reads it on every platform).
func processCPU() time.Duration {
	u := report.ReadUsage()
	return u.User + u.System
}

// TestBatchTransactionsDoNotDeadlock: with pipelineSync=batch each batch is one
// transaction; two workers upserting the same keys in opposite orders deadlocked (the
// server aborted one with SQLSTATE 40P01, seen in CI as throttled writes) until the driver
// sent each batch in key order.
func TestBatchTransactionsDoNotDeadlock(t *testing.T) {
	ctx := drivertest.Context(t)
	d := open(t, map[string]string{"mode": "direct", "pipelineSync": "batch"})
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("deadlock-%d", i)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer pl.Close()
			ops := make([]driver.PipelineOp, len(keys))
			for i := range ops {
				k := keys[i]
				if w == 1 {
					k = keys[len(keys)-1-i] // the other worker goes the other way
				}
				ops[i] = driver.PipelineOp{Op: driver.PipelineWrite, Key: k, Value: []byte("v")}
			}
			for round := 0; round < 150; round++ {
				pl.Run(ctx, ops, func(_ int, _ []byte, err error) {
					if err != nil {
						failed.Add(1)
						first.CompareAndSwap(nil, err.Error())
					}
				})
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d writes failed in opposite-order batches, first: %v", n, first.Load())
	}
}

// freshTable drops table so a test starts from no rows, and again when it ends.
func freshTable(t *testing.T, table string) {
	t.Helper()
	raw := rawConn(t)
	drop := func() {
		if _, err := raw.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{table}.Sanitize()); err != nil {
			t.Fatalf("drop %s: %v", table, err)
		}
	}
	drop()
	t.Cleanup(drop)
}

// TestScanAndDelete: the operations delete and scan on a table the driver creates, whose
// keys sort by bytes, so the scan's range is a range of the primary key's index.
func TestScanAndDelete(t *testing.T) {
	freshTable(t, "scandel")
	d := open(t, map[string]string{"table": "scandel"})
	drivertest.ScanAndDelete(t, d)
	if got := d.ConnectionInfo()["scanOrder"]; !strings.HasPrefix(got, "key index") {
		t.Errorf("scanOrder %q, want the key index", got)
	}
	if plan := scanPlan(t, d); !strings.Contains(plan, "Index") {
		t.Errorf("scan plan on a table the driver created:\n%s\nwant an index scan", plan)
	}
}

// scanPlan is the server's plan for d's scan, with sequential scans priced out so that an
// index that can serve the range is used even on a small table.
func scanPlan(t *testing.T, d *Driver) string {
	t.Helper()
	ctx := drivertest.Context(t)
	raw := rawConn(t)
	if _, err := raw.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	rows, err := raw.Query(ctx, "EXPLAIN "+d.scanSQL, "sd-k1", 10)
	if err != nil {
		t.Fatalf("explain %s: %v", d.scanSQL, err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// TestScanByteOrderUnderAnotherCollation: a table made elsewhere whose key column sorts
// in ICU's root collation (a before B) is still scanned in byte order (B before a), as
// driver.Scanner promises, at the price of the index range, which ConnectionInfo says.
func TestScanByteOrderUnderAnotherCollation(t *testing.T) {
	freshTable(t, "scan_icu")
	ctx := drivertest.Context(t)
	if _, err := rawConn(t).Exec(ctx, `CREATE TABLE scan_icu (key TEXT COLLATE "und-x-icu" PRIMARY KEY, value BYTEA NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"table": "scan_icu", "createSchema": "false"})
	for _, k := range []string{"c-B", "c-a", "c-b"} {
		if err := d.Write(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		start string
		n     int
		want  int
	}{
		{"c-B", 5, 3}, // B < a < b in bytes; in ICU's order c-B is the last
		{"c-a", 5, 2},
		{"c-C", 5, 2}, // 'C' sorts between 'B' and 'a' in bytes
		{"c-", 1, 1},
	} {
		if got, err := d.Scan(ctx, tc.start, tc.n); err != nil || got != tc.want {
			t.Errorf("Scan(%q, %d) = %d, %v; want %d (byte order)", tc.start, tc.n, got, err, tc.want)
		}
	}
	if got := d.ConnectionInfo()["scanOrder"]; !strings.Contains(got, `COLLATE "C"`) || !strings.Contains(got, "i:") {
		t.Errorf("scanOrder %q, want the COLLATE \"C\" sort named with the ICU collation", got)
	}
}

// TestDeleteAndScanClassesBesideValidatedReads: classes that delete and scan keys beside
// validated reads and writes of a small keyspace. Reads miss deleted keys and validation
// calls none of them lost; scans read keys and fail none.
func TestDeleteAndScanClassesBesideValidatedReads(t *testing.T) {
	freshTable(t, "kinds_engine")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := open(t, map[string]string{"table": "kinds_engine", "mode": "pool", "poolSize": "8"})
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.ValidateValues = 50, 64, true
	w.Readers, w.Writers, w.ReadRate, w.WriteRate = 2, 1, 0, 0
	w.OpTimeout = 5 * time.Second
	w.Ops = map[string]config.OpClass{
		"purge": {Workers: 1, Rate: 200, Enabled: true, Mix: "delete"},
		"range": {Workers: 1, Rate: 200, Enabled: true, Mix: "scan"},
	}
	run := enginerun.New(t, d, w, engine.Options{})
	run.Backfill(t, ctx, 4)
	cum := run.Measure(t, ctx, enginerun.Sleep(2*time.Second))
	rd, del, sc := cum.Ops["read"], cum.Ops["purge"], cum.Ops["range"]
	if del.Count < 50 || del.Errors != 0 || sc.Count < 50 || sc.Errors != 0 {
		t.Fatalf("purge: %d deletes, %d errors (%v); range: %d scans, %d errors (%v); want many, none failed",
			del.Count, del.Errors, del.Failures, sc.Count, sc.Errors, sc.Failures)
	}
	t.Logf("%d reads (%d misses, lost %d), %d deletes, %d scans", rd.Count, rd.Misses, rd.Validation["lost"], del.Count, sc.Count)
	if rd.Misses == 0 {
		t.Errorf("reads missed no key beside %d deletes", del.Count)
	}
	for v, n := range rd.Validation {
		if n != 0 {
			t.Errorf("reads: validation %s = %d (of %d reads, %d misses), want none", v, n, rd.Count, rd.Misses)
		}
	}
}

// TestYCSBPresetsInDefaultMode: ycsb-d, ycsb-e and ycsb-f run on the driver in its default
// mode (direct: workers on pipelines), as `ndbench run --workload ycsb-X` runs them (the
// kit's case, ycsb.Run); scans go in key order, so at most a tenth of them miss.
func TestYCSBPresetsInDefaultMode(t *testing.T) {
	ycsb.Run(t, ycsb.Case{
		Driver:  "postgres",
		Presets: []string{"ycsb-d", "ycsb-e", "ycsb-f"},
		Open: func(t *testing.T, name string) driver.Driver {
			table := "ycsb_" + name[len(name)-1:]
			freshTable(t, table)
			d := open(t, map[string]string{"table": table})
			if !d.Pipelines() {
				t.Fatalf("the default mode %q does not pipeline: the test would not cover it", d.mode)
			}
			return d
		},
		ScanMisses: 0.1,
	})
}

// TestInsert: the operation insert is a plain INSERT (driver.Inserter): a new key's row is
// added and reads back, a key that exists is refused as rejected and keeps its value.
func TestInsert(t *testing.T) {
	freshTable(t, "inserts")
	d := open(t, map[string]string{"table": "inserts"})
	ctx := drivertest.Context(t)
	if err := d.Insert(ctx, "ins-1", []byte("first")); err != nil {
		t.Fatalf("insert of a new key: %v", err)
	}
	err := d.Insert(ctx, "ins-1", []byte("second"))
	if driver.Classify(err) != driver.ClassRejected {
		t.Errorf("insert of an existing key: %v (class %v), want rejected", err, driver.Classify(err))
	}
	if v, err := d.Read(ctx, "ins-1"); err != nil || string(v) != "first" {
		t.Errorf("read after the refused insert: %q, %v; want the first value", v, err)
	}
}
