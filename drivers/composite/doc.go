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
// under drivers.redis.* and drivers.redis@replica.*). An instance inherits nothing from
// the driver's own keys: without drivers.redis@replica.addrs both children talk to the
// default address, and the lag measured is the primary's against itself. Every child's
// options are validated with the rest of the configuration, before anything connects.
// They are taken at Init: a change to a child's option is pending until the next Init,
// even one the child alone would take live. Children are configured through the
// configuration (file, --set, PATCH /api/v1/config), or with the composition's options
// in a driver init request as REF.OPTION ({"driver": "composite", "options": {"mode":
// "derived", "redis@replica.addrs": "10.0.0.9:6379"}}), which writes them under
// drivers.REF.OPTION; the UI's driver form shows the composition's own options only.
//
// # Modes
//
// cache-aside (default): a read goes to the cache; on a miss (or a cache error) it reads
// the database and, when found, fills the cache. A write goes to the database, then
// writePolicy invalidate deletes the key from the cache (the cache needs a delete:
// memcached, redis and memory have one) or update writes the new value to it. A failed
// fill, invalidation or update does not fail the operation (the database has the data)
// but is counted, and validation then reports the stale reads it causes. A backfill
// writes through the composition too: with invalidate it leaves the cache cold.
//
// Validation and caches: a read older than workload.opTimeout is not judged stale (the
// write may still have been in flight), so staleness shorter than that goes uncounted;
// and values a cache kept from an earlier run without validation read as corrupt. Flush
// the cache (or give it a ttl) before a validated run.
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
// seen is dropped (the first value may never become visible) and counted: the slowest
// samples are the likeliest to be dropped, so keep numKeys well above the write rate
// times the lag expected, or the lag reads low. A sample that times out counts as a
// failure of series visibility, not in its percentiles. While the derived store is stuck
// nothing completes: DriverStats lag.in_flight and lag.oldest_pending_ms (also in
// Prometheus, ndbench_driver_stat) show it as it happens. At most
// lagMaxInFlight samples are followed at once; beyond that a sample is skipped and
// counted, so a derived store that falls far behind costs bounded memory and
// goroutines. This is the measurement Dynomite's team made by hand for cross-region
// replication ("write 1k keys, poll the other region"), for any two drivers.
//
// # What it reports
//
// Series child.<role> (child.cache, child.database, child.primary, child.derived) hold
// the latency of every call the composition's operations make to that child, and its
// failures by class (the lag polls are not in child.derived). These series have no
// schedule, so their start lag is 0 and their service time equals their response time.
// DriverStats (also ndbench_driver_stat in Prometheus): cache.hits, cache.misses,
// cache.errors (reads that fell back to the database because the cache failed), fills,
// fill_errors,
// invalidations, invalidation_errors, updates, update_errors, hit_ratio_permille; for
// derived: lag.sampled, lag.visible, lag.timed_out, lag.superseded, lag.skipped,
// lag.in_flight, lag.oldest_pending_ms; and every child's own counters, prefixed with its
// role. An op class cannot be named after these series.
//
// # Errors
//
// A child's error keeps its class (a throttled database is throttled). A miss is a miss
// of the database (cache-aside) or of the store read.
package composite
