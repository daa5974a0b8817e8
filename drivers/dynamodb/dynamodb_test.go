package dynamodb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/testserver"
)

const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

func TestOptionsDefaultsAndNDBenchNames(t *testing.T) {
	opts, err := driver.NewOptions("dynamodb", map[string]string{
		"tableName": "orders", "attributeName": "pk", "readCapacityUnits": "12", "writeCapacityUnits": "3",
		"consistentRead": "true", "maxConnections": "80", "maxRetries": "2", "mainTableColsPerRow": "4",
		"childTableNamePrefix": "kids", "daxEndpoint": "dax://c.example:8111", "region": "eu-west-1",
		"endpoint": "http://127.0.0.1:8000",
	})
	if err != nil {
		t.Fatal(err)
	}
	o := opts.(*Options)
	want := Options{Region: "eu-west-1", Endpoint: "http://127.0.0.1:8000", Table: "orders", KeyAttribute: "pk",
		CreateTable: true, BillingMode: "onDemand", ReadCapacity: 12, WriteCapacity: 3, ConsistentRead: true,
		Compression: "none", MaxConnections: 80, MaxRetries: 2, ChildTables: 4, ChildTablePrefix: "kids",
		DAXEndpoint: "dax://c.example:8111", Timeouts: o.Timeouts}
	if *o != want {
		t.Errorf("options from NDBench names:\n got %+v\nwant %+v", *o, want)
	}
	if o.childTable(3) != "kids3" {
		t.Errorf("child table 3 = %s", o.childTable(3))
	}
	d, _ := driver.NewOptions("dynamodb", nil)
	if d.(*Options).MaxRetries != 0 || d.(*Options).childTable(0) != "ndbench-table-child0" {
		t.Errorf("defaults: %+v", d)
	}
}

// TestOptionValidation: each bad value is a FieldError naming the option and what is
// allowed, and a secret's value is never echoed.
func TestOptionValidation(t *testing.T) {
	keepDAXClient(t)
	RegisterDAXClient(nil) // as in ndbench's own build
	for _, tt := range []struct {
		values  map[string]string
		field   string
		allowed string
	}{
		{map[string]string{"table": "ab"}, "table", "3 to 255"},
		{map[string]string{"table": "has space"}, "table", "A-Z"},
		{map[string]string{"keyAttribute": ""}, "keyAttribute", "1 to 255"},
		{map[string]string{"compression": "lz4"}, "compression", "gzip"},
		{map[string]string{"billingMode": "free"}, "billingMode", "provisioned"},
		{map[string]string{"readCapacity": "0"}, "readCapacity", ""},
		{map[string]string{"maxRetries": "99"}, "maxRetries", ""},
		{map[string]string{"endpoint": "127.0.0.1:8000"}, "endpoint", "http://"},
		{map[string]string{"dax": "true"}, "daxEndpoint", "required when dax=true"},
		{map[string]string{"dax": "true", "daxEndpoint": "dax://c:8111"}, "dax", "no DAX client"},
		{map[string]string{"accessKey": secret}, "secretKey", "set when accessKey is"},
		{map[string]string{"secretKey": secret}, "accessKey", "set when secretKey is"},
		{map[string]string{"sessionToken": secret}, "sessionToken", "accessKey"},
		{map[string]string{"childTablePrefix": "x"}, "childTablePrefix", "2 to 253"},
	} {
		_, err := driver.NewOptions("dynamodb", tt.values)
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			t.Errorf("%v: error %v, want field errors", tt.values, err)
			continue
		}
		found := false
		for _, fe := range fes {
			if fe.Field == tt.field && strings.Contains(fe.Allowed, tt.allowed) {
				found = true
			}
		}
		if !found {
			t.Errorf("%v: %v; want a field error for %s allowing %q", tt.values, err, tt.field, tt.allowed)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%v: error shows the secret: %v", tt.values, err)
		}
	}
}

