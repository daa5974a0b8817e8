package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "dynamodb",
		Summary:    "Amazon DynamoDB (and DynamoDB Local) over aws-sdk-go-v2, with a live switch to a DAX cluster",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Operations: []driver.Operation{
			{Name: opTransactWrite, Kind: driver.KindWrite,
				Help: "TransactWriteItems: the key in the main table and in each of childTables child tables, all or nothing (NDBench's Transactions plugin)"},
		},
	})
}

// opTransactWrite is the name of the transactional write, operation 0 of Do.
const opTransactWrite = "transactWrite"

// Options configure the dynamodb driver. The ndbench tags are the property names of
// NDBench's DynamoDB plugins (DynamoDBConfigurationBase, ProgrammaticDynamoDBConfiguration,
// DaxConfiguration), accepted as aliases.
type Options struct {
	Region   string `opt:"region" default:"us-east-1" ndbench:"region" help:"AWS region the requests are signed for"`
	Endpoint string `opt:"endpoint" default:"" ndbench:"endpoint" help:"endpoint URL (DynamoDB Local, a VPC endpoint); empty uses the region's public endpoint"`
	// The keys are secret (never shown, scrubbed from errors). Empty uses the SDK's
	// standard chain: environment, shared files, SSO, web identity, container, IMDS.
	AccessKey    string `opt:"accessKey" default:"" secret:"true" help:"AWS access key ID; empty uses the SDK's default credential chain"`
	SecretKey    string `opt:"secretKey" default:"" secret:"true" help:"AWS secret access key, with accessKey"`
	SessionToken string `opt:"sessionToken" default:"" secret:"true" help:"session token of temporary credentials, with accessKey and secretKey"`

	Table        string `opt:"table" default:"ndbench-table" ndbench:"tableName" help:"table name (3 to 255 of letters, digits, _ - .)"`
	KeyAttribute string `opt:"keyAttribute" default:"id" ndbench:"attributeName" help:"name of the string partition key attribute"`
	CreateTable  bool   `opt:"createTable" default:"true" help:"create the table (and the child tables) if missing, and wait until it is active"`
	BillingMode  string `opt:"billingMode" default:"onDemand" enum:"onDemand,provisioned" help:"capacity mode of tables the driver creates: onDemand (PAY_PER_REQUEST) or provisioned (readCapacity/writeCapacity)"`
	// Live so that a run can change a provisioned table's capacity under load, as the
	// NDBench paper's auto-scaling experiment did.
	ReadCapacity   int64 `opt:"readCapacity" default:"5" min:"1" max:"1000000" live:"true" ndbench:"readCapacityUnits" help:"provisioned read capacity units (billingMode=provisioned); a live change calls UpdateTable"`
	WriteCapacity  int64 `opt:"writeCapacity" default:"5" min:"1" max:"1000000" live:"true" ndbench:"writeCapacityUnits" help:"provisioned write capacity units (billingMode=provisioned); a live change calls UpdateTable"`
	ConsistentRead bool  `opt:"consistentRead" default:"false" live:"true" ndbench:"consistentRead" help:"strongly consistent reads (2x the read capacity of eventually consistent ones)"`

	Compression    string `opt:"compression" default:"none" enum:"none,gzip,snappy" help:"compress values before writing them; reads decode whatever each item was written with"`
	MaxConnections int    `opt:"maxConnections" default:"50" min:"1" max:"10000" ndbench:"maxConnections" help:"HTTP connections per endpoint; at least the number of workers"`
	// 0 by default, unlike the SDK's 3 attempts: a benchmark must see throttling, not have
	// it hidden as latency.
	MaxRetries int `opt:"maxRetries" default:"0" min:"0" max:"20" ndbench:"maxRetries" help:"SDK retries of a retryable failure (throttling, 5xx); 0 shows every throttled request"`

	ChildTables      int    `opt:"childTables" default:"0" min:"0" max:"99" ndbench:"mainTableColsPerRow" help:"child tables written in the same transaction by operation transactWrite"`
	ChildTablePrefix string `opt:"childTablePrefix" default:"" ndbench:"childTableNamePrefix" help:"child tables are named PREFIX0, PREFIX1, ...; empty means TABLE-child"`

	DAX         bool   `opt:"dax" default:"false" live:"true" help:"send data operations to the DAX cluster at daxEndpoint instead of DynamoDB; switches live, between operations"`
	DAXEndpoint string `opt:"daxEndpoint" default:"" ndbench:"daxEndpoint" help:"DAX cluster endpoint (dax://... or daxs://...); needs a build with a DAX client (see the driver's documentation)"`

	Timeouts driver.TimeoutOptions `connectTimeout.help:"timeout for establishing one HTTP connection" timeout.help:"HTTP client timeout of one request, retries included (the op's context deadline applies as well)"`
}

