package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// perEntry is the per-entry overhead maxBytes counts, as its help text documents.
const perEntry = 96

// cost is what one stored entry counts against maxBytes.
func cost(key string, size int) int64 { return int64(len(key) + size + perEntry) }

// realBytes sums the cost of what d actually holds, the figure the accounting must equal.
func realBytes(d *Driver) int64 {
	var n int64
	for i := range d.shards {
		sh := &d.shards[i]
		sh.mu.RLock()
		if sh.t.open() {
			sh.t.each(func(key string, v []byte) { n += cost(key, len(v)) })
		}
		sh.mu.RUnlock()
	}
	return n
}

// wantFull checks that err is the store-full rejection: class rejected, naming the option
// and the limit.
func wantFull(t *testing.T, what string, err error, limit int64) {
	t.Helper()
	if driver.Classify(err) != driver.ClassRejected || !strings.Contains(fmt.Sprint(err), "maxBytes="+strconv.FormatInt(limit, 10)) {
		t.Fatalf("%s: %v (class %v); want a rejected error naming maxBytes=%d", what, err, driver.Classify(err), limit)
	}
}

func TestMaxBytes(t *testing.T) {
	ctx := context.Background()
	type step struct {
		op      string // "write", "bulk" (keys a comma list, one size each), "limit" (reconfigure maxBytes to size)
		key     string
		size    int
		wantErr bool // a store-full rejection
	}
	tests := []struct {
		name  string
		limit int64
		steps []step
		want  map[string]int // what reads return afterwards: key -> value size, -1 = missing
	}{
		{"insert that fits exactly", cost("a", 10), []step{
			{op: "write", key: "a", size: 10},
			{op: "write", key: "b", size: 0, wantErr: true},
		}, map[string]int{"a": 10, "b": -1}},
		{"insert one byte over", cost("a", 10) - 1, []step{
			{op: "write", key: "a", size: 10, wantErr: true},
		}, map[string]int{"a": -1}},
		{"overwrite of the same size at the limit", cost("a", 100), []step{
			{op: "write", key: "a", size: 100},
			{op: "write", key: "a", size: 100},
		}, map[string]int{"a": 100}},
		{"shrinking overwrite frees room", cost("a", 100) + cost("b", 50), []step{
			{op: "write", key: "a", size: 150},
			{op: "write", key: "b", size: 50, wantErr: true},
			{op: "write", key: "a", size: 100},
			{op: "write", key: "b", size: 50},
			{op: "write", key: "c", size: 0, wantErr: true},
		}, map[string]int{"a": 100, "b": 50, "c": -1}},
		{"growing overwrite past the limit keeps the old value", cost("a", 100), []step{
			{op: "write", key: "a", size: 60},
			{op: "write", key: "a", size: 101, wantErr: true},
			{op: "write", key: "a", size: 100},
		}, map[string]int{"a": 100}},
		{"unlimited", 0, []step{
			{op: "write", key: "a", size: 1 << 20},
			{op: "write", key: "b", size: 1 << 20},
		}, map[string]int{"a": 1 << 20, "b": 1 << 20}},
		{"bulk write stops at the limit", cost("a", 10) + cost("b", 10), []step{
			{op: "bulk", key: "a,b,c", size: 10, wantErr: true},
		}, map[string]int{"a": 10, "b": 10, "c": -1}},
		{"lowered below the data: reads and shrinking work, growing does not", 1 << 20, []step{
			{op: "write", key: "a", size: 1000},
			{op: "write", key: "b", size: 1000},
			{op: "limit", size: 500},
			{op: "write", key: "a", size: 1001, wantErr: true},
			{op: "write", key: "c", size: 0, wantErr: true},
			{op: "write", key: "a", size: 10},
			{op: "write", key: "b", size: 1000},
			{op: "limit", size: 1 << 20},
			{op: "write", key: "c", size: 1},
		}, map[string]int{"a": 10, "b": 1000, "c": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			d := open(t, map[string]string{"shards": "4", "maxBytes": strconv.FormatInt(limit, 10)})
			for i, s := range tt.steps {
				var err error
				switch s.op {
				case "write":
					err = d.Write(ctx, s.key, make([]byte, s.size))
				case "bulk":
					keys := strings.Split(s.key, ",")
					values := make([][]byte, len(keys))
					for j := range values {
						values[j] = make([]byte, s.size)
					}
					err = d.WriteBulk(ctx, keys, values)
				case "limit":
					limit = int64(s.size)
					err = d.Reconfigure(ctx, options(t, map[string]string{"shards": "4", "maxBytes": strconv.Itoa(s.size)}))
				}
				what := fmt.Sprintf("step %d (%s %q, %d bytes)", i, s.op, s.key, s.size)
				if s.wantErr {
					wantFull(t, what, err, limit)
				} else if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if got, want := d.DriverStats()["bytes"], realBytes(d); got != want {
					t.Fatalf("after %s: bytes = %d, want %d (the sum over the stored entries)", what, got, want)
				}
			}
			for k, size := range tt.want {
				v, err := d.Read(ctx, k)
				if size < 0 {
					if !errors.Is(err, driver.ErrNotFound) {
						t.Errorf("read %q = %d bytes, %v; want ErrNotFound", k, len(v), err)
					}
				} else if err != nil || len(v) != size {
					t.Errorf("read %q = %d bytes, %v; want %d bytes", k, len(v), err, size)
				}
			}
		})
	}
}

