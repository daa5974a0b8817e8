//go:build integration

package cassandra

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/enginerun"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

var srv *testserver.Server

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, testserver.Cassandra, func(s *testserver.Server) { srv = s }))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "cassandra", baseOptions(), values).(*Driver)
}

// baseOptions are the option values of every driver the tests open.
func baseOptions() map[string]string {
	return map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port), "keyspace": "ndb_test"}
}

// tryOpen opens a driver the test expects to fail to open, returning the error; one that
// opens is left to the caller to close.
func tryOpen(values map[string]string) (*Driver, error) {
	v := baseOptions()
	maps.Copy(v, values)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, _, err := driver.Open(ctx, "cassandra", v)
	if err != nil {
		return nil, err
	}
	return d.(*Driver), nil
}

var (
	rawOnce sync.Once
	rawSess *gocql.Session
	rawErr  error
)

// raw is a plain session for checking and tampering behind the driver's back.
func raw(t testing.TB) *gocql.Session {
	t.Helper()
	rawOnce.Do(func() {
		cfg := gocql.NewCluster(srv.Host)
		cfg.Port = srv.Port
		cfg.Consistency = gocql.One
		cfg.Timeout = 20 * time.Second
		rawSess, rawErr = cfg.CreateSession()
	})
	if rawErr != nil {
		t.Fatalf("raw session: %v", rawErr)
	}
	return rawSess
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
			t.Errorf("read %s: got %d bytes, want %d", k, len(got), len(want))
		}
	}
	if err := d.Write(ctx, "k-text", []byte("second")); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(ctx, "k-text"); err != nil || string(got) != "second" {
		t.Errorf("read after overwrite: %q, %v", got, err)
	}
	if _, err := d.Read(ctx, "never-written"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a missing key: want ErrNotFound, got %v", err)
	}
	info := d.ConnectionInfo()
	if info["cluster_name"] != "ndbench-test" || !strings.HasPrefix(info["release_version"], "5.0") {
		t.Errorf("ConnectionInfo: %v", info)
	}
}

func TestColsPerRow(t *testing.T) {
	d := open(t, map[string]string{"table": "cols3", "colsPerRow": "3"})
	ctx := drivertest.Context(t)
	for _, v := range [][]byte{[]byte("abcdefgh"), []byte("ab"), {}} {
		key := fmt.Sprintf("c-%d", len(v))
		if err := d.Write(ctx, key, v); err != nil {
			t.Fatal(err)
		}
		got, err := d.Read(ctx, key)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("read %s: %q, %v; want %q", key, got, err, v)
		}
		// Stored as three pieces in order, as documented.
		var p0, p1, p2 []byte
		if err := raw(t).Query("SELECT value0, value1, value2 FROM ndb_test.cols3 WHERE key = ? AND column1 = 0", key).
			ScanContext(ctx, &p0, &p1, &p2); err != nil {
			t.Fatal(err)
		}
		if j := string(p0) + "|" + string(p1) + "|" + string(p2); len(v) == 8 && j != "abc|def|gh" && j != "ab|cde|fgh" {
			t.Errorf("pieces of %q: %s", v, j)
		}
		if !bytes.Equal(append(append(p0, p1...), p2...), v) {
			t.Errorf("pieces of %q do not join back: %q %q %q", v, p0, p1, p2)
		}
	}
}

