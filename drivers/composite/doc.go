// Package composite is the ndbench driver that composes bundled drivers, to benchmark a
// store together with what sits beside it: a cache in front of a database, or a primary
// and a store derived from it (a replica, a CDC-fed index, another region). Its children
// are driver references, each configured under its own drivers.<reference>.* keys like
// any driver:
//
//	driver.name: composite
//	drivers.composite.mode: cache-aside
//	drivers.composite.cache: memcached
//	drivers.composite.database: postgres
//	drivers.memcached.servers: 10.0.0.5:11211
//	drivers.postgres.dsn: postgres://bench@10.0.0.6/bench
//
// A reference is a driver's name, or name@instance when one driver serves twice with
// different options (two Redis servers: primary redis, derived redis@replica, configured
// under drivers.redis.* and drivers.redis@replica.*). Every child's options are validated
// with the rest of the configuration, before anything connects. They are taken at Init:
// a change to a child's option is pending until the next Init, even one the child alone
// would take live.
//
// # Modes
//
// cache-aside (default): a read goes to the cache; on a miss (or a cache error) it reads
// the database and, when found, fills the cache. A write goes to the database, then
// writePolicy invalidate deletes the key from the cache (the cache needs a delete:
// memcached and redis have one) or update writes the new value to it. A failed fill or
// invalidation does not fail the operation (the database has the data) but is counted,
// and validation then reports the stale reads it causes.
//
// write-through: a write goes to the database, then to the cache, and fails if either
// does; reads as in cache-aside. This is DAX's behaviour, for stores without a native
// write-through.
//
// read-through: reads as in cache-aside; writes go to the database only (write-around),
// so the cache serves what it loaded until the entry expires or is evicted: set the
// cache's ttl, and expect validation to count stale reads.
//
// derived: a write goes to primary; reads go to readFrom (primary, or derived). A
// fraction lagSample of the writes is then followed on the derived store: it is read
// every lagPollInterval until it returns the written value, and the time from the
// primary's acknowledgement to that read is the visibility lag, recorded in series
// visibility (an HDR histogram like an op class's: per-second p50 to p99.9 in the UI,
// Prometheus, reports and HDR logs). A value not visible within lagTimeout counts as a
// timeout failure of series visibility. A sample whose key is written again before it is
// seen is dropped (the first value may never become visible) and counted. At most
// lagMaxInFlight samples are followed at once; beyond that a sample is skipped and
// counted, so a derived store that falls far behind costs bounded memory and
// goroutines. This is the measurement Dynomite's team made by hand for cross-region
// replication ("write 1k keys, poll the other region"), for any two drivers.
//
// # What it reports
//
// Series child.<role> (child.cache, child.database, child.primary, child.derived) hold
// the latency of every call to that child and its failures by class. DriverStats (also
// ndbench_driver_stat in Prometheus): cache.hits, cache.misses, cache.errors (reads that
// fell back to the database because the cache failed), fills, fill_errors,
// invalidations, invalidation_errors, hit_ratio_permille; for derived: lag.sampled,
// lag.visible, lag.timed_out, lag.superseded, lag.skipped; and every child's own
// counters, prefixed with its role.
//
// # Errors
//
// A child's error keeps its class (a throttled database is throttled). A miss is a miss
// of the database (cache-aside) or of the store read.
package composite
