package ndbenchapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// testDriver is a second, trivial driver with a secret option, so the tests can connect
// another driver than memory and check that secrets stay out of every response.
const testDriver = "ndbapitest"

type testOptions struct {
	Host     string `opt:"host" default:"db.example" help:"host"`
	Password string `opt:"password" default:"" secret:"true" help:"password"`
}

type fakeDriver struct {
	mu   sync.Mutex
	data map[string][]byte
	host string
}

func (d *fakeDriver) Init(_ context.Context, opts any) error {
	d.data = map[string][]byte{}
	d.host = opts.(*testOptions).Host
	return nil
}

func (d *fakeDriver) Read(_ context.Context, key string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.data[key]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return v, nil
}

func (d *fakeDriver) Write(_ context.Context, key string, value []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.data[key] = slices.Clone(value)
	return nil
}

func (d *fakeDriver) Close() error { return nil }

func (d *fakeDriver) ConnectionInfo() map[string]string { return map[string]string{"host": d.host} }

func TestMain(m *testing.M) {
	driver.MustRegister(driver.Definition{Name: testDriver, Summary: "test",
		NewOptions: func() any { return &testOptions{} }, New: func() driver.Driver { return &fakeDriver{} }})
	os.Exit(m.Run())
}

// newServer serves Handler for a fresh instance on the memory driver, mounted as the API
// server mounts it. The load is light by default (10 ops/s per class, one worker each).
func newServer(t *testing.T, sets ...string) (*httptest.Server, *node.Node) {
	t.Helper()
	base := []string{"driver.name=memory", "workload.readRate=10", "workload.writeRate=10",
		"workload.readers=1", "workload.writers=1"}
	snap, err := config.Load(config.Sources{Sets: append(base, sets...)})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	mux := http.NewServeMux()
	mux.Handle(Prefix, Handler(inst, nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = inst.Close()
	})
	return srv, inst
}

// call does one request and returns the status and body.
func call(t *testing.T, srv *httptest.Server, method, path, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// result does a GET and decodes NDBench's {isSuccess, message} body.
func result(t *testing.T, srv *httptest.Server, path string) (int, Result) {
	t.Helper()
	status, b := call(t, srv, http.MethodGet, path, "", "")
	return status, decodeResult(t, b)
}

func decodeResult(t *testing.T, b []byte) Result {
	t.Helper()
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not an NDBench result: %v: %s", err, b)
	}
	return r
}

func msg(r Result) string {
	if r.Message == nil {
		return "<null>"
	}
	return *r.Message
}

func getJSON[T any](t *testing.T, srv *httptest.Server, path string) T {
	t.Helper()
	status, b := call(t, srv, http.MethodGet, path, "", "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, status, b)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
	return v
}

func mustSucceed(t *testing.T, srv *httptest.Server, path string) Result {
	t.Helper()
	status, r := result(t, srv, path)
	if status != http.StatusOK || !r.IsSuccess {
		t.Fatalf("GET %s: status %d, %+v (%s)", path, status, r, msg(r))
	}
	return r
}

// eventually polls cond until it holds or a generous deadline passes; the tests wait for
// state changes this way instead of sleeping a guessed time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRoutesBeforeInit(t *testing.T) {
	srv, _ := newServer(t)
	tests := []struct {
		path    string
		status  int
		success bool
	}{
		{"/REST/ndbench/driver/start", http.StatusConflict, false},
		{"/REST/ndbench/driver/startReads?loadPattern=zipfian", http.StatusConflict, false},
		{"/REST/ndbench/driver/startWrites", http.StatusConflict, false},
		{"/REST/ndbench/driver/startDataFill", http.StatusConflict, false},
		{"/REST/ndbench/driver/startDataFillAsync", http.StatusConflict, false},
		{"/REST/ndbench/driver/readSingle/T1", http.StatusConflict, false},
		{"/REST/ndbench/driver/writeSingle/T1", http.StatusConflict, false},
		// Stopping what is not running succeeds, as in NDBench.
		{"/REST/ndbench/driver/stop", http.StatusOK, true},
		{"/REST/ndbench/driver/stopReads", http.StatusOK, true},
		{"/REST/ndbench/driver/stopWrites", http.StatusOK, true},
		{"/REST/ndbench/driver/stopDataFill", http.StatusOK, true},
		{"/REST/ndbench/driver/shutdownclient", http.StatusOK, true},
		{"/REST/ndbench/driver/getReadStatus", http.StatusOK, true},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			status, r := result(t, srv, tc.path)
			if status != tc.status || r.IsSuccess != tc.success || r.Message == nil || *r.Message == "" {
				t.Fatalf("status %d isSuccess %v message %q; want %d %v and a message", status, r.IsSuccess, msg(r), tc.status, tc.success)
			}
			if !tc.success && !strings.Contains(msg(r), "init") {
				t.Errorf("message %q does not say to init a driver first", msg(r))
			}
		})
	}
	st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
	if st.RunningDriver != "NA" || st.ConnectionInfo != "NA" || st.IsReadsRunning || st.IsBackfillRunning {
		t.Errorf("server status before init: %+v", st)
	}
}

