package elasticsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/elastic-transport-go/v8/elastictransport"
	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/ndbench/ndbench/driver"
)

// The operations beyond read and write, in Definition.Operations order (Do's op index).
const (
	opSearch = iota
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "elasticsearch",
		Summary:    "Elasticsearch 8 and OpenSearch 2 over their REST API (documents by key, bulk indexing, search)",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Operations: []driver.Operation{
			{Name: "search", Kind: driver.KindRead, Help: "searchType=term: a term query on the key field; match: a match query on the text field (document=words) for the key's title word; no hit is a miss"},
		},
	})
}

// Options configure the elasticsearch driver. NDBench's ES plugin property names
// (ndbench.config.es.*) are accepted through the ndbench tags.
type Options struct {
	Flavor  string   `opt:"flavor" default:"elasticsearch" enum:"elasticsearch,opensearch" help:"the server: elasticsearch (Elasticsearch's transport; a server that does not say it is Elasticsearch is refused) or opensearch (opensearch-go)"`
	Addrs   []string `opt:"addrs" default:"127.0.0.1" ndbench:"hostName" help:"nodes: host, host:port or http(s)://host:port; without a port, port applies; without a scheme, http (https with tls=true)"`
	Port    int      `opt:"port" default:"9200" min:"1" max:"65535" alias:"httpPort" ndbench:"restClientPort" help:"HTTP port of the addresses that give none"`
	Cluster string   `opt:"cluster" default:"" ndbench:"cluster" help:"expected cluster name: Init fails when the server's differs; empty checks nothing"`
	APIKey  string   `opt:"apiKey" default:"" secret:"true" help:"Elasticsearch API key (base64 id:key), sent as Authorization: ApiKey; replaces username/password"`

	Index            string `opt:"index" default:"ndbench_index" ndbench:"indexName" help:"index name, or the prefix of the rolling indexes"`
	IndexRollsPerDay int    `opt:"indexRollsPerDay" default:"0" min:"0" max:"1440" ndbench:"indexRollsPerDay" help:"0: one index; N: writes go to INDEX-YYYY-MM-DD-NNNN, a new index N times per UTC day (N divides 1440)"`
	CreateIndex      bool   `opt:"createIndex" default:"true" help:"create the index (rolling: an index template) with the settings and mapping below when missing"`
	Shards           int    `opt:"shards" default:"1" min:"1" max:"1024" help:"number_of_shards of a created index"`
	Replicas         int    `opt:"replicas" default:"0" min:"0" max:"32" help:"number_of_replicas of a created index"`
	RefreshInterval  string `opt:"refreshInterval" default:"1s" help:"refresh_interval of a created index: an Elasticsearch duration (500ms, 1s, 30s) or -1 (no refresh)"`

	Document         string `opt:"document" default:"value" enum:"value,words" help:"value: {key, value}; words: also a text field of random words, as NDBench's documents (for match searches)"`
	Words            int    `opt:"words" default:"20" min:"1" max:"10000" help:"document=words: words in the text field"`
	RandomizeStrings bool   `opt:"randomizeStrings" default:"true" ndbench:"isRandomizeStrings" help:"document=words: true draws random letters for each word; false draws from a dictionary of fake words (dog-ab, ...), which indexes like natural language"`

	BulkWrite         bool          `opt:"bulkWrite" default:"false" ndbench:"isBulkWrite" help:"the write op goes through a shared bulk indexer (each write still waits for its own document's result)"`
	BulkSize          int           `opt:"bulkSize" default:"100" min:"1" max:"10000" ndbench:"bulkWriteBatchSize" help:"documents per _bulk request (bulkWrite, and the most backfill sends at once)"`
	BulkFlushInterval time.Duration `opt:"bulkFlushInterval" default:"5ms" min:"0s" max:"1m" help:"bulkWrite: how long a started batch waits for more documents before it is sent"`
	BulkConcurrency   int           `opt:"bulkConcurrency" default:"4" min:"1" max:"256" help:"bulkWrite: _bulk requests in flight at once"`

	SearchType string `opt:"searchType" default:"term" enum:"term,match" live:"true" help:"the search operation: term on the key field, or match on the text field (needs document=words)"`

	Auth     driver.AuthOptions
	TLS      driver.TLSOptions `tls.alias:"isHttps"`
	Timeouts driver.TimeoutOptions
}

