package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
)

// TestEtcdLiveChanges is the etcd half of TestLiveChanges: a service wired like `ndbench
// serve --config-etcd` runs reads and writes on memory, and every live parameter is
// changed in turn by putting its key under the node's prefix in etcd. Each change must show
// in /api/v1/config (with the etcd key as its source) and its effect in /api/v1/stats or
// /api/v1/status within the next whole interval. It also checks that an invalid value in
// etcd is rejected without touching the running configuration, that a runtime PATCH beats
// an etcd value, and that deleting an etcd key falls back to the layer below.
func TestEtcdLiveChanges(t *testing.T) {
	// Beside TestLiveChanges and the hostile walk, after the package's other tests (see
	// TestLiveChanges): its own node and etcd, and ~50 s of waiting for whole intervals.
	t.Parallel()
	endpoint, cli := etcdtest.Start(t)
	const prefix = "/ndbench/node1/"
	ctx := context.Background()

	// etcd holds one key before the service starts: the first read must apply it.
	if _, err := cli.Put(ctx, prefix+"workload.readers", "4"); err != nil {
		t.Fatal(err)
	}

	// Wired like internal/cli/serve.go: store, instance, etcd source reporting rejected
	// changes to the instance, the source running until the end, then the API.
	// The starting values come from a config file, the layer below etcd (--set values are in
	// the runtime layer, above it, like API changes).
	file := filepath.Join(t.TempDir(), "ndbench.yaml")
	// Fixed pools (maxReaders/maxWriters 1): the steps check worker counts as configured,
	// which an elastic pool on a loaded machine would exceed.
	yaml := "driver:\n  name: memory\nworkload:\n  readRate: 500\n  writeRate: 400\n  readers: 4\n  writers: 4\n  maxReaders: 1\n  maxWriters: 1\n  numKeys: 1000\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err := source.Load(file, config.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	store := config.NewStore(snap)
	log := slog.New(slog.DiscardHandler)
	inst := node.New(store, log)
	src, err := source.OpenEtcd(ctx, store, source.EtcdOptions{Endpoints: []string{endpoint}, Prefix: prefix,
		OnError: func(err error) {
			log.Warn("configuration change rejected", "err", err)
			inst.RecordError(err)
		}})
	if err != nil {
		t.Fatalf("OpenEtcdSource: %v", err)
	}
	srcCtx, stopSource := context.WithCancel(ctx)
	srcDone := make(chan error, 1)
	go func() { srcDone <- src.Run(srcCtx) }()
	srv, err := New(Options{Instance: inst, Token: testToken, Logger: log, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hits.wrap(srv.Handler()))
	t.Cleanup(func() {
		stopSource()
		if err := <-srcDone; err != nil {
			t.Errorf("etcd source Run: %v", err)
		}
		ts.CloseClientConnections()
		srv.Close()
		ts.Close()
		_ = inst.Close()
	})
	e := &env{t: t, inst: inst, srv: srv, ts: ts}

	read := func(s stats.Summary) stats.OpSummary { return s.Ops["read"] }
	write := func(s stats.Summary) stats.OpSummary { return s.Ops["write"] }
	entry := func(key string) ConfigEntry {
		e.t.Helper()
		var c ConfigBody
		e.must(200, "GET", "/api/v1/config", nil, &c)
		for _, en := range c.Entries {
			if en.Key == key {
				return en
			}
		}
		e.t.Fatalf("GET /api/v1/config lists no %s", key)
		return ConfigEntry{}
	}
	// poll retries ok every 20 ms for up to 2 s.
	poll := func(what string, ok func() bool) {
		e.t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				e.t.Fatalf("%s: not within 2 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// applied waits until the source has applied etcd revision rev.
	applied := func(rev int64) {
		e.t.Helper()
		poll(fmt.Sprintf("etcd revision %d applied", rev), func() bool { st := src.Status(); return !st.Failing && st.Revision >= rev })
	}
	// put writes key=value pairs under the prefix in one transaction (one watch event, one
	// applied change), waits until the source applied it and /api/v1/config shows every
	// value with its etcd key as the source, and returns that moment.
	put := func(kv ...string) time.Time {
		e.t.Helper()
		var ops []clientv3.Op
		for i := 0; i < len(kv); i += 2 {
			ops = append(ops, clientv3.OpPut(prefix+kv[i], kv[i+1]))
		}
		t0 := time.Now()
		resp, err := cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			e.t.Fatalf("etcd put %v: %v", kv, err)
		}
		applied(resp.Header.Revision)
		for i := 0; i < len(kv); i += 2 {
			if en := entry(kv[i]); en.Value != kv[i+1] || en.Source != "etcd "+prefix+kv[i] {
				e.t.Fatalf("after etcd put %s=%s: config entry %+v, want that value from %q", kv[i], kv[i+1], en, "etcd "+prefix+kv[i])
			}
		}
		if st := e.status(); len(st.Pending) != 0 {
			e.t.Errorf("live etcd change left pending keys %v", st.Pending)
		}
		e.t.Logf("etcd put %v applied %s after the put", kv, time.Since(t0).Round(time.Millisecond))
		return time.Now()
	}
	del := func(key string) int64 {
		e.t.Helper()
		resp, err := cli.Delete(ctx, prefix+key)
		if err != nil {
			e.t.Fatalf("etcd delete %s: %v", key, err)
		}
		return resp.Header.Revision
	}
	// kvSizes returns the sizes of the values of keys T0..T(n-1), -1 for a missing key.
	kvSizes := func(n int) []int {
		sizes := make([]int, n)
		for i := range n {
			st, _ := e.call("GET", "/api/v1/kv/T"+fmt.Sprint(i), nil)
			sizes[i] = -1
			if st == 200 {
				var kv KVBody
				e.must(200, "GET", "/api/v1/kv/T"+fmt.Sprint(i), nil, &kv)
				sizes[i] = kv.Size
			}
		}
		return sizes
	}

	if en := entry("workload.readers"); en.Source != "etcd "+prefix+"workload.readers" {
		t.Fatalf("etcd key present at start not applied: %+v", en)
	}
	e.initMemory(nil)
	e.must(200, "POST", "/api/v1/load/start", nil, nil)
	e.waitInterval("reads at 500/s", time.Now(), func(s stats.Summary) bool {
		return read(s).Count > 0 && read(s).TargetRate == 500 && read(s).Workers == 4
	})

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		// A rate the generator gives on a shared machine (see TestLiveChanges).
		{"readRate 500 -> 2000", func(t *testing.T) {
			since := put("workload.readRate", "2000")
			e.waitInterval("reads paced at 2000/s", since, func(s stats.Summary) bool {
				return sentAt(read(s), 2000)
			})
		}},
		{"writers 4 -> 64 -> 2", func(t *testing.T) {
			since := put("workload.writers", "64")
			e.waitInterval("64 writers", since, func(s stats.Summary) bool { return write(s).Workers == 64 && write(s).Count > 0 })
			since = put("workload.writers", "2")
			e.waitInterval("2 writers", since, func(s stats.Summary) bool { return write(s).Workers == 2 && write(s).Count > 0 })
		}},
		{"readEnabled false, then true", func(t *testing.T) {
			since := put("workload.readEnabled", "false")
			e.waitInterval("no reads", since, func(s stats.Summary) bool { return read(s).Workers == 0 && read(s).Count == 0 })
			if st := e.status(); st.ReadsRunning || !st.WritesRunning {
				t.Errorf("status with readEnabled=false: readsRunning %v writesRunning %v, want false true", st.ReadsRunning, st.WritesRunning)
			}
			since = put("workload.readEnabled", "true", "workload.readRate", "2000")
			e.waitInterval("reads back at 2000/s", since, func(s stats.Summary) bool {
				return read(s).Workers == 4 && sentAt(read(s), 2000)
			})
			if st := e.status(); !st.ReadsRunning {
				t.Errorf("status says reads stopped with readEnabled=true")
			}
		}},
		{"writeRate 400 -> 1000", func(t *testing.T) {
			since := put("workload.writeRate", "1000")
			e.waitInterval("achieved write rate 1000/s ±2%", since, func(s stats.Summary) bool {
				return sentAt(write(s), 1000)
			})
		}},
		{"numKeys 1000 -> 1000000", func(t *testing.T) {
			// Only T0..T999 were ever written: on a million keys nearly every read misses.
			since := put("workload.numKeys", "1000000")
			e.waitInterval("reads miss on a million keys", since, func(s stats.Summary) bool {
				return read(s).Count > 0 && read(s).Misses*10 > read(s).Count*9
			})
		}},
		{"pattern sequential -> hotspot", func(t *testing.T) {
			// Hotspot settings do not affect the other patterns; set them first.
			put("workload.hotKeys", "0.00001", "workload.hotFraction", "1")
			// Sequential walks the keyspace in order, one counter for reads and writes, so
			// about a third of the keys from T1000 on, hardly any of which uniform writes
			// over a million keys touched, are written within a second: sample every fifth
			// key of T1000..T1999.
			put("workload.pattern", "sequential")
			poll("sequential writes through T1000..T1999", func() bool {
				n := 0
				for i := 1000; i < 2000; i += 5 {
					if st, _ := e.call("GET", "/api/v1/kv/T"+fmt.Sprint(i), nil); st == 200 {
						n++
					}
				}
				return n >= 20
			})
			// Hotspot with hotFraction 1 sends every operation to the first ~10 keys, which
			// the writes keep filled: no more misses.
			since := put("workload.pattern", "hotspot")
			e.waitInterval("no misses on the hot keys", since, func(s stats.Summary) bool {
				return read(s).Count > 0 && read(s).Misses == 0
			})
		}},
		{"dataSize 128 -> 64", func(t *testing.T) {
			since := put("workload.dataSize", "64")
			var sizes []int
			poll("hot keys rewritten at 64 bytes", func() bool {
				sizes = kvSizes(9) // floor(0.00001 * 1e6) is 9 or 10 hot keys
				for _, n := range sizes {
					if n != 64 {
						return false
					}
				}
				return true
			})
			e.waitInterval("reads and writes after dataSize", since, func(s stats.Summary) bool {
				return read(s).Count > 0 && write(s).Count > 0 && read(s).Errors == 0
			})
		}},
		{"validate", func(t *testing.T) {
			since := put("workload.validate", "true")
			// Once every hot key was rewritten with a header, reads validate cleanly.
			e.waitInterval("clean validated reads", since.Add(time.Second), func(s stats.Summary) bool {
				return read(s).Count > 0 && sum(read(s).Validation) == 0
			})
			// Proof that reads are checked: with writes stopped, a value without a header
			// in a key this run wrote is corrupt.
			e.must(200, "POST", "/api/v1/load/stop", map[string]any{"ops": []string{"write"}}, nil)
			// Stop returns before the writers' last operations end (one may still be due
			// from the pacer): wait for a whole interval without writes.
			e.waitInterval("writes stopped", time.Now(), func(s stats.Summary) bool { return write(s).Count == 0 && write(s).Workers == 0 })
			e.must(204, "PUT", "/api/v1/kv/T0", map[string]any{"value": []byte("not a validated value, no header here")}, nil)
			since = time.Now()
			e.waitInterval("corrupt reads detected", since, func(s stats.Summary) bool { return read(s).Validation["corrupt"] > 0 })
			e.must(200, "POST", "/api/v1/load/start", map[string]any{"ops": []string{"write"}}, nil)
			e.waitInterval("clean again after rewrites", time.Now().Add(500*time.Millisecond), func(s stats.Summary) bool {
				return read(s).Count > 0 && write(s).Count > 0 && sum(read(s).Validation) == 0
			})
		}},
		{"serviceTime 20ms (driver option)", func(t *testing.T) {
			since := put("drivers.memory.serviceTime", "20ms")
			e.waitInterval("reads take 20 ms", since, func(s stats.Summary) bool {
				return read(s).Count > 0 && read(s).Errors == 0 && read(s).ServiceTime.P50 >= 18000
			})
		}},
		{"opTimeout 2ms below serviceTime, then back", func(t *testing.T) {
			since := put("workload.opTimeout", "2ms")
			e.waitInterval("timeouts", since, func(s stats.Summary) bool {
				// Operations begun before the change keep their 5 s deadline and may succeed.
				return read(s).Failures["timeout"] > 0 && write(s).Failures["timeout"] > 0
			})
			since = put("workload.opTimeout", "5s")
			e.waitInterval("no timeouts", since, func(s stats.Summary) bool {
				return read(s).Count > 0 && read(s).Errors == 0 && write(s).Errors == 0
			})
			// Deleting the etcd key falls back to the driver's default service time.
			applied(del("drivers.memory.serviceTime"))
			if en := entry("drivers.memory.serviceTime"); strings.HasPrefix(en.Source, "etcd") {
				t.Fatalf("serviceTime still from etcd after deleting the key: %+v", en)
			}
			e.waitInterval("fast again", time.Now(), func(s stats.Summary) bool {
				return read(s).Count > 0 && read(s).ServiceTime.P50 < 5000
			})
		}},
		{"driver option errorRatio 1, then 0", func(t *testing.T) {
			since := put("drivers.memory.errorRatio", "1")
			e.waitInterval("unavailable errors", since, func(s stats.Summary) bool {
				return read(s).Count == 0 && read(s).Failures["unavailable"] > 0 && write(s).Failures["unavailable"] > 0
			})
			since = put("drivers.memory.errorRatio", "0")
			e.waitInterval("no errors", since, func(s stats.Summary) bool { return read(s).Count > 0 && read(s).Errors == 0 })
		}},
		{"invalid readRate -1 rejected", func(t *testing.T) {
			before := e.status()
			t0 := time.Now()
			if _, err := cli.Put(ctx, prefix+"workload.readRate", "-1"); err != nil {
				t.Fatal(err)
			}
			var st node.Status
			poll("rejection in /api/v1/status lastError", func() bool {
				st = e.status()
				return st.LastError != nil && !st.LastError.Time.Before(t0) &&
					strings.Contains(st.LastError.Message, "etcd "+prefix+"workload.readRate")
			})
			t.Logf("rejection shown: %s", st.LastError.Message)
			if st.ConfigVersion != before.ConfigVersion {
				t.Errorf("config version %d after a rejected etcd value, want %d", st.ConfigVersion, before.ConfigVersion)
			}
			if ss := src.Status(); !ss.Failing || !strings.Contains(ss.Error, "workload.readRate") {
				t.Errorf("source status after a rejected value: %+v, want failing with the error", ss)
			}
			if en := entry("workload.readRate"); en.Value != "2000" {
				t.Errorf("config readRate %+v after a rejected etcd value, want 2000 kept", en)
			}
			e.waitInterval("read rate stays 2000/s", time.Now(), func(s stats.Summary) bool {
				return sentAt(read(s), 2000)
			})
			// Deleting the bad key falls back to the file (500/s) and the source is healthy.
			applied(del("workload.readRate"))
			if en := entry("workload.readRate"); en.Value != "500" || en.Source != "file "+file {
				t.Fatalf("after deleting the etcd key: %+v, want 500 from the config file", en)
			}
			e.waitInterval("read rate back to 500/s", time.Now(), func(s stats.Summary) bool {
				return sentAt(read(s), 500)
			})
		}},
		{"runtime PATCH beats etcd", func(t *testing.T) {
			since := put("workload.writeRate", "600")
			e.waitInterval("writes at 600/s from etcd", since, func(s stats.Summary) bool { return write(s).TargetRate == 600 })
			var b PatchBody
			e.must(200, "PATCH", "/api/v1/config", map[string]any{"values": map[string]string{"workload.writeRate": "800"}}, &b)
			since = time.Now()
			if en := entry("workload.writeRate"); en.Value != "800" || en.Source != "api" {
				t.Fatalf("after PATCH: %+v, want 800 from api", en)
			}
			e.waitInterval("writes at 800/s from the API", since, func(s stats.Summary) bool {
				return sentAt(write(s), 800)
			})
			// A later etcd value is applied to its layer but stays below the API's.
			resp, err := cli.Put(ctx, prefix+"workload.writeRate", "300")
			if err != nil {
				t.Fatal(err)
			}
			applied(resp.Header.Revision)
			since = time.Now()
			if en := entry("workload.writeRate"); en.Value != "800" || en.Source != "api" {
				t.Fatalf("etcd value beat the runtime one: %+v, want 800 from api", en)
			}
			e.waitInterval("writes stay at 800/s", since, func(s stats.Summary) bool { return write(s).TargetRate == 800 && write(s).Count > 0 })
			applied(del("workload.writeRate"))
			if en := entry("workload.writeRate"); en.Value != "800" || en.Source != "api" {
				t.Fatalf("after deleting the etcd key: %+v, want 800 from api", en)
			}
		}},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) {
			e.t = t
			s.run(t)
		}) {
			break // later steps build on this one's state
		}
	}
	e.t = t
}
