// Package cassandra is the ndbench driver for Apache Cassandra and the stores that speak
// CQL (ScyllaDB, YugabyteDB YCQL, Amazon Keyspaces, Azure Cosmos DB for Cassandra). It uses
// github.com/apache/cassandra-gocql-driver/v2 and mirrors NDBench's CQL plugins
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
// At Init the driver checks the table's columns in system_schema: an existing table made by
// NDBench (text value columns) or with fewer value columns than colsPerRow is reported with
// the fix (another table name, or drop it), rather than failing every op later.
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
// gocql by default holds each request frame up to 200µs to send several in one syscall.
// That delay lands in every measured latency, most visibly at low rates, so this driver
// turns it off (writeCoalesceWait 0). Set writeCoalesceWait=200us to trade that latency for
// fewer syscalls when the client machine's CPU is the bottleneck.
//
// # Routing and consistency
//
// Requests are token-aware: they go to a replica of the key. With localDC set, replicas
// and fall-back hosts are chosen in that data center only (DC-aware round robin), which is
// what LOCAL_ONE and LOCAL_QUORUM expect. readConsistencyLevel and writeConsistencyLevel
// change live (Reconfigure) without reconnecting.
//
// # Errors
//
//	Unavailable exception, no hosts, connection closed/refused   unavailable
//	read/write timeout, no response in timeout, ctx deadline     timeout
//	Overloaded, no free stream on the connection                 throttled
//	syntax, invalid, unauthorized, bad credentials, config       rejected
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
