package source

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/testserver/etcdtest"
)

// startEtcd runs a one-member etcd in the test process until the test ends.
func startEtcd(t *testing.T) (string, *clientv3.Client) { return etcdtest.Start(t) }

// etcdFixture is one subtest's view of the shared etcd: its own prefix, a store loaded from
// a file, env and --set, and helpers to change keys.
type etcdFixture struct {
	t        *testing.T
	endpoint string
	client   *clientv3.Client
	prefix   string
	file     string // the config file the store was loaded from
	store    *config.Store
	changes  *changeLog
	errs     *errorLog
}

func (f *etcdFixture) put(key, value string) int64 {
	f.t.Helper()
	resp, err := f.client.Put(context.Background(), f.prefix+key, value)
	if err != nil {
		f.t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

func (f *etcdFixture) del(key string) int64 {
	f.t.Helper()
	resp, err := f.client.Delete(context.Background(), f.prefix+key)
	if err != nil {
		f.t.Fatalf("delete %s: %v", key, err)
	}
	return resp.Header.Revision
}

// open opens the source on the fixture's prefix; the test fails if that fails.
func (f *etcdFixture) open() *Etcd {
	f.t.Helper()
	src, err := OpenEtcd(context.Background(), f.store, EtcdOptions{
		Endpoints: []string{f.endpoint}, Prefix: f.prefix, OnError: f.errs.add})
	if err != nil {
		f.t.Fatalf("OpenEtcd: %v", err)
	}
	return src
}

// run runs src until the subtest ends; Run must then return nil.
func (f *etcdFixture) run(src *Etcd) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("Run: %v", err)
		}
	})
}

// waitRevision waits until src has applied (or rejected) etcd's state at rev.
func (f *etcdFixture) waitRevision(src *Etcd, rev int64) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("revision %d", rev), func() bool {
		s := src.Status()
		return s.Revision >= rev || s.Failing && strings.Contains(s.Error, fmt.Sprintf("at revision %d ", rev))
	})
}

func (f *etcdFixture) want(key, value, source string) {
	f.t.Helper()
	v, src, ok := f.store.Current().Value(key)
	if !ok || v != value || src != source {
		f.t.Errorf("%s = %q from %q, want %q from %q", key, v, src, value, source)
	}
}

