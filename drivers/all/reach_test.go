package all

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// looksBeyond matches option names that look like a path, a file, code or an address:
// such an option either carries a reach tag, so the API gate checks it, or is listed in
// storeAddress with the reason it needs none.
var looksBeyond = regexp.MustCompile(`(?i)(file|path|dir|descriptor|source|script|url|uri|target|addr|host|server|endpoint|dsn|proxy|socket)`)

// notBeyond are the options matching looksBeyond that stay within the configured store,
// each with why: a store's address is the store the operator (or the API caller, who
// could as well benchmark it from their own machine) points the benchmark at, and the
// driver only speaks that store's protocol to it, not requests of the caller's choosing.
var notBeyond = map[string]string{
	"*.tlsServerName":          "a name the certificate must carry, not a host dialled",
	"cassandra.hosts":          "the store's address",
	"dynamodb.endpoint":        "the store's address (DynamoDB's protocol only)",
	"dynamodb.daxEndpoint":     "the store's address (DAX's protocol only)",
	"elasticsearch.addrs":      "the store's address (the driver's fixed index requests only)",
	"geode.url":                "the store's address (the driver's fixed region requests only)",
	"gremlin.addrs":            "the store's address",
	"gremlin.path":             "the WebSocket path on the store, not a file",
	"gremlin.traversalSource":  "a name on the store (g), not code: the traversals are fixed",
	"http.maxConnsPerHost":     "a number",
	"http.maxIdleConnsPerHost": "a number",
	"http.sourceAddrs":         "this machine's own addresses to connect from (Init refuses one it does not have), not hosts dialled",
	"memcached.servers":        "the store's address",
	"pebble.memTableSize":      "a size (its help speaks of files)",
	"postgres.dsn":             "the store's address (known gap: libpq parameters such as sslrootcert name files)",
	"redis.addrs":              "the store's address",
	"redis.proxy":              "a flag: addrs is a RESP proxy",
	"script.watch":             "a duration (its help speaks of the file)",
}

// TestEveryOptionThatReachesBeyondTheStoreIsMarked lists every bundled driver's options
// and fails for one whose name looks like a path, code or an address but that neither
// carries a reach tag nor is listed in notBeyond: a new driver's file option is then
// gated from the API by its tag, not forgotten.
func TestEveryOptionThatReachesBeyondTheStoreIsMarked(t *testing.T) {
	for _, name := range driver.Names() {
		def, _ := driver.Lookup(name)
		schema, err := driver.Schema(def.NewOptions())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, o := range schema {
			key := name + "." + o.Name
			if len(o.Reach) > 0 {
				continue
			}
			if _, ok := notBeyond[key]; ok {
				continue
			}
			if _, ok := notBeyond["*."+o.Name]; ok {
				continue
			}
			if looksBeyond.MatchString(o.Name) || looksBeyond.MatchString(o.Help) && mentionsFile(o.Help) {
				t.Errorf("option %s looks like it reaches beyond the store (a path, code or an address) but has no reach tag (driver/options.go) and is not in notBeyond", key)
			}
		}
	}
}

// mentionsFile says whether an option's help speaks of files or directories.
func mentionsFile(help string) bool {
	h := strings.ToLower(help)
	return strings.Contains(h, " file") || strings.Contains(h, "directory") || strings.Contains(h, "directories")
}

// TestReachMarks pins the options that are gated, so removing a tag is seen.
func TestReachMarks(t *testing.T) {
	want := map[string][]string{
		"pebble.path":           {driver.ReachPath},
		"redis.tlsCAFile":       {driver.ReachPath},
		"redis.tlsCertFile":     {driver.ReachPath},
		"redis.tlsKeyFile":      {driver.ReachPath},
		"script.source":         {driver.ReachScript},
		"script.file":           {driver.ReachScript, driver.ReachPath},
		"http.url":              {driver.ReachTarget},
		"http.read":             {driver.ReachTarget},
		"http.other2":           {driver.ReachTarget},
		"http.delete":           {driver.ReachTarget},
		"grpc.target":           {driver.ReachTarget},
		"grpc.descriptors":      {driver.ReachPath},
		"grpc.protoImportPaths": {driver.ReachPath},
	}
	for key, reach := range want {
		name, opt, _ := strings.Cut(key, ".")
		def, ok := driver.Lookup(name)
		if !ok {
			t.Fatalf("driver %s not registered", name)
		}
		schema, err := driver.Schema(def.NewOptions())
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(schema, func(o driver.Option) bool { return o.Name == opt })
		if i < 0 {
			t.Errorf("%s: no such option", key)
			continue
		}
		if got := schema[i].Reach; !slices.Equal(got, reach) {
			t.Errorf("%s: reach %v, want %v", key, got, reach)
		}
	}
}
