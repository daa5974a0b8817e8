package source

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

// errorLog collects the errors a source reports, for tests that wait for one.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// waitFor polls cond until it holds; the deadline is generous because a loaded CI machine
// with -race can be slow, and a passing test never waits for it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// changeLog records what subscribers of a store are told.
type changeLog struct {
	mu      sync.Mutex
	changes [][]string
}

func subscribe(st *config.Store) *changeLog {
	c := &changeLog{}
	st.Subscribe(func(_, _ *config.Snapshot, changed []string) {
		c.mu.Lock()
		c.changes = append(c.changes, changed)
		c.mu.Unlock()
	})
	return c
}

func (c *changeLog) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.changes)
}

func (c *changeLog) last() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.changes) == 0 {
		return nil
	}
	return c.changes[len(c.changes)-1]
}

func TestStoreSetLayer(t *testing.T) {
	tests := []struct {
		name       string
		layer      config.Layer
		wantErr    string // substring of the error; "" = applied
		wantRate   float64
		wantSource string // source of workload.readRate
	}{
		{
			name: "a new etcd layer labels each key and beats file and env",
			layer: config.Layer{Name: config.LayerEtcd, Source: "etcd /n/", Values: map[string]string{"workload.readRate": "9"},
				Origins: map[string]string{"workload.readRate": "etcd /n/workload.readRate"}},
			wantRate: 9, wantSource: "etcd /n/workload.readRate",
		},
		{
			name:     "an alias is named after the layer's source",
			layer:    config.Layer{Name: config.LayerEtcd, Source: "etcd /n/", Values: map[string]string{"workload.readRateLimit": "8"}},
			wantRate: 8, wantSource: "etcd /n/ as workload.readRateLimit",
		},
		{
			name:     "replacing the file layer keeps runtime and env above it",
			layer:    config.Layer{Name: config.LayerFile, Source: "file other.yaml", Values: map[string]string{"workload.readRate": "7"}},
			wantRate: 3, wantSource: "env NDBENCH_WORKLOAD_READRATE",
		},
		{
			name: "an invalid value is rejected with its origin",
			layer: config.Layer{Name: config.LayerEtcd, Source: "etcd /n/", Values: map[string]string{"workload.readRate": "-1"},
				Origins: map[string]string{"workload.readRate": "etcd /n/workload.readRate"}},
			wantErr: `workload.readRate: invalid value "-1" (from etcd /n/workload.readRate)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "config.yaml", "workload:\n  readRate: 1\n")
			st := config.NewStore(mustLoad(t, inputs{File: path, Env: append(selectFake[:1:1], "NDBENCH_WORKLOAD_READRATE=3")}))
			before := st.Current()
			snap, err := st.SetLayer(tt.layer)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if st.Current() != before {
					t.Fatal("a rejected layer changed the store")
				}
				return
			}
			if err != nil {
				t.Fatalf("SetLayer: %v", err)
			}
			if snap.Config.Workload.ReadRate != tt.wantRate || snap.Version != before.Version+1 {
				t.Errorf("readRate %v at v%d, want %v at v%d", snap.Config.Workload.ReadRate, snap.Version, tt.wantRate, before.Version+1)
			}
			if _, src, _ := snap.Value("workload.readRate"); src != tt.wantSource {
				t.Errorf("source = %q, want %q", src, tt.wantSource)
			}
		})
	}
}
