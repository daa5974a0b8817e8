package pebble

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
	"github.com/ndbench/ndbench/driver/drivertest/ycsb"
)

// open returns an initialised driver with the defaults overridden by values, closed at the
// end of the test. Small caches and memtables keep the tests light.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, Name, map[string]string{"cacheSize": "8388608", "memTableSize": "4194304"}, values).(*Driver)
}

func TestReadWrite(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		values map[string]string
		writes []string // alternating key, value
		key    string
		want   []byte // nil = ErrNotFound
	}{
		{"missing key", nil, nil, "k", nil},
		{"written key", nil, []string{"k", "v1"}, "k", []byte("v1")},
		{"overwritten key", nil, []string{"k", "v1", "k", "v2"}, "k", []byte("v2")},
		{"other key", nil, []string{"a", "v1"}, "b", nil},
		{"empty value is stored, not missing", nil, []string{"k", ""}, "k", []byte{}},
		{"sync writes", map[string]string{"sync": "true"}, []string{"k", "v"}, "k", []byte("v")},
		{"without WAL", map[string]string{"disableWAL": "true"}, []string{"k", "v"}, "k", []byte("v")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, tt.values)
			for i := 0; i < len(tt.writes); i += 2 {
				if err := d.Write(ctx, tt.writes[i], []byte(tt.writes[i+1])); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			got, err := d.Read(ctx, tt.key)
			if tt.want == nil {
				if !errors.Is(err, driver.ErrNotFound) {
					t.Fatalf("read %q = %q, %v; want ErrNotFound", tt.key, got, err)
				}
				return
			}
			if err != nil || got == nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("read %q = %q, %v; want %q", tt.key, got, err, tt.want)
			}
		})
	}
}

