package config

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/keydist"
	"github.com/ndbench/ndbench/internal/workload"
)

// fakeKV stands in for a real driver; its name is one no real driver uses.
type fakeKVOptions struct {
	Addrs    []string      `opt:"addrs" default:"127.0.0.1:1" alias:"hosts" help:"servers"`
	TTL      time.Duration `opt:"ttl" default:"0s" min:"0s" live:"true" help:"expiry"`
	Mode     string        `opt:"mode" default:"a" enum:"a,b" help:"mode"`
	Cols     int           `opt:"colsPerRow" default:"1" min:"1" max:"100" help:"columns"`
	Password string        `opt:"password" secret:"true" help:"credential"`
}

type fakeOtherOptions struct {
	Depth int `opt:"depth" default:"3" min:"1" help:"depth"`
}

type fakeDriver struct{}

func (fakeDriver) Init(context.Context, any) error              { return nil }
func (fakeDriver) Read(context.Context, string) ([]byte, error) { return nil, driver.ErrNotFound }
func (fakeDriver) Write(context.Context, string, []byte) error  { return nil }
func (fakeDriver) Close() error                                 { return nil }
func newFake() driver.Driver                                    { return fakeDriver{} }
func init()                                                     { registerFakes() }
func registerFakes() {
	driver.MustRegister(driver.Definition{Name: "fake-kv", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeKVOptions{} }})
	driver.MustRegister(driver.Definition{Name: "fake-other", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeOtherOptions{} }})
}

// selectFake is the env that selects the fake driver (pebble is not linked into tests).
var selectFake = []string{"NDBENCH_DRIVER_NAME=fake-kv"}

func mustLoad(t *testing.T, s Sources) *Snapshot {
	t.Helper()
	snap, err := Load(s)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return snap
}

func entry(t *testing.T, s *Snapshot, key string) Entry {
	t.Helper()
	for _, e := range s.Entries {
		if e.Key == key {
			return e
		}
	}
	t.Fatalf("no entry %s", key)
	return Entry{}
}

func fieldErrors(t *testing.T, err error) driver.FieldErrors {
	t.Helper()
	if err == nil {
		t.Fatal("want field errors, got nil")
	}
	fes, ok := driver.AsFieldErrors(err)
	if !ok {
		t.Fatalf("want field errors, got %T: %v", err, err)
	}
	return fes
}

func TestNDBenchMappings(t *testing.T) {
	tests := []struct {
		prop, value string
		check       func(Workload) bool
	}{
		{"numKeys", "20000000", func(w Workload) bool { return w.NumKeys == 20000000 }},
		{"numValues", "1000", func(w Workload) bool { return w.NumValues == 1000 }},
		{"dataSize", "1024", func(w Workload) bool { return w.DataSize == 1024 }},
		{"numReaders", "8", func(w Workload) bool { return w.Readers == 8 }},
		{"numWriters", "9", func(w Workload) bool { return w.Writers == 9 }},
		{"readRateLimit", "7200", func(w Workload) bool { return w.ReadRate == 7200 }},
		{"writeRateLimit", "1800", func(w Workload) bool { return w.WriteRate == 1800 }},
		{"readEnabled", "false", func(w Workload) bool { return !w.ReadEnabled }},
		{"writeEnabled", "false", func(w Workload) bool { return !w.WriteEnabled }},
		{"useVariableDataSize", "true", func(w Workload) bool { return w.VariableDataSize }},
		{"dataSizeLowerBound", "10", func(w Workload) bool { return w.DataSizeMin == 10 }},
		{"dataSizeUpperBound", "20000", func(w Workload) bool { return w.DataSizeMax == 20000 }},
		{"zipfExponent", "0.99", func(w Workload) bool { return w.ZipfExponent == 0.99 }},
		{"numBackfill", "6", func(w Workload) bool { return w.BackfillWorkers == 6 }},
		{"validateChecksum", "true", func(w Workload) bool { return w.ValidateValues }},
		{"cli.loadPattern", "ZIPFIAN", func(w Workload) bool { return w.Pattern == "zipfian" }},
		{"cli.loadPattern", "random", func(w Workload) bool { return w.Pattern == "uniform" }},
		{"cli.windowSize", "50", func(w Workload) bool { return w.WindowSize == 50 }},
		{"cli.windowDurationInSec", "30", func(w Workload) bool { return w.WindowDuration == 30*time.Second }},
		{"NUMKEYS", "7", func(w Workload) bool { return w.NumKeys == 7 }}, // any case
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.prop] = true
		t.Run(tt.prop+"="+tt.value, func(t *testing.T) {
			snap := mustLoad(t, Sources{Env: selectFake, Sets: []string{NDBenchPrefix + tt.prop + "=" + tt.value}})
			if !tt.check(snap.Config.Workload) {
				t.Errorf("%s=%s did not set the workload: %+v", tt.prop, tt.value, snap.Config.Workload)
			}
		})
	}
	// Every property is either mapped (and tested above) or reported as not supported.
	for name, p := range ndbenchProperties() {
		if p.key != "" {
			if !covered[name] {
				t.Errorf("mapping of %s is not tested", name)
			}
			continue
		}
		t.Run(name+" unsupported", func(t *testing.T) {
			snap := mustLoad(t, Sources{Env: selectFake, Sets: []string{NDBenchPrefix + name + "=1"}})
			want := NDBenchPrefix + name + " is not supported: "
			if p.autotune != "" {
				want = NDBenchPrefix + name + " applies to `ndbench autotune` only"
				if got := NDBenchAutoTune(map[string]string{NDBenchPrefix + name: "1"}); got[p.autotune] != "1" {
					t.Errorf("NDBenchAutoTune(%s=1) = %v, want %s=1", name, got, p.autotune)
				}
			}
			if !slices.ContainsFunc(snap.Notices, func(n string) bool { return strings.HasPrefix(n, want) }) {
				t.Errorf("notices %q lack %q", snap.Notices, want)
			}
		})
	}
}

