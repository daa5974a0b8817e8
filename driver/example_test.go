package driver_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ndbench/ndbench/driver"
)

// mapStore is the smallest useful driver, as a newcomer writes one: a map behind a mutex
// stands in for the store's client. It keeps the contract of package driver: a miss is
// driver.ErrNotFound, Write copies the engine's buffer, every operation honours its
// context, and operations after Close fail instead of panicking.
type mapStore struct {
	mu     sync.RWMutex
	m      map[string][]byte
	closed bool
}

// mapOptions are the driver's options: the tags give each its name, default, bounds and
// help, and the registry turns them into the schema the CLI, API, UI and docs show.
type mapOptions struct {
	Capacity int `opt:"capacity" default:"1000" min:"1" max:"1000000" help:"keys the map is sized for"`
}

var errClosed = errors.New("map store: closed")

func (s *mapStore) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[mapOptions](opts)
	if err != nil {
		return err
	}
	s.m = make(map[string][]byte, o.Capacity)
	return nil
}

func (s *mapStore) Read(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, driver.Wrap(driver.ClassUnavailable, errClosed)
	}
	v, ok := s.m[key]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return append([]byte(nil), v...), nil
}

func (s *mapStore) Write(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return driver.Wrap(driver.ClassUnavailable, errClosed)
	}
	s.m[key] = append([]byte(nil), value...) // the engine reuses value's buffer
	return nil
}

func (s *mapStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Example registers a driver, opens it with options as a user would give them (text, as
// on the command line), and moves a value through it. A real driver registers from its
// package's init function, so importing the package is enough for ndbench to find it.
func Example() {
	driver.MustRegister(driver.Definition{
		Name:       "example-map",
		Summary:    "a map in memory, the smallest driver",
		NewOptions: func() any { return &mapOptions{} },
		New:        func() driver.Driver { return &mapStore{} },
	})

	ctx := context.Background()
	d, _, err := driver.Open(ctx, "example-map", map[string]string{"capacity": "64"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()

	if err := d.Write(ctx, "user:1", []byte("alice")); err != nil {
		fmt.Println(err)
		return
	}
	v, err := d.Read(ctx, "user:1")
	fmt.Printf("%s %v\n", v, err)
	_, err = d.Read(ctx, "user:2")
	fmt.Println(errors.Is(err, driver.ErrNotFound))

	// Bad option values are refused before Init, naming the option and its bounds.
	_, _, err = driver.Open(ctx, "example-map", map[string]string{"capacity": "0"})
	fmt.Println(err)
	// Output:
	// alice <nil>
	// true
	// options of driver example-map: capacity: invalid value "0"; allowed: an integer from 1 to 1000000
}