func TestValueOwnership(t *testing.T) {
	ctx := context.Background()
	d := open(t, nil)
	buf := []byte("first")
	if err := d.Write(ctx, "k", buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXX")
	got, err := d.Read(ctx, "k")
	if err != nil || string(got) != "first" {
		t.Fatalf("after caller reused its buffer, read = %q, %v; want \"first\"", got, err)
	}
	if err := d.Write(ctx, "k", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if string(got) != "first" {
		t.Fatalf("earlier read result changed to %q by a later write", got)
	}
}

func TestBulk(t *testing.T) {
	ctx := context.Background()
	d := open(t, nil)
	if err := d.WriteBulk(ctx, []string{"a", "b", "c"}, [][]byte{[]byte("1"), []byte(""), []byte("3")}); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadBulk(ctx, []string{"a", "missing", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("1"), nil, {}, []byte("3")}
	for i := range want {
		if (got[i] == nil) != (want[i] == nil) || !bytes.Equal(got[i], want[i]) {
			t.Errorf("value %d = %q (nil %v), want %q (nil %v)", i, got[i], got[i] == nil, want[i], want[i] == nil)
		}
	}
	if err := d.WriteBulk(ctx, []string{"a"}, nil); driver.Classify(err) != driver.ClassRejected {
		t.Fatalf("mismatched bulk write: %v, want a rejected error", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "db")
	for _, disableWAL := range []string{"false", "true"} {
		t.Run("disableWAL="+disableWAL, func(t *testing.T) {
			values := map[string]string{"path": dir, "disableWAL": disableWAL}
			d := open(t, values)
			for i := 0; i < 100; i++ {
				if err := d.Write(ctx, fmt.Sprint("key", i), []byte(disableWAL+fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("given path removed at close: %v", err)
			}
			d = open(t, values)
			for i := 0; i < 100; i++ {
				got, err := d.Read(ctx, fmt.Sprint("key", i))
				if want := disableWAL + fmt.Sprint(i); err != nil || string(got) != want {
					t.Fatalf("after reopen key%d = %q, %v; want %q", i, got, err, want)
				}
			}
			if info := d.ConnectionInfo(); info["path"] != dir || info["temporary"] != "false" {
				t.Fatalf("connection info %v; want path %s, not temporary", info, dir)
			}
		})
	}
}

func TestTemporaryDirRemoved(t *testing.T) {
	d := open(t, nil)
	if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	info := d.ConnectionInfo()
	dir := info["path"]
	if info["temporary"] != "true" || dir == "" {
		t.Fatalf("connection info %v; want a temporary path", info)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("temporary directory missing while open: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary directory %s still there after close (stat: %v)", dir, err)
	}
}

func TestAfterClose(t *testing.T) {
	ctx := context.Background()
	closed := open(t, nil)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*Driver{"closed": closed, "never initialised": New()} {
		t.Run(name, func(t *testing.T) {
			if _, err := d.Read(ctx, "k"); driver.Classify(err) != driver.ClassUnavailable {
				t.Errorf("read: %v, want an unavailable error", err)
			}
			if err := d.Write(ctx, "k", nil); driver.Classify(err) != driver.ClassUnavailable {
				t.Errorf("write: %v, want an unavailable error", err)
			}
			if _, err := d.ReadBulk(ctx, []string{"k"}); err == nil {
				t.Error("bulk read succeeded")
			}
			if err := d.WriteBulk(ctx, []string{"k"}, [][]byte{nil}); err == nil {
				t.Error("bulk write succeeded")
			}
			if got := d.ConnectionInfo()["state"]; got != "closed" {
				t.Errorf("connection info state %q, want closed", got)
			}
			if len(d.DriverStats()) != 0 {
				t.Error("stats of a closed driver are not empty")
			}
			if err := d.Close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

func TestCancelledContext(t *testing.T) {
	d := open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Write(ctx, "k", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("write with a cancelled context: %v, want context.Canceled", err)
	}
}

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]string
		field  string
	}{
		{"sync without a log", map[string]string{"sync": "true", "disableWAL": "true"}, "sync"},
		{"tiny memtable", map[string]string{"memTableSize": "1024"}, "memTableSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := driver.Open(context.Background(), Name, tt.values)
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) != 1 || fes[0].Field != tt.field {
				t.Fatalf("open error = %v; want one field error on %s", err, tt.field)
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	d := open(t, nil)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				k := fmt.Sprintf("g%d-%d", g, i)
				if err := d.Write(ctx, k, []byte(k)); err != nil {
					t.Error(err)
					return
				}
				if got, err := d.Read(ctx, k); err != nil || string(got) != k {
					t.Errorf("read own write %s = %q, %v", k, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	stats := d.DriverStats()
	for _, name := range []string{"compactions", "l0Files", "writeStalls", "blockCacheHitPercent"} {
		if _, ok := stats[name]; !ok {
			t.Errorf("stats lack %s: %v", name, stats)
		}
	}
	if info := d.ConnectionInfo(); info["formatVersion"] == "" || info["diskUsageBytes"] == "" {
		t.Errorf("connection info lacks format or disk usage: %v", info)
	}
}

func TestLoggerShowsOnlyErrors(t *testing.T) {
	tests := []struct {
		name string
		log  func(*errorLogger)
		want string
	}{
		{"info dropped", func(l *errorLogger) { l.Infof("flushed %d tables", 3) }, ""},
		{"error shown", func(l *errorLogger) { l.Errorf("disk %s", "full") }, "pebble: disk full\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf strings.Builder
			tt.log(&errorLogger{w: &buf})
			if buf.String() != tt.want {
				t.Fatalf("logged %q, want %q", buf.String(), tt.want)
			}
		})
	}
}

func TestRegisteredAsDefaultReady(t *testing.T) {
	// With no options at all it must open: that is what `ndbench run` does on a fresh machine.
	d, _, err := driver.Open(context.Background(), Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkWrite(b *testing.B) {
	ctx := context.Background()
	d := open(b, map[string]string{"cacheSize": "67108864", "memTableSize": "67108864"})
	keys := benchKeys(100000)
	value := make([]byte, 128)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := d.Write(ctx, keys[i%len(keys)], value); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	d := open(b, map[string]string{"cacheSize": "67108864", "memTableSize": "67108864"})
	keys := benchKeys(100000)
	value := make([]byte, 128)
	for _, k := range keys {
		if err := d.Write(ctx, k, value); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Read(ctx, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ndbench-key-%d", i)
	}
	return keys
}

// TestConformance runs the public driver conformance suite. Pebble is embedded, so it runs
// with the unit tests; there is no server to pause or stop, so those checks skip.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name:    Name,
		Options: map[string]string{"cacheSize": "8388608", "memTableSize": "4194304"},
	})
}

// TestScanAndDelete: the operations delete and scan behave as driver.Deleter and
// driver.Scanner say.
func TestScanAndDelete(t *testing.T) { drivertest.ScanAndDelete(t, open(t, nil)) }

// TestYCSBPresets: ycsb-d, ycsb-e and ycsb-f run on pebble as `ndbench run --workload
// ycsb-X` runs them (the kit's case, ycsb.Run): E's scans, with an iterator in key order,
// read keys after the backfill; D's and E's inserts grow the keyspace; F reports its rmw;
// nothing fails and validation finds nothing wrong.
func TestYCSBPresets(t *testing.T) {
	ycsb.Run(t, ycsb.Case{
		Driver:  Name,
		Presets: []string{"ycsb-d", "ycsb-e", "ycsb-f"},
		Open:    func(t *testing.T, _ string) driver.Driver { return open(t, nil) },
	})
}
