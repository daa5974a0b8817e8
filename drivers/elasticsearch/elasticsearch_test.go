package elasticsearch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// TestValidate checks that bad values are field errors naming the option and what is
// allowed.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		values  map[string]string
		field   string
		allowed string
	}{
		{map[string]string{"indexRollsPerDay": "7"}, "indexRollsPerDay", "divisor of 1440"},
		{map[string]string{"index": "Upper"}, "index", "lowercase"},
		{map[string]string{"index": "_hidden"}, "index", "not starting with"},
		{map[string]string{"refreshInterval": "1 second"}, "refreshInterval", "-1 or a number with a unit"},
		{map[string]string{"searchType": "match"}, "searchType", "document=words"},
		{map[string]string{"flavor": "opensearch", "apiKey": "k"}, "apiKey", "OpenSearch has no API keys"},
		{map[string]string{"addrs": "ftp://host"}, "addrs", "http(s)://host:port"},
		{map[string]string{"flavor": "solr"}, "flavor", "elasticsearch"},
		{map[string]string{"document": "json"}, "document", "words"},
		{map[string]string{"bulkSize": "0"}, "bulkSize", ""},
	} {
		_, err := driver.NewOptions("elasticsearch", tc.values)
		var fe *driver.FieldError
		var fes driver.FieldErrors
		switch {
		case errors.As(err, &fe):
		case errors.As(err, &fes) && len(fes) > 0:
			fe = fes[0]
		default:
			t.Errorf("%v: %v, want a field error", tc.values, err)
			continue
		}
		if fe.Field != tc.field || !strings.Contains(fe.Allowed+fe.Error(), tc.allowed) {
			t.Errorf("%v: field %q (%v), want field %q allowing %q", tc.values, fe.Field, fe, tc.field, tc.allowed)
		}
	}
	o, err := driver.NewOptions("elasticsearch", map[string]string{
		"hostName": "es1,es2:9201", "restClientPort": "9300", "isHttps": "true", "indexName": "idx",
		"indexRollsPerDay": "24", "isBulkWrite": "true", "bulkWriteBatchSize": "50", "isRandomizeStrings": "false", "cluster": "c",
	})
	if err != nil {
		t.Fatalf("NDBench property names: %v", err)
	}
	opts := o.(*Options)
	if opts.Port != 9300 || !opts.TLS.Enable || opts.Index != "idx" || opts.IndexRollsPerDay != 24 || !opts.BulkWrite ||
		opts.BulkSize != 50 || opts.RandomizeStrings || opts.Cluster != "c" || len(opts.Addrs) != 2 {
		t.Errorf("NDBench property names map to %+v", opts)
	}
	for addr, want := range map[string]string{"es1": "https://es1:9300", "es2:9201": "https://es2:9201", "http://x": "http://x:9300"} {
		if got, err := nodeURL(addr, 9300, true); err != nil || got != want {
			t.Errorf("nodeURL(%s) = %s, %v; want %s", addr, got, err, want)
		}
	}
}

func TestWriteIndexRolls(t *testing.T) {
	d := &Driver{opts: Options{Index: "idx", IndexRollsPerDay: 24}}
	at := time.Date(2026, 11, 23, 13, 59, 0, 0, time.UTC)
	if got := d.writeIndex(at); got != "idx-2026-11-23-0013" {
		t.Errorf("hourly roll at 13:59: %s", got)
	}
	d.opts.IndexRollsPerDay = 0
	if got := d.writeIndex(at); got != "idx" {
		t.Errorf("no roll: %s", got)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   driver.Class
	}{
		{429, `{"error":{"type":"es_rejected_execution_exception","reason":"rejected execution of coordinating operation"},"status":429}`, driver.ClassThrottled},
		{429, `{"error":{"type":"opensearch_rejected_execution_exception","reason":"queue full"},"status":429}`, driver.ClassThrottled},
		{429, `{"error":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"},"status":429}`, driver.ClassThrottled},
		{503, `{"error":{"type":"cluster_block_exception","reason":"blocked"},"status":503}`, driver.ClassUnavailable},
		{502, `<html>bad gateway</html>`, driver.ClassUnavailable},
		{504, ``, driver.ClassTimeout},
		{400, `{"error":{"type":"document_parsing_exception","reason":"failed to parse field [key] of type [long]"},"status":400}`, driver.ClassRejected},
		{400, `{"error":{"type":"strict_dynamic_mapping_exception","reason":"mapping set to strict"},"status":400}`, driver.ClassRejected},
		{401, `{"error":"unauthorized"}`, driver.ClassRejected},
	} {
		se := parseServerError(tc.status, []byte(tc.body))
		if got := classify(se); got != tc.want {
			t.Errorf("%d %s: %v (%v), want %v", tc.status, tc.body, got, se, tc.want)
		}
	}
}