func partitionRows(t *testing.T, table, key string) int {
	t.Helper()
	var n int
	if err := raw(t).Query("SELECT count(*) FROM ndb_test."+table+" WHERE key = ?", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRowsPerPartition(t *testing.T) {
	ctx := drivertest.Context(t)
	t.Run("batch", func(t *testing.T) {
		d := open(t, map[string]string{"table": "rows_b", "rowsPerPartition": "4", "useBatchWrites": "true", "colsPerRow": "2"})
		if err := d.Write(ctx, "p", []byte("value-1")); err != nil {
			t.Fatal(err)
		}
		if n := partitionRows(t, "rows_b", "p"); n != 4 {
			t.Errorf("batch write: %d rows in the partition, want 4", n)
		}
		if err := d.Write(ctx, "p", []byte("value-2")); err != nil {
			t.Fatal(err)
		}
		if got, err := d.Read(ctx, "p"); err != nil || string(got) != "value-2" {
			t.Errorf("read: %q, %v", got, err)
		}
	})
	t.Run("one row per op", func(t *testing.T) {
		d := open(t, map[string]string{"table": "rows_s", "rowsPerPartition": "3"})
		for i := 1; i <= 5; i++ {
			v := []byte("v" + strconv.Itoa(i))
			if err := d.Write(ctx, "p", v); err != nil {
				t.Fatal(err)
			}
			// The newest row wins whichever clustering row it landed in.
			if got, err := d.Read(ctx, "p"); err != nil || !bytes.Equal(got, v) {
				t.Fatalf("read after write %d: %q, %v", i, got, err)
			}
		}
		if n := partitionRows(t, "rows_s", "p"); n != 3 {
			t.Errorf("%d rows in the partition after 5 writes, want 3", n)
		}
	})
}

func TestConsistencyLevelLive(t *testing.T) {
	// One node, replication factor 1: THREE cannot be met, so the server answers Unavailable.
	d := open(t, map[string]string{"table": "cl"})
	ctx := drivertest.Context(t)
	if err := d.Write(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	opts, err := driver.NewOptions("cassandra", map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port),
		"keyspace": "ndb_test", "table": "cl", "writeConsistencyLevel": "THREE", "readConsistencyLevel": "QUORUM"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reconfigure(ctx, opts); err != nil {
		t.Fatal(err)
	}
	err = d.Write(ctx, "k", []byte("v2"))
	if c := driver.Classify(err); c != driver.ClassUnavailable {
		t.Fatalf("write at THREE on one node: class %v (%v), want unavailable", c, err)
	}
	if got, err := d.Read(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("read at QUORUM (1 of 1): %q, %v", got, err)
	}
	if info := d.ConnectionInfo(); info["writeConsistencyLevel"] != "THREE" {
		t.Errorf("ConnectionInfo after Reconfigure: %v", info)
	}
	opts.(*Options).WriteConsistencyLevel = "ONE"
	if err := d.Reconfigure(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(ctx, "k", []byte("v3")); err != nil {
		t.Fatalf("write after switching back to ONE: %v", err)
	}
}

func TestSchemaHandling(t *testing.T) {
	ctx := drivertest.Context(t)
	t.Run("idempotent", func(t *testing.T) {
		d1 := open(t, map[string]string{"table": "idem"})
		if err := d1.Write(ctx, "a", []byte("1")); err != nil {
			t.Fatal(err)
		}
		d2 := open(t, map[string]string{"table": "idem"})
		if got, err := d2.Read(ctx, "a"); err != nil || string(got) != "1" {
			t.Fatalf("second driver: %q, %v", got, err)
		}
	})
	t.Run("missing table without createSchema", func(t *testing.T) {
		_, err := tryOpen(map[string]string{"table": "absent", "createSchema": "false"})
		if c := driver.Classify(err); c != driver.ClassRejected || !strings.Contains(fmt.Sprint(err), "does not exist") {
			t.Fatalf("class %v (%v), want rejected naming the missing table", c, err)
		}
	})
	t.Run("NDBench text table", func(t *testing.T) {
		if err := raw(t).Query("CREATE TABLE IF NOT EXISTS ndb_test.ndb_text (key text, column1 int, value0 text, PRIMARY KEY ((key), column1))").Exec(); err != nil {
			t.Fatal(err)
		}
		_, err := tryOpen(map[string]string{"table": "ndb_text"})
		if c := driver.Classify(err); c != driver.ClassRejected || !strings.Contains(fmt.Sprint(err), "value0 is text") {
			t.Fatalf("class %v (%v), want rejected naming the text column", c, err)
		}
	})
	t.Run("fewer columns than colsPerRow", func(t *testing.T) {
		open(t, map[string]string{"table": "narrow", "colsPerRow": "1"})
		_, err := tryOpen(map[string]string{"table": "narrow", "colsPerRow": "2"})
		if c := driver.Classify(err); c != driver.ClassRejected || !strings.Contains(fmt.Sprint(err), "value1 is missing") {
			t.Fatalf("class %v (%v), want rejected naming value1", c, err)
		}
	})
	t.Run("other table and keyspace names", func(t *testing.T) {
		d := open(t, map[string]string{"keyspace": "Other_KS", "cfname": "My_Table"})
		if err := d.Write(ctx, "x", []byte("y")); err != nil {
			t.Fatal(err)
		}
		var v []byte
		if err := raw(t).Query("SELECT value0 FROM other_ks.my_table WHERE key = 'x'").ScanContext(ctx, &v); err != nil || string(v) != "y" {
			t.Fatalf("row in other_ks.my_table: %q, %v", v, err)
		}
	})
	t.Run("schema change slower than the request timeout", func(t *testing.T) {
		// A schema change waits for the node to write it (and the ring to agree): on a
		// busy node seconds, which the run's request timeout (1 s here) is not chosen
		// for. The node stalls for 2.5 s as the statements go out; the creation must
		// wait for it (schemaTimeout), not fail the run's start.
		opts, err := driver.NewOptions("cassandra", map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port),
			"keyspace": "ndb_slow_ddl", "table": "t", "timeout": "1s"})
		if err != nil {
			t.Fatal(err)
		}
		stalled := false
		// Set before the node resumes: an Init that returns with it unset returned while
		// the node was still stopped, so the stall did not hold the schema change. (It
		// was a wall-clock lower bound, init at least 2.5 s.)
		var resuming atomic.Bool
		d := &Driver{beforeSchema: func() {
			resume, err := srv.Pause()
			if err != nil {
				t.Errorf("pause the node: %v", err)
				return
			}
			stalled = true
			time.AfterFunc(2500*time.Millisecond, func() { resuming.Store(true); resume() })
		}}
		t.Cleanup(func() { _ = d.Close() })
		if err := d.Init(ctx, opts); err != nil {
			t.Fatalf("init with the node stalled during the schema change: %v", err)
		}
		if !stalled {
			t.Fatal("the schema statements were not sent (the keyspace existed before the test?)")
		}
		if !resuming.Load() {
			t.Error("init returned while the node was stopped: the stall did not hold the schema change")
		}
		if err := d.Write(ctx, "x", []byte("y")); err != nil {
			t.Fatalf("write after the slow creation: %v", err)
		}
	})
	t.Run("network topology keyspace", func(t *testing.T) {
		d := open(t, map[string]string{"keyspace": "ndb_nts", "table": "t", "replicationClass": "NetworkTopologyStrategy", "localDC": "datacenter1"})
		if err := d.Write(ctx, "x", []byte("y")); err != nil {
			t.Fatal(err)
		}
		var repl map[string]string
		if err := raw(t).Query("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = 'ndb_nts'").Scan(&repl); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(repl["class"], "NetworkTopologyStrategy") || repl["datacenter1"] != "1" {
			t.Errorf("replication = %v", repl)
		}
	})
}

func TestErrorClasses(t *testing.T) {
	ctx := drivertest.Context(t)
	t.Run("ctx deadline", func(t *testing.T) {
		d := open(t, map[string]string{"table": "errs"})
		dctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
		defer cancel()
		<-dctx.Done()
		_, err := d.Read(dctx, "k")
		if c := driver.Classify(err); c != driver.ClassTimeout {
			t.Fatalf("class %v (%v), want timeout", c, err)
		}
	})
	t.Run("table dropped mid-run", func(t *testing.T) {
		// Someone drops the table under a running benchmark: the server rejects the
		// statement as invalid (unconfigured table), which is the user's problem to fix.
		d := open(t, map[string]string{"table": "dropped"})
		if err := d.Write(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		if err := raw(t).Query("DROP TABLE ndb_test.dropped").ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
		err := d.Write(ctx, "k", []byte("v"))
		if c := driver.Classify(err); c != driver.ClassRejected {
			t.Fatalf("class %v (%v), want rejected", c, err)
		}
	})
	t.Run("refused with a password", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		_, err = tryOpen(map[string]string{"port": strconv.Itoa(port), "username": "u", "password": "Sup3rS3cret", "connectTimeout": "1s"})
		if c := driver.Classify(err); c != driver.ClassUnavailable {
			t.Fatalf("class %v (%v), want unavailable", c, err)
		}
		if strings.Contains(err.Error(), "Sup3rS3cret") {
			t.Fatalf("password in error: %v", err)
		}
	})
}

func TestConnectionInfoHasNoSecrets(t *testing.T) {
	// The test server allows everyone, so credentials are offered and ignored.
	d := open(t, map[string]string{"table": "secret", "username": "bench", "password": "Sup3rS3cret"})
	for k, v := range d.ConnectionInfo() {
		if strings.Contains(v, "Sup3rS3cret") {
			t.Errorf("ConnectionInfo[%s] shows the password", k)
		}
	}
}

// TestValidationDetectsCorruption writes a validated value, flips a byte with raw CQL and
// checks the engine's codec sees the corruption in what the driver reads back.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, map[string]string{"table": "valid", "colsPerRow": "2"})
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key:     "vkey",
		Payload: bytes.Repeat([]byte("abcdefgh"), 16),
		Change: func(ctx context.Context, key string, _ []byte) error {
			var v1 []byte
			if err := raw(t).Query("SELECT value1 FROM ndb_test.valid WHERE key = ? AND column1 = 0", key).ScanContext(ctx, &v1); err != nil {
				return err
			}
			v1[3] ^= 0x20
			return raw(t).Query("UPDATE ndb_test.valid SET value1 = ? WHERE key = ? AND column1 = 0", v1, key).ExecContext(ctx)
		},
	})
}

