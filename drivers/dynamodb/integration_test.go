//go:build integration

package dynamodb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

// Credentials for DynamoDB Local, which accepts any. They are secrets to the driver, so
// the tests check they never show.
const (
	testAccessKey = "AKIDNDBENCHTEST42"
	testSecretKey = "s3cr3t-ndbench-Key/xyz"
)

var (
	srv *testserver.Server
	// other is a second DynamoDB Local, the "DAX" side of TestDAXSwitchUnderLoad. It is
	// started beside srv, so the two JVM start-ups overlap.
	other *testserver.Server
)

func TestMain(m *testing.M) {
	// "DAX" in these tests is a plain DynamoDB client for daxEndpoint (another DynamoDB
	// Local, or the same one): no DAX cluster can run here. What it proves is the switch
	// between two clients under load, not DAX itself (see the package documentation).
	RegisterDAXClient(plainClientForDAX)
	// The servers keep their tables in SQLite files (so that they survive a kill, for the
	// outage tests); on tmpfs their syncs cost nothing, which halves the suite's time.
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && os.Getenv("TMPDIR") == "" {
		_ = os.Setenv("TMPDIR", "/dev/shm")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	otherErr := make(chan error, 1)
	go func() {
		var err error
		other, err = testserver.DynamoDBLocal(ctx)
		otherErr <- err
	}()
	code := testserver.Main(m, func(ctx context.Context) (*testserver.Server, error) {
		s, err := testserver.DynamoDBLocal(ctx)
		if err == nil {
			err = <-otherErr
			otherErr <- err
			if err != nil {
				_ = s.Stop()
				err = fmt.Errorf("second DynamoDB Local: %w", err)
			}
		}
		return s, err
	}, func(s *testserver.Server) { srv = s })
	if err := <-otherErr; err == nil {
		if err := other.Stop(); err != nil && code == 0 {
			fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
			code = 1
		}
	}
	cancel()
	os.Exit(code)
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

// plainClientForDAX builds a DynamoDB client for endpoint (an http:// URL of DynamoDB
// Local) with the driver's configuration, standing in for dax.NewFromConfig.
func plainClientForDAX(_ context.Context, cfg aws.Config, endpoint string) (Client, error) {
	return ddb.NewFromConfig(cfg, func(o *ddb.Options) { o.BaseEndpoint = aws.String(endpoint) }), nil
}

func endpointOf(s *testserver.Server) string { return "http://" + s.Addr() }

// baseOptions are the option values of every driver the tests open against s.
func baseOptions(s *testserver.Server, table string) map[string]string {
	return map[string]string{
		"endpoint": endpointOf(s), "region": "us-east-1", "table": table,
		"accessKey": testAccessKey, "secretKey": testSecretKey, "timeout": "5s",
	}
}

// open initialises a driver against the test server with extra option values.
func open(t testing.TB, table string, values map[string]string) *Driver {
	t.Helper()
	return openOn(t, srv, table, values)
}

// openOn is open against server s.
func openOn(t testing.TB, s *testserver.Server, table string, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, "dynamodb", baseOptions(s, table), values).(*Driver)
}

// raw is a plain SDK client for checking and tampering behind the driver's back.
func raw(s *testserver.Server) *ddb.Client {
	return ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpointOf(s)),
		Credentials:  credentials.NewStaticCredentialsProvider("raw", "raw", ""),
	})
}

func TestWriteReadMissAndCapacity(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy"} {
		t.Run(codec, func(t *testing.T) {
			d := open(t, "rw-"+codec, map[string]string{"compression": codec})
			ctx := drivertest.Context(t)
			values := map[string][]byte{
				"k-binary": {0, 1, 2, 0xff, 0, 'x'},
				"k-empty":  {},
				"k-big":    bytes.Repeat([]byte("0123456789"), 30_000),
			}
			for k, v := range values {
				if err := d.Write(ctx, k, v); err != nil {
					t.Fatalf("write %s: %v", k, err)
				}
			}
			for k, want := range values {
				got, err := d.Read(ctx, k)
				if err != nil || !bytes.Equal(got, want) || got == nil {
					t.Errorf("read %s: %d bytes, %v; want %d bytes", k, len(got), err, len(want))
				}
			}
			if _, err := d.Read(ctx, "never-written"); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("missing key: %v, want ErrNotFound", err)
			}
			st := d.DriverStats()
			if st["consumedRCUMilli.read"] <= 0 || st["consumedWCUMilli.write"] <= 0 {
				t.Errorf("consumed capacity not counted: %v", st)
			}
			if st["requests.dynamodb"] != 7 || st["requests.dax"] != 0 {
				t.Errorf("requests by target: %v, want 7 to dynamodb", st)
			}
		})
	}
}

