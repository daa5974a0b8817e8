package dynamodb

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"

	"github.com/ndbench/ndbench/driver"
)

// Attribute names of an item besides the key: the value, and the codec it was written
// with (absent for none), so a read decodes whatever a writer with other options wrote.
const (
	attrValue = "v"
	attrCodec = "z"
)

// DynamoDB's batch limits.
const (
	batchGetMax   = 100
	batchWriteMax = 25
)

// target is where an operation went.
type target uint8

const (
	targetDynamoDB target = iota
	targetDAX
)

// opStat numbers the operations whose consumed capacity is counted.
type opStat uint8

const (
	statRead opStat = iota
	statWrite
	statReadBulk
	statWriteBulk
	statTransactWrite
	statDelete
	statScan
	numOpStats
)

var opStatNames = [numOpStats]string{"read", "write", "readBulk", "writeBulk", opTransactWrite, "delete", "scan"}

// stats are the driver's own counters (DriverStats). Capacity is fractional (0.5 RCU for
// an eventually consistent read of up to 4 KB), so it is kept in milli-units.
type stats struct {
	rcuMilli        [numOpStats]atomic.Int64
	wcuMilli        [numOpStats]atomic.Int64
	requests        [2]atomic.Int64 // by target
	unprocessed     [numOpStats]atomic.Int64
	capacityUpdates atomic.Int64
}

// DriverStats reports consumed capacity per operation in milli-units
// ("consumedRCUMilli.read", "consumedWCUMilli.write", ...), operations by the target
// they were sent to ("requests.dynamodb", "requests.dax"; a bulk call counts once), batch
// items DynamoDB returned unprocessed and that were sent again
// ("unprocessedRetries.writeBulk"), and live capacity updates ("capacityUpdates").
func (d *Driver) DriverStats() map[string]int64 {
	out := map[string]int64{
		"requests.dynamodb": d.stats.requests[targetDynamoDB].Load(),
		"requests.dax":      d.stats.requests[targetDAX].Load(),
		"capacityUpdates":   d.stats.capacityUpdates.Load(),
	}
	for i, n := range opStatNames {
		if v := d.stats.rcuMilli[i].Load(); v != 0 {
			out["consumedRCUMilli."+n] = v
		}
		if v := d.stats.wcuMilli[i].Load(); v != 0 {
			out["consumedWCUMilli."+n] = v
		}
		if v := d.stats.unprocessed[i].Load(); v != 0 {
			out["unprocessedRetries."+n] = v
		}
	}
	return out
}

// consumed adds the capacity an answer reports. Reads count read units, the others
// write units; CapacityUnits is the total of either kind.
func (d *Driver) consumed(op opStat, read bool, ccs ...types.ConsumedCapacity) {
	var total float64
	for _, cc := range ccs {
		switch {
		case read && cc.ReadCapacityUnits != nil:
			total += *cc.ReadCapacityUnits
		case !read && cc.WriteCapacityUnits != nil:
			total += *cc.WriteCapacityUnits
		case cc.CapacityUnits != nil:
			total += *cc.CapacityUnits
		}
	}
	if total == 0 {
		return
	}
	m := int64(math.Round(total * 1000))
	if read {
		d.stats.rcuMilli[op].Add(m)
	} else {
		d.stats.wcuMilli[op].Add(m)
	}
}

// start returns the client for an operation, or an error on a closed driver.
func (d *Driver) start() (Client, error) {
	if d.closed.Load() {
		return nil, driver.Wrap(driver.ClassOther, errClosed)
	}
	c, t := d.client()
	d.stats.requests[t].Add(1)
	return c, nil
}