func TestInitClientNames(t *testing.T) {
	tests := []struct {
		client, driver string
		status         int
		msgHas         []string
	}{
		{"InMemoryTest", "memory", http.StatusOK, nil},
		{"memory", "memory", http.StatusOK, nil},
		{"MEMORY", "memory", http.StatusOK, nil},
		{testDriver, testDriver, http.StatusOK, nil},
		{"NoSuchPlugin", "NA", http.StatusBadRequest, []string{"NoSuchPlugin", "memory", "InMemoryTest (memory)"}},
		{"ES_REST", "NA", http.StatusBadRequest, []string{"elasticsearch", "not in this build"}},
		{"CassJavaDriverBatch", "NA", http.StatusBadRequest, []string{"CassJavaDriverBatch"}},
	}
	for _, tc := range tests {
		t.Run(tc.client, func(t *testing.T) {
			srv, _ := newServer(t)
			status, r := result(t, srv, "/REST/ndbench/driver/init/"+tc.client)
			if status != tc.status || r.IsSuccess != (tc.status == http.StatusOK) {
				t.Fatalf("status %d, %+v (%s)", status, r, msg(r))
			}
			for _, s := range tc.msgHas {
				if !strings.Contains(msg(r), s) {
					t.Errorf("message %q lacks %q", msg(r), s)
				}
			}
			if st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus"); st.RunningDriver != tc.driver {
				t.Errorf("RunningDriver %q, want %q", st.RunningDriver, tc.driver)
			}
		})
	}
}

func TestInitTwiceAndSwitchDriver(t *testing.T) {
	srv, _ := newServer(t)
	mustSucceed(t, srv, "/REST/ndbench/driver/init/InMemoryTest")
	// NDBench ignores a second init; so does ndbench when it names the connected driver.
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	status, r := result(t, srv, "/REST/ndbench/driver/init/"+testDriver)
	if status != http.StatusConflict || r.IsSuccess || !strings.Contains(msg(r), "shutdownclient") {
		t.Fatalf("init of another driver while connected: %d %s", status, msg(r))
	}
	mustSucceed(t, srv, "/REST/ndbench/driver/shutdownclient")
	mustSucceed(t, srv, "/REST/ndbench/driver/init/"+testDriver)
	st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
	if st.RunningDriver != testDriver || st.ConnectionInfo != "host=db.example" {
		t.Errorf("after switching: RunningDriver %q ConnectionInfo %q", st.RunningDriver, st.ConnectionInfo)
	}
}

