package node

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// warmingDriver is the memory driver with Warm: it records the workers it was asked to
// connect for, and fails when told to.
type warmingDriver struct {
	driver.Driver
	mu    *sync.Mutex
	calls *[]int
	fail  bool
}

func (d warmingDriver) Warm(_ context.Context, workers int) error {
	d.mu.Lock()
	*d.calls = append(*d.calls, workers)
	d.mu.Unlock()
	if d.fail {
		return errors.New("connect to 127.0.0.1:1: connection refused")
	}
	return nil
}

var (
	warmMu    sync.Mutex
	warmCalls []int
)

func init() {
	mem, ok := driver.Lookup("memory")
	if !ok {
		panic("the memory driver is not registered")
	}
	for name, fail := range map[string]bool{"warming": false, "warming-fails": true} {
		if err := driver.Register(driver.Definition{Name: name, Summary: "memory with Warm (node tests)",
			NewOptions: mem.NewOptions, New: func() driver.Driver {
				return warmingDriver{Driver: mem.New(), mu: &warmMu, calls: &warmCalls, fail: fail}
			}}); err != nil {
			panic(err)
		}
	}
}

// TestInitWarmsTheWorkersConnections: a driver that connects lazily (driver.Warmer) is
// asked at Init, before any load, for the connections of the workers the workload
// starts with: those of the enabled classes. A failed warm-up does not fail Init.
func TestInitWarmsTheWorkersConnections(t *testing.T) {
	cases := []struct {
		name   string
		driver string
		sets   []string
		want   []int
	}{
		{"readers and writers", "warming", []string{"workload.readers=50", "workload.writers=3"}, []int{53}},
		{"writes off", "warming", []string{"workload.readers=50", "workload.writers=3", "workload.writeEnabled=false"}, []int{50}},
		{"an op class", "warming", []string{"workload.readers=2", "workload.writers=0", "workload.ops.scan.mix=read", "workload.ops.scan.workers=7"}, []int{9}},
		{"no workers", "warming", []string{"workload.readers=0", "workload.writers=0"}, nil},
		{"failing", "warming-fails", []string{"workload.readers=4", "workload.writers=0"}, []int{4}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warmMu.Lock()
			warmCalls = nil
			warmMu.Unlock()
			snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=" + tc.driver}, tc.sets...)})
			if err != nil {
				t.Fatal(err)
			}
			i := New(config.NewStore(snap), nil)
			defer func() { _ = i.Close() }()
			if err := i.InitConfigured(context.Background()); err != nil {
				t.Fatalf("init: %v", err)
			}
			warmMu.Lock()
			got := append([]int(nil), warmCalls...)
			warmMu.Unlock()
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Errorf("Warm called with %v, want %v", got, tc.want)
			}
		})
	}
}