var refreshRe = regexp.MustCompile(`^(-1|[0-9]+(nanos|micros|ms|s|m|h|d))$`)

// Validate checks the rules that tie options together; driver.NewOptions calls it, so the
// config store rejects such values up front with the option's name.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	if o.IndexRollsPerDay > 0 && 1440%o.IndexRollsPerDay != 0 {
		errs = append(errs, &driver.FieldError{Field: "indexRollsPerDay", Value: strconv.Itoa(o.IndexRollsPerDay),
			Allowed: "0, or a divisor of 1440 (minutes per day): 1, 2, 3, 4, 5, 6, 8, ..., 24, ..., 1440"})
	}
	if !validIndexName(o.Index) {
		errs = append(errs, &driver.FieldError{Field: "index", Value: o.Index,
			Allowed: "a lowercase index name without \\ / * ? \" < > | , # : or spaces, not starting with _ - +"})
	}
	if !refreshRe.MatchString(o.RefreshInterval) {
		errs = append(errs, &driver.FieldError{Field: "refreshInterval", Value: o.RefreshInterval,
			Allowed: "-1 or a number with a unit: nanos, micros, ms, s, m, h, d (e.g. 1s)"})
	}
	if o.SearchType == "match" && o.Document != "words" {
		errs = append(errs, &driver.FieldError{Field: "searchType", Value: o.SearchType,
			Allowed: "term, or match with document=words (only those documents have a text field)"})
	}
	if o.APIKey != "" && o.Flavor == "opensearch" {
		errs = append(errs, &driver.FieldError{Field: "apiKey", Value: driver.Redacted,
			Allowed: "empty with flavor=opensearch (OpenSearch has no API keys; use username and password)"})
	}
	if len(o.Addrs) == 0 {
		errs = append(errs, &driver.FieldError{Field: "addrs", Allowed: "at least one node"})
	}
	for _, a := range o.Addrs {
		if _, err := nodeURL(a, o.Port, o.TLS.Enable); err != nil {
			errs = append(errs, &driver.FieldError{Field: "addrs", Value: driver.Shown(false, a), Allowed: "host, host:port or http(s)://host:port"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validIndexName applies Elasticsearch's rules for index names, so a bad name is a field
// error before anything is sent.
func validIndexName(s string) bool {
	if s == "" || len(s) > 200 || s == "." || s == ".." || strings.ToLower(s) != s {
		return false
	}
	if strings.ContainsAny(s, "\\/*?\"<>|, #:") || strings.ContainsAny(s[:1], "_-+") {
		return false
	}
	return true
}

// nodeURL turns one entry of addrs into a node URL.
func nodeURL(addr string, port int, tls bool) (string, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", errors.New("empty address")
	}
	if !strings.Contains(addr, "://") {
		scheme := "http://"
		if tls {
			scheme = "https://"
		}
		addr = scheme + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("not a node address")
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(port))
	}
	return u.String(), nil
}

// performer is what both clients offer: the request goes to a node of the pool, with the
// client's authentication, and the answer comes back as is. The driver builds every
// request itself, so the two servers share all of its code.
type performer interface {
	Perform(*http.Request) (*http.Response, error)
}

// Driver is the elasticsearch driver. It is safe for concurrent use after Init.
type Driver struct {
	opts    Options
	client  performer
	hc      *http.Transport
	base    string // the first node, for messages only (shown without credentials)
	secrets []string
	version string
	cluster string

	searchMatch atomic.Bool // searchType=match, switched live

	// life ends with Close: the bulk indexer's requests, which belong to no operation.
	life   context.Context
	stop   context.CancelFunc
	closed atomic.Bool
	bulk   *indexer
	wg     sync.WaitGroup
}

var (
	_ driver.Driver           = (*Driver)(nil)
	_ driver.BulkWriter       = (*Driver)(nil)
	_ driver.Operator         = (*Driver)(nil)
	_ driver.Reconfigurer     = (*Driver)(nil)
	_ driver.ConnectionInfoer = (*Driver)(nil)
)

// Init builds the client for the flavor, checks the server answers (and is the expected
// cluster), and creates the index or the rolling indexes' template when asked.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.opts = *o
	d.searchMatch.Store(o.SearchType == "match")
	for _, s := range []string{o.Auth.Password, o.APIKey} {
		if s != "" {
			d.secrets = append(d.secrets, s)
		}
	}
	tlsConf, err := o.TLS.Config()
	if err != nil {
		return err
	}
	addrs := make([]string, len(o.Addrs))
	for i, a := range o.Addrs {
		addrs[i], _ = nodeURL(a, o.Port, o.TLS.Enable) // Validate checked them
	}
	d.base = driver.Shown(false, addrs[0])
	d.hc = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: o.Timeouts.Connect, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: o.Timeouts.Connect,
		// Every worker keeps a connection: the default of 2 idle connections per host
		// would open and close connections under load.
		MaxIdleConnsPerHost: 1024,
		MaxIdleConns:        1024,
		IdleConnTimeout:     90 * time.Second,
		// Both servers gzip answers for a client that accepts it, which Go's transport
		// asks for by default: for answers of a few hundred bytes that is CPU spent on
		// both sides (flate was the client's largest cost after syscalls) for nothing.
		DisableCompression: true,
	}
	// The driver never retries on its own (a benchmark counts what the store answered),
	// and the per-request timeout is the op's context plus Timeouts.Request.
	switch o.Flavor {
	case "opensearch":
		c, err := opensearch.NewClient(opensearch.Config{
			Addresses: addrs, Username: o.Auth.Username, Password: o.Auth.Password,
			Transport: d.hc, DisableRetry: true, HealthCheckMaxRetries: -1,
		})
		if err != nil {
			return d.fail("create opensearch client", err)
		}
		d.client = c
	default:
		// Elasticsearch's transport, not go-elasticsearch's client: the client package
		// links its typed API (~860 packages, a quarter of the Go source the tests
		// compile, ~190 s of CPU per build mode on a new machine) that the driver never
		// calls. What the client added that matters, refusing a server that is not
		// Elasticsearch, hello does.
		urls := make([]*url.URL, len(addrs))
		for i, a := range addrs {
			u, err := url.Parse(a)
			if err != nil {
				return d.fail("create elasticsearch client", err)
			}
			urls[i] = u
		}
		topts := []elastictransport.Option{elastictransport.WithURLs(urls...), elastictransport.WithTransport(d.hc),
			elastictransport.WithDisableRetry(), elastictransport.WithUserAgent("ndbench")}
		if o.Auth.Username != "" || o.Auth.Password != "" {
			topts = append(topts, elastictransport.WithBasicAuth(o.Auth.Username, o.Auth.Password))
		}
		if o.APIKey != "" {
			topts = append(topts, elastictransport.WithAPIKey(o.APIKey))
		}
		c, err := elastictransport.NewClient(topts...)
		if err != nil {
			return d.fail("create elasticsearch client", err)
		}
		d.client = c
	}
	d.life, d.stop = context.WithCancel(context.Background())
	if err := d.hello(ctx); err != nil {
		return err
	}
	if o.CreateIndex {
		if err := d.createIndex(ctx); err != nil {
			return err
		}
	}
	if o.BulkWrite {
		d.bulk = newIndexer(d, o.BulkSize, o.BulkFlushInterval, o.BulkConcurrency)
	}
	return nil
}