func TestGetDrivers(t *testing.T) {
	srv, _ := newServer(t)
	names := getJSON[[]string](t, srv, "/REST/ndbench/driver/getdrivers")
	for _, want := range []string{"memory", "InMemoryTest", testDriver} {
		if !slices.Contains(names, want) {
			t.Errorf("getdrivers %v lacks %s", names, want)
		}
	}
	if slices.Contains(names, "ES_REST") {
		t.Errorf("getdrivers lists ES_REST, whose driver is not in this build: %v", names)
	}
	if !slices.IsSorted(names) {
		t.Errorf("getdrivers not sorted: %v", names)
	}
	st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
	if !slices.Equal(st.ClientDrivers, names) {
		t.Errorf("ClientDrivers %v differ from getdrivers %v", st.ClientDrivers, names)
	}
	for _, p := range []string{"RANDOM", "ZIPFIAN", "SLIDING_WINDOW", "SLIDING_WINDOW_FLIP"} {
		if !slices.Contains(st.LoadPatterns, p) {
			t.Errorf("LoadPatterns %v lacks NDBench's %s", st.LoadPatterns, p)
		}
	}
}

// TestReadsAndStats runs reads at a rate against a half-filled keyspace and checks the
// statistics a user would look at.
func TestReadsAndStats(t *testing.T) {
	srv, _ := newServer(t, "workload.numKeys=100", "workload.readRate=200", "workload.readers=2",
		"drivers.memory.serviceTime=100us")
	mustSucceed(t, srv, "/REST/ndbench/driver/init/InMemoryTest")
	r := mustSucceed(t, srv, "/REST/ndbench/driver/startDataFill")
	if !strings.Contains(msg(r), "100 of 100 keys written") {
		t.Errorf("startDataFill message %q", msg(r))
	}
	// Double the keyspace: half the keys read from now on were never written.
	status, b := call(t, srv, http.MethodPost, "/REST/ndbench/config/set", "application/json", `{"numKeys": 200}`)
	if status != http.StatusOK || !decodeResult(t, b).IsSuccess {
		t.Fatalf("config/set numKeys: %d %s", status, b)
	}
	mustSucceed(t, srv, "/REST/ndbench/driver/startReads?loadPattern=random")
	if r := mustSucceed(t, srv, "/REST/ndbench/driver/getReadStatus"); msg(r) != "Read process running" {
		t.Errorf("getReadStatus %q", msg(r))
	}
	var s Stats
	eventually(t, "stats with reads and a read rate", func() bool {
		s = getJSON[Stats](t, srv, "/REST/ndbench/driver/stats")
		return s.ReadSuccess > 50 && s.ReadRPS > 0
	})
	if s.ReadLatP50 < 100 {
		t.Errorf("readLatP50 %d us below the store's 100 us service time", s.ReadLatP50)
	}
	if s.ReadLatP95 < s.ReadLatP50 || s.ReadLatP99 < s.ReadLatP95 || s.ReadLatP995 < s.ReadLatP99 || s.ReadLatP999 < s.ReadLatP995 {
		t.Errorf("read percentiles not monotonic: %+v", s)
	}
	if s.ReadLatAvg < 100 {
		t.Errorf("readLatAvg %d us below the service time", s.ReadLatAvg)
	}
	if s.ReadRPS > 400 {
		t.Errorf("readRPS %d far above the 200/s rate", s.ReadRPS)
	}
	if s.CacheMiss == 0 || s.CacheHits == 0 || s.CacheHits+s.CacheMiss != s.ReadSuccess {
		t.Errorf("hits %d + misses %d should be readSuccess %d, both > 0", s.CacheHits, s.CacheMiss, s.ReadSuccess)
	}
	if want := s.CacheHits * 100 / s.ReadSuccess; s.CacheHitRatioInt != want || want <= 0 || want >= 100 {
		t.Errorf("cacheHitRatioInt %d, want %d in (0, 100)", s.CacheHitRatioInt, want)
	}
	if s.ReadFailure != 0 || s.WriteSuccess != 0 || s.WriteRPS != 0 {
		t.Errorf("no failures and no writes (the backfill is not a write): %+v", s)
	}
	if !strings.Contains(s.Documentation, "microseconds") {
		t.Errorf("documentation does not give the latency unit: %q", s.Documentation)
	}
	// The raw JSON carries NDBench's field names.
	_, raw := call(t, srv, http.MethodGet, "/REST/ndbench/driver/stats", "", "")
	for _, f := range []string{"readSuccess", "readFailure", "writeSuccess", "writeFailure", "cacheHits", "cacheMiss",
		"cacheHitRatioInt", "readRPS", "writeRPS", "readLatAvg", "readLatP50", "readLatP95", "readLatP99",
		"readLatP995", "readLatP999", "writeLatAvg", "writeLatP50", "writeLatP95", "writeLatP99", "writeLatP995", "writeLatP999"} {
		if !strings.Contains(string(raw), `"`+f+`":`) {
			t.Errorf("stats JSON lacks %s: %s", f, raw)
		}
	}
	st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
	if !st.IsReadsRunning || st.IsWritesRunning || st.RunningReadLoadPattern != "RandomStringKeyGenerator" ||
		st.RunningWriteLoadPattern != "NA" || st.Stats.ReadSuccess == 0 || st.DriverConfig["numKeys"] != float64(200) {
		t.Errorf("server status while reading: %+v", st)
	}
	mustSucceed(t, srv, "/REST/ndbench/driver/stopReads")
	eventually(t, "reads to stop", func() bool {
		return msg(mustSucceed(t, srv, "/REST/ndbench/driver/getReadStatus")) == "No Read process is running"
	})
}

