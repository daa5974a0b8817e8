//go:build integration

package elasticsearch

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver"
	"github.com/ndbench/ndbench/internal/workload"
)

// servers holds both test servers by flavor; TestMain starts them at once.
var servers = map[string]*testserver.Server{}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// validation is the engine's value check, which drivertest.Corruption holds the driver to.
var validation = drivertest.Codec[workload.Check]{Encode: workload.EncodeValue, Check: workload.CheckValue, OK: workload.CheckOK, Corrupt: workload.CheckCorrupt}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	starts := map[string]func(context.Context) (*testserver.Server, error){
		"elasticsearch": testserver.Elasticsearch,
		"opensearch":    testserver.OpenSearch,
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for name, start := range starts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := start(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			servers[name] = s
		}()
	}
	wg.Wait()
	defer func() {
		for _, s := range servers {
			if err := s.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", err)
			}
		}
	}()
	if len(errs) > 0 {
		// A server that fails to start fails the package; it never skips the tests.
		fmt.Fprintf(os.Stderr, "FAIL: testserver: %v\n", errors.Join(errs...))
		return 1
	}
	code := m.Run()
	if code != 0 {
		for _, s := range servers {
			fmt.Fprintf(os.Stderr, "--- testserver %s on %s: last lines of %s:\n%s\n", s.Name, s.Addr(), s.LogPath(), s.LogTail())
		}
	}
	return code
}

var flavors = []string{"elasticsearch", "opensearch"}

// eachFlavor runs f as a subtest against each server.
func eachFlavor(t *testing.T, f func(t *testing.T, flavor string)) {
	for _, fl := range flavors {
		t.Run(fl, func(t *testing.T) { f(t, fl) })
	}
}

// open initialises a driver against the flavor's server with extra option values.
func open(t testing.TB, flavor string, values map[string]string) *Driver {
	t.Helper()
	// A generous client timeout: the test machine is shared with other servers' JVMs, and
	// a loaded one takes seconds to create an index.
	base := map[string]string{"flavor": flavor, "addrs": servers[flavor].Addr(), "timeout": "30s"}
	return drivertest.Open(t, "elasticsearch", base, values).(*Driver)
}

// raw sends a request to the flavor's server behind the driver's back and returns the
// status and body.
func raw(t testing.TB, flavor, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+servers[flavor].Addr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestWriteReadMiss(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		d := open(t, fl, map[string]string{"index": "rw"})
		ctx := drivertest.Context(t)
		values := map[string][]byte{
			"k-binary":    {0, 1, 2, 0xff, 0, 'x', '"', '\\'},
			"k text/with": []byte("hello, world"),
			"k-empty":     {},
		}
		for k, v := range values {
			if err := d.Write(ctx, k, v); err != nil {
				t.Fatalf("write %s: %v", k, err)
			}
		}
		for k, want := range values {
			got, err := d.Read(ctx, k)
			if err != nil || !bytes.Equal(got, want) || got == nil {
				t.Errorf("read %s: %q, %v; want %q", k, got, err, want)
			}
		}
		if _, err := d.Read(ctx, "never-written"); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("read of a missing key: want ErrNotFound, got %v", err)
		}
		info := d.ConnectionInfo()
		if !strings.Contains(info["version"], ".") || info["flavor"] != fl {
			t.Errorf("connection info %v", info)
		}
	})
}

// TestIndexSettings checks that a created index has the shards, replicas, refresh
// interval and strict mapping asked for, and that a mapping error is rejected.
func TestIndexSettings(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		d := open(t, fl, map[string]string{"index": "settings", "shards": "2", "replicas": "0", "refreshInterval": "-1"})
		_, body := raw(t, fl, "GET", "/settings/_settings", "")
		for _, want := range []string{`"number_of_shards":"2"`, `"number_of_replicas":"0"`, `"refresh_interval":"-1"`} {
			if !strings.Contains(body, want) {
				t.Errorf("settings %s lack %s", body, want)
			}
		}
		// A document of another shape (the driver never sends one) fails the mapping.
		st, body := raw(t, fl, "PUT", "/settings/_doc/x", `{"other":1}`)
		if st != http.StatusBadRequest {
			t.Fatalf("unknown field: %d %s, want 400", st, body)
		}
		se := parseServerError(st, []byte(body))
		if c := classify(se); c != driver.ClassRejected {
			t.Errorf("mapping error %v: class %v, want rejected", se, c)
		}
		_ = d
	})
}

