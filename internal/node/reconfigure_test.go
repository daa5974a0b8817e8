package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// slowOptions has one live option whose changes go through slowDriver.Reconfigure.
type slowOptions struct {
	Level int `opt:"level" default:"0" min:"0" max:"1000" live:"true" help:"a live setting"`
}

// slowDriver blocks in Reconfigure until the test releases it, and records the levels it
// was reconfigured to, in order.
type slowDriver struct {
	mu      sync.Mutex
	applied []int
	entered chan int      // receives the level of each Reconfigure call as it starts
	release chan struct{} // one value lets one Reconfigure call finish
}

// slow is the one slowDriver the registered constructor returns; tests using it do not
// run in parallel.
var slow = &slowDriver{}

func init() {
	driver.MustRegister(driver.Definition{Name: "slow-reconfigure", Summary: "test", New: func() driver.Driver { return slow },
		NewOptions: func() any { return &slowOptions{} }})
}

func (d *slowDriver) Init(context.Context, any) error              { return nil }
func (d *slowDriver) Read(context.Context, string) ([]byte, error) { return nil, driver.ErrNotFound }
func (d *slowDriver) Write(context.Context, string, []byte) error  { return nil }
func (d *slowDriver) Close() error                                 { return nil }

func (d *slowDriver) Reconfigure(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[slowOptions](opts)
	if err != nil {
		return err
	}
	d.entered <- o.Level
	select {
	case <-d.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if o.Level == failingLevel {
		return errors.New("level 666 refused")
	}
	d.mu.Lock()
	d.applied = append(d.applied, o.Level)
	d.mu.Unlock()
	return nil
}

// failingLevel is a level slowDriver's Reconfigure refuses.
const failingLevel = 666

func (d *slowDriver) levels() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.applied...)
}

// within fails the test unless f returns within a bound far above what it needs.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not complete while a driver reconfiguration was in progress", what)
	}
}

// TestSlowReconfigureBlocksNothing: while the driver sits in Reconfigure, status, config
// and other changes are served; reconfigurations then apply in order and the driver ends
// with the latest options.
func TestSlowReconfigureBlocksNothing(t *testing.T) {
	slow.entered, slow.release, slow.applied = make(chan int, 16), make(chan struct{}), nil
	i := newInstance(t, "workload.readEnabled=false", "workload.writeEnabled=false")
	if err := i.Init(context.Background(), "slow-reconfigure", nil); err != nil {
		t.Fatal(err)
	}
	// Unblock anything still waiting when the test ends, whatever happened.
	t.Cleanup(func() { close(slow.release) })

	patched := make(chan error, 3)
	go func() {
		_, err := i.Patch(map[string]string{"drivers.slow-reconfigure.level": "1"})
		patched <- err
	}()
	if got := <-slow.entered; got != 1 {
		t.Fatalf("first reconfigure got level %d, want 1", got)
	}
	// The driver is now blocked in Reconfigure(level 1).
	within(t, "Status", func() { _ = i.Status() })
	within(t, "Config", func() { _ = i.Config() })
	within(t, "PATCH workload.readRate", func() {
		if _, err := i.Patch(map[string]string{"workload.readRate": "777"}); err != nil {
			t.Errorf("patch readRate: %v", err)
		}
	})
	within(t, "PATCH of a live driver option", func() {
		for _, l := range []int{2, 3} {
			if _, err := i.Patch(map[string]string{"drivers.slow-reconfigure.level": strconv.Itoa(l)}); err != nil {
				t.Errorf("patch level %d: %v", l, err)
			}
		}
	})
	within(t, "the first PATCH", func() {
		if err := <-patched; err != nil {
			t.Errorf("patch level 1: %v", err)
		}
	})
	checkReconfigureStatus(t, i, "pending")

	// Release the calls one at a time; each later call starts only after the earlier one
	// ended, and the last one has the latest level.
	last := 1
	for {
		slow.release <- struct{}{}
		if last == 3 {
			break
		}
		select {
		case l := <-slow.entered:
			if l <= last {
				t.Fatalf("reconfigure to level %d after level %d: out of order", l, last)
			}
			last = l
		case <-time.After(10 * time.Second):
			t.Fatalf("no reconfigure after level %d; want one to level 3", last)
		}
	}
	waitReconfigured(t, i)
	levels := slow.levels()
	if len(levels) == 0 || levels[len(levels)-1] != 3 {
		t.Fatalf("driver reconfigured to %v, want ending with 3", levels)
	}
	for k := 1; k < len(levels); k++ {
		if levels[k] <= levels[k-1] {
			t.Fatalf("driver reconfigured to %v: out of order", levels)
		}
	}
	i.mu.Lock()
	lvl := i.drvOpts.(*slowOptions).Level
	i.mu.Unlock()
	if lvl != 3 {
		t.Fatalf("instance records level %d as applied, want 3", lvl)
	}
	if i.eng.Workload().ReadRate != 777 {
		t.Fatalf("readRate %v, want 777", i.eng.Workload().ReadRate)
	}
	checkReconfigureStatus(t, i, "applied")
}