func TestStartParameters(t *testing.T) {
	tests := []struct {
		name   string
		query  string
		status int
		want   map[string]any // config/list values after the call
		msgHas string
	}{
		{"zipfian", "loadPattern=zipfian", http.StatusOK, map[string]any{"pattern": "zipfian"}, "started"},
		{"random is uniform", "loadPattern=random", http.StatusOK, map[string]any{"pattern": "uniform"}, ""},
		{"UI sliding window", "loadPattern=SLIDING_WINDOW&windowSize=100&durationInSec=300", http.StatusOK,
			map[string]any{"pattern": "sliding_window", "windowSize": float64(100), "windowDuration": "5m0s"}, ""},
		// NDBench's flip duration is per window; 1000 keys / 100 = 10 windows per pass.
		{"flip duration per window", "loadPattern=sliding_window_flip&windowSize=100&durationInSec=10", http.StatusOK,
			map[string]any{"pattern": "sliding_window_flip", "windowSize": float64(100), "windowDuration": "1m40s"}, ""},
		{"NDBench unset defaults", "loadPattern=sliding_window&windowSize=-1&durationInSec=-1", http.StatusOK,
			map[string]any{"pattern": "sliding_window", "windowSize": float64(1000), "windowDuration": "1m0s"}, ""},
		{"window ignored for random", "loadPattern=random&windowSize=50", http.StatusOK,
			map[string]any{"pattern": "uniform", "windowSize": float64(1000)}, ""},
		{"no pattern keeps configured", "", http.StatusOK, map[string]any{"pattern": "uniform"}, ""},
		{"bulkSize unsupported", "bulkSize=10", http.StatusOK, nil, "bulkSize=10 is not supported"},
		// A property is not applied here, and the answer says so rather than nothing.
		{"property not taken", "readRateLimit=500&numReaders=8&loadPattern=zipfian", http.StatusOK,
			map[string]any{"pattern": "zipfian", "readRateLimit": float64(10)}, "numReaders, readRateLimit ignored"},
		{"unknown pattern", "loadPattern=nope", http.StatusBadRequest, map[string]any{"pattern": "uniform"}, "nope"},
		{"window size zero", "loadPattern=sliding_window&windowSize=0", http.StatusBadRequest,
			map[string]any{"pattern": "uniform"}, "windowSize"},
		{"window larger than keyspace", "loadPattern=sliding_window&windowSize=5000", http.StatusBadRequest,
			map[string]any{"pattern": "uniform", "windowSize": float64(1000)}, "windowSize (workload.windowSize)"},
		{"bad duration", "loadPattern=sliding_window&durationInSec=soon", http.StatusBadRequest, nil, "durationInSec"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t)
			mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
			status, r := result(t, srv, "/REST/ndbench/driver/startReads?"+tc.query)
			if status != tc.status || r.IsSuccess != (tc.status == http.StatusOK) || !strings.Contains(msg(r), tc.msgHas) {
				t.Fatalf("status %d %+v (%s); want %d and a message with %q", status, r, msg(r), tc.status, tc.msgHas)
			}
			cfg := getJSON[map[string]any](t, srv, "/REST/ndbench/config/list")
			for k, v := range tc.want {
				if cfg[k] != v {
					t.Errorf("config %s = %v (%T), want %v", k, cfg[k], cfg[k], v)
				}
			}
			running := msg(mustSucceed(t, srv, "/REST/ndbench/driver/getReadStatus")) == "Read process running"
			if tc.status != http.StatusOK && running {
				t.Errorf("a rejected start started reads")
			}
		})
	}
}