// hello reads the local node's version and the cluster name (checked against cluster).
// It asks _nodes, not GET /: the minimal distributions serve GET / only with the
// rest-root module.
func (d *Driver) hello(ctx context.Context) error {
	var info struct {
		ClusterName string `json:"cluster_name"`
		Nodes       map[string]struct {
			Version string `json:"version"`
		} `json:"nodes"`
	}
	hdr, err := d.doJSONHeader(ctx, http.MethodGet, "/_nodes/_local?filter_path=cluster_name,nodes.*.version", nil, &info)
	if err != nil {
		return d.fail("connect to "+d.base, err)
	}
	// Elasticsearch 7.14 and later name themselves in every answer; OpenSearch and other
	// servers that speak the same API do not (go-elasticsearch's product check).
	if d.opts.Flavor == "elasticsearch" && hdr.Get("X-Elastic-Product") != "Elasticsearch" {
		return driver.Wrap(driver.ClassRejected, &driver.FieldError{Field: "flavor", Value: d.opts.Flavor,
			Allowed: fmt.Sprintf("opensearch: the server at %s does not say it is Elasticsearch (no X-Elastic-Product: Elasticsearch header)", d.base)})
	}
	d.cluster = info.ClusterName
	for _, n := range info.Nodes {
		d.version = d.opts.Flavor + " " + n.Version
	}
	if d.opts.Cluster != "" && d.opts.Cluster != info.ClusterName {
		return driver.Wrap(driver.ClassRejected, &driver.FieldError{Field: "cluster", Value: d.opts.Cluster,
			Allowed: fmt.Sprintf("the name of the cluster at %s, %q (or empty)", d.base, info.ClusterName)})
	}
	return nil
}