// TestCompressionShrinksItems: a compressible value takes fewer write units compressed,
// which is what compression is for.
func TestCompressionShrinksItems(t *testing.T) {
	value := bytes.Repeat([]byte("compressible "), 4000) // 52 KB
	wcu := map[string]int64{}
	for _, codec := range []string{"none", "gzip"} {
		d := open(t, "shrink-"+codec, map[string]string{"compression": codec})
		if err := d.Write(drivertest.Context(t), "k", value); err != nil {
			t.Fatal(err)
		}
		wcu[codec] = d.DriverStats()["consumedWCUMilli.write"]
	}
	if wcu["gzip"] <= 0 || wcu["gzip"] >= wcu["none"] {
		t.Errorf("write units: gzip %d, none %d milli-WCU; want gzip below none", wcu["gzip"], wcu["none"])
	}
}

func TestBulk(t *testing.T) {
	d := open(t, "bulk", nil)
	ctx := drivertest.Context(t)
	var keys []string
	var values [][]byte
	for i := 0; i < 130; i++ { // more than 5 BatchWriteItem requests and 1 BatchGetItem
		keys = append(keys, fmt.Sprintf("b-%03d", i))
		values = append(values, []byte(strconv.Itoa(i)))
	}
	keys = append(keys, "b-007") // twice: the last value wins
	values = append(values, []byte("last"))
	if err := d.WriteBulk(ctx, keys, values); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadBulk(ctx, append([]string{"b-missing", "b-007", "b-007"}, keys[:120]...))
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != nil || string(got[1]) != "last" || string(got[2]) != "last" || string(got[3]) != "0" || string(got[122]) != "119" {
		t.Errorf("bulk read: %q %q %q %q %q", got[0], got[1], got[2], got[3], got[122])
	}
	st := d.DriverStats()
	if st["consumedWCUMilli.writeBulk"] < 130_000 || st["consumedRCUMilli.readBulk"] <= 0 {
		t.Errorf("bulk capacity: %v", st)
	}
}

// TestValidationDetectsCorruption: a value changed behind the tool's back (a raw PutItem)
// is reported corrupt by the validation path, not passed as good.
func TestValidationDetectsCorruption(t *testing.T) {
	d := open(t, "valid", nil)
	drivertest.Corruption(t, d, validation, drivertest.Tamper{
		Key: "valid-1",
		Change: func(ctx context.Context, key string, read []byte) error {
			_, err := raw(srv).PutItem(ctx, &ddb.PutItemInput{TableName: aws.String("valid"), Item: map[string]types.AttributeValue{
				"id": &types.AttributeValueMemberS{Value: key}, "v": &types.AttributeValueMemberB{Value: drivertest.FlipByte(read, -5)}}})
			return err
		},
	})
}