func TestStartAndStopBoth(t *testing.T) {
	srv, _ := newServer(t)
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	if r := mustSucceed(t, srv, "/REST/ndbench/driver/start"); msg(r) != "NDBench test started" {
		t.Errorf("start message %q", msg(r))
	}
	eventually(t, "reads and writes to run", func() bool {
		st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
		return st.IsReadsRunning && st.IsWritesRunning
	})
	mustSucceed(t, srv, "/REST/ndbench/driver/stopWrites")
	eventually(t, "writes to stop", func() bool {
		return msg(mustSucceed(t, srv, "/REST/ndbench/driver/getWriteStatus")) == "No Write process is running"
	})
	if msg(mustSucceed(t, srv, "/REST/ndbench/driver/getReadStatus")) != "Read process running" {
		t.Error("stopWrites stopped reads")
	}
	mustSucceed(t, srv, "/REST/ndbench/driver/stop")
	eventually(t, "everything to stop", func() bool {
		st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus")
		return !st.IsReadsRunning && !st.IsWritesRunning
	})
}

// TestStartsWarmUp: NDBench's starts are a user's start, as the API's: from idle, the
// figures start workload.warmup later (start, startReads and startWrites alike).
func TestStartsWarmUp(t *testing.T) {
	for _, route := range []string{"start", "startReads", "startWrites"} {
		t.Run(route, func(t *testing.T) {
			srv, inst := newServer(t, "workload.warmup=300ms")
			mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
			mustSucceed(t, srv, "/REST/ndbench/driver/"+route)
			if inst.Status().WarmingUpUntil.IsZero() && inst.Session().Warmup == 0 {
				t.Fatalf("%s from idle began no warm-up", route)
			}
			eventually(t, "the warm-up to end", func() bool { return inst.Session().Warmup == 300*time.Millisecond })
		})
	}
}