func TestEtcdSource(t *testing.T) {
	endpoint, client := startEtcd(t)
	tests := []struct {
		name string
		// before runs before the source opens, between after it opened and before it
		// runs, check while it runs.
		before, between func(f *etcdFixture)
		check           func(f *etcdFixture, src *Etcd)
		endpoint        string   // instead of the test etcd
		openErr         []string // OpenEtcd must fail with these in its error
	}{
		{
			name: "keys present at start apply with their etcd key as source",
			before: func(f *etcdFixture) {
				f.put("workload.readRate", "5000")
				f.put("drivers.fake-kv.password", "hunter2")
			},
			check: func(f *etcdFixture, src *Etcd) {
				f.want("workload.readRate", "5000", "etcd "+f.prefix+"workload.readRate")
				f.want("drivers.fake-kv.password", driver.Redacted, "etcd "+f.prefix+"drivers.fake-kv.password")
				if s := src.Status(); s.Failing || s.Version != 2 || s.AppliedAt.IsZero() || !strings.Contains(s.Source, f.prefix) {
					t.Errorf("status %+v", s)
				}
			},
		},
		{
			name: "a put while running applies and subscribers see the diff",
			check: func(f *etcdFixture, src *Etcd) {
				f.waitRevision(src, f.put("drivers.fake-kv.ttl", "30s"))
				f.want("drivers.fake-kv.ttl", "30s", "etcd "+f.prefix+"drivers.fake-kv.ttl")
				if got := f.changes.last(); !slices.Equal(got, []string{"drivers.fake-kv.ttl"}) {
					t.Errorf("subscribers told %q changed", got)
				}
				if s := src.Status(); s.Version != f.store.Current().Version {
					t.Errorf("status version %d, store at %d", s.Version, f.store.Current().Version)
				}
			},
		},
		{
			name: "etcd beats file and env, runtime beats etcd",
			check: func(f *etcdFixture, src *Etcd) {
				f.put("workload.numKeys", "77")                  // file has 11
				f.put("workload.writers", "3")                   // env has 2
				f.waitRevision(src, f.put("workload.seed", "9")) // --set has 5
				f.want("workload.numKeys", "77", "etcd "+f.prefix+"workload.numKeys")
				f.want("workload.writers", "3", "etcd "+f.prefix+"workload.writers")
				f.want("workload.seed", "5", "--set")
				f.want("workload.readRate", "1", "file "+f.file)
			},
		},
		{
			name: "an invalid value is rejected and the last good config stays",
			check: func(f *etcdFixture, src *Etcd) {
				f.waitRevision(src, f.put("workload.readRate", "300"))
				before := f.store.Current()
				n := f.changes.count()
				f.waitRevision(src, f.put("workload.readRate", "-1"))
				if f.store.Current() != before || f.changes.count() != n {
					t.Fatal("the invalid value changed the store")
				}
				errs := f.errs.all()
				if len(errs) != 1 {
					t.Fatalf("errors reported: %v", errs)
				}
				if _, ok := driver.AsFieldErrors(errs[0]); !ok {
					t.Errorf("error %v is not a field error", errs[0])
				}
				wantMsg := `workload.readRate: invalid value "-1" (from etcd ` + f.prefix + `workload.readRate)`
				if !strings.Contains(errs[0].Error(), wantMsg) {
					t.Errorf("error %q does not contain %q", errs[0], wantMsg)
				}
				if s := src.Status(); !s.Failing || s.Error != errs[0].Error() {
					t.Errorf("status %+v", s)
				}
				// Fixing the key applies again.
				f.waitRevision(src, f.put("workload.readRate", "400"))
				f.want("workload.readRate", "400", "etcd "+f.prefix+"workload.readRate")
				if s := src.Status(); s.Failing {
					t.Errorf("still failing after the fix: %+v", s)
				}
			},
		},
		{
			name: "a deleted key falls back to the file, then to the default",
			before: func(f *etcdFixture) {
				f.put("workload.readRate", "5000")
				f.put("workload.writeRate", "6000")
			},
			check: func(f *etcdFixture, src *Etcd) {
				f.waitRevision(src, f.del("workload.readRate"))
				f.want("workload.readRate", "1", "file "+f.file)
				f.waitRevision(src, f.del("workload.writeRate"))
				f.want("workload.writeRate", "100", "default")
			},
		},
		{
			name: "changes compacted away before the watch starts are read again",
			between: func(f *etcdFixture) {
				f.put("workload.readRate", "700")
				f.put("workload.writeRate", "800")
				rev := f.del("workload.writeRate")
				if _, err := f.client.Compact(context.Background(), rev); err != nil {
					f.t.Fatalf("compact: %v", err)
				}
			},
			check: func(f *etcdFixture, src *Etcd) {
				waitFor(f.t, "the re-read after the compaction", func() bool {
					return f.store.Current().Config.Workload.ReadRate == 700
				})
				f.want("workload.writeRate", "100", "default")
				// The watch resumed after the re-read.
				f.waitRevision(src, f.put("workload.writeRate", "900"))
				f.want("workload.writeRate", "900", "etcd "+f.prefix+"workload.writeRate")
				if errs := f.errs.all(); len(errs) != 0 {
					t.Errorf("errors reported: %v", errs)
				}
			},
		},
		{
			name:     "an unreachable etcd fails the start within the timeout",
			endpoint: "127.0.0.1:1",
			openErr:  []string{"read etcd prefix /ndbench-test/", "127.0.0.1:1"},
		},
		{
			name:    "an invalid value at start fails the start and names the key",
			before:  func(f *etcdFixture) { f.put("workload.readers", "many") },
			openErr: []string{`workload.readers: invalid value "many" (from etcd /ndbench-test/`},
		},
		{
			name: "many rapid puts end in the last value",
			check: func(f *etcdFixture, src *Etcd) {
				var rev int64
				for i := 1; i <= 200; i++ {
					rev = f.put("workload.readRate", fmt.Sprint(i))
				}
				f.waitRevision(src, rev)
				f.want("workload.readRate", "200", "etcd "+f.prefix+"workload.readRate")
				if s := src.Status(); s.Revision != rev {
					t.Errorf("status revision %d, want %d", s.Revision, rev)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newEtcdFixture(t, endpoint, client, fmt.Sprintf("/ndbench-test/%d/", i))
			if tt.endpoint != "" {
				f.endpoint = tt.endpoint
			}
			if tt.before != nil {
				tt.before(f)
			}
			if tt.openErr != nil {
				before := f.store.Current()
				start := time.Now()
				src, err := OpenEtcd(context.Background(), f.store, EtcdOptions{
					Endpoints: []string{f.endpoint}, Prefix: f.prefix, Timeout: time.Second})
				if err == nil {
					src.Close()
					t.Fatal("OpenEtcd succeeded")
				}
				for _, want := range tt.openErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not mention %q", err, want)
					}
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("failing took %v with a 1 s timeout", d)
				}
				if f.store.Current() != before {
					t.Error("a failed open changed the store")
				}
				return
			}
			src := f.open()
			if tt.between != nil {
				tt.between(f)
			}
			f.run(src)
			tt.check(f, src)
		})
	}
}

func newEtcdFixture(t *testing.T, endpoint string, client *clientv3.Client, prefix string) *etcdFixture {
	t.Helper()
	path := writeFile(t, "config.yaml", "workload:\n  readRate: 1\n  numKeys: 11\n")
	st := config.NewStore(mustLoad(t, inputs{File: path, Env: append(selectFake[:1:1], "NDBENCH_WORKLOAD_WRITERS=2"),
		Sets: []string{"workload.seed=5"}}))
	f := &etcdFixture{t: t, endpoint: endpoint, client: client, prefix: prefix, file: path, store: st, errs: &errorLog{}}
	f.changes = subscribe(st)
	return f
}