// TestMaxBytesConcurrent races inserts, growing and shrinking overwrites of the same keys
// against a limit they keep hitting, and checks the accounted total against the data.
func TestMaxBytesConcurrent(t *testing.T) {
	for _, limit := range []int64{0, 20000} {
		t.Run("maxBytes="+strconv.FormatInt(limit, 10), func(t *testing.T) {
			ctx := context.Background()
			d := open(t, map[string]string{"shards": "4", "maxBytes": strconv.FormatInt(limit, 10)})
			const goroutines, perG, keys = 8, 3000, 200
			var ok, full atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 1))
					for i := 0; i < perG; i++ {
						k := "k" + strconv.Itoa(r.IntN(keys))
						var err error
						if i%10 == 0 {
							err = d.WriteBulk(ctx, []string{k, k + "x"}, [][]byte{make([]byte, r.IntN(300)), make([]byte, r.IntN(300))})
						} else {
							err = d.Write(ctx, k, make([]byte, r.IntN(300)))
						}
						switch {
						case err == nil:
							ok.Add(1)
						case driver.Classify(err) == driver.ClassRejected:
							full.Add(1)
						default:
							t.Error(err)
							return
						}
						if got := d.DriverStats()["bytes"]; limit > 0 && got > limit {
							t.Errorf("bytes = %d during the run, above maxBytes=%d", got, limit)
							return
						}
					}
				}()
			}
			wg.Wait()
			got, want := d.DriverStats()["bytes"], realBytes(d)
			if got != want {
				t.Fatalf("accounted bytes = %d, stored entries sum to %d", got, want)
			}
			if limit > 0 && (ok.Load() == 0 || full.Load() == 0 || got > limit) {
				t.Fatalf("%d writes ok, %d rejected, %d bytes stored; want both outcomes and at most %d bytes", ok.Load(), full.Load(), got, limit)
			}
			if full.Load() != d.DriverStats()["rejectedWrites"] {
				t.Fatalf("rejectedWrites = %d, want %d", d.DriverStats()["rejectedWrites"], full.Load())
			}
		})
	}
}

// TestMaxBytesBoundsMemory is issue 13's reproduction: 64 MiB values (dataSize=67108864)
// written to fresh keys must stop at maxBytes, and a rejected write must not even copy
// its value, so the heap stays at what is stored.
func TestMaxBytesBoundsMemory(t *testing.T) {
	const mib = 1 << 20
	const size, limit = 64 * mib, 256 * mib
	d := open(t, map[string]string{"maxBytes": strconv.Itoa(limit)})
	value := make([]byte, size)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stored := 0
	for i := 0; i < 16; i++ {
		key := fmt.Sprintf("ndbench-key-%d", i)
		err := d.Write(context.Background(), key, value)
		if i < 3 { // three fit; a fourth would pass the limit by its key and overhead
			if err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			stored++
			continue
		}
		wantFull(t, fmt.Sprintf("write %d", i), err, limit)
		runtime.ReadMemStats(&ms)
		// No GC here: a rejected write that copied its value first would show at once.
		if grown := int64(ms.HeapAlloc) - int64(base); grown > int64(stored*size+16*mib) {
			t.Fatalf("after rejected write %d the heap grew by %d MiB; %d MiB are stored", i, grown/mib, stored*size/mib)
		}
	}
	if got := d.DriverStats()["keys"]; got != 3 {
		t.Fatalf("keys = %d, want 3", got)
	}
	if v, err := d.Read(context.Background(), "ndbench-key-0"); err != nil || len(v) != size {
		t.Fatalf("read of a stored key after rejections: %d bytes, %v", len(v), err)
	}
}
