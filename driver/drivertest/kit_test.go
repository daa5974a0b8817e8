package drivertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/workload"
)

// codec is the engine's value validation, as the bundled drivers' tests pass it.
var codec = drivertest.Codec[workload.Check]{
	Encode: workload.EncodeValue, Check: workload.CheckValue,
	OK: workload.CheckOK, Corrupt: workload.CheckCorrupt,
}

// TestOpenLayersOptions: base applies, extra wins over it, and the driver works.
// errorRatio=1 makes the memory driver fail every operation, so it shows which layer won.
func TestOpenLayersOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		base, extra map[string]string
		wantFail    bool
	}{
		{"defaults", nil, nil, false},
		{"base applies", map[string]string{"errorRatio": "1"}, nil, true},
		{"extra wins", map[string]string{"errorRatio": "1"}, map[string]string{"errorRatio": "0"}, false},
		{"extra over default", nil, map[string]string{"errorRatio": "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := drivertest.Open(t, memory.Name, tc.base, tc.extra)
			err := d.Write(drivertest.Context(t), "k", []byte("v"))
			if failed := err != nil; failed != tc.wantFail {
				t.Fatalf("write: err %v, want failure %v", err, tc.wantFail)
			}
		})
	}
}

// TestOpenClosesAtCleanup: the driver Open returns is closed once the test ends.
func TestOpenClosesAtCleanup(t *testing.T) {
	var d driver.Driver
	t.Run("open", func(t *testing.T) { d = drivertest.Open(t, memory.Name, nil, nil) })
	if err := d.Write(context.Background(), "k", []byte("v")); err == nil {
		t.Fatal("write after the opening test ended succeeded; Open did not close the driver")
	}
}

// TestContextEndsWithTest: the context of a test's operations is cancelled when it ends.
func TestContextEndsWithTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = drivertest.Context(t)
		if _, ok := ctx.Deadline(); !ok {
			t.Error("context has no deadline; a hung store would hang the test")
		}
		if ctx.Err() != nil {
			t.Errorf("context done while the test runs: %v", ctx.Err())
		}
	})
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("context after the test: %v, want cancelled", ctx.Err())
	}
}

// TestCorruptionCaughtInMemory runs Corruption on the memory driver, whose "store's own
// client" is the driver itself: the change is a write of the flipped value.
func TestCorruptionCaughtInMemory(t *testing.T) {
	d := drivertest.Open(t, memory.Name, nil, nil)
	for _, i := range []int{10, 40, -5} { // in the header, in the payload
		drivertest.Corruption(t, d, codec, drivertest.Tamper{
			Change: func(ctx context.Context, key string, read []byte) error {
				return d.Write(ctx, key, drivertest.FlipByte(read, i))
			},
		})
	}
}

// kitVariantEnv tells a re-executed test binary which misuse of the kit to run.
const kitVariantEnv = "DRIVERTEST_KIT_VARIANT"

// TestKitVariant runs the variant named by $DRIVERTEST_KIT_VARIANT; it is meant to fail,
// so it runs only in the subprocess TestKitFails starts.
func TestKitVariant(t *testing.T) {
	d := drivertest.Open(t, memory.Name, nil, nil)
	switch os.Getenv(kitVariantEnv) {
	case "":
		t.Skip("run by TestKitFails")
	case "change-nothing": // a tamper that leaves the stored value as it was
		drivertest.Corruption(t, d, codec, drivertest.Tamper{
			Change: func(context.Context, string, []byte) error { return nil },
		})
	case "wrong-key": // a value stored under another key is not corruption
		drivertest.Corruption(t, d, codec, drivertest.Tamper{
			Change: func(ctx context.Context, key string, _ []byte) error {
				return d.Write(ctx, key, workload.EncodeValue(nil, []byte("other"), 7, []byte(strings.Repeat("x", 100))))
			},
		})
	case "bad-option":
		drivertest.Open(t, memory.Name, map[string]string{"shards": "1"}, map[string]string{"shards": "none"})
	}
}

// TestKitFails proves the helpers can fail, each with a message that says what went
// wrong: a subprocess runs the failing variant (a failed test cannot be contained here).
func TestKitFails(t *testing.T) {
	for _, tc := range []struct{ variant, want string }{
		{"change-nothing", "tampered value: verdict ok, want corrupt"},
		{"wrong-key", "tampered value: verdict wrong_key, want corrupt"},
		{"bad-option", "open memory driver (options set by the test: shards)"},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestKitVariant$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), kitVariantEnv+"="+tc.variant)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("variant %q passed (err %v); output:\n%s", tc.variant, err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("variant %q: output lacks %q:\n%s", tc.variant, tc.want, out)
			}
		})
	}
}