func TestTransactWrite(t *testing.T) {
	d := open(t, "txmain", map[string]string{"mainTableColsPerRow": "2", "childTableNamePrefix": "txchild"})
	ctx := drivertest.Context(t)
	def, _ := driver.Lookup("dynamodb")
	_, idx, ok := def.Operation("transactWrite")
	if !ok {
		t.Fatal("operation transactWrite not declared")
	}
	if _, err := d.Do(ctx, idx, "tx-1", []byte("payload")); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(ctx, "tx-1"); err != nil || string(got) != "payload" {
		t.Errorf("main table: %q, %v", got, err)
	}
	for _, child := range []string{"txchild0", "txchild1"} {
		out, err := raw(srv).GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(child),
			Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "tx-1"}}})
		if err != nil || out.Item == nil {
			t.Errorf("child table %s: item %v, %v", child, out, err)
		}
	}
	if st := d.DriverStats(); st["consumedWCUMilli.transactWrite"] <= 0 {
		t.Errorf("transaction capacity not counted: %v", st)
	}
	// Without createTable, a missing child table fails Init, naming it.
	vals := baseOptions(srv, "txmain")
	vals["childTables"], vals["childTablePrefix"], vals["createTable"] = "3", "txchild", "false"
	_, _, err := driver.Open(ctx, "dynamodb", vals)
	if err == nil || driver.Classify(err) != driver.ClassRejected || !strings.Contains(err.Error(), "txchild2") {
		t.Errorf("open with a missing child table: %v, want rejected naming txchild2", err)
	}
	// A child table deleted behind the driver's back cancels the whole transaction:
	// rejected, and the main table is left alone.
	if _, err := raw(srv).DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String("txchild1")}); err != nil {
		t.Fatal(err)
	}
	_, err = d.Do(ctx, idx, "tx-2", []byte("x"))
	if c := driver.Classify(err); err == nil || c != driver.ClassRejected {
		t.Errorf("transaction with a missing child table: %v (class %v), want rejected", err, c)
	}
	if _, err := d.Read(ctx, "tx-2"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("failed transaction wrote the main table: %v", err)
	}
}

