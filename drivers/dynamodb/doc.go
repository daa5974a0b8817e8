// Package dynamodb is the ndbench driver for Amazon DynamoDB and DynamoDB Local, over
// aws-sdk-go-v2, with a live switch that sends operations to a DAX cluster instead (the
// NDBench paper's single if). A read is a GetItem, a write a PutItem; backfill and the
// bulk calls use BatchGetItem and BatchWriteItem; operation transactWrite is NDBench's
// Transactions plugin.
//
// # Data model
//
// One table (table, default ndbench-table as in NDBench) with a string partition key
// (keyAttribute, default id) and the value in binary attribute v. Values are bytes
// exactly as the engine made them, so data validation works. With compression=gzip or
// snappy the value is compressed and attribute z names the codec; a read decodes by z,
// so items written with any setting read back alike. An item holds at most 400 KB, key
// and attribute names included: larger values are rejected by DynamoDB (class rejected),
// unless compression brings them under.
//
// With createTable (the default) a missing table is created, on demand
// (billingMode=onDemand, PAY_PER_REQUEST) or with readCapacity and writeCapacity units
// (billingMode=provisioned), and Init waits until it is active. An existing table is used
// as it is. Without createTable a missing table fails Init, naming it.
//
// # Live options
//
// consistentRead and dax take effect for the next operation; operations in flight finish
// where they started. A change of readCapacity or writeCapacity calls UpdateTable on a
// provisioned table (on an on-demand table there is nothing to update and nothing is
// called): this is the NDBench paper's auto-scaling experiment, driven by ndbench's
// configuration API while the load runs. DynamoDB refuses an update while the table is
// still applying the previous one (ResourceInUseException, reported as rejected) and
// limits decreases per day; ConnectionInfo shows the capacity last set and DriverStats
// counts the updates (capacityUpdates).
//
// # DAX
//
// With dax=true data operations (read, write, bulk, transactWrite) go to a DAX client for
// daxEndpoint; table creation and UpdateTable always go to DynamoDB. Switching dax is one
// atomic flag read by every operation, so the load never stops. The DAX client is built
// on first use and kept until Close.
//
// ndbench links no DAX client: the module github.com/aws/aws-dax-go-v2 could not be
// fetched through the Go module proxy when this driver was written (the proxy answered 403
// for every version), and a copy vendored into this repository could not have been checked
// against the published module. Its client, *dax.Dax, has the methods of this package's
// Client interface with the same signatures, so a build that can fetch the module links it
// with one init function:
//
//	import (
//		"github.com/aws/aws-dax-go-v2/dax"
//		"github.com/ndbench/ndbench/drivers/dynamodb"
//	)
//
//	func init() {
//		dynamodb.RegisterDAXClient(func(_ context.Context, cfg aws.Config, endpoint string) (dynamodb.Client, error) {
//			return dax.NewFromConfig(cfg, endpoint)
//		})
//	}
//
// Without it, dax=true is refused with an error naming the option. This was checked once
// outside the repository against aws-dax-go-v2 v1.0.3 (from a source snapshot): *dax.Dax
// satisfies Client, dax.NewFromConfig for an unreachable cluster succeeds (discovery runs in
// the background), and its operations then fail with "no routes found", which the driver
// classifies unavailable.
//
// What the tests cover: the switch itself, under load, between two DynamoDB Local servers
// (the tests register a constructor that returns a plain DynamoDB client for daxEndpoint):
// no operation fails across the switches and each phase's writes land on its endpoint.
// The DAX constructor's use and failure, and the classification of DAX's error codes, are
// unit-tested with a stand-in client. What is not tested: aws-dax-go-v2 itself, a real
// DAX cluster (there is no DAX emulator), DAX's item cache (reads after writes through
// DAX are write-through, but a read of an item written directly to DynamoDB may be stale
// for the cache's TTL) and DAX's consumed-capacity reporting.
//
// # Delete and scan
//
// delete is a DeleteItem (a missing item is no error). scan, YCSB workload E's range
// read, is one Scan request with ExclusiveStartKey set to the start key and Limit n, at
// the consistentRead setting: it reads the n items that follow the start key in the
// table's own order, which is the order of the partition key's hash, not the keys' byte
// order (the driver states it: driver.ScanOrderer, order "store"), and not the start key
// itself. That is the range read a table keyed by a partition key alone has, costed as
// DynamoDB costs it: the items evaluated, rounded up per 4 KB, in read capacity
// (DriverStats' consumedRCUMilli.scan), and a start key near the end of the table reads
// few or none (a miss). A byte-ordered range would need a Query on a sort key, so a table
// whose items share a partition key: one hot partition for every operation, a layout no
// one runs a key-value workload on, which is why the driver does not make one.
//
// # Batches and transactions
//
// ReadBulk sends BatchGetItem requests of up to 100 distinct keys; WriteBulk sends
// BatchWriteItem requests of up to 25 items, a key given twice keeping its last value.
// Keys or items DynamoDB returns unprocessed (throttling, the 16 MB answer limit) are
// sent again after an exponential backoff (10 ms doubling up to 1 s) until all are done or
// the operation's context ends; the latter fails the call as throttled. DriverStats counts
// them (unprocessedRetries.readBulk, unprocessedRetries.writeBulk).
//
// transactWrite (a write operation) puts the key and value in the main table and the key
// in each of childTables child tables (childTablePrefix0, 1, ...; default TABLE-child0, ...)
// with one TransactWriteItems: all or nothing, at twice the write units of plain puts.
// createTable creates the child tables too. A transaction cancelled by throttling or by a
// conflicting transaction is throttled; one cancelled for a failed condition or a missing
// table is rejected.
//
// # Consumed capacity
//
// Every request asks for ReturnConsumedCapacity TOTAL. DriverStats accumulates it per
// operation in milli-units (capacity is fractional: an eventually consistent read of up
// to 4 KB is 0.5 RCU): consumedRCUMilli.read, consumedWCUMilli.write,
// consumedRCUMilli.readBulk, consumedWCUMilli.writeBulk, consumedWCUMilli.transactWrite.
// It also counts operations by the target they went to (requests.dynamodb, requests.dax;
// a bulk call counts once).
//
// # Errors
//
// Errors are classified by the service's error code, then by HTTP status:
//
//	ProvisionedThroughputExceeded, RequestLimitExceeded,
//	ThrottlingException, TransactionConflict, HTTP 429      throttled
//	InternalServerError, ServiceUnavailable, HTTP 5xx,
//	no connection or a broken one, DAX "no routes found"     unavailable
//	the op's deadline, DAX ResponseTimeout                   timeout
//	ValidationException, ResourceNotFound, ConditionalCheck,
//	access and signature errors, other HTTP 4xx              rejected
//
// Retries are off by default (maxRetries=0, where the SDK would make 3 attempts), so every
// throttled request reaches the counts instead of showing up as latency; maxRetries turns
// on the SDK's standard retryer, whose backoff the operation's deadline bounds. DynamoDB
// Local does not enforce provisioned throughput (80 writes of 4 WCU at once on a 1 WCU
// table all succeed), so throttling is classified from the SDK's typed errors in unit
// tests only. Every call passes the operation's context to the
// SDK, which ends the HTTP request at its deadline; the conformance suite checks this on
// a DynamoDB Local frozen with SIGSTOP.
//
// The SDK checks a CRC32 of every DynamoDB answer and, when an answer has no x-amz-crc32
// header (DynamoDB Local's and other emulators' error answers), logs a spurious warning
// for each (aws/aws-sdk-go-v2#3545). The driver drops that one warning; the check stays on.
//
// # Credentials and secrets
//
// Without accessKey and secretKey the SDK's default chain finds credentials
// (environment, shared files and profiles, SSO, web identity, container and instance
// roles). accessKey, secretKey and sessionToken are secret options: never shown in
// listings, reports or ConnectionInfo, and scrubbed from error text in case a service
// message quotes one. AWS_CA_BUNDLE is honoured.
//
// # Compared with NDBench
//
// NDBench's property names are accepted as aliases: tableName, attributeName,
// readCapacityUnits, writeCapacityUnits, consistentRead, region, endpoint,
// maxConnections, maxRetries, mainTableColsPerRow, childTableNamePrefix, daxEndpoint.
// Differences: NDBench's compressing is HTTP gzip of the SDK's traffic, not value
// compression, and has no equivalent here; maxRequestTimeout (milliseconds, -1 for none)
// is the timeout option (a duration); maxRetries defaults to 0, not 10;
// consistentRead defaults to false (NDBench's plugins disagree: false in DynamoDBConfigs,
// true in DynamoDBConfigurationBase); Application Auto Scaling (autoscaling,
// targetReadUtilization, ...) and the CloudWatch high-resolution metrics are not
// implemented: capacity changes are made through the live options instead, and consumed
// capacity is in DriverStats. NDBench's transaction writes random values as the child
// tables' keys; here the child items carry the operation's key, so a transaction is
// idempotent and checkable.
//
// # Testing
//
// The integration tests run DynamoDB Local 2.6.1 (scripts/install-dynamodb-local.sh,
// called by scripts/install-test-deps.sh) on 127.0.0.1, started by
// internal/testserver.DynamoDBLocal.
package dynamodb