// TestValidationDetectsCorruption writes through the driver, changes the stored value
// behind its back and checks the validation path reports it corrupt.
func TestValidationDetectsCorruption(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		d := open(t, fl, map[string]string{"index": "valid"})
		drivertest.Corruption(t, d, validation, drivertest.Tamper{
			Key: "valid-1",
			Change: func(_ context.Context, key string, read []byte) error {
				doc := fmt.Sprintf(`{"key":%q,"value":%q}`, key, base64.StdEncoding.EncodeToString(drivertest.FlipByte(read, -5)))
				if st, body := raw(t, fl, "PUT", "/valid/_doc/"+key, doc); st >= 300 {
					return fmt.Errorf("overwrite behind the driver's back: %d %s", st, body)
				}
				return nil
			},
		})
	})
}

// TestSearch checks both search types find written documents once the index refreshed,
// and that a key never written is a miss.
func TestSearch(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		for _, randomize := range []string{"true", "false"} {
			index := "search-" + randomize
			d := open(t, fl, map[string]string{"index": index, "document": "words", "words": "8", "randomizeStrings": randomize})
			ctx := drivertest.Context(t)
			keys := []string{"s-1", "s-2", "s-3"}
			for _, k := range keys {
				if err := d.Write(ctx, k, []byte("v-"+k)); err != nil {
					t.Fatal(err)
				}
			}
			raw(t, fl, "POST", "/"+index+"/_refresh", "")
			for _, typ := range []string{"term", "match"} {
				opts, _ := driver.NewOptions("elasticsearch", map[string]string{"flavor": fl, "addrs": servers[fl].Addr(),
					"index": index, "document": "words", "randomizeStrings": randomize, "searchType": typ})
				if err := d.Reconfigure(ctx, opts); err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					if _, err := d.Do(ctx, opSearch, k, nil); err != nil {
						t.Errorf("randomize=%s %s search for %s: %v", randomize, typ, k, err)
					}
				}
			}
			// A term search for a key never written misses.
			opts, _ := driver.NewOptions("elasticsearch", map[string]string{"flavor": fl, "addrs": servers[fl].Addr(),
				"index": index, "document": "words", "randomizeStrings": randomize, "searchType": "term"})
			_ = d.Reconfigure(ctx, opts)
			if _, err := d.Do(ctx, opSearch, "never", nil); !errors.Is(err, driver.ErrNotFound) {
				t.Errorf("term search for a key never written: %v, want a miss", err)
			}
			_, body := raw(t, fl, "GET", "/"+index+"/_doc/s-1", "")
			if want := titleWord("s-1", randomize == "true"); !strings.Contains(body, `"text":"`+want+" ") {
				t.Errorf("document %s: text does not start with the title word %q", body, want)
			}
		}
	})
}

// partialIndex creates an index whose key field is a long, so documents with numeric
// keys are indexed and the others fail the mapping: a real partial _bulk failure.
func partialIndex(t *testing.T, fl, index string) {
	t.Helper()
	st, body := raw(t, fl, "PUT", "/"+index, `{"mappings":{"dynamic":"strict","properties":{"key":{"type":"long"},"value":{"type":"binary"}}}}`)
	if st >= 300 && !strings.Contains(body, "already_exists") {
		t.Fatalf("create %s: %d %s", index, st, body)
	}
}