// indexBody is the settings and mapping of a created index (or template). dynamic=strict
// makes a document with a field the mapping does not know a mapping error (rejected)
// rather than a silent change of the mapping.
func (d *Driver) indexBody() map[string]any {
	props := map[string]any{
		"key":   map[string]any{"type": "keyword"},
		"value": map[string]any{"type": "binary"},
	}
	if d.opts.Document == "words" {
		props["text"] = map[string]any{"type": "text"}
	}
	return map[string]any{
		"settings": map[string]any{"index": map[string]any{
			"number_of_shards":   d.opts.Shards,
			"number_of_replicas": d.opts.Replicas,
			"refresh_interval":   d.opts.RefreshInterval,
		}},
		"mappings": map[string]any{"dynamic": "strict", "properties": props},
	}
}

// createIndex creates the index, or with rolling indexes a composable index template for
// INDEX-*, so that each rolled index is created by its first write with these settings.
// An index or template that exists is kept as it is: a second node, or a run that reuses
// data, must not fail.
func (d *Driver) createIndex(ctx context.Context) error {
	body, err := json.Marshal(d.indexBody())
	if err != nil {
		return fmt.Errorf("encode index settings: %w", err)
	}
	if d.opts.IndexRollsPerDay > 0 {
		tmpl := fmt.Sprintf(`{"index_patterns":[%q],"template":%s}`, d.opts.Index+"-*", body)
		if err := d.doJSON(ctx, http.MethodPut, "/_index_template/ndbench-"+d.opts.Index, []byte(tmpl), nil); err != nil {
			return d.fail("create index template for "+d.opts.Index+"-*", err)
		}
		return nil
	}
	err = d.doJSON(ctx, http.MethodPut, "/"+d.opts.Index, body, nil)
	var se *serverError
	if errors.As(err, &se) && (se.Type == "resource_already_exists_exception" || se.Type == "index_already_exists_exception") {
		err = nil
	}
	if err != nil {
		return d.fail("create index "+d.opts.Index, err)
	}
	return nil
}

// writeIndex is the index writes go to now.
func (d *Driver) writeIndex(now time.Time) string {
	n := d.opts.IndexRollsPerDay
	if n == 0 {
		return d.opts.Index
	}
	now = now.UTC()
	minute := now.Hour()*60 + now.Minute()
	return fmt.Sprintf("%s-%s-%04d", d.opts.Index, now.Format("2006-01-02"), minute/(1440/n))
}

// readIndex is what reads and searches look in: the index, or every rolled one.
func (d *Driver) readIndex() string {
	if d.opts.IndexRollsPerDay == 0 {
		return d.opts.Index
	}
	return d.opts.Index + "-*"
}

