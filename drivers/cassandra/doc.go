// Package cassandra is the ndbench driver for Apache Cassandra and the stores that speak
// CQL (ScyllaDB, YugabyteDB YCQL, Amazon Keyspaces, Azure Cosmos DB for Cassandra). It
// has two client modes (see Modes): github.com/apache/cassandra-gocql-driver/v2, and its
// own hot loop on one CQL connection per worker. It mirrors NDBench's CQL plugins
// (CassJavaDriverGeneric): NDBench's property names are accepted as option names or aliases,
// so ndbench.config.cass.* properties apply (the config layer maps them to
// drivers.cassandra.*): host, host.port/hostPort, cluster, keyspace, cfname, connections,
// username, password, readConsistencyLevel, writeConsistencyLevel, colsPerRow,
// rowsPerPartition, useBatchWrites, createSchema.
//
// # Data model
//
// NDBench's generic table, with blob columns so the engine's bytes round-trip exactly:
//
//	CREATE TABLE IF NOT EXISTS perftest.test1 (key text, column1 int,
//	    value0 blob, ..., value<colsPerRow-1> blob, PRIMARY KEY ((key), column1))
//
// A key is a partition; a partition holds rowsPerPartition rows (column1 = 0..n-1).
// With createSchema (the default) a missing keyspace or table is created at start, on a
// session of its own whose request timeout is schemaTimeout (30 s): a schema change
// waits for the node to write it and for the ring to agree, which on a busy node takes
// longer than the request timeout chosen for operations; a table that exists is only
// checked, and no schema statement is sent.
//
//   - colsPerRow: a value is cut into colsPerRow contiguous pieces of near-equal size, one per
//     value<i> column, and a read joins them in order. The bytes stored per key stay the
//     configured value size whatever the column count (NDBench instead stored a whole value
//     in every column), so a run with more columns measures the column overhead, not more
//     data. Values shorter than colsPerRow leave some pieces empty (empty, not null).
//   - rowsPerPartition and useBatchWrites: with rowsPerPartition 1 (the default) every write
//     replaces row 0. With more rows, useBatchWrites=true writes every row of the partition
//     (each holding the value) in one UNLOGGED batch, which is single-partition and so applied
//     atomically by one replica set, like NDBench's batch mode; useBatchWrites=false writes
//     one row per op, cycling through the rows, like NDBench's non-batch mode. A read fetches
//     the whole partition (as NDBench does) and returns the row with the newest WRITETIME, so
//     it always returns the last value written, and data validation holds in both modes.
//
// Writes use client-side timestamps and are marked idempotent, so the retry policy
// (retries) may re-send them. A read of a partition with no rows is a miss
// (driver.ErrNotFound).
//
// The driver offers the operations delete and scan. delete is DELETE ... WHERE key = ?,
// the whole partition, at writeConsistencyLevel (a missing partition is no error). scan
// is workload E's range read as YCSB's Cassandra binding does it: SELECT key, value...
// WHERE token(key) >= token(?) PER PARTITION LIMIT 1 LIMIT n, at readConsistencyLevel,
// so it reads n partitions (keys, one row each) that are neighbours on the ring from the
// start key's token, and counts them; none is a miss. The driver states token order as
// its scan order (driver.ScanOrderer, order "store"): Murmur3Partitioner hashes keys, so
// the keys a scan reads are not those that follow the start key by name, and a start key
// near the ring's last token reads few (there is no wrap). It is the range read a
// partitioned table has, costed as the store costs it; clustering-range reads within a
// partition are not offered. Both run on gocql's session in every mode: in mode=direct
// (which mode=auto picks on a one-node cluster) a worker sends its reads, writes and
// inserts on its pipeline and runs a delete, scan or rmw through the session between
// batches, so ycsb-e and ycsb-f run with the default mode.
//
// At Init the driver checks the table's columns in system_schema: an existing table made by
// NDBench (text value columns) or with fewer value columns than colsPerRow is reported with
// the fix (another table name, or drop it), rather than failing every op later.
//
// # Modes
//
// mode=direct gives each engine worker one CQL connection of its own (native protocol v4;
// driver.Pipeliner), the way latte and cassandra-stress drive a node: every operation due
// for the worker, up to workload.pipeline, is sent as an EXECUTE with its own stream id in
// one write system call, and each reply is parsed in place as it arrives, in whatever
// order the node answers. There is no pool, no per-request timer, no goroutine hand-off
// and no coalescing wait: what is queued is written when the worker has it, so batching
// adds no latency. The node runs a connection's requests concurrently, so operations of a
// batch on the same key, one of them a write, are sent one after the other: a read sees
// the write issued before it, as with one operation at a time. Each connection does
// STARTUP (PasswordAuthenticator when username is set), then PREPAREs the read and write
// statements (fully qualified, so no USE), and a connection that breaks, is interrupted by
// a timeout, or finds its statements unprepared is dropped and set up again on the
// worker's next batch. The workers' connections are set up at Init, one per worker of the
// workload on the host its pipeline will take, 64 at a time (driver.Warmer), as latte
// connects before its clock starts, so a worker's first operation does not time a
// connect, STARTUP and two PREPAREs; a host that fails there costs only its own
// connections, and one that waits over 30 s for its worker (a serve session not started
// yet) is closed and the worker connects on its first batch. Frames for set-up and error replies go through
// github.com/datastax/go-cassandra-native-protocol; the per-operation EXECUTE and RESULT
// frames are appended and parsed without allocation, byte-compatible with that library
// (its tests check), since the library's encoder allocates about 24 times per request.
//
// sharedConns (mode=direct; 0, the default, is the above) makes the workers share that
// many connections per host instead, for NDBench's shape of many workers with one
// operation each in flight, where a connection per worker costs every operation a write,
// a read and a wake-up of its own: CQL stream ids multiplex the workers' requests on a
// connection, the frames that concurrent workers queue leave in one write (a worker
// appends its frame to the connection's queue, and whoever finds no write running writes
// all that is queued), and the replies are read by the waiting workers in turn
// (leader/follower, no goroutine per connection): a worker waiting for a reply reads the
// connection when no one else does, hands the other workers their replies and reads
// until its own batch is answered, so a worker reads its own replies without a wake-up
// and a lone worker with many operations in flight reads as on a connection of its own.
// The outputs and error classes are the same. An operation whose deadline passes returns
// then as a timeout, and its stream id stays reserved until its late reply arrives (and
// is dropped by whoever reads next) or the connection goes; a worker whose deadline
// passes while it reads hands the reading on without losing a reply; a connection that
// breaks fails every operation on it as unavailable and is set up again by the next
// batch. docs/performance.md ("Cassandra against latte") has the measurements.
//
// Direct mode is not token-aware and discovers no ring: the workers' connections take the
// configured hosts in turn, and a worker's host coordinates every request it sends. On a
// single node that costs nothing; on a cluster each request whose key the coordinator does
// not own takes one more network hop inside the cluster (and the listed hosts carry all
// the coordination work), so latencies are not comparable with a token-aware client's.
// Close waits at most 5 s for gocql's session to close (on a stalled node it waited over
// 20 s for its control connection) and lets it finish in the background, with a warning.
// localDC, numConns, retries, writeCoalesceWait and reconnectInterval apply to gocql only,
// and so does the request timeout: a worker's operations end at workload.opTimeout.
// useBatchWrites with rowsPerPartition > 1 needs gocql (direct sends no BATCH). TLS and
// the connect timeout apply to direct connections too (TLS in direct mode is untested
// here: the test node has none). Read and Write outside the workers (backfill, the API)
// use the gocql session in every mode.
//
// mode=gocql sends every operation through gocql's session (token-aware, numConns
// connections per host, shared by all workers). mode=auto, the default, picks direct
// when the cluster has a single node (system.peers is empty) and useBatchWrites is not in
// use, and gocql otherwise, where token-aware routing matters more than client CPU.
// docs/performance.md ("Cassandra against latte") has the measurements.
//
// # Prepared statements
//
// gocql prepares every statement with bind markers on first use per connection and caches
// it (the driver uses only three statement texts), so steady-state ops send only the
// statement id and values, and token-aware routing gets the partition key from the
// prepared metadata.
//
// # Write coalescing
//
// (mode=gocql.) gocql by default holds each request frame up to 200µs to send several in
// one syscall. That delay lands in every measured latency, most visibly at low rates, so
// this driver turns it off (writeCoalesceWait 0). Set writeCoalesceWait=200us to trade
// that latency for fewer syscalls when the client machine's CPU is the bottleneck.
//
// # Routing and consistency
//
// With mode=gocql requests are token-aware: they go to a replica of the key. With localDC
// set, replicas and fall-back hosts are chosen in that data center only (DC-aware round
// robin), which is what LOCAL_ONE and LOCAL_QUORUM expect. readConsistencyLevel and writeConsistencyLevel
// change live (Reconfigure) without reconnecting.
//
// # Errors
//
//	Unavailable exception, no hosts, connection closed/refused   unavailable
//	read/write timeout, no response in timeout, ctx deadline     timeout
//	Overloaded, no free stream on the connection                 throttled
//	syntax, invalid, unauthorized, bad credentials, config       rejected
//
// mode=direct maps the ERROR codes of the protocol the same way (Unavailable and
// IsBootstrapping unavailable; ReadTimeout and WriteTimeout timeout; Overloaded
// throttled; SyntaxError, Invalid, Unauthorized, AuthenticationError, ConfigError and
// AlreadyExists rejected; anything else other), and a broken or refused connection is
// unavailable.
//
// # ScyllaDB
//
// Works unchanged (same protocol, schema and options); point hosts at the Scylla nodes,
// port 9042. gocql's token-aware routing reaches the right node but not the right shard
// (that needs ScyllaDB's driver fork), so give numConns at least the shard count per node
// to spread connections over every shard.
//
// # YugabyteDB YCQL
//
// YCQL listens on 9042 and accepts this schema, WRITETIME and single-partition UNLOGGED
// batches. YugabyteDB replicates each tablet with its own replication factor (Raft), so
// replicationClass and replicationFactor only shape the keyspace DDL, and writes are
// strongly consistent at any level; consult YugabyteDB's docs for what ONE means for
// follower reads before comparing its read latencies with Cassandra's.
//
// Neither is available on the test machines; both are untested here.
package cassandra