// TestZConformance runs the public driver conformance suite (driver/drivertest) on the
// default table layout, pausing and killing the node, and on a partition of several rows
// with values split over columns, where a read must pick the newest row. It is last in the
// file (hence the Z: tests run in file order) because its outage check restarts the node;
// a Cassandra node takes longer than the other stores to serve again.
func TestZConformance(t *testing.T) {
	hp := map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port), "keyspace": "ndb_test"}
	live := map[string]string{"readConsistencyLevel": "ONE", "writeConsistencyLevel": "ONE"}
	t.Run("rows=3,cols=3", func(t *testing.T) {
		opts := map[string]string{"table": "conformance_wide", "colsPerRow": "3", "rowsPerPartition": "3"}
		maps.Copy(opts, hp)
		drivertest.Run(t, drivertest.Harness{Name: "cassandra", Options: opts, LiveValues: live})
	})
	t.Run("direct,rows=3,cols=3", func(t *testing.T) {
		opts := map[string]string{"table": "conformance_wide", "colsPerRow": "3", "rowsPerPartition": "3", "mode": "direct"}
		maps.Copy(opts, hp)
		drivertest.Run(t, drivertest.Harness{Name: "cassandra", Options: opts, LiveValues: live})
	})
	t.Run("direct", func(t *testing.T) {
		opts := map[string]string{"table": "conformance_direct", "mode": "direct"}
		maps.Copy(opts, hp)
		drivertest.Run(t, drivertest.Harness{
			Name:       "cassandra",
			Options:    opts,
			LiveValues: live,
			Pause:      srv.Pause,
			Outage: &drivertest.Outage{
				Stop:          srv.Kill,
				Start:         srv.Restart,
				RecoverWithin: 30 * time.Second,
				Options:       map[string]string{"timeout": "1s"},
			},
		})
	})
	t.Run("default", func(t *testing.T) {
		opts := map[string]string{"table": "conformance"}
		maps.Copy(opts, hp)
		drivertest.Run(t, drivertest.Harness{
			Name:       "cassandra",
			Options:    opts,
			LiveValues: live,
			Pause:      srv.Pause,
			Outage: &drivertest.Outage{
				Stop:          srv.Kill,
				Start:         srv.Restart,
				RecoverWithin: 30 * time.Second,
				Options:       map[string]string{"timeout": "1s"},
			},
		})
	})
}