// Read gets the document by id (the key) and returns its value field. With rolling
// indexes it searches every rolled index for the id and takes the newest index's copy.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	if d.opts.IndexRollsPerDay > 0 {
		return d.readRolled(ctx, key)
	}
	var doc struct {
		Found  bool `json:"found"`
		Source struct {
			Value []byte `json:"value"`
		} `json:"_source"`
	}
	err := d.doJSON(ctx, http.MethodGet, "/"+d.opts.Index+"/_doc/"+url.PathEscape(key)+"?_source_includes=value", nil, &doc)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			return nil, driver.ErrNotFound // no such document (or no index yet)
		}
		return nil, d.fail("get "+key, err)
	}
	if !doc.Found {
		return nil, driver.ErrNotFound
	}
	return nonNil(doc.Source.Value), nil
}

func (d *Driver) readRolled(ctx context.Context, key string) ([]byte, error) {
	q, err := json.Marshal(map[string]any{
		"size": 1, "_source": []string{"value"},
		"query": map[string]any{"ids": map[string]any{"values": []string{key}}},
		// Index names sort by date and roll number: the newest copy first.
		"sort": []any{map[string]any{"_index": "desc"}},
	})
	if err != nil {
		return nil, fmt.Errorf("encode query: %w", err)
	}
	var res searchResult
	if err := d.doJSON(ctx, http.MethodPost, "/"+d.readIndex()+"/_search?filter_path=hits.hits._source", q, &res); err != nil {
		return nil, d.fail("get "+key, err)
	}
	if len(res.Hits.Hits) == 0 {
		return nil, driver.ErrNotFound
	}
	return nonNil(res.Hits.Hits[0].Source.Value), nil
}

// nonNil keeps an empty value distinguishable from a missing one.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

type searchResult struct {
	Hits struct {
		Hits []struct {
			ID     string `json:"_id"`
			Source struct {
				Value []byte `json:"value"`
			} `json:"_source"`
		} `json:"hits"`
	} `json:"hits"`
}

// Write indexes the document under the key as its id: one PUT, or with bulkWrite a place
// in the next _bulk request, whose answer for this document is Write's result.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if err := d.usable(); err != nil {
		return err
	}
	doc := d.appendDoc(nil, key, value)
	if d.bulk != nil {
		return d.bulk.write(ctx, d.writeIndex(time.Now()), key, doc)
	}
	path := "/" + d.writeIndex(time.Now()) + "/_doc/" + url.PathEscape(key)
	if err := d.doJSON(ctx, http.MethodPut, path, doc, nil); err != nil {
		return d.fail("index "+key, err)
	}
	return nil
}

// WriteBulk sends the keys in _bulk requests of up to bulkSize documents. When the server
// refuses some documents and takes the others, the error is a *driver.BulkError with each
// key's own outcome, so each document is counted by what happened to it.
func (d *Driver) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if err := d.usable(); err != nil {
		return err
	}
	if len(keys) != len(values) {
		return driver.Wrap(driver.ClassRejected, fmt.Errorf("bulk write: %d keys but %d values", len(keys), len(values)))
	}
	index := d.writeIndex(time.Now())
	errs := make([]error, len(keys))
	partial := false
	for lo := 0; lo < len(keys); lo += d.opts.BulkSize {
		hi := min(lo+d.opts.BulkSize, len(keys))
		var body []byte
		for i := lo; i < hi; i++ {
			body = appendAction(body, index, keys[i])
			body = d.appendDoc(body, keys[i], values[i])
			body = append(body, '\n')
		}
		itemErrs, err := d.sendBulk(ctx, body, hi-lo)
		if err != nil {
			return err // the request as a whole failed: every key did
		}
		for i, e := range itemErrs {
			if e != nil {
				errs[lo+i] = e
				partial = true
			}
		}
	}
	if partial {
		return &driver.BulkError{Errs: errs}
	}
	return nil
}

// appendAction appends a _bulk index action line for key.
func appendAction(b []byte, index, key string) []byte {
	b = append(b, `{"index":{"_index":`...)
	b = appendString(b, index)
	b = append(b, `,"_id":`...)
	b = appendString(b, key)
	return append(b, "}}\n"...)
}