// nameOf reports whether s is min to max characters of A-Z a-z 0-9 _ - . (DynamoDB's
// table and attribute name characters). A loop, not a regexp: compiling `{3,255}` at
// package init cost every ndbench process ~40 M instructions and its garbage, whatever
// the driver run.
func nameOf(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Validate checks what the tags cannot: names DynamoDB would reject, an endpoint that is a
// URL, keys that come in pairs, and dax needing its endpoint. It names options, never the
// value of a secret one.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if !nameOf(o.Table, 3, 255) {
		errs = append(errs, &driver.FieldError{Field: "table", Value: o.Table, Allowed: "3 to 255 characters of A-Z a-z 0-9 _ - ."})
	}
	if !nameOf(o.KeyAttribute, 1, 255) {
		errs = append(errs, &driver.FieldError{Field: "keyAttribute", Value: o.KeyAttribute, Allowed: "1 to 255 characters of A-Z a-z 0-9 _ - ."})
	}
	if !nameOf(o.ChildTablePrefix, 0, 253) || (o.ChildTablePrefix != "" && len(o.ChildTablePrefix) < 2) {
		errs = append(errs, &driver.FieldError{Field: "childTablePrefix", Value: o.ChildTablePrefix,
			Allowed: "empty, or 2 to 253 characters of A-Z a-z 0-9 _ - . (child table names need 3 or more)"})
	}
	if o.Endpoint != "" {
		if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &driver.FieldError{Field: "endpoint", Value: driver.Shown(false, o.Endpoint),
				Allowed: "an http:// or https:// URL, e.g. http://127.0.0.1:8000, or empty for the region's endpoint"})
		}
	}
	// The missing one is named; the value of the other is never echoed.
	switch {
	case o.AccessKey != "" && o.SecretKey == "":
		errs = append(errs, &driver.FieldError{Field: "secretKey",
			Allowed: "set when accessKey is (static credentials); leave both empty for the SDK's default credential chain"})
	case o.AccessKey == "" && o.SecretKey != "":
		errs = append(errs, &driver.FieldError{Field: "accessKey",
			Allowed: "set when secretKey is (static credentials); leave both empty for the SDK's default credential chain"})
	}
	if o.SessionToken != "" && o.AccessKey == "" {
		errs = append(errs, &driver.FieldError{Field: "sessionToken", Allowed: "empty unless accessKey and secretKey are set"})
	}
	if o.DAX && o.DAXEndpoint == "" {
		errs = append(errs, &driver.FieldError{Field: "daxEndpoint", Allowed: "the DAX cluster endpoint (dax://HOST:8111 or daxs://HOST), required when dax=true"})
	}
	if o.DAX && registeredDAXClient() == nil {
		errs = append(errs, errNoDAXClient)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// childTable returns the name of child table i.
func (o *Options) childTable(i int) string {
	p := o.ChildTablePrefix
	if p == "" {
		p = o.Table + "-child"
	}
	return p + strconv.Itoa(i)
}

// Driver is the dynamodb driver. It is safe for concurrent use after Init.
type Driver struct {
	opts    Options // as of Init; live fields below are the current ones
	ddb     *ddb.Client
	awsCfg  aws.Config
	httpTr  *http.Transport
	secrets []string // to scrub from error text; never shown
	closed  atomic.Bool

	consistent atomic.Bool
	useDAX     atomic.Bool

	mu       sync.Mutex // guards dax construction, capacity and live option values
	dax      atomic.Pointer[daxHandle]
	capacity [2]int64 // current provisioned read, write units (as last set)
	tableMsg string   // table status at Init, for ConnectionInfo

	stats stats
}

// daxHandle is the DAX client, built once.
type daxHandle struct{ c Client }

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.BulkReader       = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.Reconfigurer     = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
	_ driver.StatsReporter    = (*Driver)(nil)
	_ driver.Operator         = (*Driver)(nil)
)