// The tests of mode=direct give gocql (which creates their tables) a long request
// timeout: DDL on a loaded test machine can take longer than the default 5s.

// TestDirectMode checks what mode=direct adds: auto picks it on the single test node,
// pipelines follow live consistency changes and classify server errors, and PREPARE
// failures (a dropped table) are rejected.
func TestDirectMode(t *testing.T) {
	ctx := drivertest.Context(t)
	t.Run("auto", func(t *testing.T) {
		d := open(t, map[string]string{"table": "direct_auto", "timeout": "30s"})
		if !d.Pipelines() || d.ConnectionInfo()["mode"] != "direct" {
			t.Errorf("mode=auto on one node: Pipelines %v, mode %q; want direct", d.Pipelines(), d.ConnectionInfo()["mode"])
		}
		d = open(t, map[string]string{"table": "direct_auto_b", "rowsPerPartition": "2", "useBatchWrites": "true", "timeout": "30s"})
		if d.Pipelines() {
			t.Errorf("mode=auto with batch writes gives pipelines; want gocql")
		}
		if _, err := tryOpen(map[string]string{"table": "direct_auto_b", "rowsPerPartition": "2", "useBatchWrites": "true", "mode": "direct"}); err == nil || !strings.Contains(err.Error(), "direct sends no BATCH") {
			t.Errorf("mode=direct with batch writes: %v; want an option error", err)
		}
	})
	run := func(pl driver.Pipeline, ops []driver.PipelineOp) []error {
		errs := make([]error, len(ops))
		pl.Run(ctx, ops, func(i int, _ []byte, err error) { errs[i] = err })
		return errs
	}
	t.Run("consistency and server errors", func(t *testing.T) {
		d := open(t, map[string]string{"table": "direct_cl", "mode": "direct", "timeout": "30s"})
		pl, err := d.NewPipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer pl.Close()
		w := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "k", Value: []byte("v")}, {Op: driver.PipelineRead, Key: "k"}}
		if errs := run(pl, w); errs[0] != nil || errs[1] != nil {
			t.Fatalf("write and read at LOCAL_ONE: %v", errs)
		}
		opts, err := driver.NewOptions("cassandra", map[string]string{"hosts": srv.Host, "port": strconv.Itoa(srv.Port),
			"keyspace": "ndb_test", "table": "direct_cl", "mode": "direct", "writeConsistencyLevel": "THREE"})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Reconfigure(ctx, opts); err != nil {
			t.Fatal(err)
		}
		errs := run(pl, w)
		if c := driver.Classify(errs[0]); c != driver.ClassUnavailable {
			t.Errorf("pipelined write at THREE on one node: class %v (%v); want unavailable", c, errs[0])
		}
		if errs[1] != nil {
			t.Errorf("the read beside it: %v", errs[1])
		}
		// The connection stays usable after a server error.
		if errs := run(pl, w[1:]); errs[0] != nil {
			t.Errorf("read after a server error: %v", errs[0])
		}
	})
	t.Run("table dropped", func(t *testing.T) {
		d := open(t, map[string]string{"table": "direct_dropped", "mode": "direct", "timeout": "30s"})
		pl, err := d.NewPipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer pl.Close()
		if errs := run(pl, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "k", Value: []byte("v")}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if err := raw(t).Query("DROP TABLE ndb_test.direct_dropped").ExecContext(ctx); err != nil {
			t.Fatal(err)
		}
		// The prepared statement may fail as unprepared first (the connection is then
		// dropped), then the new connection's PREPARE is rejected as invalid.
		var last error
		for range 3 {
			last = run(pl, []driver.PipelineOp{{Op: driver.PipelineRead, Key: "k"}})[0]
			if driver.Classify(last) == driver.ClassRejected {
				break
			}
		}
		if c := driver.Classify(last); c != driver.ClassRejected {
			t.Errorf("read from a dropped table: class %v (%v); want rejected", c, last)
		}
	})
	t.Run("refused", func(t *testing.T) {
		d := open(t, map[string]string{"table": "direct_refused", "mode": "direct", "timeout": "30s"})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		pl := &pipeline{d: d, host: addr}
		errs := run(pl, []driver.PipelineOp{{Op: driver.PipelineRead, Key: "k"}})
		if c := driver.Classify(errs[0]); c != driver.ClassUnavailable {
			t.Errorf("a refused connection: class %v (%v); want unavailable", c, errs[0])
		}
	})
}