// bulkResponse is a _bulk answer cut down by filter_path to what is checked.
type bulkResponse struct {
	Errors bool `json:"errors"`
	Items  []map[string]struct {
		Status int          `json:"status"`
		Error  *serverError `json:"error"`
	} `json:"items"`
}

// bulkFilter keeps a _bulk answer small: only whether anything failed, and per document
// its status and error.
const bulkFilter = "?filter_path=errors,items.*.status,items.*.error"

// sendBulk sends one _bulk body of n documents and returns each document's error (nil
// when indexed), or err when the request as a whole failed.
func (d *Driver) sendBulk(ctx context.Context, body []byte, n int) ([]error, error) {
	var res bulkResponse
	if err := d.doJSON(ctx, http.MethodPost, "/_bulk"+bulkFilter, body, &res); err != nil {
		return nil, d.fail("bulk index", err)
	}
	errs := make([]error, n)
	if !res.Errors {
		return errs, nil
	}
	if len(res.Items) != n {
		return nil, fmt.Errorf("bulk index: %d documents sent, %d answered", n, len(res.Items))
	}
	for i, item := range res.Items {
		for _, r := range item {
			if r.Error != nil || r.Status >= 300 {
				se := r.Error
				if se == nil {
					se = &serverError{}
				}
				se.Status = r.Status
				errs[i] = driver.Wrap(classify(se), fmt.Errorf("index document %d of the bulk: %w", i, se))
			}
		}
	}
	return errs, nil
}

// Do runs the search operation: a term query on the key field, or a match query on the
// text field for the key's title word. A hit is a success (nothing is returned: the
// engine checks only Read's values), no hit is a miss.
func (d *Driver) Do(ctx context.Context, op int, key string, _ []byte) ([]byte, error) {
	if op != opSearch {
		return nil, fmt.Errorf("elasticsearch: no operation %d", op)
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	var q []byte
	if d.searchMatch.Load() {
		q = append(q, `{"size":1,"_source":false,"query":{"match":{"text":`...)
		q = appendString(q, titleWord(key, d.opts.RandomizeStrings))
	} else {
		q = append(q, `{"size":1,"_source":false,"query":{"term":{"key":`...)
		q = appendString(q, key)
	}
	q = append(q, "}}}"...)
	var res searchResult
	if err := d.doJSON(ctx, http.MethodPost, "/"+d.readIndex()+"/_search?filter_path=hits.hits._id", q, &res); err != nil {
		var se *serverError
		if errors.As(err, &se) && se.Type == "index_not_found_exception" {
			return nil, driver.ErrNotFound
		}
		return nil, d.fail("search "+key, err)
	}
	if len(res.Hits.Hits) == 0 {
		return nil, driver.ErrNotFound
	}
	return nil, nil
}

// Scan reads up to n documents whose key is start or follows it, in the keys' byte order:
// a range query on the key field (a keyword, which Lucene orders by its bytes), sorted by
// key, size n, with the documents' value fields; it returns how many hits came back, none
// being driver.ErrNotFound. Searches see what the last refresh made visible
// (refreshInterval), so a key written less than that ago may be missed. With rolling
// indexes it searches every rolled index, where a key written in several counts once per
// copy.
func (d *Driver) Scan(ctx context.Context, start string, n int) (int, error) {
	if err := d.usable(); err != nil {
		return 0, err
	}
	q := append([]byte(nil), `{"size":`...)
	q = strconv.AppendInt(q, int64(n), 10)
	q = append(q, `,"track_total_hits":false,"_source":["value"],"query":{"range":{"key":{"gte":`...)
	q = appendString(q, start)
	q = append(q, `}}},"sort":[{"key":"asc"}]}`...)
	var res searchResult
	if err := d.doJSON(ctx, http.MethodPost, "/"+d.readIndex()+"/_search?filter_path=hits.hits._id,hits.hits._source", q, &res); err != nil {
		var se *serverError
		if errors.As(err, &se) && se.Type == "index_not_found_exception" {
			return 0, driver.ErrNotFound
		}
		return 0, d.fail("scan from "+start, err)
	}
	if len(res.Hits.Hits) == 0 {
		return 0, driver.ErrNotFound
	}
	return len(res.Hits.Hits), nil
}

// Delete removes the key's document; a missing document (or index) is not an error. With
// rolling indexes it deletes the key's copies in every rolled index (_delete_by_query on
// an ids query).
func (d *Driver) Delete(ctx context.Context, key string) error {
	if err := d.usable(); err != nil {
		return err
	}
	var err error
	if d.opts.IndexRollsPerDay > 0 {
		q := append([]byte(`{"query":{"ids":{"values":[`), appendString(nil, key)...)
		q = append(q, "]}}}"...)
		err = d.doJSON(ctx, http.MethodPost, "/"+d.readIndex()+"/_delete_by_query?conflicts=proceed", q, nil)
	} else {
		err = d.doJSON(ctx, http.MethodDelete, "/"+d.opts.Index+"/_doc/"+url.PathEscape(key), nil, nil)
	}
	var se *serverError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return nil
	}
	if err != nil {
		return d.fail("delete "+key, err)
	}
	return nil
}