func TestNDBenchDriverPrefixes(t *testing.T) {
	tests := []struct{ prop, key string }{
		{"cass.colsPerRow", "drivers.cassandra.colsPerRow"},
		{"es.indexName", "drivers.elasticsearch.indexName"},
		{"dynamodb.tableName", "drivers.dynamodb.tableName"},
		{"dyno.domain", "drivers.redis.domain"},
		{"redis.addr", "drivers.redis.addr"},
		{"evcache.name", "drivers.memcached.name"},
		{"cockroachdb.dbname", "drivers.postgres.dbname"},
		{"geode.locator", "drivers.geode.locator"}, // a plugin ndbench has no driver for
		{"janusgraph.storage.cql.keyspace", "drivers.janusgraph.storage.cql.keyspace"},
		// A registered driver's options are canonicalised (case-insensitive); while
		// another driver is selected their values are checked against their types and
		// bounds (see TestUnusedDriverValuesChecked), so this one is a number.
		{"fake-other.DEPTH", "drivers.fake-other.depth"},
	}
	for _, tt := range tests {
		t.Run(tt.prop, func(t *testing.T) {
			value := "v1"
			if strings.HasPrefix(tt.prop, "fake-other.") {
				value = "3"
			}
			snap := mustLoad(t, Sources{Env: selectFake, Sets: []string{NDBenchPrefix + tt.prop + "=" + value}})
			want := tt.key + " is not used by driver fake-kv"
			if !slices.Contains(snap.Notices, want) {
				t.Errorf("notices = %q, want %q", snap.Notices, want)
			}
		})
	}
}