// TestDirectEngine runs the engine on mode=direct, with 16 operations in flight per worker
// on a connection each and with 16 workers of one operation each sharing two connections
// (sharedConns), and validation on until it has done 1,000 reads and 200 writes, and
// checks every read was valid and nothing failed. It asserts counts, not a rate: on a
// loaded machine under -race a JVM store's replies take seconds (it once did 64 reads in
// 3 s with three operations past a 5 s opTimeout), which says nothing of the driver.
func TestDirectEngine(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		readers, writers, depth int
		conns                   string
	}{
		{"own connections", 4, 2, 16, "0"},
		{"shared connections", 12, 4, 1, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			d := open(t, map[string]string{"table": "direct_engine", "mode": "direct", "timeout": "30s", "sharedConns": tc.conns})
			w := config.DefaultWorkload()
			w.NumKeys, w.DataSize, w.ValidateValues = 2000, 100, true
			w.Readers, w.Writers, w.ReadRate, w.WriteRate = tc.readers, tc.writers, 0, 0
			w.Pipeline = tc.depth
			w.OpTimeout = time.Minute
			coll := stats.NewCollector(stats.Config{Shards: 8})
			run := enginerun.New(t, d, w, engine.Options{Collector: coll})
			run.Backfill(t, ctx, 8)
			enough := func() bool {
				r, w := coll.CumulativeCounts(stats.OpRead), coll.CumulativeCounts(stats.OpWrite)
				return r.Count() >= 1000 && w.Count() >= 200
			}
			cum := run.Measure(t, ctx, func() {
				for !enough() && ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
					coll.Tick(time.Now())
				}
			})
			r, wr := cum.Ops["read"], cum.Ops["write"]
			if r.Count < 1000 || wr.Count < 200 {
				t.Errorf("reads %d, writes %d in 2 minutes; want 1,000 and 200", r.Count, wr.Count)
			}
			if r.Errors+wr.Errors != 0 || r.Misses != 0 {
				t.Errorf("errors %d+%d, misses %d; want none (failures %v %v)", r.Errors, wr.Errors, r.Misses, r.Failures, wr.Failures)
			}
			for k, n := range r.Validation {
				if n != 0 {
					t.Errorf("validation %s: %d; want none", k, n)
				}
			}
		})
	}
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "bk" + strconv.Itoa(i)
	}
	return keys
}