// TestLiveCapacityUpdate: changing readCapacity and writeCapacity live calls UpdateTable,
// and DescribeTable shows the new throughput (the paper's auto-scaling experiment).
func TestLiveCapacityUpdate(t *testing.T) {
	vals := map[string]string{"billingMode": "provisioned", "readCapacityUnits": "5", "writeCapacityUnits": "4"}
	// A table of this run's own: with -count=2 the first run's table, updated to 11 and 7,
	// is still on the server.
	table := fmt.Sprintf("capacity-%d", time.Now().UnixNano())
	d := open(t, table, vals)
	ctx := drivertest.Context(t)
	describe := func() (int64, int64) {
		out, err := raw(srv).DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		pt := out.Table.ProvisionedThroughput
		return aws.ToInt64(pt.ReadCapacityUnits), aws.ToInt64(pt.WriteCapacityUnits)
	}
	if r, w := describe(); r != 5 || w != 4 {
		t.Fatalf("created with %d RCU %d WCU, want 5 4", r, w)
	}
	all := baseOptions(srv, table)
	for k, v := range vals {
		all[k] = v
	}
	all["readCapacity"], all["writeCapacity"] = "11", "7"
	delete(all, "readCapacityUnits")
	delete(all, "writeCapacityUnits")
	opts, err := driver.NewOptions("dynamodb", all)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reconfigure(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if r, w := describe(); r != 11 || w != 7 {
		t.Errorf("after Reconfigure: %d RCU %d WCU, want 11 7", r, w)
	}
	if d.DriverStats()["capacityUpdates"] != 1 || d.ConnectionInfo()["capacity"] != "11 RCU, 7 WCU" {
		t.Errorf("stats %v, info %v", d.DriverStats(), d.ConnectionInfo())
	}
	if err := d.Write(ctx, "after", []byte("x")); err != nil {
		t.Errorf("write after the update: %v", err)
	}
}

// TestThrottlingOnLocal: a burst far beyond a 1 WCU table's capacity. Any failure must be
// throttled; DynamoDB Local 2.6.1 enforces no provisioned throughput, so in practice none
// fails, which is why throttling's classification is tested with the SDK's typed errors
// (TestClassify) instead. The log line records what the server did.
func TestThrottlingOnLocal(t *testing.T) {
	d := open(t, "throttle", map[string]string{"billingMode": "provisioned", "readCapacity": "1", "writeCapacity": "1"})
	value := bytes.Repeat([]byte("t"), 4000) // 4 WCU per write
	var ok, throttled, other atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				err := d.Write(drivertest.Context(t), fmt.Sprintf("t-%d-%d", g, i), value)
				switch c := driver.Classify(err); {
				case err == nil:
					ok.Add(1)
				case c == driver.ClassThrottled:
					throttled.Add(1)
				default:
					other.Add(1)
					t.Errorf("write beyond capacity: %v (class %v), want success or throttled", err, c)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("80 writes of 4 WCU at once on a 1 WCU table: %d ok, %d throttled, %d other", ok.Load(), throttled.Load(), other.Load())
}

// TestDAXSwitchUnderLoad: workers keep writing and reading through one driver while dax
// is switched on and off; no operation fails, and what is written while dax is on lands
// on the "DAX" endpoint (a second DynamoDB Local here), the rest on the first.
func TestDAXSwitchUnderLoad(t *testing.T) {
	ctx := drivertest.Context(t)
	openOn(t, other, "daxswitch", nil) // creates the table on the "DAX" side
	d := open(t, "daxswitch", map[string]string{"daxEndpoint": endpointOf(other)})

	// 0, 2: dynamodb; 1: dax; -1 while Reconfigure runs, when either may serve. An
	// operation is attributed to a phase only when the phase was the same before and
	// after it.
	var phase atomic.Int32
	run := time.Now().UnixNano() // keys unique per run, for -count > 1
	var failures atomic.Int64
	var firstErr atomic.Value
	written := [3]sync.Map{}
	var done [3]atomic.Int64 // operations attributed to each phase
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				key := fmt.Sprintf("dax-%x-%d-%d", run, w, i)
				octx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := d.Write(octx, key, []byte(key))
				if err == nil {
					var got []byte
					got, err = d.Read(octx, key)
					if err == nil && string(got) != key {
						err = fmt.Errorf("read %s: %q", key, got)
					}
				}
				cancel()
				if err != nil {
					// A switch between the write and the read sends the read to the other
					// endpoint, which never saw the key: only that case is tolerated.
					if errors.Is(err, driver.ErrNotFound) && phase.Load() != p {
						continue
					}
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				if p >= 0 && phase.Load() == p {
					written[p].Store(key, true)
					done[p].Add(1)
				}
			}
		}()
	}
	reconf := func(dax bool) {
		all := baseOptions(srv, "daxswitch")
		all["daxEndpoint"] = endpointOf(other)
		all["dax"] = strconv.FormatBool(dax)
		opts, err := driver.NewOptions("dynamodb", all)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Reconfigure(ctx, opts); err != nil {
			t.Fatal(err)
		}
	}
	// Each phase lasts until 40 operations were attributed to it: a fixed time may see
	// none on a loaded machine, when the other JVM's first answers are slow.
	waitPhase := func(p int) {
		deadline := time.Now().Add(15 * time.Second)
		for done[p].Load() < 40 && time.Now().Before(deadline) && failures.Load() == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitPhase(0)
	phase.Store(-1)
	reconf(true)
	phase.Store(1)
	waitPhase(1)
	phase.Store(-1)
	reconf(false)
	phase.Store(2)
	waitPhase(2)
	close(stop)
	wg.Wait()

	if n := failures.Load(); n > 0 {
		t.Fatalf("%d operations failed across the switches; first: %v", n, firstErr.Load())
	}
	st := d.DriverStats()
	if st["requests.dax"] == 0 || st["requests.dynamodb"] == 0 {
		t.Errorf("requests by target: %v", st)
	}
	// Where each phase's keys are: on the first server in phases 0 and 2, the other in 1.
	for p, where := range []*testserver.Server{srv, other, srv} {
		n := 0
		written[p].Range(func(k, _ any) bool {
			n++
			if n > 20 {
				return false
			}
			for _, s := range []*testserver.Server{srv, other} {
				out, err := raw(s).GetItem(ctx, &ddb.GetItemInput{TableName: aws.String("daxswitch"),
					Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: k.(string)}}})
				if err != nil {
					t.Fatal(err)
				}
				if has := out.Item != nil; has != (s == where) {
					t.Errorf("phase %d key %s on %s: present=%v", p, k, s.Addr(), has)
				}
			}
			return true
		})
		if done[p].Load() < 40 {
			t.Errorf("phase %d: %d operations succeeded in 15 s, want 40", p, done[p].Load())
		}
	}
}

