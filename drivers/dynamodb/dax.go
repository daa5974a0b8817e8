package dynamodb

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/ndbench/ndbench/driver"
)

// Client is what the driver's data operations need from a DynamoDB client. Both
// *dynamodb.Client of aws-sdk-go-v2 and *dax.Dax of github.com/aws/aws-dax-go-v2 have these
// methods with these signatures, so the driver switches between them with one atomic
// flag (option dax) and no translation.
type Client interface {
	GetItem(ctx context.Context, in *ddb.GetItemInput, optFns ...func(*ddb.Options)) (*ddb.GetItemOutput, error)
	PutItem(ctx context.Context, in *ddb.PutItemInput, optFns ...func(*ddb.Options)) (*ddb.PutItemOutput, error)
	BatchGetItem(ctx context.Context, in *ddb.BatchGetItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error)
	BatchWriteItem(ctx context.Context, in *ddb.BatchWriteItemInput, optFns ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error)
	// DeleteItem and Scan serve the operations delete and scan (*dax.Dax has both).
	DeleteItem(ctx context.Context, in *ddb.DeleteItemInput, optFns ...func(*ddb.Options)) (*ddb.DeleteItemOutput, error)
	Scan(ctx context.Context, in *ddb.ScanInput, optFns ...func(*ddb.Options)) (*ddb.ScanOutput, error)
}

var _ Client = (*ddb.Client)(nil)

// DAXClientFunc builds the client that serves data operations while option dax is on.
// cfg is the driver's AWS configuration (region, credentials, HTTP client, retryer) and
// endpoint the value of daxEndpoint. With aws-dax-go-v2 it is
//
//	func(_ context.Context, cfg aws.Config, endpoint string) (dynamodb.Client, error) {
//		return dax.NewFromConfig(cfg, endpoint)
//	}
//
// A returned client with a Close() error method is closed with the driver.
type DAXClientFunc func(ctx context.Context, cfg aws.Config, endpoint string) (Client, error)

// errNoDAXClient refuses dax=true in a build without a DAX client, in Validate (so the
// configuration API answers 422 at once) and again when a client would be built.
var errNoDAXClient = &driver.FieldError{Field: "dax", Value: "true",
	Allowed: "false: this ndbench build has no DAX client (github.com/aws/aws-dax-go-v2 is not linked in; see the dynamodb driver's documentation, section DAX)"}

var (
	daxMu   sync.Mutex
	daxFunc DAXClientFunc
)

// RegisterDAXClient sets the constructor of DAX clients for every dynamodb driver of the
// process, replacing any earlier one; nil removes it. ndbench itself registers none: the
// module github.com/aws/aws-dax-go-v2 could not be fetched through the Go module proxy
// when this driver was written (see the package documentation). A build that can fetch
// it registers dax.NewFromConfig from an init function; tests register a constructor of
// plain DynamoDB clients, which is how the live switch is tested without a DAX cluster.
func RegisterDAXClient(f DAXClientFunc) {
	daxMu.Lock()
	daxFunc = f
	daxMu.Unlock()
}

func registeredDAXClient() DAXClientFunc {
	daxMu.Lock()
	defer daxMu.Unlock()
	return daxFunc
}

// daxClient returns the DAX client, building it on first use. The driver's mutex makes
// two concurrent switches build one client.
func (d *Driver) daxClient(ctx context.Context) (Client, error) {
	if h := d.dax.Load(); h != nil {
		return h.c, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if h := d.dax.Load(); h != nil {
		return h.c, nil
	}
	f := registeredDAXClient()
	if f == nil {
		return nil, errNoDAXClient
	}
	c, err := f(ctx, d.awsCfg, d.opts.DAXEndpoint)
	if err != nil {
		return nil, d.fail(fmt.Sprintf("create DAX client for %s", driver.Shown(false, d.opts.DAXEndpoint)), err)
	}
	if c == nil {
		return nil, fmt.Errorf("create DAX client for %s: the registered constructor returned no client and no error", driver.Shown(false, d.opts.DAXEndpoint))
	}
	d.dax.Store(&daxHandle{c: c})
	return c, nil
}

// client returns the client for the next operation and the name of its target: the
// paper's single if.
func (d *Driver) client() (Client, target) {
	if d.useDAX.Load() {
		if h := d.dax.Load(); h != nil {
			return h.c, targetDAX
		}
	}
	return d.ddb, targetDynamoDB
}