// TestThrottledAnswers is the one mocked test. A full write queue
// (es_rejected_execution_exception, per document inside a _bulk answer) needs the static
// setting thread_pool.write.queue_size and a server of its own; the integration test
// TestThrottledByTheServer gets real 429s from a circuit breaker instead. Here a request
// answered 429, and one document of a _bulk answered 429, must count as throttled.
func TestThrottledAnswers(t *testing.T) {
	var bulkCalls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Elastic-Product", "Elasticsearch") // the flavor's check
		switch {
		case r.URL.Path == "/_nodes/_local":
			_, _ = io.WriteString(w, `{"cluster_name":"mock","nodes":{"n1":{"version":"8.19.21"}}}`)
		case strings.HasPrefix(r.URL.Path, "/_bulk"):
			bulkCalls.Add(1)
			_, _ = io.WriteString(w, `{"errors":true,"items":[{"index":{"status":201}},{"index":{"status":429,"error":{"type":"es_rejected_execution_exception","reason":"rejected execution"}}}]}`)
		case r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_doc/"):
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"root_cause":[],"type":"es_rejected_execution_exception","reason":"rejected execution of primary operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, primary_operation_bytes=1, max_coordinating_and_primary_bytes=1]"},"status":429}`)
		default:
			_, _ = io.WriteString(w, `{"acknowledged":true}`)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dr, _, err := driver.Open(ctx, "elasticsearch", map[string]string{"addrs": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer dr.Close()
	d := dr.(*Driver)
	err = d.Write(ctx, "k", []byte("v"))
	if c := driver.Classify(err); c != driver.ClassThrottled {
		t.Errorf("write answered 429: class %v (%v), want throttled", c, err)
	}
	err = d.WriteBulk(ctx, []string{"a", "b"}, [][]byte{[]byte("1"), []byte("2")})
	var be *driver.BulkError
	if !errors.As(err, &be) || be.Errs[0] != nil || driver.Classify(be.Errs[1]) != driver.ClassThrottled {
		t.Fatalf("bulk with one document rejected 429: %v, want a BulkError with the second throttled", err)
	}
}

// TestFlavorElasticsearchRefusesOtherServers: with flavor=elasticsearch, a server whose
// answers do not carry Elasticsearch's X-Elastic-Product header (OpenSearch, a proxy
// that answers for it) is refused at Init with an error naming the flavor and the other
// choice; flavor=opensearch talks to the same server. (Not a real OpenSearch: the
// integration tests start one, and this checks the refusal without a second JVM.)
func TestFlavorElasticsearchRefusesOtherServers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/_nodes/_local" {
			_, _ = io.WriteString(w, `{"cluster_name":"other","nodes":{"n1":{"version":"2.19.6"}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"acknowledged":true}`)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := driver.Open(ctx, "elasticsearch", map[string]string{"addrs": srv.URL, "createIndex": "false"})
	var fe *driver.FieldError
	if !errors.As(err, &fe) || fe.Field != "flavor" || !strings.Contains(err.Error(), "opensearch") {
		t.Fatalf("flavor=elasticsearch on a server that is not: %v, want an error naming flavor and opensearch", err)
	}
	dr, _, err := driver.Open(ctx, "elasticsearch", map[string]string{"addrs": srv.URL, "flavor": "opensearch", "createIndex": "false"})
	if err != nil {
		t.Fatalf("flavor=opensearch: %v", err)
	}
	_ = dr.Close()
}
