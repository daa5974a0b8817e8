package drivertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// kv is an in-memory driver written for these tests: correct unless bug names one of the
// mistakes below, each of which one check of the suite must catch.
type kv struct {
	bug    string
	mu     sync.Mutex
	m      map[string][]byte
	closed bool
	label  atomic.Value // the live option, as a store would apply it
}

// The bugs, by the driver name they are registered under.
const (
	bugNone            = ""
	bugMissIsNil       = "miss-is-nil"       // Read returns nil, nil for a missing key
	bugKeepsBuffer     = "keeps-buffer"      // Write stores the caller's slice
	bugIgnoresContext  = "ignores-context"   // no operation looks at ctx
	bugWorksAfterClose = "works-after-close" // Close does nothing
	bugUnclassified    = "unclassified"      // outage errors carry no class
	bugSendsCancelled  = "sends-cancelled"   // Write stores the value, then reports a cancelled ctx
)

// Simulated store state shared by every kv driver of the process, so a harness can take
// "the server" down or stall it.
var (
	storeDown atomic.Bool
	stallMu   sync.Mutex
	stall     chan struct{} // non-nil while paused; closed on resume
)

type kvOptions struct {
	Label  string `opt:"label" default:"a" live:"true" help:"a live option"`
	Shards int    `opt:"shards" default:"1" min:"1" help:"an option that is not live"`
}

func init() {
	for _, bug := range []string{bugNone, bugMissIsNil, bugKeepsBuffer, bugIgnoresContext, bugWorksAfterClose, bugUnclassified, bugSendsCancelled} {
		driver.MustRegister(driver.Definition{
			Name:       kvName(bug),
			Summary:    "in-memory driver for the suite's own tests",
			NewOptions: func() any { return &kvOptions{} },
			New:        func() driver.Driver { return &kv{bug: bug} },
		})
	}
}

func kvName(bug string) string {
	if bug == bugNone {
		return "drivertest-kv"
	}
	return "drivertest-kv-" + bug
}

func (d *kv) Init(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[kvOptions](opts)
	if err != nil {
		return err
	}
	d.m = map[string][]byte{}
	d.label.Store(o.Label)
	return nil
}

// enter is what every operation does first: honour ctx, fail when closed, down or stalled.
func (d *kv) enter(ctx context.Context) error {
	if d.bug != bugIgnoresContext {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("kv: %w", err)
		}
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return driver.Wrap(driver.ClassUnavailable, errors.New("kv: closed"))
	}
	if storeDown.Load() {
		if d.bug == bugUnclassified {
			return errors.New("kv: something went wrong")
		}
		return driver.Wrap(driver.ClassUnavailable, errors.New("kv: store is down"))
	}
	stallMu.Lock()
	ch := stall
	stallMu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("kv: stalled: %w", ctx.Err())
		}
	}
	return nil
}

func (d *kv) Read(ctx context.Context, key string) ([]byte, error) {
	if err := d.enter(ctx); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.m[key]
	if !ok {
		if d.bug == bugMissIsNil {
			return nil, nil
		}
		return nil, driver.ErrNotFound
	}
	return v, nil
}

func (d *kv) Write(ctx context.Context, key string, value []byte) error {
	entry := ctx
	if d.bug == bugSendsCancelled {
		entry = context.WithoutCancel(ctx)
	}
	if err := d.enter(entry); err != nil {
		return err
	}
	if d.bug != bugKeepsBuffer {
		value = append([]byte{}, value...)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m[key] = value
	if d.bug == bugSendsCancelled {
		// Like a library that queues the request and only then looks at the context.
		return ctx.Err()
	}
	return nil
}

func (d *kv) ReadBulk(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := d.Read(ctx, k)
		if err != nil && !errors.Is(err, driver.ErrNotFound) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *kv) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	for i, k := range keys {
		if err := d.Write(ctx, k, values[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *kv) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[kvOptions](opts)
	if err != nil {
		return err
	}
	d.label.Store(o.Label)
	return nil
}

func (d *kv) Close() error {
	if d.bug == bugWorksAfterClose {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

// harness runs the suite on kv. Only the correct driver and the one whose bug shows in
// an outage get the stall and outage checks: they take seconds, and the other bugs do not
// need them to show.
func harness(bug string) drivertest.Harness {
	h := drivertest.Harness{Name: kvName(bug), LiveValues: map[string]string{"label": "b"}}
	if bug != bugNone && bug != bugUnclassified {
		return h
	}
	h.Pause = func() (func(), error) {
		stallMu.Lock()
		defer stallMu.Unlock()
		ch := make(chan struct{})
		stall = ch
		return sync.OnceFunc(func() {
			stallMu.Lock()
			defer stallMu.Unlock()
			stall = nil
			close(ch)
		}), nil
	}
	h.Outage = &drivertest.Outage{
		Stop:  func() error { storeDown.Store(true); return nil },
		Start: func(context.Context) error { storeDown.Store(false); return nil },
	}
	return h
}

// TestCorrectDriverPasses keeps the suite honest the other way: a driver that keeps the
// contract passes every check, none skipped.
func TestCorrectDriverPasses(t *testing.T) {
	drivertest.Run(t, harness(bugNone))
}

// variantEnv tells a re-executed test binary which broken driver to run the suite on.
const variantEnv = "DRIVERTEST_VARIANT"

// TestBrokenDriverVariant runs the suite on the variant named by $DRIVERTEST_VARIANT; it
// is meant to fail, so it runs only in the subprocess TestSuiteCatchesBrokenDrivers starts.
func TestBrokenDriverVariant(t *testing.T) {
	v := os.Getenv(variantEnv)
	if v == "" {
		t.Skip("run by TestSuiteCatchesBrokenDrivers")
	}
	h := harness(v)
	if v == "forgot-live" { // a correct driver whose harness does not switch its live option
		h = drivertest.Harness{Name: kvName(bugNone)}
	}
	drivertest.Run(t, h)
}

// TestSuiteCatchesBrokenDrivers proves the suite can fail: for each broken driver it runs
// the suite in a subprocess (a failing subtest cannot be contained in this process) and
// expects exactly the check that guards the broken rule to fail.
func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for _, tc := range []struct{ variant, check string }{
		{bugMissIsNil, drivertest.CheckNotFound},
		{bugKeepsBuffer, drivertest.CheckValueBufferReuse},
		{bugIgnoresContext, drivertest.CheckCancelledContext},
		{bugWorksAfterClose, drivertest.CheckClosed},
		{bugUnclassified, drivertest.CheckOutage},
		{bugSendsCancelled, drivertest.CheckCancelledContext},
		{"forgot-live", drivertest.CheckLiveReconfigure},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenDriverVariant$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), variantEnv+"="+tc.variant)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite passed a driver with bug %q (err %v); output:\n%s", tc.variant, err, out)
			}
			failed := failedChecks(string(out))
			if !failed[tc.check] {
				t.Errorf("bug %q: check %s did not fail; failed: %v; output:\n%s", tc.variant, tc.check, failed, out)
			}
			// Other checks may fail too when the bug is visible to them (a kept buffer
			// also garbles concurrent reads); the one that guards the rule must.
			t.Logf("bug %q failed checks %v", tc.variant, keys(failed))
		})
	}
}

// failedChecks returns the top-level checks reported as failed in go test -v output.
func failedChecks(out string) map[string]bool {
	failed := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: TestBrokenDriverVariant/")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		name, _, _ = strings.Cut(name, "/")
		failed[name] = true
	}
	return failed
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