// Read returns the value of key or driver.ErrNotFound.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	c, err := d.start()
	if err != nil {
		return nil, err
	}
	out, err := c.GetItem(ctx, &ddb.GetItemInput{
		TableName:              aws.String(d.opts.Table),
		Key:                    d.key(key),
		ConsistentRead:         aws.Bool(d.consistent.Load()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return nil, d.fail("read", err)
	}
	if out.ConsumedCapacity != nil {
		d.consumed(statRead, true, *out.ConsumedCapacity)
	}
	if out.Item == nil {
		return nil, driver.ErrNotFound
	}
	v, err := decodeItem(out.Item)
	if err != nil {
		return nil, driver.Wrap(driver.ClassOther, fmt.Errorf("read %q: %w", key, err))
	}
	return v, nil
}

// Write puts value under key, replacing the item.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	c, err := d.start()
	if err != nil {
		return err
	}
	item, err := d.item(key, value)
	if err != nil {
		return err
	}
	out, err := c.PutItem(ctx, &ddb.PutItemInput{
		TableName:              aws.String(d.opts.Table),
		Item:                   item,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return d.fail("write", err)
	}
	if out.ConsumedCapacity != nil {
		d.consumed(statWrite, false, *out.ConsumedCapacity)
	}
	return nil
}

// Delete removes key's item; a missing item is not an error (driver.Deleter).
func (d *Driver) Delete(ctx context.Context, key string) error {
	c, err := d.start()
	if err != nil {
		return err
	}
	out, err := c.DeleteItem(ctx, &ddb.DeleteItemInput{
		TableName:              aws.String(d.opts.Table),
		Key:                    d.key(key),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return d.fail("delete", err)
	}
	if out.ConsumedCapacity != nil {
		d.consumed(statDelete, false, *out.ConsumedCapacity)
	}
	return nil
}

// Scan reads up to n items with their values, in the table's own order, from start: one
// Scan request with ExclusiveStartKey start and Limit n, at the consistentRead setting
// (see the package documentation on its order and cost). It returns how many items came
// back; none is driver.ErrNotFound.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	c, err := d.start()
	if err != nil {
		return 0, err
	}
	out, err := c.Scan(ctx, &ddb.ScanInput{
		TableName:              aws.String(d.opts.Table),
		ExclusiveStartKey:      d.key(start),
		Limit:                  aws.Int32(int32(min(n, math.MaxInt32))),
		ConsistentRead:         aws.Bool(d.consistent.Load()),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return 0, d.fail("scan", err)
	}
	if out.ConsumedCapacity != nil {
		d.consumed(statScan, true, *out.ConsumedCapacity)
	}
	if len(out.Items) == 0 {
		return 0, driver.ErrNotFound
	}
	return len(out.Items), nil
}

// ScanOrder says Scan reads in the table's own order (the partition key's hash), not the
// keys' byte order (driver.ScanOrderer).
func (d *Driver) ScanOrder() driver.ScanOrder { return driver.ScanStore }

// Do runs the declared operations: 0 is transactWrite.
func (d *Driver) Do(ctx context.Context, op int, key string, value []byte) ([]byte, error) {
	if op == 0 {
		return nil, d.transactWrite(ctx, key, value)
	}
	return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("dynamodb: no operation %d", op))
}

// transactWrite puts the key in the main table (with the value) and in every child table
// (with the main table's name) in one TransactWriteItems: all or nothing.
func (d *Driver) transactWrite(ctx context.Context, key string, value []byte) error {
	c, err := d.start()
	if err != nil {
		return err
	}
	item, err := d.item(key, value)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(d.opts.Table), Item: item}}}
	for i := 0; i < d.opts.ChildTables; i++ {
		child := d.key(key)
		child["parent"] = &types.AttributeValueMemberS{Value: d.opts.Table}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(d.opts.childTable(i)), Item: child}})
	}
	out, err := c.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{
		TransactItems:          items,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return d.fail("transactional write", err)
	}
	d.consumed(statTransactWrite, false, out.ConsumedCapacity...)
	return nil
}

// ReadBulk reads keys with BatchGetItem, 100 distinct keys per request, and asks again for
// the keys DynamoDB returns unprocessed (throttling, the 16 MB answer limit) until all are
// read or ctx ends. A missing key has a nil value.
func (d *Driver) ReadBulk(ctx context.Context, keys []string) ([][]byte, error) {
	c, err := d.start()
	if err != nil {
		return nil, err
	}
	found := make(map[string][]byte, len(keys))
	var distinct []string
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if !seen[k] { // BatchGetItem rejects a request naming a key twice
			seen[k] = true
			distinct = append(distinct, k)
		}
	}
	for len(distinct) > 0 {
		n := min(batchGetMax, len(distinct))
		chunk := distinct[:n]
		distinct = distinct[n:]
		ks := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			ks[i] = d.key(k)
		}
		req := map[string]types.KeysAndAttributes{d.opts.Table: {Keys: ks, ConsistentRead: aws.Bool(d.consistent.Load())}}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				d.stats.unprocessed[statReadBulk].Add(int64(len(req[d.opts.Table].Keys)))
				if err := backoff(ctx, attempt); err != nil {
					return nil, driver.Wrap(driver.ClassThrottled, fmt.Errorf("bulk read: %d keys still unprocessed when the deadline came: %w", len(req[d.opts.Table].Keys), err))
				}
			}
			out, err := c.BatchGetItem(ctx, &ddb.BatchGetItemInput{RequestItems: req, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				return nil, d.fail("bulk read", err)
			}
			d.consumed(statReadBulk, true, out.ConsumedCapacity...)
			for _, it := range out.Responses[d.opts.Table] {
				k, ok := it[d.opts.KeyAttribute].(*types.AttributeValueMemberS)
				if !ok {
					continue
				}
				v, err := decodeItem(it)
				if err != nil {
					return nil, driver.Wrap(driver.ClassOther, fmt.Errorf("bulk read %q: %w", k.Value, err))
				}
				found[k.Value] = v
			}
			req = out.UnprocessedKeys
		}
	}
	res := make([][]byte, len(keys))
	for i, k := range keys {
		res[i] = found[k]
	}
	return res, nil
}