func TestEnvMatching(t *testing.T) {
	tests := []struct {
		env   string
		key   string
		value string
	}{
		{"NDBENCH_DRIVER=fake-other", "driver.name", "fake-other"},
		{"NDBENCH_WORKLOAD_READRATE=7", "workload.readRate", "7"},
		{"NDBENCH_WORKLOAD_READ_RATE=7", "workload.readRate", "7"},
		{"ndbench_workload_readrate=7", "workload.readRate", "7"},
		{"NDBENCH_WORKLOAD_NUMREADERS=3", "workload.readers", "3"}, // NDBench alias
		{"NDBENCH_CONFIG_READRATELIMIT=9", "workload.readRate", "9"},
		{"NDBENCH_DRIVERS_FAKE_KV_TTL=2s", "drivers.fake-kv.ttl", "2s"},
		{"NDBENCH_DRIVERS_FAKE_KV_COLSPERROW=4", "drivers.fake-kv.colsPerRow", "4"},
		{"NDBENCH_DRIVERS_FAKE_KV_HOSTS=x:1,y:2", "drivers.fake-kv.addrs", "x:1,y:2"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			snap := mustLoad(t, Sources{Env: []string{"NDBENCH_DRIVER_NAME=fake-kv", tt.env, "HOME=/root", "NDBENCH_TOKEN=x"}})
			e := entry(t, snap, tt.key)
			name, _, _ := strings.Cut(tt.env, "=")
			if e.Value != tt.value || e.Source != "env "+name {
				t.Errorf("entry = %+v, want value %q from env %s", e, tt.value, name)
			}
		})
	}
	t.Run("unregistered driver becomes a notice", func(t *testing.T) {
		snap := mustLoad(t, Sources{Env: []string{"NDBENCH_DRIVER_NAME=fake-kv", "NDBENCH_DRIVERS_REDIS_ADDRS=a:1"}})
		if !slices.Contains(snap.Notices, "drivers.redis.addrs is not used by driver fake-kv") {
			t.Errorf("notices = %q", snap.Notices)
		}
	})
	t.Run("reserved variables are ignored", func(t *testing.T) {
		env := append(slices.Clone(selectFake), "NDBENCH_CASSANDRA_HOME=/opt", "NDBENCH_CACHE=/tmp", "NDBENCH_TOKEN=s")
		mustLoad(t, Sources{Env: env})
	})
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		src  Sources
		// want lists field, value (as shown: the values of unknown keys are redacted, a
		// misspelt key may hold a secret), source, and a piece of the allowed text.
		want [][4]string
	}{
		{
			name: "out of range and unknown keys are all reported",
			src:  Sources{Env: selectFake, Sets: []string{"workload.readRate=-5", "workload.bogus=1", "workload.pattern=spiral"}},
			want: [][4]string{
				{"workload.bogus", driver.Redacted, "--set", "one of the workload options numKeys, numValues"},
				{"workload.pattern", "spiral", "--set", "uniform, random, zipfian"},
				{"workload.readRate", "-5", "--set", "a number from 0 to 1000000000"},
			},
		},
		{
			name: "unknown driver lists the registered ones",
			src:  Sources{Env: []string{"NDBENCH_DRIVER_NAME=nosuch"}},
			want: [][4]string{{"driver.name", "nosuch", "env NDBENCH_DRIVER_NAME", "fake-kv, fake-other"}},
		},
		{
			name: "default driver not in this build",
			src:  Sources{},
			want: [][4]string{{"driver.name", "pebble", "default", "a registered driver"}},
		},
		{
			name: "unknown option of a registered driver names its options, selected or not",
			src:  Sources{Env: selectFake, Sets: []string{"drivers.fake-kv.colour=red", "drivers.fake-other.width=1"}},
			want: [][4]string{
				{"drivers.fake-kv.colour", driver.Redacted, "--set", "addrs, ttl, mode, colsPerRow, password"},
				{"drivers.fake-other.width", driver.Redacted, "--set", "depth"},
			},
		},
		{
			name: "bad option value of the selected driver",
			src:  Sources{Env: append(slices.Clone(selectFake), "NDBENCH_DRIVERS_FAKE_KV_MODE=c")},
			want: [][4]string{{"drivers.fake-kv.mode", "c", "env NDBENCH_DRIVERS_FAKE_KV_MODE", "a, b"}},
		},
		{
			name: "unknown env variable",
			src:  Sources{Env: append(slices.Clone(selectFake), "NDBENCH_READRATE=5")},
			want: [][4]string{{"NDBENCH_READRATE", driver.Redacted, "env NDBENCH_READRATE", "NDBENCH_WORKLOAD_<option>"}},
		},
		{
			name: "unknown section and malformed --set",
			src:  Sources{Env: selectFake, Sets: []string{"readRate=5", "workload.readRate"}},
			want: [][4]string{
				{"readRate", driver.Redacted, "--set", "workload.<option>"},
				{"workload.readRate", "", "--set", "key=value"},
			},
		},
		{
			name: "unknown NDBench core property",
			src:  Sources{Env: selectFake, Sets: []string{"ndbench.config.numKeyz=5"}},
			want: [][4]string{{"ndbench.config.numKeyz", driver.Redacted, "--set", "numKeys"}},
		},
		{
			name: "NDBench name keeps its spelling in the source",
			src:  Sources{Env: selectFake, Sets: []string{"ndbench.config.numReaders=lots"}},
			want: [][4]string{{"workload.readers", "lots", "--set as ndbench.config.numReaders", "from 0 to 10000"}},
		},
		{
			// dataSize is not in use with variable sizes, so only the bounds in use are checked.
			name: "cross-field rules",
			src: Sources{Env: selectFake, Sets: []string{"workload.variableDataSize=true", "workload.dataSizeMin=10",
				"workload.dataSizeMax=5", "workload.validate=true", "workload.dataSize=16"}},
			want: [][4]string{
				{"workload.dataSizeMin", "10", "--set", "at most workload.dataSizeMax (5)"},
				{"workload.dataSizeMin", "10", "--set", "at least 32"},
			},
		},
		{
			name: "validation header with fixed sizes",
			src:  Sources{Env: selectFake, Sets: []string{"workload.validate=true", "workload.dataSize=16"}},
			want: [][4]string{{"workload.dataSize", "16", "--set", "at least 32"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.src)
			fes := fieldErrors(t, err)
			if len(fes) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(fes), len(tt.want), err)
			}
			for i, w := range tt.want {
				fe := fes[i]
				if fe.Field != w[0] || fe.Value != w[1] || fe.Source != w[2] || !strings.Contains(fe.Allowed, w[3]) {
					t.Errorf("error %d = {%q %q %q %q}, want {%q %q %q ...%q...}",
						i, fe.Field, fe.Value, fe.Source, fe.Allowed, w[0], w[1], w[2], w[3])
				}
			}
			// The message a user reads names the key, the value (an unknown key's says it
			// is unknown and hides the value), the source and what is allowed.
			msg := err.Error()
			t.Log(msg)
			for i, w := range tt.want {
				for _, part := range w {
					if part == driver.Redacted && fes[i].Unknown {
						part = fes[i].Field + ": unknown key (its value is not shown)"
					}
					if !strings.Contains(msg, part) {
						t.Errorf("message lacks %q:\n%s", part, msg)
					}
				}
			}
		})
	}
}