// checkReconfigureStatus fails unless the status reports the reconfiguration state want
// and versions that fit it.
func checkReconfigureStatus(t *testing.T, i *Node, want string) {
	t.Helper()
	st := i.Status()
	r := st.Reconfigure
	if r == nil || r.State != want {
		t.Fatalf("reconfigure status %+v, want state %s", r, want)
	}
	switch want {
	case ReconfigurePending, ReconfigureFailed:
		if r.PendingVersion <= r.AppliedVersion || r.PendingVersion > st.ConfigVersion {
			t.Fatalf("reconfigure status %+v at config version %d", r, st.ConfigVersion)
		}
	case ReconfigureApplied:
		if r.PendingVersion != 0 || r.Error != "" || r.AppliedVersion == 0 || r.AppliedVersion > st.ConfigVersion {
			t.Fatalf("reconfigure status %+v at config version %d", r, st.ConfigVersion)
		}
	}
}

// waitReconfigured waits until no reconfiguration is pending.
func waitReconfigured(t *testing.T, i *Node) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for {
		if r := i.Status().Reconfigure; r != nil && r.State != ReconfigurePending {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("reconfiguration still pending: %+v", i.Status().Reconfigure)
		}
	}
}

// zonedOptions mimic memcached's: a live option (local) that must name one of the zones,
// which only change at Init, beside an independent live option (ttl).
type zonedOptions struct {
	Zones []string `opt:"zones" default:"a,b" help:"zones (restart)"`
	Local string   `opt:"local" default:"a" live:"true" help:"zone read first"`
	TTL   int      `opt:"ttl" default:"0" min:"0" max:"100" live:"true" help:"a live setting"`
}

func (o *zonedOptions) Validate() error {
	if !slices.Contains(o.Zones, o.Local) {
		return driver.FieldErrors{{Field: "local", Value: o.Local, Allowed: "one of the zones " + strings.Join(o.Zones, ", ")}}
	}
	return nil
}

// zonedDriver accepts a Reconfigure only for a local zone among those it was
// initialised with, as memcached does.
type zonedDriver struct {
	mu   sync.Mutex
	init zonedOptions
	cur  zonedOptions
}

func (d *zonedDriver) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[zonedOptions](opts)
	if err != nil {
		return err
	}
	d.init, d.cur = *o, *o
	return nil
}

func (d *zonedDriver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[zonedOptions](opts)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.init.Zones, o.Local) {
		return fmt.Errorf("zone %s is not connected", o.Local)
	}
	d.cur = *o
	return nil
}

func (d *zonedDriver) options() zonedOptions {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cur
}

func (d *zonedDriver) Read(context.Context, string) ([]byte, error) { return nil, driver.ErrNotFound }
func (d *zonedDriver) Write(context.Context, string, []byte) error  { return nil }
func (d *zonedDriver) Close() error                                 { return nil }

var zoned = &zonedDriver{}

func init() {
	driver.MustRegister(driver.Definition{Name: "zoned", Summary: "test", New: func() driver.Driver { return zoned },
		NewOptions: func() any { return &zonedOptions{} }})
}