// Init builds the SDK client, checks the table (creating it when asked) and, with dax on,
// the DAX client.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	for _, s := range []string{o.AccessKey, o.SecretKey, o.SessionToken} {
		if s != "" {
			d.secrets = append(d.secrets, s)
		}
	}
	d.consistent.Store(o.ConsistentRead)
	d.capacity = [2]int64{o.ReadCapacity, o.WriteCapacity}

	// A BuildableClient for LoadDefaultConfig, which adds AWS_CA_BUNDLE's roots to it;
	// its transport is then taken over by a plain http.Client the driver owns, so Close
	// can drop the connections (the BuildableClient keeps its final transport private).
	bc := awshttp.NewBuildableClient().
		WithDialerOptions(func(dl *net.Dialer) { dl.Timeout = o.Timeouts.Connect }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConns = o.MaxConnections
			tr.MaxIdleConnsPerHost = o.MaxConnections
			tr.MaxConnsPerHost = o.MaxConnections
		})
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(o.Region),
		config.WithHTTPClient(bc),
		config.WithRetryer(func() aws.Retryer { return newRetryer(o.MaxRetries) }),
	}
	if o.AccessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, o.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return d.fail("load AWS configuration", err)
	}
	if b, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
		bc = b
	}
	cfg.Logger = quietLogger{next: cfg.Logger}
	d.httpTr = bc.GetTransport()
	cfg.HTTPClient = sdkHTTPClient(&http.Client{
		Transport: d.httpTr,
		Timeout:   o.Timeouts.Request,
		// As the SDK's own client: a redirect is an answer to report, not to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	})
	d.awsCfg = cfg
	d.ddb = ddb.NewFromConfig(cfg, func(do *ddb.Options) {
		if o.Endpoint != "" {
			do.BaseEndpoint = aws.String(o.Endpoint)
		}
	})

	tables := []string{o.Table}
	for i := 0; i < o.ChildTables; i++ {
		tables = append(tables, o.childTable(i))
	}
	for _, t := range tables {
		if err := d.ensureTable(ctx, t); err != nil {
			return err
		}
	}
	if o.DAX {
		if _, err := d.daxClient(ctx); err != nil {
			return err
		}
		d.useDAX.Store(true)
	}
	return nil
}

// newRetryer returns the SDK retryer for maxRetries: none at all for 0, so every
// throttled or failed request reaches the engine's counts.
func newRetryer(maxRetries int) aws.Retryer {
	if maxRetries == 0 {
		return aws.NopRetryer{}
	}
	return retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = maxRetries + 1 })
}

// ensureTable checks table exists and is active; with createTable, it creates a missing
// one first. A table that already exists is used as it is (its capacity mode included).
func (d *Driver) ensureTable(ctx context.Context, table string) error {
	out, err := d.ddb.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
		d.noteTable(out.Table)
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
	case errors.As(err, &nf) && d.opts.CreateTable:
		if err := d.createTable(ctx, table); err != nil {
			return err
		}
	case errors.As(err, &nf):
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("table %s does not exist in %s (set createTable=true to create it)", table, d.where()))
	default:
		return d.fail("describe table "+table+" at "+d.where(), err)
	}
	w := ddb.NewTableExistsWaiter(d.ddb, func(wo *ddb.TableExistsWaiterOptions) {
		wo.MinDelay, wo.MaxDelay = 200*time.Millisecond, 5*time.Second
	})
	// The waiter needs a duration; the caller's context bounds it as well.
	out, err = w.WaitForOutput(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)}, 10*time.Minute)
	if err != nil {
		return d.fail("wait for table "+table+" to be active", err)
	}
	d.noteTable(out.Table)
	return nil
}

// noteTable records what ConnectionInfo shows about the main table.
func (d *Driver) noteTable(t *types.TableDescription) {
	if t == nil || aws.ToString(t.TableName) != d.opts.Table {
		return
	}
	mode := "provisioned"
	if t.BillingModeSummary != nil && t.BillingModeSummary.BillingMode == types.BillingModePayPerRequest {
		mode = "onDemand"
	}
	d.mu.Lock()
	d.tableMsg = string(t.TableStatus) + ", " + mode
	if t.ProvisionedThroughput != nil && mode == "provisioned" {
		d.tableMsg += fmt.Sprintf(" (%d RCU, %d WCU)", aws.ToInt64(t.ProvisionedThroughput.ReadCapacityUnits), aws.ToInt64(t.ProvisionedThroughput.WriteCapacityUnits))
	}
	d.mu.Unlock()
}

func (d *Driver) createTable(ctx context.Context, table string) error {
	in := &ddb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(d.opts.KeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(d.opts.KeyAttribute), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if d.opts.BillingMode == "provisioned" {
		in.BillingMode = types.BillingModeProvisioned
		in.ProvisionedThroughput = &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(d.opts.ReadCapacity), WriteCapacityUnits: aws.Int64(d.opts.WriteCapacity)}
	}
	_, err := d.ddb.CreateTable(ctx, in)
	// Two nodes creating the table at once: the loser sees ResourceInUse, and the table
	// exists either way (the caller waits for it to be active).
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return d.fail("create table "+table+" at "+d.where(), err)
	}
	return nil
}

// where names the endpoint for messages: the URL or the region.
func (d *Driver) where() string {
	if d.opts.Endpoint != "" {
		return driver.Shown(false, d.opts.Endpoint)
	}
	return "region " + d.opts.Region
}

