// Package ndbenchapi serves NDBench's REST API under /REST/ndbench/, so the scripts and
// CI pipelines written against Netflix NDBench keep working against ndbench.
//
// # NDBench-compatible routes
//
// Every route answers JSON. Actions answer NDBench's body {"isSuccess": bool, "message":
// string}. NDBench answers every failure with HTTP 500; ndbench keeps the body and uses
// the status to say whose fault it is: 400 for a bad parameter, property or client name,
// 409 when the instance is in the wrong state (no driver yet, another driver connected, a
// backfill already running or stopped), 501 for NDBench routes ndbench does not implement,
// 500 for a failure of the store or driver. Scripts that test isSuccess work unchanged.
// All driver routes take GET (as NDBench declares them) or POST. Because GET changes state
// here, every route that does (all but the stats, status, list and readSingle routes)
// refuses requests sent by a page on another site with 403 whatever the method (see
// package crossorigin); scripts, curl and same-origin pages are served.
//
//	driver/init/{client}         connect a driver: an ndbench driver name (memory, redis, ...)
//	                             or an NDBench client name: CassJavaDriverGeneric,
//	                             CassJavaDriverPlugin, CassJavaDriverGeneric4, CassAstyanaxPlugin,
//	                             ElassandraCassJavaDriverPlugin -> cassandra; DynoJedis,
//	                             DynoJedisPlugin, DynoGetSetPipeline, LocalDynomiteProxyPlugin ->
//	                             redis; EVCacheTest -> memcached; CockroachDBSimplePlugin ->
//	                             postgres; InMemoryTest -> memory; ES_REST -> elasticsearch;
//	                             DynamoDBKeyValue, DynamoDBv2KeyValue, DaxKeyValue -> dynamodb
//	                             (when that driver is in the build). Initializing the driver
//	                             that is connected succeeds; another one is a 409.
//	driver/shutdownclient        stop everything and disconnect the driver
//	driver/start                 start reads and writes   } query parameters: loadPattern,
//	driver/startReads            start reads              } windowSize, durationInSec,
//	driver/startWrites           start writes             } bulkSize (see below)
//	driver/stop, stopReads, stopWrites     stop; stopping what is not running succeeds
//	driver/startDataFill         backfill every key and answer when done ("data fill done!
//	                             1000 of 1000 keys written"); 409 if stopped, 500 if keys failed
//	driver/startDataFillAsync    start the backfill in the background
//	driver/stopDataFill, shutdownDataFill  stop a running backfill
//	driver/readSingle/{key}      read one key: message is the value, null for a missing key
//	driver/writeSingle/{key}     write one generated value (workload.dataSize bytes): "OK"
//	driver/getReadStatus, getWriteStatus   "Read process running" / "No Read process is running"
//	driver/stats                 the statistics object below
//	driver/getserverstatus       {"ClientDrivers": [...], "LoadPatterns": ["RANDOM", ...],
//	                             "RunningDriver": "memory" or "NA", "RunningReadLoadPattern",
//	                             "RunningWriteLoadPattern": "ZipfianStringKeyGenerator" or "NA",
//	                             "ConnectionInfo": "k=v, ..." or "NA", "IsReadsRunning",
//	                             "IsWritesRunning", "IsBackfillRunning", "Stats": {...},
//	                             "DriverConfig": {...config/list...}}
//	driver/getdrivers            ["CassJavaDriverGeneric", ..., "memory", ...]: every name
//	                             driver/init accepts in this build
//	config/list                  {"numReaders": 4, "readRateLimit": 100, "readEnabled": true,
//	                             "pattern": "uniform", "windowDuration": "1m0s", ...}: every
//	                             workload option, under its NDBench name where NDBench has the
//	                             setting, typed as JSON numbers, booleans and strings
//	config/tunable/list          the same, only the options that change a running load
//	config/set, config/tunable/set   POST a JSON object {"numReaders": 8, "readRateLimit":
//	                             500} (NDBench's form), or name=value form or query parameters
//	cluster/list                 ["Cluster1", "localhost"]: the NDBench cluster names, sorted
//	                             (NDBenchClusterResource; GET only, as there)
//	cluster/{appname}/list       ["node1:8080", "node2:8080"]: that cluster's nodes as
//	                             host:port, the addresses NDBench's UI then calls; 404 with
//	                             the known names for a cluster that does not exist
//
// The cluster routes answer from the node's membership discovery (NewHandler's
// Options.Discovery, see package discovery): with a clusters.json file (file:), its
// clusters as NDBench lists them; with any other source, one cluster, DefaultClusterName
// ("ndbench") unless Options.ClusterName says otherwise, holding every member. Without
// discovery they answer this node alone, as NDBench's LocalClusterDiscovery does, at the
// address the client reached it at. A failed discovery is NDBench's 500 ("get
// cluster/list failed! ...").
//
// driver/initfromscript (Groovy), startConditionalDataFill, startVerifyDataFill and
// runworkflow answer 501 with the reason and the ndbench way
// (e.g. backfillVerify=true then startDataFill).
//
// # Start parameters
//
// loadPattern is random, zipfian, sliding_window or sliding_window_flip (any case, as
// NDBench's UI sends SLIDING_WINDOW), or one of ndbench's other patterns; it sets
// workload.pattern for reads and writes both (NDBench keeps one pattern per op type). A
// start without loadPattern keeps the configured pattern, where NDBench falls back to
// random. windowSize sets workload.windowSize. durationInSec sets workload.windowDuration,
// the time of one pass of the window over the keyspace: for sliding_window that is
// NDBench's duration; for sliding_window_flip NDBench's duration is the time spent in each
// window, so ndbench multiplies it by the number of windows (numKeys / windowSize). Unlike
// NDBench, a sliding window does not stop the load at the end of the pass: it wraps around.
// windowSize and durationInSec are ignored for the other patterns, as in NDBench; -1
// (NDBench's default) means unset. bulkSize other than 1 is accepted and reported as
// unsupported in the message.
//
// # Configuration names
//
// config/set accepts NDBench's property names (numReaders, numWriters, readRateLimit,
// writeRateLimit, readEnabled, writeEnabled, numKeys, numValues, dataSize,
// useVariableDataSize, dataSizeLowerBound, dataSizeUpperBound, numBackfill, zipfExponent,
// validateChecksum), every ndbench workload option (windowSize, opTimeout, hotKeys, ...),
// full keys (workload.readRate, driver.name, drivers.redis.addr) and NDBench plugin
// properties (cass.host, as ndbench.config.cass.host) for driver options. A change is
// validated as a whole and applied at once, live, to a running load; an invalid value
// applies nothing and the message names the key, the value and what is allowed. NDBench
// properties ndbench has no equivalent for (preloadKeys, autoTune*, statsUpdateFreqSeconds,
// ...) are accepted and the message says why they do nothing. Driver options that need a
// reconnection are reported as applied at the next driver/init. One request sets at most
// 1000 properties (config.MaxChangeKeys; 400 beyond). The value of a misspelt property is
// never repeated in the message (it may be a password).
//
// # Statistics
//
// driver/stats returns NDBench's monitor fields: readSuccess, readFailure, writeSuccess,
// writeFailure, cacheHits, cacheMiss, cacheHitRatioInt, readRPS, writeRPS, readLatAvg,
// readLatP50, readLatP95, readLatP99, readLatP995, readLatP999, the same six writeLat*
// fields, and documentation. As in NDBench, readSuccess counts hits and misses, RPS counts
// successes and failures, and latencies are whole microseconds. Counters and latencies
// cover the span since the instance started (or its statistics were reset); readRPS and
// writeRPS cover the last one-second interval (NDBench: a one-minute moving average).
// Latency is response time, measured from each operation's intended start, so time spent
// queueing behind a slow store counts (NDBench measures service time only; the two are
// equal while the store keeps up). Every field is filled.
package ndbenchapi