// WriteBulk writes with BatchWriteItem, 25 items per request, sending unprocessed items
// again until all are written or ctx ends. A key given twice keeps its last value, as
// sequential writes would (BatchWriteItem rejects a request naming a key twice).
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("bulk write: %d keys but %d values", len(keys), len(values)))
	}
	c, err := d.start()
	if err != nil {
		return err
	}
	last := make(map[string]int, len(keys))
	for i, k := range keys {
		last[k] = i
	}
	var reqs []types.WriteRequest
	for i, k := range keys {
		if last[k] != i {
			continue
		}
		item, err := d.item(k, values[i])
		if err != nil {
			return err
		}
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: item}})
	}
	for len(reqs) > 0 {
		n := min(batchWriteMax, len(reqs))
		req := map[string][]types.WriteRequest{d.opts.Table: reqs[:n]}
		reqs = reqs[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				d.stats.unprocessed[statWriteBulk].Add(int64(len(req[d.opts.Table])))
				if err := backoff(ctx, attempt); err != nil {
					return driver.Wrap(driver.ClassThrottled, fmt.Errorf("bulk write: %d items still unprocessed when the deadline came: %w", len(req[d.opts.Table]), err))
				}
			}
			out, err := c.BatchWriteItem(ctx, &ddb.BatchWriteItemInput{RequestItems: req, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			if err != nil {
				return d.fail("bulk write", err)
			}
			d.consumed(statWriteBulk, false, out.ConsumedCapacity...)
			req = out.UnprocessedItems
		}
	}
	return nil
}

// backoff waits before asking again for unprocessed items, as AWS advises (exponential,
// 10 ms doubling up to 1 s), or returns ctx's error once it ends.
func backoff(ctx context.Context, attempt int) error {
	wait := min(10*time.Millisecond<<min(attempt-1, 7), time.Second)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// key returns the key attribute map of key.
func (d *Driver) key(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{d.opts.KeyAttribute: &types.AttributeValueMemberS{Value: key}}
}

// item builds the item of key and value, compressing the value when asked. The value is
// copied (or compressed into a new buffer): the engine reuses it after Write returns, and
// the SDK may still hold the request after a call ends at its deadline.
func (d *Driver) item(key string, value []byte) (map[string]types.AttributeValue, error) {
	it := d.key(key)
	switch d.opts.Compression {
	case "gzip":
		b, err := gzipEncode(value)
		if err != nil {
			return nil, driver.Wrap(driver.ClassOther, fmt.Errorf("compress value of %q: %w", key, err))
		}
		it[attrValue] = &types.AttributeValueMemberB{Value: b}
		it[attrCodec] = &types.AttributeValueMemberS{Value: "gzip"}
	case "snappy":
		it[attrValue] = &types.AttributeValueMemberB{Value: s2.EncodeSnappy(nil, value)}
		it[attrCodec] = &types.AttributeValueMemberS{Value: "snappy"}
	default:
		it[attrValue] = &types.AttributeValueMemberB{Value: bytes.Clone(nonNil(value))}
	}
	return it, nil
}

// nonNil keeps an empty value a value: the SDK drops a nil binary attribute's content.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// decodeItem returns the value of an item, decompressed as its codec attribute says.
func decodeItem(it map[string]types.AttributeValue) ([]byte, error) {
	av, ok := it[attrValue].(*types.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("item has no binary attribute %q (not written by ndbench?)", attrValue)
	}
	codec := ""
	if z, ok := it[attrCodec].(*types.AttributeValueMemberS); ok {
		codec = z.Value
	}
	switch codec {
	case "":
		return nonNil(av.Value), nil
	case "gzip":
		return gzipDecode(av.Value)
	case "snappy":
		v, err := s2.Decode(nil, av.Value)
		if err != nil {
			return nil, fmt.Errorf("snappy-decode value: %w", err)
		}
		return nonNil(v), nil
	}
	return nil, fmt.Errorf("unknown value codec %q", codec)
}

var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipEncode(v []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(v); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gzipDecode(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip value: %w", err)
	}
	v, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("gunzip value: %w", err)
	}
	return nonNil(v), nil
}