// Reconfigure switches the live option searchType.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if err := driver.Validate(o); err != nil {
		return err
	}
	d.searchMatch.Store(o.SearchType == "match")
	return nil
}

// ConnectionInfo describes the server and the index, without credentials.
func (d *Driver) ConnectionInfo() map[string]string {
	m := map[string]string{
		"flavor":  d.opts.Flavor,
		"node":    d.base,
		"version": d.version,
		"cluster": d.cluster,
		"index":   d.readIndex(),
	}
	if d.opts.BulkWrite {
		m["bulk"] = fmt.Sprintf("%d documents, %s, %d in flight", d.opts.BulkSize, d.opts.BulkFlushInterval, d.opts.BulkConcurrency)
	}
	return m
}

// Close stops the bulk indexer (pending writes fail) and closes idle connections.
func (d *Driver) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return nil
	}
	if d.stop != nil {
		d.stop()
	}
	if d.bulk != nil {
		d.bulk.close()
	}
	d.wg.Wait()
	if d.hc != nil {
		d.hc.CloseIdleConnections()
	}
	return nil
}

// errClosed fails operations after Close.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("elasticsearch: driver is closed"))

func (d *Driver) usable() error {
	if d.closed.Load() {
		return errClosed
	}
	return nil
}

// doJSON sends a request with a JSON body (nil for none) and decodes a 2xx answer into
// out (nil discards it). A non-2xx answer is a *serverError, classified.
func (d *Driver) doJSON(ctx context.Context, method, path string, body []byte, out any) error {
	_, err := d.doJSONHeader(ctx, method, path, body, out)
	return err
}

// doJSONHeader is doJSON that also returns the answer's header.
func (d *Driver) doJSONHeader(ctx context.Context, method, path string, body []byte, out any) (http.Header, error) {
	if d.opts.Timeouts.Request > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.opts.Timeouts.Request)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return nil, driver.Wrap(driver.ClassRejected, fmt.Errorf("build request: %w", err))
	}
	if body != nil {
		ct := "application/json"
		if strings.HasPrefix(path, "/_bulk") {
			ct = "application/x-ndjson"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := d.client.Perform(req)
	if err != nil {
		if ctx.Err() != nil {
			// The client's own error may hide the deadline (a closed body, a pool error).
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return resp.Header, fmt.Errorf("read answer: %w (%v)", ctx.Err(), err)
		}
		return resp.Header, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		se := parseServerError(resp.StatusCode, data)
		return resp.Header, driver.Wrap(classify(se), se)
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.Header, fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return resp.Header, nil
}

// fail wraps err with what was being done, with every secret scrubbed from the message:
// client errors may quote a URL or a header.
func (d *Driver) fail(what string, err error) error {
	if err == nil {
		return nil
	}
	msg := driver.Shown(false, what+": "+err.Error())
	for _, s := range d.secrets {
		msg = strings.ReplaceAll(msg, s, driver.Redacted)
	}
	return &scrubbed{msg: msg, err: err}
}

// scrubbed is an error whose message was cleaned of secrets; the chain stays reachable
// for errors.Is/As and classification.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