func TestSecretsRedacted(t *testing.T) {
	opts, err := driver.NewOptions("dynamodb", map[string]string{"accessKey": "AKIDEXAMPLE", "secretKey": secret, "sessionToken": "tok-" + secret})
	if err != nil {
		t.Fatal(err)
	}
	shown := driver.Values(opts, true)
	for _, k := range []string{"accessKey", "secretKey", "sessionToken"} {
		if shown[k] != driver.Redacted {
			t.Errorf("%s shown as %q", k, shown[k])
		}
	}
	for _, typo := range []string{"secretkey", "secret_key", "SecretKey", "aws.secretKey", "sessiontoken", "acessKey"} {
		_, err := driver.NewOptions("dynamodb", map[string]string{typo: secret})
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("mistyped %s: error %v", typo, err)
		}
	}
	// A service message quoting a credential is scrubbed; the class survives.
	d := &Driver{secrets: []string{"AKIDEXAMPLE", secret}}
	err = d.fail("read", &smithy.GenericAPIError{Code: "InvalidSignatureException",
		Message: "Credential=AKIDEXAMPLE/20260101 string to sign ... " + secret})
	if strings.Contains(err.Error(), "AKIDEXAMPLE") || strings.Contains(err.Error(), secret) {
		t.Errorf("error shows a credential: %v", err)
	}
	if driver.Classify(err) != driver.ClassRejected {
		t.Errorf("scrubbed error class %v, want rejected", driver.Classify(err))
	}
}