func TestConfigSet(t *testing.T) {
	tests := []struct {
		name, method, path, contentType, body string
		status                                int
		want                                  map[string]any
		msgHas                                []string
	}{
		{name: "NDBench JSON body", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"numReaders": 8, "readRateLimit": 250, "readEnabled": false, "numKeys": "5000"}`, status: http.StatusOK,
			want: map[string]any{"numReaders": float64(8), "readRateLimit": float64(250), "readEnabled": false, "numKeys": float64(5000)}},
		{name: "form parameters", method: http.MethodPost, path: "config/set", contentType: "application/x-www-form-urlencoded",
			body: "numWriters=3&writeRateLimit=42", status: http.StatusOK,
			want: map[string]any{"numWriters": float64(3), "writeRateLimit": float64(42)}},
		{name: "query parameters", method: http.MethodGet, path: "config/set?numBackfill=4&useVariableDataSize=true",
			status: http.StatusOK, want: map[string]any{"numBackfill": float64(4), "useVariableDataSize": true}},
		{name: "full and prefixed keys", method: http.MethodPost, path: "config/tunable/set", contentType: "application/json",
			body: `{"ndbench.config.numReaders": "6", "workload.windowSize": 7, "hotKeys": 0.5}`, status: http.StatusOK,
			want: map[string]any{"numReaders": float64(6), "windowSize": float64(7), "hotKeys": 0.5}},
		{name: "empty values skipped", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"numReaders": "", "numWriters": 2}`, status: http.StatusOK,
			want: map[string]any{"numReaders": float64(1), "numWriters": float64(2)}},
		{name: "unsupported NDBench property", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"preloadKeys": true}`, status: http.StatusOK, msgHas: []string{"preloadKeys is not supported"}},
		{name: "bad value names the key", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"numReaders": "lots", "numWriters": 5}`, status: http.StatusBadRequest,
			want: map[string]any{"numReaders": float64(1), "numWriters": float64(1)}, msgHas: []string{"numReaders (workload.readers)", "lots"}},
		{name: "out of range", method: http.MethodPost, path: "config/tunable/set", contentType: "application/json",
			body: `{"readRateLimit": -5}`, status: http.StatusBadRequest,
			want: map[string]any{"readRateLimit": float64(10)}, msgHas: []string{"readRate", "-5"}},
		{name: "unknown property", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"fooBar": 1}`, status: http.StatusBadRequest, msgHas: []string{"fooBar"}},
		{name: "nested value", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{"numReaders": {"x": 1}}`, status: http.StatusBadRequest, msgHas: []string{"numReaders"}},
		{name: "not JSON", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `numReaders=3`, status: http.StatusBadRequest, msgHas: []string{"JSON object"}},
		{name: "nothing to set", method: http.MethodPost, path: "config/set", contentType: "application/json",
			body: `{}`, status: http.StatusBadRequest, msgHas: []string{"no properties"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newServer(t)
			status, b := call(t, srv, tc.method, "/REST/ndbench/"+tc.path, tc.contentType, tc.body)
			r := decodeResult(t, b)
			if status != tc.status || r.IsSuccess != (tc.status == http.StatusOK) {
				t.Fatalf("status %d %s; want %d", status, b, tc.status)
			}
			for _, s := range tc.msgHas {
				if !strings.Contains(msg(r), s) {
					t.Errorf("message %q lacks %q", msg(r), s)
				}
			}
			cfg := getJSON[map[string]any](t, srv, "/REST/ndbench/config/list")
			for k, v := range tc.want {
				if cfg[k] != v {
					t.Errorf("config %s = %v, want %v", k, cfg[k], v)
				}
			}
		})
	}
}

// TestConfigSetAppliesLive changes the read rate of a running load through tunable/set.
func TestConfigSetAppliesLive(t *testing.T) {
	srv, inst := newServer(t)
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	mustSucceed(t, srv, "/REST/ndbench/driver/startReads")
	status, b := call(t, srv, http.MethodPost, "/REST/ndbench/config/tunable/set", "application/json", `{"readRateLimit": 321, "numReaders": 3}`)
	if status != http.StatusOK {
		t.Fatalf("tunable/set: %d %s", status, b)
	}
	eventually(t, "the engine to take the new rate", func() bool {
		r := inst.Collector().Cumulative().Ops["read"]
		return r.TargetRate == 321 && r.Workers == 3
	})
}