func TestSecretRedaction(t *testing.T) {
	const secret = "hunter2"
	snap := mustLoad(t, Sources{Env: selectFake, Sets: []string{
		"drivers.fake-kv.password=" + secret,
		"drivers.cassandra.password=" + secret, // not registered: redacted by name
		"drivers.dynamodb.secretAccessKey=" + secret,
		"drivers.dynamodb.apiKey=" + secret,
		"drivers.fake-kv.addrs=127.0.0.1:6379", // not a secret
		"drivers.cassandra.keyspace=ks",        // a driver not in the build: its schema is unknown
	}})
	for _, key := range []string{"drivers.fake-kv.password", "drivers.cassandra.password",
		"drivers.dynamodb.secretAccessKey", "drivers.dynamodb.apiKey"} {
		if e := entry(t, snap, key); e.Value != driver.Redacted || !e.Secret {
			t.Errorf("%s entry = %+v, want redacted", key, e)
		}
	}
	if e := entry(t, snap, "drivers.fake-kv.addrs"); e.Value != "127.0.0.1:6379" || e.Secret {
		t.Errorf("addrs entry = %+v, want shown", e)
	}
	if e := entry(t, snap, "drivers.cassandra.keyspace"); e.Value != driver.Redacted || !e.Secret {
		t.Errorf("keyspace of a driver not in the build = %+v, want redacted", e)
	}
	if v, _, _ := snap.Value("drivers.fake-kv.password"); v != driver.Redacted {
		t.Errorf("Value() = %q", v)
	}
	// The decoded options keep the real value: the driver needs it.
	if got := snap.Config.DriverOptions.(*fakeKVOptions).Password; got != secret {
		t.Errorf("driver password = %q", got)
	}
	// Errors never echo secrets either.
	_, err := Load(Sources{Env: append(slices.Clone(selectFake), "NDBENCH_DB_PASSWORD="+secret), Sets: []string{
		"drivers.fake-kv.adminPassword=" + secret,
		"ndbench.config.cass.bogus=1", "workload.x_token=" + secret,
	}})
	if err == nil {
		t.Fatal("want errors")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error text leaks the secret:\n%v", err)
	}
	if n := strings.Count(err.Error(), "unknown key (its value is not shown)"); n != 3 {
		t.Errorf("want 3 unknown keys with their values hidden in:\n%v", err)
	}
}