// TestClassify maps the SDK's typed errors (DynamoDB Local does not enforce provisioned
// throughput, so throttling is tested here, with the types the SDK decodes), DAX's error
// codes, HTTP statuses and transport failures.
func TestClassify(t *testing.T) {
	opErr := func(err error) error { // as the SDK wraps every failure
		return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "GetItem", Err: err}
	}
	respErr := func(status int, err error) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err}}
	}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tt := range []struct {
		name string
		err  error
		want driver.Class
	}{
		{"ProvisionedThroughputExceeded", opErr(respErr(400, &types.ProvisionedThroughputExceededException{Message: aws.String("x")})), driver.ClassThrottled},
		{"RequestLimitExceeded", opErr(respErr(400, &types.RequestLimitExceeded{})), driver.ClassThrottled},
		{"ThrottlingException", opErr(respErr(400, &smithy.GenericAPIError{Code: "ThrottlingException"})), driver.ClassThrottled},
		{"TransactionConflict", opErr(&types.TransactionConflictException{}), driver.ClassThrottled},
		{"cancelled by throttling", opErr(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ThrottlingError")}}}), driver.ClassThrottled},
		{"cancelled by a condition", opErr(&types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("ConditionalCheckFailed")}}}), driver.ClassRejected},
		{"ResourceNotFound", opErr(&types.ResourceNotFoundException{}), driver.ClassRejected},
		{"ValidationException", opErr(respErr(400, &smithy.GenericAPIError{Code: "ValidationException"})), driver.ClassRejected},
		{"InternalServerError", opErr(&types.InternalServerError{}), driver.ClassUnavailable},
		{"HTTP 503 without a code", opErr(respErr(503, errors.New("bad gateway"))), driver.ClassUnavailable},
		{"HTTP 429 without a code", opErr(respErr(429, errors.New("slow down"))), driver.ClassThrottled},
		{"connection refused", opErr(&smithyhttp.RequestSendError{Err: dial}), driver.ClassUnavailable},
		{"send failed otherwise", opErr(&smithyhttp.RequestSendError{Err: errors.New("tls: bad record")}), driver.ClassUnavailable},
		{"deadline while sending", opErr(&smithyhttp.RequestSendError{Err: fmt.Errorf("Post: %w", context.DeadlineExceeded)}), driver.ClassTimeout},
		{"deadline", opErr(&smithy.CanceledError{Err: context.DeadlineExceeded}), driver.ClassTimeout},
		// DAX's client reports smithy.APIErrors with these codes (aws-dax-go-v2
		// dax/internal/client/error.go).
		{"DAX ThrottlingException", &smithy.GenericAPIError{Code: "ThrottlingException"}, driver.ClassThrottled},
		{"DAX ServiceUnavailable", &smithy.GenericAPIError{Code: "ServiceUnavailable"}, driver.ClassUnavailable},
		{"DAX ResponseTimeout", &smithy.GenericAPIError{Code: "ResponseTimeout"}, driver.ClassTimeout},
		{"DAX InvalidParameter", &smithy.GenericAPIError{Code: "InvalidParameter"}, driver.ClassRejected},
		{"DAX Unknown", &smithy.GenericAPIError{Code: "Unknown"}, driver.ClassOther},
		// The exact shape aws-dax-go-v2 v1.0.3 returned from GetItem for an unreachable
		// cluster (dax.NewFromConfig(cfg, "dax://127.0.0.1:1") succeeds; discovery fails
		// in the background), checked once outside this repository.
		{"DAX no routes", &smithy.OperationError{ServiceID: "dax", OperationName: "GetItem",
			Err: errors.New("no routes found. lastRefreshError: api error InternalServerError: network error: dial tcp 127.0.0.1:1: connect: connection refused")}, driver.ClassUnavailable},
	} {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("%s: %v classified %v, want %v", tt.name, tt.err, got, tt.want)
		}
		if got := driver.Classify((&Driver{}).fail("op", tt.err)); got != tt.want {
			t.Errorf("%s: through fail: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCodecs(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy"} {
		d := &Driver{opts: Options{KeyAttribute: "id", Compression: codec}}
		for _, v := range [][]byte{nil, {}, []byte("x"), bytes.Repeat([]byte("abc"), 5000)} {
			it, err := d.item("k", v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeItem(it)
			if err != nil || got == nil || !bytes.Equal(got, v) {
				t.Errorf("%s: %d bytes round-trip to %d, %v", codec, len(v), len(got), err)
			}
		}
	}
	if _, err := decodeItem(map[string]types.AttributeValue{"v": &types.AttributeValueMemberB{Value: []byte("x")},
		"z": &types.AttributeValueMemberS{Value: "brotli"}}); err == nil {
		t.Error("unknown codec decoded")
	}
}

// fakeClient stands in for a DynamoDB or DAX client on paths no local server exercises.
type fakeClient struct {
	Client
	batchGets, batchWrites atomic.Int64
	closed                 atomic.Bool
}

// BatchGetItem answers the first request with every key unprocessed, then all of them.
func (f *fakeClient) BatchGetItem(_ context.Context, in *ddb.BatchGetItemInput, _ ...func(*ddb.Options)) (*ddb.BatchGetItemOutput, error) {
	if f.batchGets.Add(1) == 1 {
		return &ddb.BatchGetItemOutput{UnprocessedKeys: in.RequestItems}, nil
	}
	out := &ddb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	for table, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			id := k["id"].(*types.AttributeValueMemberS).Value
			out.Responses[table] = append(out.Responses[table], map[string]types.AttributeValue{
				"id": k["id"], "v": &types.AttributeValueMemberB{Value: []byte("val-" + id)}})
		}
		out.ConsumedCapacity = append(out.ConsumedCapacity, types.ConsumedCapacity{TableName: aws.String(table), CapacityUnits: aws.Float64(0.5 * float64(len(ka.Keys)))})
	}
	return out, nil
}

// BatchWriteItem leaves the last item of every request unprocessed once.
func (f *fakeClient) BatchWriteItem(_ context.Context, in *ddb.BatchWriteItemInput, _ ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error) {
	f.batchWrites.Add(1)
	out := &ddb.BatchWriteItemOutput{}
	for table, reqs := range in.RequestItems {
		if len(reqs) > 1 {
			out.UnprocessedItems = map[string][]types.WriteRequest{table: reqs[len(reqs)-1:]}
		}
	}
	return out, nil
}

