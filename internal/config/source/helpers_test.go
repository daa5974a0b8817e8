package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// fakeKV stands in for a real driver; its name is one no real driver uses. The same
// fakes are registered by package config's tests, in another test binary.
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

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-kv", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeKVOptions{} }})
	driver.MustRegister(driver.Definition{Name: "fake-other", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeOtherOptions{} }})
}

// selectFake is the env that selects the fake driver (pebble is not linked into tests).
var selectFake = []string{"NDBENCH_DRIVER_NAME=fake-kv"}

// inputs are what a command hands to Load: the config file, the environment, --set.
type inputs struct {
	File string
	Env  []string
	Sets []string
}

func load(in inputs) (*config.Snapshot, error) {
	return Load(in.File, config.Sources{Env: in.Env, Sets: in.Sets})
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, in inputs) *config.Snapshot {
	t.Helper()
	snap, err := load(in)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return snap
}

func entry(t *testing.T, s *config.Snapshot, key string) config.Entry {
	t.Helper()
	for _, e := range s.Entries {
		if e.Key == key {
			return e
		}
	}
	t.Fatalf("no entry %s", key)
	return config.Entry{}
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
