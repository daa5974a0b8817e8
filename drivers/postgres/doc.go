// Package postgres is the ndbench driver for PostgreSQL and the stores that speak its wire
// protocol (CockroachDB, YugabyteDB YSQL, PgBouncer in front of any of them). It uses
// github.com/jackc/pgx/v5: in mode=direct (the default) the engine's workers share
// poolSize low-level pgconn connections, in mode=pool a pgxpool.
//
// # Modes
//
// mode=direct (what mode=auto picks) makes the driver a driver.Pipeliner: each batch of a
// worker runs on a pgconn.PgConn taken from the driver's poolSize connections, with the
// read and the upsert prepared on it once (binary parameters and results); a worker keeps
// its connection from batch to batch while no other worker waits for one. A batch of one operation is Bind, Execute, Sync in one
// write on the connection's socket and one reply read up to its ReadyForQuery, as
// pgbench -M prepared sends it (the driver encodes the three messages and parses the
// replies in place itself; pgconn connects, prepares and runs the larger batches); a batch of several (workload.pipeline > 1) goes out
// in pgconn's pipeline mode in one write, each operation followed by its own Sync, so each
// is still its own transaction and a failed one does not roll back the others.
// pipelineSync=batch sends one Sync per batch instead, as pgbench's \startpipeline blocks
// do: the server answers a batch in one packet and commits once, the batch is one
// transaction (a failed operation rolls back the writes before it and the server skips
// those after it, each reported as failed), and the batch's replies are handed over once
// its transaction ended. Its statements go out in key order, so two workers' batches on
// the same keys take their row locks in the same order and never deadlock. pgconn is
// handed a context without Done, so it arms nothing per call; an operation's timeout (or a
// hard stop) reaches the connection as a past deadline on its socket, set by
// Pipeline.Interrupt only while the batch whose context ended is running. A single
// operation cut at its deadline keeps its connection: the query is cancelled (a cancel
// request, on a connection of its own) and the rest of its reply read in the background,
// within connectTimeout, before the connection serves another batch; closing it instead
// made a run whose opTimeout is near the store's tail open a backend per operation and
// measure nothing but timeouts. A batch of several cut at its deadline costs its
// connection (pgconn closes it). The workers' connections are opened at Init, one per
// worker of the workload (poolSize at most), all at once (driver.Warmer), as pgbench
// connects before its clock starts; later ones, for workers added while the load runs,
// on the operation that needs one. Connections are opened outside any operation's
// deadline, with backoff (50 ms doubling to 5 s) after a failed connect: meanwhile an
// operation waits for a connection in use, or fails at once with the connect's error
// when none is open. A read's value is copied once, out of the connection's receive buffer into
// the worker's own.
//
// mode=pool is the driver as it was: every worker borrows a connection from a pgxpool for
// each operation, and pgx watches the operation's context. Read, Write and the bulk calls
// (backfill, the API) use the pool in both modes: bulk writes need pgx's array encoding, and
// none of them is on the workers' hot path. mode=auto falls back to pool when execMode is
// exec or simple_protocol (a pooler without prepared statements); mode=direct with those
// is rejected.
//
// # Data model
//
// One table, created when createSchema is true (the default):
//
//	CREATE TABLE IF NOT EXISTS ndbench (key TEXT COLLATE "C" PRIMARY KEY, value BYTEA NOT NULL)
//
// A write is an upsert (INSERT ... ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value),
// so rewriting a key never fails; a read is SELECT value ... WHERE key = $1, and a missing
// row is a miss (driver.ErrNotFound). Values are stored as BYTEA, so the engine's bytes come
// back exactly and data validation works. Bulk writes upsert many rows in one statement
// through unnest($1::text[], $2::bytea[]) (a key given twice keeps its last value); bulk
// reads use key = ANY($1).
//
// The driver offers the operations delete (DELETE ... WHERE key = $1; a missing row is
// no error) and scan, YCSB workload E's range read: SELECT key, value ... WHERE key >= $1
// ORDER BY key LIMIT $2, rows counted as they arrive, none read a miss. A scan reads keys
// in byte order, as driver.Scanner wants: the table's key column is COLLATE "C" for
// that, so the range is a range of the primary key's index. On a table made elsewhere
// whose key column sorts in a language's or ICU's collation ("a" before "B"), the scan
// compares and sorts under COLLATE "C" instead: the right keys, but read by scanning the
// whole table, so its latency is not an index range's; ConnectionInfo's scanOrder says
// which. The operation insert (ycsb-d and ycsb-e's) is a plain INSERT (driver.Inserter),
// not the upsert of write: a key that exists fails as rejected. ndbench inserts each new
// key once, so that failure means the table already held it: a previous run's inserts
// are still there, so drop the table (or use another, table=...) between runs with
// inserts, as YCSB's JDBC binding needs too. Delete, scan and insert run on the pool in
// every mode: in mode=direct a worker sends its reads and writes on its pipeline and runs
// the others on the pool between batches, so ycsb-d, ycsb-e and ycsb-f run with the
// default mode.
//
// # Prepared statements
//
// mode=direct prepares the read and the upsert once per connection itself. The pool's
// pgx prepares each statement once per connection and caches it (execMode cache_statement),
// so an operation is a single round trip. Behind a pooler that does not support prepared
// statements (PgBouncer in transaction mode before 1.21) use execMode exec or
// simple_protocol.
//
// # Pool size
//
// poolSize is the maximum number of connections of the pool, and in mode=direct also of
// the workers' connections, which elastic workers share too. Its default, 0, opens a
// connection for each worker with an operation in flight, up to 64, so up to 64 workers
// (elastic ones included) each have one. A number sets the cap instead. Below the number
// of read plus write workers, workers queue for a connection and that wait shows up as
// latency (and a wait past the deadline as a timeout); in mode=direct the driver's
// pool_waits counter (on the summary's driver line) counts those waits. In mode=direct the pool serves
// backfill and the API besides the workers' connections, so the total is up to twice
// poolSize; it must stay below the server's max_connections (100 by default in
// PostgreSQL).
//
// # Errors
//
// Errors are classified from the SQLSTATE of the server's reply:
//
//	class 08, 57P01..57P03, failed connects   unavailable
//	53300 (too many clients, a role's or a
//	database's CONNECTION LIMIT)              unavailable
//	other class 53 (insufficient resources)   throttled
//	40001, 40P01 (serialization, deadlock)    throttled
//	57014 (query canceled), ctx deadline      timeout
//	mode=direct: I/O cut at the op deadline   timeout
//	classes 22, 23, 42, 28, 3D                rejected
//
// Serialization failures and deadlocks are counted as throttled rather than retried: they
// are the store refusing work because of contention, which is what a benchmark has to show
// (a rising count means hot keys), and the op is safe to retry later, like a throttled one.
// The driver never retries on its own.
//
// # Secrets
//
// dsn is a secret option: ConnectionInfo, errors and logs show it with the password removed
// (both the user:password@ part of a URL and password= parameters).
//
// # CockroachDB
//
//	--set drivers.postgres.dsn='postgresql://root@127.0.0.1:26257/defaultdb?sslmode=disable'
//
// CockroachDB runs every transaction SERIALIZABLE and retries single-statement implicit
// transactions itself, so 40001 rarely reaches the client; under heavy contention on few
// keys it does, and appears as throttled. The table DDL above works unchanged; BYTEA maps
// to BYTES. Keep poolSize near 4 x the vCPUs of the cluster, as Cockroach Labs advises.
//
// # YugabyteDB YSQL
//
//	--set drivers.postgres.dsn='postgres://yugabyte@127.0.0.1:5433/yugabyte?sslmode=disable'
//
// YSQL listens on 5433. Its transactions may fail with 40001 under conflicting writes
// (counted as throttled); increase the key space or lower the write rate if they dominate.
package postgres