// TestSecretsNeverShown: the keys appear in no error, connection info or option listing,
// also when the server is unreachable or an option name is mistyped.
func TestSecretsNeverShown(t *testing.T) {
	d := open(t, "secrets", nil)
	leak := func(what, s string) {
		t.Helper()
		for _, sec := range []string{testAccessKey, testSecretKey} {
			if strings.Contains(s, sec) {
				t.Errorf("%s shows a secret: %s", what, s)
			}
		}
	}
	for k, v := range d.ConnectionInfo() {
		leak("ConnectionInfo["+k+"]", v)
	}
	// An unreachable endpoint, and a table that does not exist.
	_, _, err := driver.Open(drivertest.Context(t), "dynamodb", map[string]string{"endpoint": "http://127.0.0.1:1", "accessKey": testAccessKey, "secretKey": testSecretKey, "timeout": "1s"})
	if err == nil {
		t.Fatal("open against a closed port succeeded")
	}
	leak("open error", err.Error())
	_, _, err = driver.Open(drivertest.Context(t), "dynamodb", map[string]string{"endpoint": endpointOf(srv), "accessKey": testAccessKey, "secretKey": testSecretKey, "table": "no-such-table", "createTable": "false"})
	if err == nil || driver.Classify(err) != driver.ClassRejected {
		t.Errorf("missing table: %v, want rejected", err)
	} else {
		leak("missing table error", err.Error())
	}
	_, err = driver.NewOptions("dynamodb", map[string]string{"secretkey": testSecretKey, "secret_key": testSecretKey})
	if err == nil {
		t.Fatal("mistyped option names accepted")
	}
	leak("mistyped option error", err.Error())
}