// TestBulkPartialFailure checks that a _bulk answer that refuses some documents is
// counted per document: WriteBulk's BulkError has each key's outcome, and with bulkWrite
// each write gets its own document's result.
func TestBulkPartialFailure(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		partialIndex(t, fl, "partial")
		d := open(t, fl, map[string]string{"index": "partial", "createIndex": "false"})
		ctx := drivertest.Context(t)
		keys := []string{"1", "x", "2", "y"}
		err := d.WriteBulk(ctx, keys, [][]byte{[]byte("a"), []byte("b"), []byte("c"), []byte("d")})
		var be *driver.BulkError
		if !errors.As(err, &be) || len(be.Errs) != 4 {
			t.Fatalf("bulk with two refused documents: %v, want a BulkError of 4", err)
		}
		for i, k := range keys {
			wantFail := k == "x" || k == "y"
			if (be.Errs[i] != nil) != wantFail {
				t.Errorf("key %s: %v, want failed=%v", k, be.Errs[i], wantFail)
			}
			if wantFail && driver.Classify(be.Errs[i]) != driver.ClassRejected {
				t.Errorf("key %s: class %v (%v), want rejected", k, driver.Classify(be.Errs[i]), be.Errs[i])
			}
		}
		if c := driver.Classify(err); c != driver.ClassRejected {
			t.Errorf("BulkError class %v, want rejected", c)
		}
		if got, err := d.Read(ctx, "2"); err != nil || string(got) != "c" {
			t.Errorf("read of a document the partial bulk indexed: %q, %v", got, err)
		}

		b := open(t, fl, map[string]string{"index": "partial", "createIndex": "false", "bulkWrite": "true", "bulkFlushInterval": "50ms"})
		var wg sync.WaitGroup
		results := make([]error, 6)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := strconv.Itoa(10 + i)
				if i%2 == 1 {
					k = "bad-" + k
				}
				results[i] = b.Write(ctx, k, []byte("w"))
			}()
		}
		wg.Wait()
		for i, err := range results {
			if (err != nil) != (i%2 == 1) || (err != nil && driver.Classify(err) != driver.ClassRejected) {
				t.Errorf("bulk write %d: %v (class %v); want odd ones rejected, even ones indexed", i, err, driver.Classify(err))
			}
		}
	})
}

// TestBulkWrite writes through the shared bulk indexer from many goroutines and reads
// every document back.
func TestBulkWrite(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		d := open(t, fl, map[string]string{"index": "bulkw", "bulkWrite": "true", "bulkSize": "16", "bulkConcurrency": "2"})
		ctx := drivertest.Context(t)
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for g := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					k := fmt.Sprintf("b-%d-%d", g, i)
					if err := d.Write(ctx, k, []byte(k)); err != nil {
						errs <- fmt.Errorf("write %s: %w", k, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for g := range 20 {
			k := fmt.Sprintf("b-%d-9", g)
			if got, err := d.Read(ctx, k); err != nil || string(got) != k {
				t.Errorf("read %s: %q, %v", k, got, err)
			}
		}
	})
}