func TestDefaults(t *testing.T) {
	w := DefaultWorkload()
	// NDBench's own defaults, except readers/writers and the op timeout.
	if w.NumKeys != 1000 || w.NumValues != 100 || w.DataSize != 128 || w.ReadRate != 100 || w.WriteRate != 100 ||
		!w.ReadEnabled || !w.WriteEnabled || w.DataSizeMin != 1000 || w.DataSizeMax != 5000 || w.ZipfExponent != 0.99 ||
		w.BackfillWorkers != 1 || w.Readers != 4 || w.Writers != 4 || w.OpTimeout != 5*time.Second ||
		w.KeyPrefix != "T" || w.Pattern != "uniform" {
		t.Errorf("defaults = %+v", w)
	}
	if err := w.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
	schema := WorkloadSchema()
	if len(schema) != 42 {
		t.Errorf("schema has %d options, want 42", len(schema))
	}
	// A pattern's option that is a workload option of its own has the same default and
	// bounds in both places: the config cannot accept what the pattern refuses.
	for _, d := range keydist.All() {
		opts, err := d.Schema()
		if err != nil {
			t.Fatalf("pattern %s: %v", d.Name, err)
		}
		for _, po := range opts {
			for _, o := range schema {
				if o.Name == po.Name && (o.Default != po.Default || o.Min != po.Min || o.Max != po.Max || o.Type != po.Type) {
					t.Errorf("pattern %s option %s: %s %q [%s..%s], workload option %s %q [%s..%s]",
						d.Name, po.Name, po.Type, po.Default, po.Min, po.Max, o.Type, o.Default, o.Min, o.Max)
				}
			}
		}
	}
	// The pattern enum and the bounds are exactly what internal/workload accepts.
	for _, o := range schema {
		if o.Name == "pattern" && !slices.Equal(o.Enum, workload.Patterns()) {
			t.Errorf("pattern enum %q, workload.Patterns() %q", o.Enum, workload.Patterns())
		}
		if d, _ := time.ParseDuration(o.Max); o.Name == "windowDuration" && d != workload.MaxWindowDuration {
			t.Errorf("windowDuration max %q, workload.MaxWindowDuration %v", o.Max, workload.MaxWindowDuration)
		}
		for _, size := range []string{"dataSize", "dataSizeMin", "dataSizeMax"} {
			if o.Name == size && o.Max != strconv.Itoa(workload.MaxValueSize) {
				t.Errorf("%s max %q, workload.MaxValueSize %d", size, o.Max, workload.MaxValueSize)
			}
		}
	}
}

func TestWorkloadValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Workload)
		fields []string // fields named by the errors; nil = valid
	}{
		{"defaults", func(*Workload) {}, nil},
		{"min above max only matters with variable size", func(w *Workload) { w.DataSizeMin = 9000 }, nil},
		{"min above max", func(w *Workload) { w.VariableDataSize = true; w.DataSizeMin = 9000 }, []string{"workload.dataSizeMin"}},
		{"window larger than keyspace", func(w *Workload) { w.Pattern = "sliding_window"; w.WindowSize = 1001 }, []string{"workload.windowSize"}},
		{"window fits", func(w *Workload) { w.Pattern = "sliding_window_flip"; w.WindowSize = 1000 }, nil},
		{"hotKeys zero", func(w *Workload) { w.HotKeys = 0 }, []string{"workload.hotKeys"}},
		{"hotKeys one", func(w *Workload) { w.HotKeys = 1 }, nil},
		{"hotFraction above one", func(w *Workload) { w.HotFraction = 1.5 }, []string{"workload.hotFraction"}},
		{"hotKeys above one", func(w *Workload) { w.HotKeys = 1.01 }, []string{"workload.hotKeys"}},
		{"too many workers", func(w *Workload) { w.Readers = 6000; w.Writers = 5000 }, []string{"workload.readers"}},
		{"validate with tiny values", func(w *Workload) { w.ValidateValues = true; w.DataSize = 31 }, []string{"workload.dataSize"}},
		{"validate with header-sized values", func(w *Workload) { w.ValidateValues = true; w.DataSize = 32 }, nil},
		{"unknown pattern", func(w *Workload) { w.Pattern = "spiral" }, []string{"workload.pattern"}},
		{"negative rate", func(w *Workload) { w.WriteRate = -1 }, []string{"workload.writeRate"}},
		// Rules of the parts the engine builds, checked with the same methods.
		{"tracked keyspace over 2^30", func(w *Workload) { w.ValidateValues = true; w.NumKeys = 1<<30 + 1 }, []string{"workload.numKeys"}},
		{"untracked keyspace over 2^30", func(w *Workload) { w.NumKeys = 1 << 40 }, nil},
		{"window duration over a year", func(w *Workload) { w.WindowDuration = 8761 * time.Hour }, []string{"workload.windowDuration"}},
		{"pool over the budget", func(w *Workload) { w.NumValues = 1e9; w.DataSize = 1 }, []string{"workload.numValues"}},
		{"pool within a raised budget", func(w *Workload) { w.NumValues = 1e7; w.DataSize = 1; w.MemoryBudget = 1 << 30 }, nil},
		{"tracker over the budget", func(w *Workload) { w.ValidateValues = true; w.NumKeys = 1 << 29 }, []string{"workload.numKeys"}},
		{"budget below its minimum", func(w *Workload) { w.MemoryBudget = 1 }, []string{"workload.memoryBudget"}},
		// A validated insert grows the tracker: the growth it may reach is counted.
		{"validated inserts over the budget", func(w *Workload) { w.ValidateValues = true; w.WriteMix = "insert"; w.MemoryBudget = 32 << 20 },
			[]string{"workload.trackedInserts"}},
		{"validated inserts in another class over the budget", func(w *Workload) {
			w.ValidateValues = true
			w.Ops = map[string]OpClass{"grow": {Workers: 1, Rate: 10, Enabled: true, Mix: "read:9,insert:1"}}
			w.MemoryBudget = 32 << 20
		}, []string{"workload.trackedInserts"}},
		{"validated inserts tracked within the budget", func(w *Workload) {
			w.ValidateValues = true
			w.WriteMix = "insert"
			w.MemoryBudget = 32 << 20
			w.TrackedInserts = 4 << 20
		}, nil},
		{"validated writes in the same budget", func(w *Workload) { w.ValidateValues = true; w.MemoryBudget = 32 << 20 }, nil},
		{"unvalidated inserts in the same budget", func(w *Workload) { w.WriteMix = "insert"; w.MemoryBudget = 32 << 20 }, nil},
		{"disabled insert class in the same budget", func(w *Workload) {
			w.ValidateValues = true
			w.WriteMix = "insert"
			w.WriteEnabled = false
			w.MemoryBudget = 32 << 20
		}, nil},
		{"insert member out of range", func(w *Workload) { w.InsertMember, w.InsertMembers = 3, 3 }, []string{"workload.insertMember"}},
		{"last insert member", func(w *Workload) { w.InsertMember, w.InsertMembers = 2, 3 }, nil},
		{"one error per option", func(w *Workload) { w.Pattern = "hotspot"; w.HotKeys = 0 }, []string{"workload.hotKeys"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := DefaultWorkload()
			tt.change(&w)
			err := w.Validate()
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			fes := fieldErrors(t, err)
			var got []string
			for _, fe := range fes {
				got = append(got, fe.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("errors on %q, want %q: %v", got, tt.fields, err)
			}
		})
	}
}

// TestEveryWorkloadKeyDocumented keeps docs/configuration.md true: every workload option
// must appear there as `workload.<option>`.
func TestEveryWorkloadKeyDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range WorkloadSchema() {
		if key := "`workload." + o.Name + "`"; !strings.Contains(string(b), key) {
			t.Errorf("docs/configuration.md does not document %s", key)
		}
	}
}

// TestMistypedKeysSuggestTheOption: an unknown workload or driver option names the closest
// option when the name is a plausible typo (issue 11's "did you mean"), and the value stays
// redacted.
func TestMistypedKeysSuggestTheOption(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"drivers.fake-kv.pasword=S3cret", "did you mean password?"},
		{"drivers.fake-kv.ColsPerRaw=8", "did you mean colsPerRow?"},
		{"workload.readRte=100", "did you mean readRate?"},
		{"workload.numReader=8", "did you mean readers?"},
		{"workload.zzzzzzzz=1", ""},
		{"worklaod.readRate=5", "did you mean workload.?"},
		{"driverz.fake-kv.password=S3cret", "did you mean drivers.?"},
		{"wrkld.readRate=5", ""},
	} {
		_, err := Load(Sources{Sets: []string{tc.set}, Env: selectFake})
		if err == nil {
			t.Fatalf("--set %s accepted", tc.set)
		}
		msg := err.Error()
		if tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("--set %s: %q lacks %q", tc.set, msg, tc.want)
		}
		if tc.want == "" && strings.Contains(msg, "did you mean") {
			t.Errorf("--set %s: %q suggests an option for a name that is no typo", tc.set, msg)
		}
		if strings.Contains(msg, "S3cret") {
			t.Errorf("the value of a mistyped key leaked: %q", msg)
		}
	}
}