func (f *fakeClient) Close() error { f.closed.Store(true); return nil }

// withDAX returns a driver whose DAX client is c, switched on.
func withDAX(c Client) *Driver {
	d := &Driver{opts: Options{Table: "t", KeyAttribute: "id", Compression: "none"}}
	d.dax.Store(&daxHandle{c: c})
	d.useDAX.Store(true)
	return d
}

func TestBulkRetriesUnprocessed(t *testing.T) {
	f := &fakeClient{}
	d := withDAX(f)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := d.ReadBulk(ctx, []string{"a", "b", "a"})
	if err != nil || string(got[0]) != "val-a" || string(got[1]) != "val-b" || string(got[2]) != "val-a" {
		t.Fatalf("ReadBulk = %q, %v", got, err)
	}
	st := d.DriverStats()
	if f.batchGets.Load() != 2 || st["unprocessedRetries.readBulk"] != 2 || st["consumedRCUMilli.readBulk"] != 1000 || st["requests.dax"] != 1 {
		t.Errorf("%d BatchGetItem calls, stats %v", f.batchGets.Load(), st)
	}
	keys := make([]string, 30)
	vals := make([][]byte, 30)
	for i := range keys {
		keys[i], vals[i] = fmt.Sprint("k", i), []byte("v")
	}
	if err := d.WriteBulk(ctx, keys, vals); err != nil {
		t.Fatal(err)
	}
	// 25 + 5 items: each request leaves one item over, sent again alone.
	if n := f.batchWrites.Load(); n != 4 || d.DriverStats()["unprocessedRetries.writeBulk"] != 2 {
		t.Errorf("%d BatchWriteItem calls, stats %v; want 4", n, d.DriverStats())
	}
	if err := d.Close(); err != nil || !f.closed.Load() {
		t.Errorf("Close: %v, DAX client closed %v", err, f.closed.Load())
	}
	if _, err := d.Read(ctx, "a"); err == nil {
		t.Error("Read after Close succeeded")
	}
}

// stuckClient never processes a batch: the deadline must end the retries.
type stuckClient struct{ Client }

func (stuckClient) BatchWriteItem(_ context.Context, in *ddb.BatchWriteItemInput, _ ...func(*ddb.Options)) (*ddb.BatchWriteItemOutput, error) {
	return &ddb.BatchWriteItemOutput{UnprocessedItems: in.RequestItems}, nil
}