// TestBulkBodyOutlivesItsRequest: net/http may still be sending a request's body after
// the response came back (a server that refuses a request from its headers answers
// before it has read the body), so the bulk indexer must not build its next request into
// the same buffer. Elasticsearch refuses a body over http.max_content_length (100 MB) from
// its Content-Length with 413 at once; the indexer then builds its next request while
// the transport still sends that body, and under -race (as CI runs it) a reused buffer is
// a reported race with the transport's writer. Afterwards the indexer carries on.
func TestBulkBodyOutlivesItsRequest(t *testing.T) {
	const fl = "elasticsearch"     // the indexer is the same code for both flavors
	const docs, size = 20, 4 << 20 // base64 in JSON: ~112 MB per _bulk
	// Each batch is sent once full: the flush interval is longer than the writes can take
	// to queue (21 s in one CI run, where a 5 s interval sent part batches under the
	// limit), so both _bulk requests are over it, and the second is built as soon as the
	// first is refused, while the transport may still be sending it.
	d := open(t, fl, map[string]string{"index": "bulkbody", "bulkWrite": "true", "bulkSize": strconv.Itoa(docs),
		"bulkConcurrency": "1", "bulkFlushInterval": "1m"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	value := bytes.Repeat([]byte("v"), size) // shared: the driver copies it into its document
	var wg sync.WaitGroup
	var refused atomic.Int64
	start := make(chan struct{})
	for g := range 2 * docs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// A batch over the indexing-pressure limit but under the content length is
			// refused with 429 after its body was read.
			err := d.Write(ctx, fmt.Sprintf("big-%d", g), value)
			switch c := driver.Classify(err); {
			case c == driver.ClassThrottled:
			case err != nil && strings.Contains(err.Error(), "413"):
				refused.Add(1)
			default:
				t.Errorf("write %d: %v (class %v), want refused with 413 or 429", g, err, c)
			}
		}()
	}
	close(start)
	wg.Wait()
	if refused.Load() == 0 {
		t.Fatal("no _bulk was refused for http.max_content_length: the test did not test")
	}
	// The indexer carries on: a full batch of small documents (a part batch would wait
	// the minute's flush interval).
	after := make(chan error, docs)
	for g := range docs {
		go func() { after <- d.Write(ctx, fmt.Sprintf("after-%d", g), []byte("ok")) }()
	}
	for range docs {
		if err := <-after; err != nil {
			t.Fatalf("the bulk indexer after the refusals: %v", err)
		}
	}
	if got, err := d.Read(ctx, "after-0"); err != nil || string(got) != "ok" {
		t.Errorf("read after the refusals: %q, %v", got, err)
	}
}

// TestRollingIndexes writes through a template-created rolled index and reads and
// searches across INDEX-*.
func TestRollingIndexes(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		d := open(t, fl, map[string]string{"index": "roll", "indexRollsPerDay": "24", "shards": "2", "document": "words"})
		ctx := drivertest.Context(t)
		if err := d.Write(ctx, "r-1", []byte("one")); err != nil {
			t.Fatal(err)
		}
		// The same key in an older roll: reads return the newest index's copy.
		if st, body := raw(t, fl, "PUT", "/roll-2000-01-01-0000/_doc/r-1", `{"key":"r-1","value":"b2xk"}`); st >= 300 {
			t.Fatalf("older roll: %d %s", st, body)
		}
		raw(t, fl, "POST", "/roll-*/_refresh", "")
		if got, err := d.Read(ctx, "r-1"); err != nil || string(got) != "one" {
			t.Errorf("read across rolls: %q, %v; want the newest roll's copy", got, err)
		}
		if _, err := d.Do(ctx, opSearch, "r-1", nil); err != nil {
			t.Errorf("search across rolls: %v", err)
		}
		idx := d.writeIndex(time.Now())
		_, body := raw(t, fl, "GET", "/"+idx+"/_settings", "")
		if !strings.Contains(body, `"number_of_shards":"2"`) {
			t.Errorf("rolled index %s did not get the template's settings: %s", idx, body)
		}
	})
}

// TestSecretsNeverShown checks that password and apiKey appear in no error, connection
// info or option listing, also under a mistyped option name.
func TestSecretsNeverShown(t *testing.T) {
	const pw, key = "Sup3rS3cretPw", "QXBpS2V5U2VjcmV0"
	// Security is off on the test servers: the credentials are sent and ignored.
	d := open(t, "elasticsearch", map[string]string{"index": "secret", "username": "elastic", "password": pw, "apiKey": key})
	check := func(what, s string) {
		t.Helper()
		if strings.Contains(s, pw) || strings.Contains(s, key) {
			t.Errorf("%s shows a secret: %s", what, s)
		}
	}
	for k, v := range d.ConnectionInfo() {
		check("ConnectionInfo "+k, v)
	}
	// Errors: a request the server refuses, and a node that is not there.
	check("mapping error", fmt.Sprint(d.Write(drivertest.Context(t), "", []byte("x"))))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := driver.Open(ctx, "elasticsearch", map[string]string{
		"addrs": "http://elastic:" + pw + "@127.0.0.1:1", "password": pw, "apiKey": key, "connectTimeout": "1s"})
	if err == nil {
		t.Fatal("open against a closed port succeeded")
	}
	check("connect error", err.Error())
	_, err = driver.NewOptions("elasticsearch", map[string]string{"apikey": key, "pasword": pw})
	if err == nil {
		t.Fatal("mistyped options accepted")
	}
	check("mistyped option error", err.Error())
	opts, err := driver.NewOptions("elasticsearch", map[string]string{"flavor": "opensearch", "apiKey": key})
	check("field error", fmt.Sprint(opts, err))
}

