package drivertest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// This file holds the pieces a driver's own tests repeat around the suite: opening a
// driver over the test server's options, an operation context, and the check that value
// validation sees a value changed in the store.

// Open opens driver name with the option values base (the test server's address, say)
// and extra on top, extra winning, and closes it when the test ends. Open gives Init a
// minute, as Run does (a JVM-based store may be slow to answer a new session). It fails
// the test when the options do not decode or Init fails; the message names the options
// extra sets but not their values, which may hold a password. A Close that does not
// return within 20 s fails the test; an error from Close is only logged, since a test may
// have closed the driver itself or broken its store on purpose.
func Open(t testing.TB, name string, base, extra map[string]string) driver.Driver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	d, _, err := driver.Open(ctx, name, values(base, extra))
	if err != nil {
		t.Fatalf("open %s driver (options set by the test: %s): %v", name, optionNames(extra), err)
	}
	t.Cleanup(func() {
		if err := closeWithin(d, closeTimeout); err != nil {
			if errors.Is(err, errCloseHangs) {
				t.Errorf("Close of %s driver: %v", name, err)
				return
			}
			t.Logf("Close of %s driver: %v", name, err)
		}
	})
	return d
}

// optionNames lists the names set in vals, sorted, for a message that must not show
// their values.
func optionNames(vals map[string]string) string {
	if len(vals) == 0 {
		return "none"
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Context returns a context for a test's operations on its store, cancelled when the test
// ends. Its 30 s deadline turns a hung store into a failure of that test rather than a
// stuck run; no operation on a test server comes near it.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Codec is the value validation Corruption checks a driver against: in ndbench,
// internal/workload's EncodeValue and CheckValue with its verdicts CheckOK and
// CheckCorrupt. It is passed in so that this package imports nothing from ndbench but
// package driver. V is the type of a verdict.
type Codec[V comparable] struct {
	// Encode returns a value of len(payload) bytes that carries the validation header for
	// key and the write sequence seq, written into dst[:0] (dst may be nil).
	Encode func(dst, key []byte, seq uint64, payload []byte) []byte
	// Check gives the verdict on a value read back for key, with the sequence the header
	// carries.
	Check func(key, value []byte) (V, uint64)
	// OK is the verdict on an intact value, Corrupt the one on a changed value.
	OK, Corrupt V
}

// Tamper describes the value Corruption writes and how the test changes it in the store.
type Tamper struct {
	// Key is the key written. Empty means "drivertest-valid".
	Key string
	// Seq is the write sequence in the header. 0 means 7.
	Seq uint64
	// Payload is the value before the header replaces its start; its length is the
	// value's. Nil means 100 bytes of "abcdefghij".
	Payload []byte
	// Change alters the value stored under key behind the driver's back, through the
	// store's own client, as a disk or another writer would. read is a copy of the value
	// the driver read back, for a store whose client can only write a value whole.
	Change func(ctx context.Context, key string, read []byte) error
}

// Corruption checks that value validation catches what a store changed: it writes a
// validated value through d, reads it back and expects the verdict OK with the sequence
// written, lets tm.Change alter the stored value, reads again and expects the verdict
// Corrupt. A driver that caches values, or serves a read from somewhere the store's own
// client did not change, fails the last step.
func Corruption[V comparable](t *testing.T, d driver.Driver, c Codec[V], tm Tamper) {
	t.Helper()
	if c.Encode == nil || c.Check == nil || tm.Change == nil {
		t.Fatal("drivertest.Corruption: Codec.Encode, Codec.Check and Tamper.Change are required")
	}
	key, seq, payload := tm.Key, tm.Seq, tm.Payload
	if key == "" {
		key = "drivertest-valid"
	}
	if seq == 0 {
		seq = 7
	}
	if payload == nil {
		payload = bytes.Repeat([]byte("abcdefghij"), 10)
	}
	if err := write(d, key, c.Encode(nil, []byte(key), seq, payload)); err != nil {
		t.Fatalf("write validated value %q: %v", key, err)
	}
	got, err := read(d, key)
	if err != nil {
		t.Fatalf("read validated value %q: %v", key, err)
	}
	if v, s := c.Check([]byte(key), got); v != c.OK || s != seq {
		t.Fatalf("untouched value: verdict %v seq %d, want %v seq %d", v, s, c.OK, seq)
	}
	ctx, cancel := opContext()
	defer cancel()
	if err := tm.Change(ctx, key, bytes.Clone(got)); err != nil {
		t.Fatalf("change the stored value of %q behind the driver's back: %v", key, err)
	}
	if got, err = read(d, key); err != nil {
		t.Fatalf("read tampered value %q: %v", key, err)
	}
	if v, _ := c.Check([]byte(key), got); v != c.Corrupt {
		t.Errorf("tampered value: verdict %v, want %v", v, c.Corrupt)
	}
}

// FlipByte changes read[i] (counted from the end when i is negative) in place and returns
// read, for a Tamper.Change that writes a value whole. It flips the bit that makes a
// letter's case, so a store that keeps text still takes the value.
func FlipByte(read []byte, i int) []byte {
	if i < 0 {
		i += len(read)
	}
	read[i] ^= 0x20
	return read
}

// ScanAndDelete checks a driver's Deleter and Scanner (the operations delete and scan) on
// a store that holds none of the keys "sd-k*": a deleted key reads as ErrNotFound, and
// deleting a missing key is not an error; a scan reads up to n keys in the driver's
// stated order (driver.ScanOrderOf) from a start key that need not exist, and reading none
// is ErrNotFound; a cancelled context fails a scan. In byte order the counts are exact;
// in a store's own order (a token ring) which keys follow a start key is the store's, so
// a scan is checked to read at most n of the keys present. It fails the test when d
// implements neither.
func ScanAndDelete(t *testing.T, d driver.Driver) {
	t.Helper()
	del, okD := d.(driver.Deleter)
	sc, okS := d.(driver.Scanner)
	if !okD || !okS {
		t.Fatalf("driver %T: Deleter %v, Scanner %v; want both", d, okD, okS)
	}
	ctx := Context(t)
	for _, k := range []string{"sd-k1", "sd-k10", "sd-k2", "sd-k3", "sd-k5"} {
		if err := d.Write(ctx, k, []byte("v-"+k)); err != nil {
			t.Fatalf("write %s: %v", k, err)
		}
	}
	if err := del.Delete(ctx, "sd-k3"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := del.Delete(ctx, "sd-nosuch"); err != nil {
		t.Errorf("delete of a missing key: %v", err)
	}
	if _, err := d.Read(ctx, "sd-k3"); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("read of a deleted key: %v, want ErrNotFound", err)
	}
	for _, tc := range []struct {
		start string
		n     int
		want  int // 0: ErrNotFound
	}{
		{"sd-k1", 2, 2},   // k1, k10
		{"sd-k1", 100, 4}, // k1 k10 k2 k5 (k3 deleted)
		{"sd-k0", 1, 1},   // a start key that does not exist
		{"sd-k2", 3, 2},   // k2, k5
		{"sd-k6", 5, 0},   // past the last key
		{"sd-", 4, 4},
	} {
		got, err := sc.Scan(ctx, tc.start, tc.n)
		if driver.ScanOrderOf(sc) != driver.ScanBytes {
			if err != nil && !errors.Is(err, driver.ErrNotFound) || err == nil && (got < 1 || got > min(tc.n, 4)) {
				t.Errorf("Scan(%q, %d) = %d, %v in %s order; want 1 to %d keys or ErrNotFound", tc.start, tc.n, got, err, driver.ScanOrderOf(sc), min(tc.n, 4))
			}
			continue
		}
		switch {
		case tc.want == 0 && !errors.Is(err, driver.ErrNotFound):
			t.Errorf("Scan(%q, %d) = %d, %v; want ErrNotFound", tc.start, tc.n, got, err)
		case tc.want != 0 && (err != nil || got != tc.want):
			t.Errorf("Scan(%q, %d) = %d, %v; want %d", tc.start, tc.n, got, err, tc.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sc.Scan(cctx, "sd-k1", 1); err == nil {
		t.Error("scan with a cancelled context succeeded")
	}
}