// Reconfigure applies the live options: consistentRead and dax take effect for the next
// operation; a change of readCapacity or writeCapacity calls UpdateTable on a provisioned
// table (on an on-demand one there is nothing to change, and nothing is called).
func (d *Driver) Reconfigure(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	if d.closed.Load() {
		return errClosed
	}
	d.mu.Lock()
	capChanged := d.capacity != [2]int64{o.ReadCapacity, o.WriteCapacity}
	d.mu.Unlock()
	if capChanged && d.opts.BillingMode == "provisioned" {
		if err := d.updateCapacity(ctx, o.ReadCapacity, o.WriteCapacity); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.capacity = [2]int64{o.ReadCapacity, o.WriteCapacity}
	d.mu.Unlock()
	d.consistent.Store(o.ConsistentRead)
	if o.DAX {
		if _, err := d.daxClient(ctx); err != nil {
			return err
		}
	}
	// The paper's single if: operations that start after this store go to the other
	// client; those in flight finish where they started.
	d.useDAX.Store(o.DAX)
	return nil
}

// updateCapacity sets the main table's provisioned throughput.
func (d *Driver) updateCapacity(ctx context.Context, rcu, wcu int64) error {
	_, err := d.ddb.UpdateTable(ctx, &ddb.UpdateTableInput{
		TableName: aws.String(d.opts.Table),
		ProvisionedThroughput: &types.ProvisionedThroughput{
			ReadCapacityUnits: aws.Int64(rcu), WriteCapacityUnits: aws.Int64(wcu)},
	})
	var inUse *types.ResourceInUseException
	if err != nil && errors.As(err, &inUse) {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("update capacity of table %s to %d RCU, %d WCU: the table is still updating from an earlier change; retry once it is active: %w", d.opts.Table, rcu, wcu, err))
	}
	if err != nil {
		return d.fail(fmt.Sprintf("update capacity of table %s to %d RCU, %d WCU", d.opts.Table, rcu, wcu), err)
	}
	d.stats.capacityUpdates.Add(1)
	return nil
}

// ConnectionInfo describes the connection without secrets: where, which table, how
// credentials are found, and which client serves operations now.
func (d *Driver) ConnectionInfo() map[string]string {
	creds := "default chain"
	if d.opts.AccessKey != "" {
		creds = "static (options)"
	}
	endpoint := d.opts.Endpoint
	if endpoint == "" {
		endpoint = "(region default)"
	}
	target := "dynamodb"
	if d.useDAX.Load() {
		target = "dax"
	}
	d.mu.Lock()
	table := d.tableMsg
	rcu, wcu := d.capacity[0], d.capacity[1]
	d.mu.Unlock()
	info := map[string]string{
		"region":         d.opts.Region,
		"endpoint":       driver.Shown(false, endpoint),
		"credentials":    creds,
		"table":          d.opts.Table,
		"tableStatus":    table,
		"billingMode":    d.opts.BillingMode,
		"consistentRead": strconv.FormatBool(d.consistent.Load()),
		"compression":    d.opts.Compression,
		"maxRetries":     strconv.Itoa(d.opts.MaxRetries),
		"target":         target,
		"daxEndpoint":    driver.Shown(false, d.opts.DAXEndpoint),
	}
	if d.opts.BillingMode == "provisioned" {
		info["capacity"] = fmt.Sprintf("%d RCU, %d WCU", rcu, wcu)
	}
	if d.opts.ChildTables > 0 {
		info["childTables"] = fmt.Sprintf("%s .. %s", d.opts.childTable(0), d.opts.childTable(d.opts.ChildTables-1))
	}
	return info
}

// errClosed fails operations on a closed driver.
var errClosed = errors.New("dynamodb driver is closed")

// Close drops idle connections and makes every later operation fail. It copes with a
// failed Init. The SDK client itself holds nothing else to release.
func (d *Driver) Close() error {
	d.closed.Store(true)
	if d.httpTr != nil {
		d.httpTr.CloseIdleConnections()
	}
	if h := d.dax.Load(); h != nil {
		if c, ok := h.c.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				return fmt.Errorf("close DAX client: %w", err)
			}
		}
	}
	return nil
}

// quietLogger drops one SDK warning: the DynamoDB client checks a CRC32 of every answer
// even when the answer has no x-amz-crc32 header (DynamoDB Local's and Alternator's error
// answers), and warns on each (aws/aws-sdk-go-v2#3545). The check itself stays on.
type quietLogger struct{ next logging.Logger }

// Logf passes every message on but that warning.
func (l quietLogger) Logf(c logging.Classification, format string, v ...any) {
	if c == logging.Warn && strings.HasPrefix(format, "failed to close HTTP response body") {
		return
	}
	if l.next != nil {
		l.next.Logf(c, format, v...)
	}
}