// benchConfigs are the client settings compared in the benchmarks: gocql's defaults and
// the trade-offs between client CPU and added latency.
var benchConfigs = []struct{ name, conns, coalesce string }{
	{"conns2-coalesce200us", "2", "200us"},
	{"conns1-coalesce200us", "1", "200us"},
	{"conns2-coalesce0", "2", "0s"},
}

func BenchmarkWrite(b *testing.B) {
	val := bytes.Repeat([]byte("x"), 128)
	keys := benchKeys(10_000)
	for _, c := range benchConfigs {
		b.Run(c.name, func(b *testing.B) {
			d := open(b, map[string]string{"table": "bench", "numConns": c.conns, "writeCoalesceWait": c.coalesce})
			testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
				return d.Write(ctx, keys[i%uint64(len(keys))], val)
			})
		})
	}
}

func BenchmarkRead(b *testing.B) {
	val := bytes.Repeat([]byte("x"), 128)
	keys := benchKeys(10_000)
	for _, c := range benchConfigs {
		b.Run(c.name, func(b *testing.B) {
			d := open(b, map[string]string{"table": "bench", "numConns": c.conns, "writeCoalesceWait": c.coalesce})
			ctx := context.Background()
			for _, k := range keys {
				if err := d.Write(ctx, k, val); err != nil {
					b.Fatal(err)
				}
			}
			testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
				_, err := d.Read(ctx, keys[i%uint64(len(keys))])
				return err
			})
		})
	}
}

// dropTable drops ndb_test.table so a test starts from no partitions.
func dropTable(t *testing.T, table string) {
	t.Helper()
	if err := raw(t).Query("DROP TABLE IF EXISTS ndb_test." + table).Exec(); err != nil {
		t.Fatalf("drop %s: %v", table, err)
	}
}