// TestThrottledByTheServer makes the server shed load for real: an in-flight requests
// circuit breaker of 300 bytes (a dynamic cluster setting, reset after) answers every
// larger request 429 circuit_breaking_exception. A PUT, a write through the bulk indexer
// and a backfill bulk must all count as throttled. (A full write queue,
// es_rejected_execution_exception, needs a static setting and a server of its own; its
// answer is parsed and classified in the unit test TestThrottledAnswers.)
func TestThrottledByTheServer(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		put := open(t, fl, map[string]string{"index": "throttle"})
		bulk := open(t, fl, map[string]string{"index": "throttle", "bulkWrite": "true"})
		setting := func(v string) {
			t.Helper()
			st, body := raw(t, fl, "PUT", "/_cluster/settings", `{"persistent":{"network.breaker.inflight_requests.limit":`+v+`}}`)
			if st != http.StatusOK {
				t.Fatalf("set the in-flight breaker to %s: %d %s", v, st, body)
			}
		}
		setting(`"300b"`)
		t.Cleanup(func() { setting("null") })
		ctx := drivertest.Context(t)
		value := bytes.Repeat([]byte("v"), 1000)
		for name, err := range map[string]error{
			"put":       put.Write(ctx, "t-1", value),
			"bulkWrite": bulk.Write(ctx, "t-2", value),
			"WriteBulk": put.WriteBulk(ctx, []string{"t-3", "t-4"}, [][]byte{value, value}),
		} {
			if c := driver.Classify(err); c != driver.ClassThrottled {
				t.Errorf("%s past the breaker: class %v (%v), want throttled", name, c, err)
			}
		}
	})
}

// TestConformance runs the driver contract's suite against both servers at once (each
// check restarts only its own server). Elasticsearch goes through plain PUTs, OpenSearch
// through the bulk indexer (bulkWrite), so every check (the stall and the outage included)
// holds for both write paths. Its outage check restarts the servers, so it runs last.
func TestConformance(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		t.Parallel()
		srv := servers[fl]
		opts := map[string]string{"flavor": fl, "addrs": srv.Addr(), "index": "conformance", "document": "words", "timeout": "30s"}
		if fl == "opensearch" {
			opts["bulkWrite"] = "true"
		}
		drivertest.Run(t, drivertest.Harness{
			Name:       "elasticsearch",
			Options:    opts,
			LiveValues: map[string]string{"searchType": "match"},
			Pause:      srv.Pause,
			Outage: &drivertest.Outage{
				Stop:  srv.Kill,
				Start: srv.Restart,
				// The JVM serves a moment after /_cluster/health answers; the shards of
				// the index recover after that.
				RecoverWithin: 60 * time.Second,
				Options:       map[string]string{"timeout": "1s"},
			},
		})
	})
}