func TestTunableList(t *testing.T) {
	srv, _ := newServer(t)
	tun := getJSON[map[string]any](t, srv, "/REST/ndbench/config/tunable/list")
	all := getJSON[map[string]any](t, srv, "/REST/ndbench/config/list")
	// ndbench applies every workload setting to a running load (keyspace and values
	// included), so all of them are tunable; backfill settings apply at the next backfill.
	for _, k := range []string{"readRateLimit", "writeRateLimit", "numReaders", "numWriters", "readEnabled", "pattern", "numKeys", "dataSize", "numValues"} {
		if _, ok := tun[k]; !ok {
			t.Errorf("tunable/list lacks %s: %v", k, tun)
		}
		if _, ok := all[k]; !ok {
			t.Errorf("config/list lacks %s", k)
		}
	}
	for _, k := range []string{"numBackfill"} {
		if _, ok := tun[k]; ok {
			t.Errorf("tunable/list has %s, which applies only at the next backfill", k)
		}
	}
	// Every listed name is accepted back, as NDBench's UI posts the list it got.
	body, _ := json.Marshal(all)
	if status, b := call(t, srv, http.MethodPost, "/REST/ndbench/config/set", "application/json", string(body)); status != http.StatusOK {
		t.Errorf("posting config/list back to config/set: %d %s", status, b)
	}
}

func TestSecretsNeverShown(t *testing.T) {
	const secret = "hunter2-secret-value"
	srv, _ := newServer(t, "drivers."+testDriver+".password="+secret)
	mustSucceed(t, srv, "/REST/ndbench/driver/init/"+testDriver)
	status, b := call(t, srv, http.MethodPost, "/REST/ndbench/config/set", "application/json",
		`{"drivers.`+testDriver+`.password": "`+secret+`", "numReaders": "x"}`)
	if status != http.StatusBadRequest || strings.Contains(string(b), secret) {
		t.Errorf("config/set error: %d %s", status, b)
	}
	for _, p := range []string{"driver/getserverstatus", "driver/stats", "config/list", "config/tunable/list", "driver/getdrivers"} {
		if _, b := call(t, srv, http.MethodGet, "/REST/ndbench/"+p, "", ""); strings.Contains(string(b), secret) {
			t.Errorf("%s shows the secret: %s", p, b)
		}
	}
}

func TestReadWriteSingle(t *testing.T) {
	srv, _ := newServer(t, "workload.dataSize=64")
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	tests := []struct{ name, key string }{
		{"NDBench key", "T42"},
		{"escaped slash", "a%2Fb"},
		{"space", "two%20words"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := mustSucceed(t, srv, "/REST/ndbench/driver/writeSingle/"+tc.key); msg(r) != "OK" {
				t.Errorf("writeSingle message %q", msg(r))
			}
			if r := mustSucceed(t, srv, "/REST/ndbench/driver/readSingle/"+tc.key); len(msg(r)) != 64 {
				t.Errorf("readSingle gave %q, want the 64-byte value written", msg(r))
			}
		})
	}
	// A missing key is a success with a null message, as NDBench answers.
	status, b := call(t, srv, http.MethodGet, "/REST/ndbench/driver/readSingle/never-written", "", "")
	if status != http.StatusOK || string(b) != "{\"isSuccess\":true,\"message\":null}\n" {
		t.Errorf("missing key: %d %s", status, b)
	}
}

func TestDataFill(t *testing.T) {
	// 1000 keys at 50/s: the backfill runs for 20 s unless stopped.
	srv, _ := newServer(t, "workload.backfillRate=50")
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	if r := mustSucceed(t, srv, "/REST/ndbench/driver/startDataFillAsync"); msg(r) != "Async data fill started !" {
		t.Errorf("startDataFillAsync message %q", msg(r))
	}
	if st := getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus"); !st.IsBackfillRunning {
		t.Error("IsBackfillRunning false right after startDataFillAsync")
	}
	for _, p := range []string{"driver/startDataFillAsync", "driver/startDataFill"} {
		if status, r := result(t, srv, "/REST/ndbench/"+p); status != http.StatusConflict || r.IsSuccess {
			t.Errorf("%s during a backfill: %d %s", p, status, msg(r))
		}
	}
	mustSucceed(t, srv, "/REST/ndbench/driver/stopDataFill")
	eventually(t, "the backfill to stop", func() bool {
		return !getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus").IsBackfillRunning
	})

}