// TestDeadlineOnStallLeavesNothing: on a frozen server (SIGSTOP) concurrent operations
// end at their deadline as timeouts; the caller scribbling over its value buffer at once
// races with nothing the SDK still runs (under -race); and once the server thaws and the
// driver is closed, no goroutine of those calls is left.
func TestDeadlineOnStallLeavesNothing(t *testing.T) {
	// The HTTP client's own timeout is 5 minutes (its most): only the operations'
	// deadlines can end them before the minute's patience below.
	d := open(t, "stall", map[string]string{"timeout": "5m"})
	if err := d.Write(drivertest.Context(t), "warm", []byte("x")); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	resume, err := srv.Pause()
	if err != nil {
		t.Fatal(err)
	}
	defer resume()
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := bytes.Repeat([]byte{byte(g)}, 1000)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			var err error
			if g%2 == 0 {
				err = d.Write(ctx, fmt.Sprint("stall-", g), buf)
			} else {
				_, err = d.Read(ctx, "warm")
			}
			if driver.Classify(err) != driver.ClassTimeout {
				wrong.Add(1)
				t.Logf("op %d on a frozen server: %v", g, err)
			}
			for i := range buf { // the engine reuses the buffer at once
				buf[i] = '#'
			}
		}()
	}
	// The frozen server never answers: only the deadline ends an operation. The
	// patience turns one that waits for the server into a failure (it was a wall-clock
	// bound, 1 s past the deadline).
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(time.Minute):
		resume()
		<-ended // the operations log what they got: they end before the test does
		t.Fatal("operations with a 300ms deadline on a frozen server have not returned after a minute")
	}
	if wrong.Load() > 0 {
		t.Errorf("on a frozen server: %d ops were not timeouts", wrong.Load())
	}
	resume()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a patience: the goroutines leave as soon as they can
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines a minute after Close, %d before the stall:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOutageClassified: operations against a killed server fail as unavailable (or
// timeout), never hang past their deadline, and work again after a restart.
func TestOutageClassified(t *testing.T) {
	d := open(t, "outage", nil)
	if err := d.Write(drivertest.Context(t), "o", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		// A read that outlives its deadline (retries past it) fails at the minute's
		// patience; how soon it fails is the machine's (it was bounded at 2 s).
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var err error
		if !testserver.Patiently(func() { _, err = d.Read(ctx, "o") }) {
			t.Fatal("a read with a 1s deadline on a dead server has not returned after a minute")
		}
		cancel()
		if c := driver.Classify(err); err == nil || (c != driver.ClassUnavailable && c != driver.ClassTimeout) {
			t.Errorf("read on a dead server: %v (class %v), want unavailable", err, c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Read(drivertest.Context(t), "o"); err != nil || string(got) != "x" {
		t.Errorf("after restart: %q, %v (the table lives in a file, so it survives)", got, err)
	}
}

// TestConformance runs last: its Outage check restarts the server.
func TestConformance(t *testing.T) {
	opts := baseOptions(srv, "conformance")
	opts["billingMode"] = "provisioned"
	// The "DAX" target is the same server through a second client (see TestMain), so
	// reads after the switch find the writes made before it.
	opts["daxEndpoint"] = endpointOf(srv)
	drivertest.Run(t, drivertest.Harness{
		Name:    "dynamodb",
		Options: opts,
		LiveValues: map[string]string{
			"readCapacity": "6", "writeCapacity": "6", "consistentRead": "true", "dax": "true",
		},
		// An item holds at most 400 KB, key and attribute names included.
		MaxValueSize: 390 << 10,
		Pause:        srv.Pause,
		Outage: &drivertest.Outage{
			Stop:          srv.Kill,
			Start:         srv.Restart,
			RecoverWithin: 20 * time.Second,
			Options:       map[string]string{"timeout": "1s", "connectTimeout": "500ms"},
		},
	})
}

// BenchmarkPutGet measures PutItem and GetItem alternately (one operation per
// iteration; 100-byte values, 1000 keys written first) from 16 x GOMAXPROCS goroutines:
// ops/s, ops per client CPU-second, and the DynamoDB Local JVM's CPU per operation. Run:
//
//	go test -tags integration -run '^$' -bench PutGet -benchtime 20000x ./drivers/dynamodb/
func BenchmarkPutGet(b *testing.B) {
	d := open(b, "bench", map[string]string{"maxConnections": "64"})
	value := bytes.Repeat([]byte("v"), 100)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench-%04d", i)
		if err := d.Write(context.Background(), keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := srv.CPU()
	testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
		key := keys[(i/2)%uint64(len(keys))]
		if i%2 == 0 {
			return d.Write(ctx, key, value)
		}
		_, err := d.Read(ctx, key)
		return err
	})
	if cpu := srv.CPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "server-µs/op")
	}
}

// TestScanAndDelete: delete removes an item (a missing one is no error) and scan reads
// items after a start key in the table's own order (ExclusiveStartKey, Limit n), which
// the driver states, so the conformance suite's check holds it to that order's rules; the
// items follow one another in one total order.
func TestScanAndDelete(t *testing.T) {
	d := open(t, "scan-delete", nil)
	if got := driver.ScanOrderOf(d); got != driver.ScanStore {
		t.Fatalf("scan order %v, want store", got)
	}
	drivertest.ScanAndDelete(t, d)
	ctx := drivertest.Context(t)
	// From the start of the table (an empty ExclusiveStartKey is not allowed, so from a
	// key), consecutive scans of one item each walk the table in its order.
	seen := map[string]bool{}
	out, err := raw(srv).Scan(ctx, &ddb.ScanInput{TableName: aws.String("scan-delete")})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		seen[it["id"].(*types.AttributeValueMemberS).Value] = true
	}
	if len(seen) != 4 {
		t.Fatalf("the table holds %d items after the suite, want its 4", len(seen))
	}
	// In one total order each item is followed by 3, 2, 1 and 0 others: the scans after
	// each item read 6 in all.
	sum := 0
	for k := range seen {
		n, err := d.Scan(ctx, k, 100)
		if err != nil && !errors.Is(err, driver.ErrNotFound) || n > 3 {
			t.Errorf("scan after %s: %d, %v; want at most the 3 other items", k, n, err)
		}
		sum += n
	}
	if sum != 6 {
		t.Errorf("scans after each of the 4 items read %d items in all, want 3+2+1+0 = 6", sum)
	}
}

// TestYCSBE: ycsb-e runs on DynamoDB Local (the kit's case, ycsb.Run): its scans read
// items in the table's order, one Scan from a start key with a limit, so a scan may find
// none; its inserts grow the keyspace; nothing fails.
func TestYCSBE(t *testing.T) {
	ycsb.Run(t, ycsb.Case{
		Driver:  "dynamodb",
		Presets: []string{"ycsb-e"},
		Open:    func(t *testing.T, _ string) driver.Driver { return open(t, "ycsb-e", nil) },
		// A tenth of the preset's rate: DynamoDB Local is a JVM on a shared machine.
		Tune:       func(w *config.Workload) { w.ReadRate, w.WriteRate = 95, 5 },
		MinReads:   10,
		ScanMisses: 1,
	})
}
