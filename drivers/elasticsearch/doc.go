// Package elasticsearch is the ndbench driver for Elasticsearch 8 and OpenSearch 2. One
// driver serves both: it builds every REST request itself and hands it to the flavor's
// client, Elasticsearch's github.com/elastic/elastic-transport-go/v8 (flavor=elasticsearch;
// the driver refuses a server that does not say it is Elasticsearch) or
// github.com/opensearch-project/opensearch-go/v4 (flavor=opensearch), which pick the node,
// add authentication and keep the connections.
// Neither client retries: a benchmark counts what the store answered.
//
// # Documents
//
// A key is a document id; its value is the document's value field, a binary field
// (base64 in JSON), so every byte comes back as written and data validation works:
//
//	document=value   {"key": KEY, "value": BASE64}
//	document=words   {"key": KEY, "value": BASE64, "text": "TITLE w2 w3 ..."}
//
// document=words adds NDBench's random-words text (words words): random letters, or with
// randomizeStrings=false (NDBench's isRandomizeStrings) fake dictionary words such as
// dog-ab, which index like natural language. The first word is the key's title word, the
// same for a key in every process, so a match search for a written key finds it.
//
// With createIndex (the default) Init creates the index with shards, replicas,
// refreshInterval and a strict mapping (key: keyword, value: binary, text: text): a
// document with another shape is a mapping error, rejected. An existing index is used as
// it is.
//
// # Operations
//
//	read     GET INDEX/_doc/KEY (the value field only); a missing document or index is a miss
//	write    PUT INDEX/_doc/KEY, or with bulkWrite a place in a shared _bulk request
//	search   POST INDEX/_search, size 1: searchType=term is a term query on key,
//	         match a match query on text for the key's title word; no hit is a miss
//	delete   DELETE INDEX/_doc/KEY (rolling: _delete_by_query on INDEX-*); a missing
//	         document is no error
//	scan     POST INDEX/_search: a range query key >= START sorted by key, size n, the
//	         hits' value fields returned; no hit is a miss
//
// scan is YCSB workload E's range read: the key field is a keyword, which Lucene orders
// by its bytes, so the documents come in the keys' byte order, the order driver.Scanner
// describes, from a sorted range query that reads n documents' values (the cost of
// fetching n hits, not of n point reads). A search sees what the last refresh made
// visible, so a key written less than refreshInterval ago may be missed; with rolling
// indexes a key with copies in several indexes counts once per copy. delete and scan are
// built-in operations (driver.Deleter, driver.Scanner): ycsb-e runs as it is.
//
// search is a named operation: put it into an op class, e.g.
// workload.readMix=read:8,search:2 or workload.ops.search.mix=search. What it returns is
// not validated (only read returns a key's value).
//
// # Bulk indexing
//
// Backfill writes through WriteBulk: one _bulk request per bulkSize keys. With bulkWrite
// (NDBench's isBulkWrite) the write op goes through a bulk indexer shared by all workers:
// bulkConcurrency senders each gather up to bulkSize (bulkWriteBatchSize) documents, waiting
// at most bulkFlushInterval for a batch to fill, and each write returns its own document's
// result, so its latency includes the wait for the batch. A write whose operation timed out
// before its batch left is not sent; one already sent may still be indexed.
//
// _bulk answers per document, and the driver counts per document: a write op fails or
// succeeds with its document, and WriteBulk returns a driver.BulkError holding each key's
// outcome, so backfill counts the documents written as written and retries only the
// refused ones.
//
// # Rolling indexes
//
// indexRollsPerDay=N (NDBench's) writes to INDEX-YYYY-MM-DD-NNNN, a new index N times per
// UTC day (N divides 1440: 24 is hourly). createIndex then creates an index template for
// INDEX-* instead of an index, so each rolled index gets the settings and mapping on its
// first write. Reads and searches look at INDEX-*: a read is an ids query sorted by index
// name, which returns the copy in the newest index.
//
// # Errors
//
//	429, es_rejected_execution_exception, circuit_breaking_exception   throttled
//	5xx, refused or reset connections                                  unavailable
//	504, *timeout_exception, the op's deadline, the timeout option     timeout
//	other 4xx: mapping and parsing errors, bad requests, auth          rejected
//
// A full write queue on the server (thread_pool.write.queue_size) answers 429 with
// es_rejected_execution_exception (opensearch_rejected_execution_exception), a tripped
// circuit breaker (network.breaker.inflight_requests.limit, indices.breaker.*) 429 with
// circuit_breaking_exception: that is the store shedding load, and counts as throttled.
// In a _bulk answer each document has its own status, classified the same way.
//
// # Authentication and TLS
//
// username and password (basic authentication) or apiKey (Elasticsearch only: sent as
// Authorization: ApiKey) authenticate; password and apiKey are secrets, never shown in
// logs, errors, API output or reports. tls (NDBench's isHttps) makes addresses without a
// scheme https, with the shared TLS options.
//
// # NDBench properties
//
// NDBench's ES plugin properties (ndbench.config.es.*) are accepted as names of these
// options: hostName (addrs), restClientPort and httpPort (port), isHttps (tls), cluster,
// indexName (index), indexRollsPerDay, isBulkWrite (bulkWrite), bulkWriteBatchSize
// (bulkSize), isRandomizeStrings (randomizeStrings). Its HTTP client timeouts
// (connectTimeoutSeconds, socketTimeoutSeconds, ...) are in seconds and are not mapped:
// set connectTimeout and timeout. NDBench's ES write auto-tune (autoTuneEnabled,
// autoTuneRampPeriodMillisecs, autoTuneIncrementIntervalMillisecs,
// autoTuneFinalWriteRate, autoTuneWriteFailureRatioThreshold) is the core auto-tune of
// ndbench: the config layer maps those properties onto `ndbench autotune`
// (internal/config/ndbench.go, docs/autotune.md): the final write rate is the highest rate
// tried (--max-rate), the increment interval the least window (--window), and the failure
// ratio threshold the write class's error bound (--sla write.errors).
package elasticsearch