// BenchmarkGetPut measures one PUT and one GET by id per iteration, from 16 × GOMAXPROCS
// goroutines, against each server: ops per client CPU-second (the test binary's) and the
// server's CPU per operation (its JVMs', from /proc). Run:
//
//	go test -tags integration -run '^$' -bench GetPut -benchtime 20000x ./drivers/elasticsearch/
func BenchmarkGetPut(b *testing.B) {
	for _, fl := range flavors {
		for _, mode := range []string{"put", "bulk"} {
			b.Run(fl+"/"+mode, func(b *testing.B) {
				d := open(b, fl, map[string]string{"index": "bench", "bulkWrite": strconv.FormatBool(mode == "bulk")})
				value := bytes.Repeat([]byte("v"), 100)
				pid := servers[fl].PID()
				cpu0 := procTreeCPU(pid)
				testserver.BenchParallel(b, func(ctx context.Context, i uint64) error {
					k := "k" + strconv.FormatUint(i%10000, 10)
					if err := d.Write(ctx, k, value); err != nil {
						return err
					}
					_, err := d.Read(ctx, k)
					if errors.Is(err, driver.ErrNotFound) {
						err = nil // a GET before the refresh of a concurrent PUT's shard
					}
					return err
				})
				if cpu := procTreeCPU(pid) - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu.Microseconds())/float64(2*b.N), "server-µs/op")
				}
			})
		}
	}
}

// procTreeCPU returns the CPU time of process pid and its descendants (Elasticsearch's
// launcher and server JVMs), from /proc; 0 where there is no /proc.
func procTreeCPU(pid int) time.Duration {
	const tick = 100 // USER_HZ on Linux
	children := map[int][]int{}
	stat := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		stat[p] = fields
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var total int64
	var walk func(p int)
	walk = func(p int) {
		if f := stat[p]; len(f) > 14 {
			for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
				v, _ := strconv.ParseInt(f[i], 10, 64)
				total += v
			}
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return time.Duration(total) * time.Second / tick
}

// refreshing is the driver with every write and delete followed by a refresh of its
// index, so the conformance suite's scans see them at once, as they would after
// refreshInterval.
type refreshing struct {
	*Driver
	t      *testing.T
	flavor string
}

func (r refreshing) Write(ctx context.Context, key string, value []byte) error {
	err := r.Driver.Write(ctx, key, value)
	raw(r.t, r.flavor, "POST", "/"+r.opts.Index+"/_refresh", "")
	return err
}

func (r refreshing) Delete(ctx context.Context, key string) error {
	err := r.Driver.Delete(ctx, key)
	raw(r.t, r.flavor, "POST", "/"+r.opts.Index+"/_refresh", "")
	return err
}

// TestScanAndDelete: delete and scan pass the conformance suite's check on both servers:
// a scan is a range query on the key field sorted by key, so it reads keys in byte order
// from the start key; a deleted document is gone and deleting a missing one is no error.
func TestScanAndDelete(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		raw(t, fl, "DELETE", "/scan-delete", "")
		d := open(t, fl, map[string]string{"index": "scan-delete"})
		if got := driver.ScanOrderOf(d); got != driver.ScanBytes {
			t.Errorf("scan order %v, want bytes", got)
		}
		drivertest.ScanAndDelete(t, refreshing{Driver: d, t: t, flavor: fl})
		if err := d.Delete(drivertest.Context(t), "k-in-no-index"); err != nil {
			t.Errorf("delete before the index exists: %v", err)
		}
	})
}

// TestYCSBE: ycsb-e runs on both servers (the kit's case, ycsb.Run): after the backfill
// (and a refresh) every scan reads keys, its inserts grow the keyspace, nothing fails.
func TestYCSBE(t *testing.T) {
	eachFlavor(t, func(t *testing.T, fl string) {
		ycsb.Run(t, ycsb.Case{
			Driver:  "elasticsearch",
			Presets: []string{"ycsb-e"},
			Open: func(t *testing.T, _ string) driver.Driver {
				raw(t, fl, "DELETE", "/ycsb-e", "")
				return open(t, fl, map[string]string{"index": "ycsb-e"})
			},
			AfterBackfill: func(t *testing.T, _ string) { raw(t, fl, "POST", "/ycsb-e/_refresh", "") },
			// A tenth of the preset's rate: two JVMs share the test machine.
			Tune:     func(w *config.Workload) { w.ReadRate, w.WriteRate = 95, 5 },
			Load:     3 * time.Second,
			MinReads: 10,
		})
	})
}
