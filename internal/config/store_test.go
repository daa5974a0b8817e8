package config

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

func newTestStore(t *testing.T, sets ...string) *Store {
	t.Helper()
	return NewStore(mustLoad(t, Sources{Env: append(slices.Clone(selectFake), "NDBENCH_WORKLOAD_WRITERS=2"), Sets: sets}))
}

func TestStoreUpdate(t *testing.T) {
	tests := []struct {
		name        string
		initial     []string // --set at load
		layer       string
		patch       bool
		values      map[string]string
		wantErr     bool
		wantChanged []string
		check       func(*Snapshot) error
	}{
		{
			name: "runtime change replaces the --set layer", initial: []string{"workload.readRate=5"},
			layer: LayerRuntime, values: map[string]string{"workload.writeRate": "7"},
			wantChanged: []string{"workload.readRate", "workload.writeRate"},
			check: func(s *Snapshot) error {
				w := s.Config.Workload
				if w.ReadRate != 100 || w.WriteRate != 7 {
					return fmt.Errorf("rates %v/%v, want 100 (default again) and 7", w.ReadRate, w.WriteRate)
				}
				return nil
			},
		},
		{
			name: "patch keeps the layer's other values", initial: []string{"workload.readRate=5"},
			layer: LayerRuntime, patch: true, values: map[string]string{"workload.writeRate": "7"},
			wantChanged: []string{"workload.writeRate"},
			check: func(s *Snapshot) error {
				if w := s.Config.Workload; w.ReadRate != 5 || w.WriteRate != 7 {
					return fmt.Errorf("rates %v/%v, want 5 and 7", w.ReadRate, w.WriteRate)
				}
				return nil
			},
		},
		{
			name: "patch with an alias replaces the canonical spelling", initial: []string{"workload.readers=5"},
			layer: LayerRuntime, patch: true, values: map[string]string{"ndbench.config.numReaders": "6"},
			wantChanged: []string{"workload.readers"},
			check: func(s *Snapshot) error {
				if r := s.Config.Workload.Readers; r != 6 {
					return fmt.Errorf("readers = %d, want 6", r)
				}
				return nil
			},
		},
		{
			name: "a new layer sits below runtime", initial: []string{"workload.readRate=5"},
			layer: LayerEtcd, values: map[string]string{"workload.readRate": "9", "workload.numKeys": "50"},
			wantChanged: []string{"workload.numKeys"},
			check: func(s *Snapshot) error {
				if w := s.Config.Workload; w.ReadRate != 5 || w.NumKeys != 50 {
					return fmt.Errorf("readRate %v numKeys %d, want 5 (runtime wins) and 50", w.ReadRate, w.NumKeys)
				}
				if _, src, _ := s.Value("workload.numKeys"); src != LayerEtcd {
					return fmt.Errorf("numKeys source = %q", src)
				}
				return nil
			},
		},
		{
			name: "replacing the env layer drops its old values", layer: LayerEnv,
			values:      map[string]string{"workload.readRate": "3", "driver.name": "fake-kv"},
			wantChanged: []string{"workload.readRate", "workload.writers"}, // writers=2 came from env
		},
		{
			name: "switching driver changes its option defaults", layer: LayerRuntime,
			values: map[string]string{"driver.name": "fake-other"},
			wantChanged: []string{"driver.name", "drivers.fake-kv.addrs", "drivers.fake-kv.colsPerRow",
				"drivers.fake-kv.mode", "drivers.fake-kv.password", "drivers.fake-kv.ttl", "drivers.fake-other.depth"},
		},
		{
			name: "no effective change", initial: []string{"workload.readRate=5"}, layer: LayerRuntime,
			values: map[string]string{"workload.readRate": "5"}, wantChanged: nil,
		},
		{
			name: "invalid value", initial: []string{"workload.readRate=5"}, layer: LayerRuntime,
			values: map[string]string{"workload.readRate": "-1", "workload.writeRate": "7"}, wantErr: true,
		},
		{
			name: "cross-field failure against values of another layer", layer: LayerRuntime,
			values: map[string]string{"workload.readers": "9999"}, wantErr: true, // env has writers=2
		},
		{
			name: "unknown key", layer: LayerRuntime, patch: true,
			values: map[string]string{"workload.nope": "1"}, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newTestStore(t, tt.initial...)
			before := st.Current()
			var calls int
			var gotChanged []string
			st.Subscribe(func(old, new *Snapshot, changed []string) {
				calls++
				gotChanged = changed
				if old != before || new.Version != before.Version+1 {
					t.Errorf("subscriber got versions %d -> %d", old.Version, new.Version)
				}
			})
			update := st.Update
			if tt.patch {
				update = st.Patch
			}
			snap, err := update(tt.layer, tt.values)
			if tt.wantErr {
				fieldErrors(t, err)
				if st.Current() != before || calls != 0 {
					t.Fatal("an invalid update changed the store or notified subscribers")
				}
				// The previous layers are intact: a valid change still builds on them.
				if _, err := st.Patch(LayerRuntime, map[string]string{"workload.seed": "1"}); err != nil {
					t.Fatalf("store unusable after a rejected update: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if st.Current() != snap || snap.Version != before.Version+1 {
				t.Errorf("current = v%d, returned v%d, before v%d", st.Current().Version, snap.Version, before.Version)
			}
			if !slices.Equal(gotChanged, tt.wantChanged) {
				t.Errorf("changed = %q, want %q", gotChanged, tt.wantChanged)
			}
			if wantCalls := min(len(tt.wantChanged), 1); calls != wantCalls {
				t.Errorf("subscriber called %d times, want %d", calls, wantCalls)
			}
			if tt.check != nil {
				if err := tt.check(snap); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestStoreInvalidSetLeavesSnapshot(t *testing.T) {
	st := newTestStore(t, "workload.readRate=5")
	before := st.Current()
	_, err := st.Update(LayerRuntime, map[string]string{"ndbench.config.readRateLimit": "fast"})
	fes := fieldErrors(t, err)
	if fes[0].Field != "workload.readRate" || fes[0].Value != "fast" {
		t.Errorf("error = %v", err)
	}
	after := st.Current()
	if after != before || after.Version != 1 || after.Config.Workload.ReadRate != 5 {
		t.Errorf("snapshot changed: v%d readRate %v", after.Version, after.Config.Workload.ReadRate)
	}
}

func TestStoreCancel(t *testing.T) {
	st := newTestStore(t)
	calls := 0
	cancel := st.Subscribe(func(*Snapshot, *Snapshot, []string) { calls++ })
	if _, err := st.Patch(LayerRuntime, map[string]string{"workload.seed": "1"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := st.Patch(LayerRuntime, map[string]string{"workload.seed": "2"}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("calls = %d, want 1 (none after cancel)", calls)
	}
}

// TestStoreConcurrency runs updates against readers; -race checks the swap, and every
// reader must see a complete, valid snapshot whose version never goes backwards.
func TestStoreConcurrency(t *testing.T) {
	st := newTestStore(t)
	const writers, updates, readers = 4, 25, 4
	var mu sync.Mutex
	var seen []uint64
	st.Subscribe(func(old, new *Snapshot, _ []string) {
		mu.Lock()
		seen = append(seen, new.Version)
		mu.Unlock()
	})
	done := make(chan struct{})
	var rg sync.WaitGroup
	for range readers {
		rg.Go(func() {
			var last uint64
			for {
				select {
				case <-done:
					return
				default:
				}
				runtime.Gosched() // share the CPU with the writers on a small machine
				s := st.Current()
				if s.Version < last {
					t.Errorf("version went back from %d to %d", last, s.Version)
					return
				}
				last = s.Version
				if err := s.Config.Workload.Validate(); err != nil {
					t.Errorf("reader saw an invalid snapshot: %v", err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range updates {
				rate := fmt.Sprint(i*1000 + j + 1)
				if _, err := st.Patch(LayerRuntime, map[string]string{"workload.seed": rate}); err != nil {
					t.Errorf("patch: %v", err)
				}
				if _, err := st.Patch(LayerRuntime, map[string]string{"workload.readRate": "-1"}); err == nil {
					t.Error("invalid patch accepted")
				}
			}
		})
	}
	wg.Wait()
	close(done)
	rg.Wait()
	if v := st.Current().Version; v != 1+writers*updates {
		t.Errorf("final version %d, want %d", v, 1+writers*updates)
	}
	if !slices.IsSorted(seen) || len(seen) != writers*updates {
		t.Errorf("subscriber saw %d versions, sorted=%v", len(seen), slices.IsSorted(seen))
	}
}

func TestPatchFromLabelsTheOrigin(t *testing.T) {
	snap, err := Load(Sources{Sets: []string{"driver.name=fake-kv", "workload.writeRate=7"}})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(snap)
	next, err := st.PatchFrom(LayerRuntime, "api", map[string]string{"workload.readRate": "5"})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"workload.readRate": "api", "workload.writeRate": "--set"} {
		if _, src, _ := next.Value(key); src != want {
			t.Errorf("%s source = %q, want %q", key, src, want)
		}
	}
	_, err = st.PatchFrom(LayerRuntime, "api", map[string]string{"workload.readers": "-1"})
	if err == nil || !strings.Contains(err.Error(), "api") {
		t.Errorf("error does not name the api as source: %v", err)
	}
}

// A flag's label (SetOrigins) survives changes that rebuild the snapshot, and a patch that
// sets a key to the value it already has keeps the key's label; a new value takes the
// patch's.
func TestSetOriginsSurviveChanges(t *testing.T) {
	snap, err := Load(Sources{Sets: []string{"driver.name=fake-kv", "workload.writeRate=7"},
		SetOrigins: map[string]string{"driver.name": "flag --driver"}})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStore(snap)
	for _, tt := range []struct {
		patch map[string]string
		want  map[string]string
	}{
		{map[string]string{"workload.readRate": "5"}, map[string]string{"driver.name": "flag --driver", "workload.writeRate": "--set", "workload.readRate": "api"}},
		{map[string]string{"driver.name": "fake-kv", "workload.writeRate": "7"}, map[string]string{"driver.name": "flag --driver", "workload.writeRate": "--set"}},
		{map[string]string{"workload.writeRate": "8"}, map[string]string{"driver.name": "flag --driver", "workload.writeRate": "api"}},
		{map[string]string{"workload.readRate": "5"}, map[string]string{"workload.readRate": "api"}},
	} {
		next, err := st.PatchFrom(LayerRuntime, "api", tt.patch)
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range tt.want {
			if _, src, _ := next.Value(key); src != want {
				t.Errorf("after %v: %s source = %q, want %q", tt.patch, key, src, want)
			}
		}
	}
}

// TestStoreRequire: a requirement rejects a change that Build accepts, from every way a
// change comes in, leaving the snapshot as it was; cancelled, it no longer applies.
func TestStoreRequire(t *testing.T) {
	st := newTestStore(t)
	cancel := st.Require(func(next *Snapshot) error {
		if next.Config.Workload.ReadRate == 13 {
			return driver.FieldErrors{{Field: "workload.readRate", Value: "13", Allowed: "anything but 13"}}
		}
		return nil
	})
	before := st.Current()
	tries := map[string]func() error{
		"Patch": func() error {
			_, err := st.Patch(LayerRuntime, map[string]string{"workload.readRate": "13"})
			return err
		},
		"Update": func() error { _, err := st.Update(LayerEtcd, map[string]string{"workload.readRate": "13"}); return err },
		"SetLayer": func() error {
			_, err := st.SetLayer(Layer{Name: LayerFile, Values: map[string]string{"workload.readRate": "13"}})
			return err
		},
		"Check": func() error { return st.Check(LayerRuntime, map[string]string{"workload.readRate": "13"}) },
	}
	for name, try := range tries {
		if fes := fieldErrors(t, try()); fes[0].Allowed != "anything but 13" {
			t.Errorf("%s: %v", name, fes)
		}
		if st.Current() != before {
			t.Fatalf("%s: a rejected change replaced the snapshot", name)
		}
	}
	cancel()
	if _, err := st.Patch(LayerRuntime, map[string]string{"workload.readRate": "13"}); err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}