// TestLiveOptionsNeedingARestartWait: a live option that only fits a restart option's new
// value waits for the next Init (pending) instead of failing in Reconfigure, and the
// driver keeps the live options it already has.
func TestLiveOptionsNeedingARestartWait(t *testing.T) {
	i := newInstance(t, "workload.readEnabled=false", "workload.writeEnabled=false")
	if err := i.Init(context.Background(), "zoned", nil); err != nil {
		t.Fatal(err)
	}
	patch := func(values map[string]string) PatchResult {
		t.Helper()
		res, err := i.Patch(values)
		if err != nil {
			t.Fatal(err)
		}
		waitReconfigured(t, i)
		return res
	}
	patch(map[string]string{"drivers.zoned.ttl": "5"})
	res := patch(map[string]string{"drivers.zoned.zones": "a,c", "drivers.zoned.local": "c"})
	if want := []string{"drivers.zoned.local", "drivers.zoned.zones"}; !slices.Equal(res.Pending, want) {
		t.Fatalf("pending = %v, want %v", res.Pending, want)
	}
	if o := zoned.options(); o.Local != "a" || o.TTL != 5 {
		t.Fatalf("driver runs local=%s ttl=%d, want a and 5 (unchanged)", o.Local, o.TTL)
	}
	if st := i.Status(); st.LastError != nil || st.Reconfigure.State != ReconfigureApplied {
		t.Fatalf("status %+v, lastError %+v", st.Reconfigure, st.LastError)
	}
	// A local zone the driver has applies live, and the restart option set back leaves
	// nothing pending.
	res = patch(map[string]string{"drivers.zoned.zones": "a,b", "drivers.zoned.local": "b"})
	if len(res.Pending) != 0 {
		t.Fatalf("pending = %v, want none", res.Pending)
	}
	if o := zoned.options(); o.Local != "b" || o.TTL != 5 {
		t.Fatalf("driver runs local=%s ttl=%d, want b and 5", o.Local, o.TTL)
	}
	// A local zone in neither the running nor the configured zones is rejected.
	if _, err := i.Patch(map[string]string{"drivers.zoned.local": "z"}); err == nil {
		t.Fatal("local=z accepted")
	}
}

// TestFailedReconfigureIsReported: a Reconfigure that fails shows as failed in status and
// lastError, the driver keeps the options it had, and a later change applies.
func TestFailedReconfigureIsReported(t *testing.T) {
	slow.entered, slow.release, slow.applied = make(chan int, 16), make(chan struct{}, 16), nil
	i := newInstance(t, "workload.readEnabled=false", "workload.writeEnabled=false")
	if err := i.Init(context.Background(), "slow-reconfigure", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		slow.release <- struct{}{} // let the next two calls through at once
	}
	if _, err := i.Patch(map[string]string{"drivers.slow-reconfigure.level": strconv.Itoa(failingLevel)}); err != nil {
		t.Fatal(err)
	}
	waitReconfigured(t, i)
	checkReconfigureStatus(t, i, ReconfigureFailed)
	st := i.Status()
	if !strings.Contains(st.Reconfigure.Error, "refused") || st.LastError == nil || !strings.Contains(st.LastError.Message, "refused") {
		t.Fatalf("status %+v, lastError %+v", st.Reconfigure, st.LastError)
	}
	i.mu.Lock()
	lvl := i.drvOpts.(*slowOptions).Level
	i.mu.Unlock()
	if lvl != 0 {
		t.Fatalf("instance records level %d as applied after the failure, want 0", lvl)
	}
	if _, err := i.Patch(map[string]string{"drivers.slow-reconfigure.level": "7"}); err != nil {
		t.Fatal(err)
	}
	waitReconfigured(t, i)
	checkReconfigureStatus(t, i, ReconfigureApplied)
	if l := slow.levels(); len(l) != 1 || l[0] != 7 {
		t.Fatalf("driver reconfigured to %v, want [7]", l)
	}
	if r := i.Status().Reconfigure; r.AppliedVersion != i.Config().Version {
		t.Fatalf("applied version %d, config version %d", r.AppliedVersion, i.Config().Version)
	}
}

// TestErrorsShownWithoutPasswords: a driver or source error that carries a connection URL
// reaches status (lastError, reconfigure.error) and the log with the password masked.
func TestErrorsShownWithoutPasswords(t *testing.T) {
	i := newInstance(t)
	i.RecordError(errors.New("reconnect to redis://admin:S3cretPW@10.0.0.5:6379 failed"))
	st := i.Status()
	if st.LastError == nil || strings.Contains(st.LastError.Message, "S3cretPW") || !strings.Contains(st.LastError.Message, "10.0.0.5") {
		t.Errorf("lastError %+v: want the address without the password", st.LastError)
	}
}
