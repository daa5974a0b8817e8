// Package gremlin is the ndbench driver for JanusGraph and any other Apache TinkerPop
// Gremlin Server (TinkerGraph or any graph it serves). It speaks Gremlin Server's
// WebSocket protocol itself, submitting Gremlin scripts with bindings, so the server needs
// a gremlin-groovy script engine. serializer picks the message format, which the server
// must list among its serializers: graphbinary (the default; GraphBinary 1.0,
// GraphBinaryMessageSerializerV1, in TinkerPop 3.5+ and JanusGraph 0.6+ configurations)
// or graphson3 (GraphSON 3.0 JSON, GraphSONMessageSerializerV3, for servers configured
// without GraphBinary, as JanusGraph's were before 0.6). Both carry the same requests and
// pass the same conformance checks; GraphBinary is the more compact.
//
// # Data model
//
// A key is a vertex with label vertexLabel whose keyProperty holds the key; the value is
// its valueProperty, as base64 text (so every backend stores it as a plain string and
// every byte value comes back exactly; the text is 4/3 of the value's size). The defaults
// are the names of NDBench's JanusGraph plugin (label level1, properties prop_customId and
// metadata). A read is
//
//	g.V().has(l, kp, k).limit(1).values(vp)
//
// and no vertex is a miss (driver.ErrNotFound). Label, property names, key and value are
// bindings, never spliced into the script, so the server compiles each script once.
//
// # Upserts
//
// With upsert=true (the default) a write updates the key's vertex or creates it, so a key
// keeps one vertex:
//
//	g.V().has(l, kp, k).fold().coalesce(unfold(), addV(l).property(kp, k)).property(single, vp, v)
//
// Two clients creating the same new key at the same instant can still both add a vertex
// (nothing in Gremlin locks a key that does not exist yet); later upserts set the value on
// every vertex of the key, so reads stay correct. On JanusGraph a unique composite index on
// the key property with ConsistencyModifier.LOCK makes one vertex per key strict (at the
// cost of locks). With upsert=false every write adds a vertex, as NDBench's plugin did (a
// benchmark of inserts, and the graph grows with every write); each such vertex also gets
// the property ndbenchWrittenAt (the writing client's clock, Unix nanoseconds), and a read
// returns the value of the key's vertex with the latest one, so reads still return the
// latest write as long as the clients' clocks agree. upsert is live: it switches while the
// load runs.
//
// The backfill writes in batches (driver.BulkWriter): one request runs the same script in a
// loop over the batch's keys and values (bound as lists), which on a transactional graph
// such as JanusGraph is also one transaction per batch; a key given twice in a batch ends
// with its last value.
//
// # Connections and deadlines
//
// poolSize WebSockets are opened lazily, spread over addrs, and each carries many requests
// at once, matched to replies by request id. An operation returns when its reply arrives
// or when its context ends (the op's deadline, bounded by the timeout option), whichever
// comes first; a reply that comes later is read and dropped. The timeout is also sent as
// the request's evaluationTimeout, so the server abandons the work too. A connection whose
// socket fails is closed, every request waiting on it fails (unavailable), and the next
// request dials again. There are no keep-alive pings: a connection to a server that stopped
// answering without closing it stays open and its requests time out one by one.
//
// Gremlin Server does not reassemble a request split over WebSocket frames, so each request
// is sent as one frame, built in a buffer of maxMessageSize (2 MiB: values up to about 1.5 MiB)
// that a connection borrows while it writes; a larger request is rejected before it is
// sent. The server's own limit is maxContentLength in its YAML file (JanusGraph's
// gremlin-server.yaml has shipped with 65536 bytes, enough for values of about 48 KiB):
// raise both for larger values.
//
// The official Go client, gremlin-go 3.7, was not used: its calls take no context, so an
// operation could not end at its deadline, and (reading its source) a connection's state
// is written by its read loop without the lock the pool reads it under, a data race once
// a connection dies.
//
// # Authentication and TLS
//
// With a username the driver answers the server's authentication challenge with SASL PLAIN
// (Gremlin Server's SimpleAuthenticator, JanusGraph's JanusGraphSimpleAuthenticator); the
// password is secret and never shown in errors, logs or reports. tls=true connects with
// wss:// and the usual tls* options.
//
// # Errors
//
// Gremlin Server's status codes and the connection's failures are classified:
//
//	429 too many requests (work queue full)              throttled
//	597 with a transaction conflict or locking exception throttled
//	598 server timeout, the op's deadline                timeout
//	596 temporary failure, refused or broken connections unavailable
//	597 script errors, 401/407 authentication, 498/499   rejected
//	500 other server errors                              other
//
// Conflicts count as throttled, not failures of the driver: they are the store refusing
// work because of contention on hot keys (few keys, many writers), as serialization
// failures are in SQL stores. The driver never retries.
//
// # JanusGraph
//
// Run JanusGraph Server (bin/janusgraph-server.sh, the Gremlin Server of the JanusGraph
// distribution, port 8182) over its CQL backend on Cassandra or ScyllaDB
// (storage.backend=cql, storage.hostname, storage.cql.keyspace in the graph's properties
// file) and point addrs at it. Without an index on the key property every g.V().has(...)
// scans all vertices, so create one before loading, once, from the Gremlin Console (the
// index NDBench's plugin created):
//
//	mgmt = graph.openManagement()
//	key = mgmt.makePropertyKey('prop_customId').dataType(String.class).make()
//	mgmt.makePropertyKey('metadata').dataType(String.class).make()
//	mgmt.buildIndex('idx_customId', Vertex.class).addKey(key).buildCompositeIndex()
//	mgmt.commit()
//
// Add .unique() before buildCompositeIndex() (and mgmt.setConsistency on the index, LOCK)
// for strict one-vertex-per-key upserts. Large values need maxContentLength raised in
// janusgraph-server.yaml (see above); the cache.db-cache setting decides whether reads
// measure JanusGraph's cache or the backend (NDBench's plugin turned it off).
//
// The test server (internal/testserver) is TinkerPop's Gremlin Server with an in-memory
// TinkerGraph, an index on prop_customId and one script thread (gremlinPool: 1), because
// TinkerGraph is not safe for concurrent writes.
package gremlin