// TestDataFillStopped stops a synchronous fill from another request. (A fresh instance:
// engine.runBackfill reads its status after unlocking, so a second backfill on one engine
// trips the race detector; reported to the engine's owner.)
func TestDataFillStopped(t *testing.T) {
	srv, _ := newServer(t, "workload.backfillRate=50")
	mustSucceed(t, srv, "/REST/ndbench/driver/init/memory")
	done := make(chan Result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/REST/ndbench/driver/startDataFill", nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			done <- Result{}
			return
		}
		defer resp.Body.Close()
		var r Result
		_ = json.NewDecoder(resp.Body).Decode(&r)
		done <- r
	}()
	eventually(t, "the synchronous backfill to start", func() bool {
		return getJSON[ServerStatus](t, srv, "/REST/ndbench/driver/getserverstatus").IsBackfillRunning
	})
	mustSucceed(t, srv, "/REST/ndbench/driver/shutdownDataFill")
	select {
	case r := <-done:
		if r.IsSuccess || !strings.Contains(msg(r), "stopped") {
			t.Errorf("stopped synchronous fill answered %+v (%s)", r, msg(r))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("startDataFill did not return after stopDataFill")
	}
}

func TestRouting(t *testing.T) {
	srv, inst := newServer(t)
	tests := []struct {
		name, method, path string
		status             int
	}{
		{"unknown route", http.MethodGet, "/REST/ndbench/driver/nosuch", http.StatusNotFound},
		{"wrong method", http.MethodDelete, "/REST/ndbench/driver/stats", http.StatusMethodNotAllowed},
		{"POST on a GET route", http.MethodPost, "/REST/ndbench/driver/stats", http.StatusOK},
		{"trailing slash", http.MethodGet, "/REST/ndbench/driver/stats/", http.StatusOK},
		{"preflight", http.MethodOptions, "/REST/ndbench/config/set", http.StatusNoContent},
		{"groovy script", http.MethodPost, "/REST/ndbench/driver/initfromscript", http.StatusNotImplemented},
		{"verify fill", http.MethodGet, "/REST/ndbench/driver/startVerifyDataFill", http.StatusNotImplemented},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, b := call(t, srv, tc.method, tc.path, "", "")
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, b)
			}
			if status >= 400 {
				if r := decodeResult(t, b); r.IsSuccess || r.Message == nil {
					t.Errorf("error body %s", b)
				}
			}
		})
	}
	// Behind http.StripPrefix the handler sees /driver/...; it serves that too.
	mux := http.NewServeMux()
	mux.Handle(Prefix, http.StripPrefix(strings.TrimSuffix(Prefix, "/"), Handler(inst, nil)))
	stripped := httptest.NewServer(mux)
	defer stripped.Close()
	if names := getJSON[[]string](t, stripped, "/REST/ndbench/driver/getdrivers"); !slices.Contains(names, "memory") {
		t.Errorf("getdrivers behind StripPrefix: %v", names)
	}
}

// TestEveryRouteDocumented: docs/api.md lists every NDBench route with a summary, so the
// routes a user's scripts may call are written down (the OpenAPI document has them too).
func TestEveryRouteDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Routes() {
		if r.Summary == "" {
			t.Errorf("%s has no summary (ndbenchapi.summaries)", r.Path)
		}
		if !strings.Contains(string(doc), "| `"+strings.TrimPrefix(r.Path, Prefix)+"` |") {
			t.Errorf("docs/api.md does not list %s in its NDBench routes table", r.Path)
		}
	}
}