// tokenOrder returns the keys of ndb_test.table in the ring's token order, as the server
// orders partitions.
func tokenOrder(t *testing.T, table string) []string {
	t.Helper()
	iter := raw(t).Query("SELECT DISTINCT key FROM ndb_test." + table).Iter()
	var keys []string
	var k string
	for iter.Scan(&k) {
		keys = append(keys, k)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestDeleteAndScan: delete removes a key's partition (a missing one is no error); scan
// reads up to n keys in token order from the start key's token, one per partition
// whatever rowsPerPartition is, the deleted key not among them, and none is a miss.
func TestDeleteAndScan(t *testing.T) {
	ctx := drivertest.Context(t)
	for _, tc := range []struct {
		table string
		opts  map[string]string
	}{
		{"scandel", map[string]string{"table": "scandel"}},
		{"scandel_rows", map[string]string{"table": "scandel_rows", "rowsPerPartition": "3", "useBatchWrites": "true", "mode": "gocql"}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			dropTable(t, tc.table)
			d := open(t, tc.opts)
			if _, err := d.Scan(ctx, "k0", 5); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("scan of an empty table: %v, want ErrNotFound", err)
			}
			for i := range 12 {
				if err := d.Write(ctx, fmt.Sprintf("k%d", i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Delete(ctx, "k5"); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := d.Delete(ctx, "never-written"); err != nil {
				t.Errorf("delete of a missing key: %v", err)
			}
			if _, err := d.Read(ctx, "k5"); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("read of a deleted key: %v, want ErrNotFound", err)
			}
			ring := tokenOrder(t, tc.table) // 11 keys, k5 gone
			if len(ring) != 11 || slices.Contains(ring, "k5") {
				t.Fatalf("table holds %v, want k0..k11 without k5", ring)
			}
			for _, sc := range []struct {
				from, n, want int
			}{
				{0, 100, 11}, // the whole ring from its first key
				{0, 4, 4},
				{3, 5, 5},
				{9, 10, 2}, // the ring's end: no wrap
				{10, 1, 1},
			} {
				if got, err := d.Scan(ctx, ring[sc.from], sc.n); err != nil || got != sc.want {
					t.Errorf("Scan(%s, the %dth key in token order, %d) = %d, %v; want %d", ring[sc.from], sc.from, sc.n, got, err, sc.want)
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := d.Scan(cctx, ring[0], 1); err == nil {
				t.Error("scan with a cancelled context succeeded")
			}
		})
	}
}

// TestDeleteAndScanClassesBesideValidatedReads: classes that delete and scan keys beside
// validated reads and writes of a small keyspace. Reads miss deleted keys and validation
// calls none of them lost; scans read keys and fail none.
func TestDeleteAndScanClassesBesideValidatedReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dropTable(t, "kinds_engine")
	d := open(t, map[string]string{"table": "kinds_engine", "mode": "gocql", "timeout": "30s"})
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize, w.ValidateValues = 50, 64, true
	w.Readers, w.Writers, w.ReadRate, w.WriteRate = 2, 1, 0, 0
	w.OpTimeout = 10 * time.Second
	w.Ops = map[string]config.OpClass{
		"purge": {Workers: 1, Rate: 100, Enabled: true, Mix: "delete"},
		"range": {Workers: 1, Rate: 100, Enabled: true, Mix: "scan"},
	}
	run := enginerun.New(t, d, w, engine.Options{})
	run.Backfill(t, ctx, 4)
	cum := run.Measure(t, ctx, enginerun.Sleep(3*time.Second))
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
// mode (auto, which is direct on the one-node test cluster: workers on pipelines), as
// `ndbench run --workload ycsb-X` runs them (the kit's case, ycsb.Run). Scans go in token
// order, with no wrap past the ring's last token: a start key near it reads few keys or
// none, so up to half the scans may miss.
func TestYCSBPresetsInDefaultMode(t *testing.T) {
	ycsb.Run(t, ycsb.Case{
		Driver:  "cassandra",
		Presets: []string{"ycsb-d", "ycsb-e", "ycsb-f"},
		Open: func(t *testing.T, name string) driver.Driver {
			table := "ycsb_" + name[len(name)-1:]
			dropTable(t, table)
			d := open(t, map[string]string{"table": table, "timeout": "30s"})
			if !d.Pipelines() {
				t.Fatalf("the default mode (auto) picked %q on the one-node test cluster, not direct: the test would not cover pipelines", d.opts.Mode)
			}
			return d
		},
		ScanMisses: 0.5,
	})
}

// TestScanInStatedOrder: the driver states token order (driver.ScanOrderer), so the
// conformance suite's scan check holds it to that order's rules rather than byte order's,
// on a real table in both modes.
func TestScanInStatedOrder(t *testing.T) {
	for _, mode := range []string{"gocql", "direct"} {
		t.Run(mode, func(t *testing.T) {
			dropTable(t, "scan_order")
			d := open(t, map[string]string{"table": "scan_order", "mode": mode, "timeout": "30s"})
			if got := driver.ScanOrderOf(d); got != driver.ScanStore {
				t.Fatalf("scan order %v, want store (token order)", got)
			}
			drivertest.ScanAndDelete(t, d)
		})
	}
}