// The retries end with the deadline, and the error says so (it wraps the deadline's): a
// client never processing the batch would otherwise be retried for ever, which the
// minute's patience turns into a failure (no wall-clock bound: it was 1 s).
func TestBulkUnprocessedEndsAtDeadline(t *testing.T) {
	d := withDAX(stuckClient{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var err error
	if !testserver.Patiently(func() { err = d.WriteBulk(ctx, []string{"a"}, [][]byte{[]byte("v")}) }) {
		t.Fatal("WriteBulk with a 200ms deadline has not returned after a minute")
	}
	if driver.Classify(err) != driver.ClassThrottled || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WriteBulk never processed: %v, want throttled wrapping the deadline", err)
	}
}

// TestDAXConstruction covers the DAX path no test server can reach: without a registered
// constructor dax=true is refused naming the option; a constructor's failure (a cluster
// that cannot be reached) is classified and names the endpoint; the constructor gets the
// driver's configuration and endpoint and is called once.
func TestDAXConstruction(t *testing.T) {
	keepDAXClient(t)
	ctx := context.Background()
	newDriver := func() *Driver {
		return &Driver{opts: Options{Table: "t", KeyAttribute: "id", DAX: true, DAXEndpoint: "dax://cluster.example:8111"},
			awsCfg: aws.Config{Region: "eu-west-1"}}
	}

	RegisterDAXClient(nil)
	_, err := newDriver().daxClient(ctx)
	var fe *driver.FieldError
	if !errors.As(err, &fe) || fe.Field != "dax" || !strings.Contains(fe.Allowed, "aws-dax-go-v2") {
		t.Errorf("no constructor: %v, want a field error on dax", err)
	}

	RegisterDAXClient(func(_ context.Context, cfg aws.Config, endpoint string) (Client, error) {
		// What dax.New reports when it cannot reach any node of the cluster.
		return nil, &smithy.GenericAPIError{Code: "ServiceUnavailable", Message: "no cluster endpoints available"}
	})
	_, err = newDriver().daxClient(ctx)
	if driver.Classify(err) != driver.ClassUnavailable || !strings.Contains(err.Error(), "dax://cluster.example:8111") {
		t.Errorf("unreachable cluster: %v (class %v), want unavailable naming the endpoint", err, driver.Classify(err))
	}

	var calls atomic.Int64
	f := &fakeClient{}
	RegisterDAXClient(func(_ context.Context, cfg aws.Config, endpoint string) (Client, error) {
		calls.Add(1)
		if cfg.Region != "eu-west-1" || endpoint != "dax://cluster.example:8111" {
			return nil, fmt.Errorf("got region %q endpoint %q", cfg.Region, endpoint)
		}
		return f, nil
	})
	d := newDriver()
	for range 3 {
		if c, err := d.daxClient(ctx); err != nil || c != Client(f) {
			t.Fatalf("daxClient = %v, %v", c, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("constructor called %d times, want once", calls.Load())
	}
	d.useDAX.Store(true)
	if c, tg := d.client(); c != Client(f) || tg != targetDAX {
		t.Errorf("client() with dax on = %v, %v", c, tg)
	}
	d.useDAX.Store(false)
	if _, tg := d.client(); tg != targetDynamoDB {
		t.Errorf("client() with dax off = %v", tg)
	}
}

// keepDAXClient restores the registered DAX constructor after the test (the integration
// tests register one in TestMain).
func keepDAXClient(t *testing.T) {
	prev := registeredDAXClient()
	t.Cleanup(func() { RegisterDAXClient(prev) })
}

// TestRequestBodyReadAfterSDKClose replays what net/http's connection writer does late:
// after the response headers are in, client.Do has returned and smithy-go has closed the
// request body, the writer still reads that body once more (to check nothing follows
// ContentLength). smithy-go's body answers that read with io.EOF as an error, through its
// WriteTo, and net/http then closes the connection under the response the SDK is still
// reading: "deserialization failed ... use of closed network connection" on large items
// under CPU load. The driver's HTTP client must make that read a clean end of body.
func TestRequestBodyReadAfterSDKClose(t *testing.T) {
	payload := bytes.Repeat([]byte(`{"k":"v"}`), 100)
	var kept *http.Request // the request as the transport got it, read after the SDK is done
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		kept = r
		// What the writer sends first: exactly ContentLength bytes.
		if n, err := io.Copy(io.Discard, io.LimitReader(r.Body, r.ContentLength)); err != nil || n != r.ContentLength {
			return nil, fmt.Errorf("send body: %d of %d bytes: %v", n, r.ContentLength, err)
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	client := sdkHTTPClient(&http.Client{Transport: rt})

	req := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	req.Method = http.MethodPost
	req.URL.Scheme, req.URL.Host = "http", "127.0.0.1:1"
	req, err := req.SetStream(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	// The SDK's own last step: Do, then close the body it built.
	if _, _, err := smithyhttp.NewClientHandlerWithOptions(client).Handle(context.Background(), req); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	if kept == nil {
		t.Fatal("the transport got no request")
	}
	// net/http's check for bytes past ContentLength, after the SDK closed the body.
	if n, err := io.Copy(io.Discard, kept.Body); err != nil || n != 0 {
		t.Errorf("reading the request body after the SDK closed it: %d bytes, error %v; want 0 bytes and no error (net/http closes the connection on an error)", n, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
