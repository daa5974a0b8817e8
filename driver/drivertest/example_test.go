package drivertest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// newcomer is a driver as someone new to ndbench writes it from the package docs, with
// a map for a store: TestNewcomerDriverPassesTheKit holds it to the whole suite, so the
// docs' recipe is known to be enough to pass.
type newcomer struct {
	mu     sync.RWMutex
	m      map[string][]byte
	closed bool
}

type newcomerOptions struct {
	Capacity int `opt:"capacity" default:"1000" min:"1" help:"keys the map is sized for"`
}

var errNewcomerClosed = errors.New("newcomer: closed")

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "newcomer",
		Summary:    "the docs' smallest driver",
		NewOptions: func() any { return &newcomerOptions{} },
		New:        func() driver.Driver { return &newcomer{} },
	})
}

func (d *newcomer) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[newcomerOptions](opts)
	if err != nil {
		return err
	}
	d.m = make(map[string][]byte, o.Capacity)
	return nil
}

func (d *newcomer) Read(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return nil, driver.Wrap(driver.ClassUnavailable, errNewcomerClosed)
	}
	v, ok := d.m[key]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (d *newcomer) Write(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return driver.Wrap(driver.ClassUnavailable, errNewcomerClosed)
	}
	d.m[key] = append([]byte(nil), value...)
	return nil
}

func (d *newcomer) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// conformance is a driver's conformance test, as it sits in mystore_test.go: one call
// against the driver's real server (the map needs none). The checks that need a server
// the harness can pause or stop are skipped, each saying why, unless Harness.Pause and
// Harness.Outage are given.
func conformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:    "newcomer",
		Options: map[string]string{"capacity": "64"},
	})
}

// ExampleRun shows the one function a driver's tests add; go test runs it below as
// TestNewcomerDriverPassesTheKit.
func ExampleRun() {
	var testConformance func(*testing.T) = conformance // func TestConformance(t *testing.T)
	_ = testConformance
}

// TestNewcomerDriverPassesTheKit runs ExampleRun's test for real: the smallest driver the
// docs describe passes every check that needs no server control.
func TestNewcomerDriverPassesTheKit(t *testing.T) { conformance(t) }
