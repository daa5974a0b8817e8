package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// open returns an initialised driver with the defaults overridden by values, closed at the
// end of the test.
func open(t testing.TB, values map[string]string) *Driver {
	t.Helper()
	return drivertest.Open(t, Name, nil, values).(*Driver)
}

func options(t testing.TB, values map[string]string) *Options {
	t.Helper()
	opts, err := driver.NewOptions(Name, values)
	if err != nil {
		t.Fatalf("options %v: %v", values, err)
	}
	return opts.(*Options)
}

func TestReadWrite(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		writes map[string]string
		key    string
		want   []byte // nil = ErrNotFound
	}{
		{"missing key", nil, "k", nil},
		{"written key", map[string]string{"k": "v1"}, "k", []byte("v1")},
		{"other key", map[string]string{"a": "v1"}, "b", nil},
		{"empty value is stored, not missing", map[string]string{"k": ""}, "k", []byte{}},
		{"empty key", map[string]string{"": "v"}, "", []byte("v")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, map[string]string{"shards": "4"})
			for k, v := range tt.writes {
				if err := d.Write(ctx, k, []byte(v)); err != nil {
					t.Fatalf("write %q: %v", k, err)
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
	copy(buf, "XXXXX") // the engine reuses its buffer after Write
	got, err := d.Read(ctx, "k")
	if err != nil || string(got) != "first" {
		t.Fatalf("after caller reused its buffer, read = %q, %v; want \"first\"", got, err)
	}
	// A later overwrite (same length, so an in-place copy would be tempting) must not
	// change a slice an earlier Read returned.
	if err := d.Write(ctx, "k", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if string(got) != "first" {
		t.Fatalf("earlier read result changed to %q by a later write", got)
	}
	if again, _ := d.Read(ctx, "k"); string(again) != "other" {
		t.Fatalf("read after overwrite = %q, want \"other\"", again)
	}
}

func TestBulk(t *testing.T) {
	ctx := context.Background()
	d := open(t, nil)
	keys := []string{"a", "b", "c"}
	if err := d.WriteBulk(ctx, keys, [][]byte{[]byte("1"), []byte(""), []byte("3")}); err != nil {
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
	err = d.WriteBulk(ctx, keys, [][]byte{[]byte("1")})
	if driver.Classify(err) != driver.ClassRejected {
		t.Fatalf("mismatched bulk write: %v (class %v), want a rejected error", err, driver.Classify(err))
	}
}

func TestOptionValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Options)
		field  string // "" = valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"all simulation on", func(o *Options) {
			o.ServiceTime, o.ServiceTimeMax, o.Capacity = time.Millisecond, 2*time.Millisecond, 100
			o.StallEvery, o.StallFor, o.ErrorRatio, o.ErrorClass = time.Second, time.Millisecond, 0.5, "throttled"
		}, ""},
		{"zero shards", func(o *Options) { o.Shards = 0 }, "shards"},
		{"negative service time", func(o *Options) { o.ServiceTime = -1 }, "serviceTime"},
		{"negative stall", func(o *Options) { o.StallFor = -time.Second }, "stallFor"},
		{"negative capacity", func(o *Options) { o.Capacity = -5 }, "capacity"},
		{"error ratio above 1", func(o *Options) { o.ErrorRatio = 1.5 }, "errorRatio"},
		{"unknown error class", func(o *Options) { o.ErrorClass = "boom" }, "errorClass"},
		{"negative maxBytes", func(o *Options) { o.MaxBytes = -1 }, "maxBytes"},
		{"unlimited maxBytes", func(o *Options) { o.MaxBytes = 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := options(t, nil)
			tt.mutate(o)
			d := New()
			err := d.Init(context.Background(), o)
			defer d.Close()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("init: %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) != 1 || fes[0].Field != tt.field {
				t.Fatalf("init error = %v; want one field error on %s", err, tt.field)
			}
		})
	}
}

func TestServiceTime(t *testing.T) {
	tests := []struct {
		name     string
		min, max time.Duration
	}{
		{"fixed", 20 * time.Millisecond, 0},
		{"uniform range", 10 * time.Millisecond, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, map[string]string{"serviceTime": tt.min.String(), "serviceTimeMax": tt.max.String()})
			var longest time.Duration
			const ops = 30
			for i := 0; i < ops; i++ {
				start := time.Now()
				if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				if took < tt.min {
					t.Fatalf("op took %v, want >= serviceTime %v", took, tt.min)
				}
				longest = max(longest, took)
			}
			// With a range, service times are spread over it: the chance that 30 uniform
			// draws all fall in the lower half is 2^-30.
			if mid := (tt.min + tt.max) / 2; tt.max > tt.min && longest < mid {
				t.Fatalf("longest of %d ops took %v; want some >= %v (midpoint of the range)", ops, longest, mid)
			}
			if got := d.DriverStats()["delayedOps"]; got != ops {
				t.Fatalf("delayedOps = %d, want %d", got, ops)
			}
		})
	}
}

func TestStall(t *testing.T) {
	const every, stall = 400 * time.Millisecond, 300 * time.Millisecond
	d := open(t, map[string]string{"stallEvery": every.String(), "stallFor": stall.String()})

	// Right after Init no stall has started yet (the first ends the first period, from
	// Init + stallEvery - stallFor to Init + stallEvery).
	if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if got := d.DriverStats()["stalledOps"]; got != 0 {
		t.Fatalf("stalledOps before the first stall = %d, want 0", got)
	}

	// Arrive 50 ms into a stall: the op must wait for the rest of it. Every period ends
	// with a stall, so a test woken too late for one (a loaded machine) aims at the next
	// instead of skipping; only a machine that oversleeps every one of them fails.
	var start, stallEnd time.Time
	for period := time.Duration(1); ; period++ {
		time.Sleep(time.Until(d.epoch.Add(period*every - stall + 50*time.Millisecond)))
		start, stallEnd = time.Now(), d.epoch.Add(period*every)
		if start.Before(stallEnd) {
			break
		}
		if period == 50 {
			t.Fatalf("woke after the stall ended in each of %d periods (last at %v after Init)", period, start.Sub(d.epoch))
		}
	}
	if _, err := d.Read(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if took, remaining := time.Since(start), stallEnd.Sub(start); took < remaining {
		t.Fatalf("op during a stall took %v, want >= the remaining stall %v", took, remaining)
	}
	if got := d.DriverStats()["stalledOps"]; got != 1 {
		t.Fatalf("stalledOps = %d, want 1", got)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	tests := []struct {
		name      string
		values    map[string]string
		cancel    bool // cancel instead of a deadline
		wantClass driver.Class
	}{
		{"service time past deadline", map[string]string{"serviceTime": "10s"}, false, driver.ClassTimeout},
		{"queue past deadline", map[string]string{"capacity": "0.1"}, false, driver.ClassTimeout},
		{"stall past deadline", map[string]string{"stallEvery": "1ns", "stallFor": "1h"}, false, driver.ClassTimeout},
		{"service time cancelled", map[string]string{"serviceTime": "10s"}, true, driver.ClassOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := open(t, tt.values)
			// With capacity, the first op takes the free slot and the second must queue.
			prime, cancelPrime := context.WithTimeout(context.Background(), 10*time.Millisecond)
			_ = d.Write(prime, "k", nil) // stalls too with the stall settings; that is fine
			cancelPrime()
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if tt.cancel {
				go func() { time.Sleep(20 * time.Millisecond); cancel() }()
			}
			_, err := d.Read(ctx, "k")
			want := context.DeadlineExceeded
			if tt.cancel {
				want = context.Canceled
			}
			if !errors.Is(err, want) || driver.Classify(err) != tt.wantClass {
				t.Fatalf("read = %v (class %v); want an error wrapping %v classed %v", err, driver.Classify(err), want, tt.wantClass)
			}
		})
	}
}

func TestErrorRatio(t *testing.T) {
	tests := []struct {
		ratio float64
		class string
	}{
		{0, "unavailable"},
		{0.3, "unavailable"},
		{0.3, "timeout"},
		{0.05, "throttled"},
		{0.5, "rejected"},
		{1, "other"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%g %s", tt.ratio, tt.class), func(t *testing.T) {
			d := open(t, map[string]string{"errorRatio": fmt.Sprint(tt.ratio), "errorClass": tt.class})
			const ops = 20000
			failed := 0
			for i := 0; i < ops; i++ {
				err := d.Write(context.Background(), "k", []byte("v"))
				if err == nil {
					continue
				}
				failed++
				if got := driver.Classify(err).String(); got != tt.class || !errors.Is(err, errInjected) {
					t.Fatalf("injected error %v has class %s, want %s", err, got, tt.class)
				}
			}
			if got := float64(failed) / ops; got < tt.ratio-0.03 || got > tt.ratio+0.03 {
				t.Fatalf("failure ratio %.4f, want %g ± 0.03", got, tt.ratio)
			}
			if got := d.DriverStats()["injectedErrors"]; got != int64(failed) {
				t.Fatalf("injectedErrors = %d, want %d", got, failed)
			}
		})
	}
}

// TestCapacity: at a capacity, operations take service slots one after another, so
// however the goroutines are scheduled the k-th operation to complete cannot have
// completed before (k-1) slots from the first one's arrival: the ceiling holds exactly,
// on a loaded machine too. The old form counted the operations done before a 500 ms
// context expired, and the context's timer fires late on a loaded machine while the
// operations go on (1,297 counted against a ceiling of 1,200). How closely the limiter
// keeps its rate, a wall-clock figure, is BenchmarkCapacity's.
func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		capacity         string
		slot             time.Duration
		goroutines, perG int
	}{
		{"2000", 500 * time.Microsecond, 8, 40},
		{"10000", 100 * time.Microsecond, 4, 100},
		{"300", 3333333 * time.Nanosecond, 3, 10},
	} {
		t.Run(c.capacity, func(t *testing.T) {
			d := open(t, map[string]string{"capacity": c.capacity})
			ctx := context.Background()
			done := make([][]time.Time, c.goroutines)
			var wg sync.WaitGroup
			first := time.Now()
			for g := range c.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range c.perG {
						if err := d.Write(ctx, "k", []byte("v")); err != nil {
							t.Errorf("write at capacity %s: %v", c.capacity, err)
							return
						}
						done[g] = append(done[g], time.Now())
					}
				}()
			}
			wg.Wait()
			all := slices.SortedFunc(slices.Values(slices.Concat(done...)), time.Time.Compare)
			if len(all) != c.goroutines*c.perG {
				t.Fatalf("%d writes completed, want %d", len(all), c.goroutines*c.perG)
			}
			for k, at := range all {
				if early := first.Add(time.Duration(k) * c.slot).Sub(at); early > 0 {
					t.Fatalf("capacity %s ops/s: write %d of %d completed %v after the first arrived, %v before its slot (%d × %v)",
						c.capacity, k+1, len(all), at.Sub(first), early, k, c.slot)
				}
			}
			// Every goroutine but the one served found the others ahead of it at least once.
			if q := d.DriverStats()["queuedOps"]; q == 0 {
				t.Fatalf("queuedOps = 0 although %d goroutines wrote at capacity", c.goroutines)
			}
		})
	}
}

func TestReconfigure(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"shards": "8"})
	for i := 0; i < 1000; i++ {
		if err := d.Write(ctx, fmt.Sprint("key", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}

	// Traffic runs while the settings flip between simulating and not.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprint("key", i%1000)
				if v, err := d.Read(ctx, k); err == nil && string(v) != fmt.Sprint(i%1000) {
					t.Errorf("read %s = %q during reconfigure", k, v)
					return
				}
			}
		}()
	}
	configs := []map[string]string{
		{"shards": "8", "serviceTime": "10us", "errorRatio": "0.5"},
		{"shards": "8", "capacity": "100000"},
		{"shards": "8", "stallEvery": "1ms", "stallFor": "100us"},
		{"shards": "8"},
	}
	for round := 0; round < 20; round++ {
		if err := d.Reconfigure(ctx, options(t, configs[round%len(configs)])); err != nil {
			t.Fatalf("reconfigure: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	if err := d.Reconfigure(ctx, options(t, nil)); err == nil {
		t.Fatal("reconfigure changing shards succeeded; want an error")
	}
	for i := 0; i < 1000; i++ {
		if v, err := d.Read(ctx, fmt.Sprint("key", i)); err != nil || string(v) != fmt.Sprint(i) {
			t.Fatalf("after reconfigure, key%d = %q, %v; want data kept", i, v, err)
		}
	}
	info := d.ConnectionInfo()
	if info["keys"] != "1000" || info["simulation"] != "off" {
		t.Fatalf("connection info %v, want 1000 keys and simulation off", info)
	}
}

func TestConcurrentReadWrite(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"shards": "4"})
	const goroutines, perG = 8, 2000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				k := fmt.Sprintf("g%d-%d", g, i%100)
				v := []byte(fmt.Sprintf("%d", i))
				if err := d.Write(ctx, k, v); err != nil {
					t.Error(err)
					return
				}
				// Other goroutines' keys: whatever is read must be a whole value.
				if got, err := d.Read(ctx, fmt.Sprintf("g%d-%d", (g+1)%goroutines, i%100)); err == nil && len(got) == 0 {
					t.Error("read an empty value that was never written")
					return
				}
			}
		}()
	}
	wg.Wait()
	for g := 0; g < goroutines; g++ {
		for j := 0; j < 100; j++ {
			want := fmt.Sprint(perG - 100 + j) // the last write of each key
			if got, err := d.Read(ctx, fmt.Sprintf("g%d-%d", g, j)); err != nil || string(got) != want {
				t.Fatalf("g%d-%d = %q, %v; want %q", g, j, got, err, want)
			}
		}
	}
	if got := d.DriverStats()["keys"]; got != goroutines*100 {
		t.Fatalf("keys = %d, want %d", got, goroutines*100)
	}
}

// A value a Read returned stays what was written while other goroutines overwrite and
// delete its key and its neighbours, which fills slabs, compacts them and drops them under
// the reader (run with -race: the reader reads the bytes while writers append next to
// them), and after. Each value is its key's name and version, repeated to a length that
// varies.
func TestHeldValuesSurviveOverwrites(t *testing.T) {
	ctx := context.Background()
	d := open(t, map[string]string{"shards": "2"})
	value := func(k, version int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("<%d.%d>", k, version)), 1+(k+version)%40)
	}
	const keys, writers, rounds = 200, 2, 100
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				for k := w; k < keys; k += writers {
					key := "k" + strconv.Itoa(k)
					var err error
					if (k+r)%9 == 0 {
						err = d.Delete(ctx, key)
					} else {
						err = d.Write(ctx, key, value(k, r))
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	type held struct {
		k int
		v []byte
	}
	var kept []held
	for i := 0; i < 5000; i++ {
		k := i % keys
		v, err := d.Read(ctx, "k"+strconv.Itoa(k))
		if errors.Is(err, driver.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, held{k, v})
		if len(kept) > 500 {
			kept = kept[len(kept)-500:]
		}
		for _, h := range kept[max(0, len(kept)-5):] {
			if !isValueOf(h.v, h.k, value) {
				t.Fatalf("a value of k%d read earlier is now %q", h.k, h.v)
			}
		}
	}
	wg.Wait()
	// Enough overwrites to fill every shard's current slab (1 MiB) several times over, so
	// that the slabs the last values were read from are compacted or dropped too.
	for r := range 200 {
		for k := range keys {
			if err := d.Write(ctx, "k"+strconv.Itoa(k), value(k, rounds+r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, h := range kept {
		if !isValueOf(h.v, h.k, value) {
			t.Fatalf("a value of k%d read earlier is now %q", h.k, h.v)
		}
	}
}

// isValueOf reports whether v is one of the values of key k that value makes.
func isValueOf(v []byte, k int, value func(k, version int) []byte) bool {
	var version int
	if _, err := fmt.Sscanf(string(v), "<"+strconv.Itoa(k)+".%d>", &version); err != nil {
		return false
	}
	return bytes.Equal(v, value(k, version))
}

func TestClosedAndUninitialised(t *testing.T) {
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
			if err := d.Reconfigure(ctx, options(t, nil)); err == nil {
				t.Error("reconfigure succeeded")
			}
			if err := d.Close(); err != nil {
				t.Errorf("second close: %v", err)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	d, opts, err := driver.Open(context.Background(), Name, map[string]string{"errorRatio": "1", "errorClass": "throttled"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write(context.Background(), "k", nil); driver.Classify(err) != driver.ClassThrottled {
		t.Fatalf("write with errorRatio=1: %v, want throttled", err)
	}
	next := *opts.(*Options)
	next.ErrorRatio = 0
	live, restart := driver.Changed(opts, &next)
	if len(live) != 1 || len(restart) != 0 {
		t.Fatalf("changed live=%v restart=%v; want errorRatio live", live, restart)
	}
	if err := d.(driver.Reconfigurer).Reconfigure(context.Background(), &next); err != nil {
		t.Fatal(err)
	}
	if err := d.Write(context.Background(), "k", nil); err != nil {
		t.Fatalf("write after turning errors off: %v", err)
	}
}

// BenchmarkRead and BenchmarkWrite go through the keys in a scattered order, at NDBench's
// default keyspace (its index in cache) and at 100,000 keys (mostly not).
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			d := open(b, nil)
			keys := benchKeys(d, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := d.Read(ctx, keys[(i*7919)%len(keys)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWrite(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			d := open(b, nil)
			keys := benchKeys(d, n)
			value := make([]byte, 128)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if err := d.Write(ctx, keys[(i*7919)%len(keys)], value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMix is the store's part of BenchmarkEngineCost at NDBench's default keyspace
// (internal/engine, 1,000 keys): reads and writes 8:2 of keys T0..T999 drawn uniformly,
// 100-byte values, the keys' strings made once (as the engine's key table does), on one
// goroutine. Its whole process's instructions under callgrind, at two b.N, tell the
// store's cost per operation with the collector's part and without the engine's.
//
//	go test -run '^$' -bench Mix -benchtime 2000000x ./drivers/memory/
func BenchmarkMix(b *testing.B) {
	ctx := context.Background()
	d := open(b, nil)
	keys := make([]string, 1000)
	value := make([]byte, 100)
	for i := range keys {
		keys[i] = "T" + strconv.Itoa(i)
		if err := d.Write(ctx, keys[i], value); err != nil {
			b.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(10) < 2 {
			if err := d.Write(ctx, k, value); err != nil {
				b.Fatal(err)
			}
		} else if _, err := d.Read(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadParallel(b *testing.B) {
	ctx := context.Background()
	d := open(b, nil)
	keys := benchKeys(d, 100000)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(7919)) // spread goroutines over the keyspace
		for pb.Next() {
			if _, err := d.Read(ctx, keys[i%len(keys)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// benchKeys fills d with n 128-byte values and returns their keys.
func benchKeys(d *Driver, n int) []string {
	keys := make([]string, n)
	value := make([]byte, 128)
	for i := range keys {
		keys[i] = fmt.Sprintf("ndbench-key-%d", i)
		_ = d.Write(context.Background(), keys[i], value)
	}
	return keys
}

// BenchmarkServiceTime shows how closely a simulated service time is kept: ns/op should be
// the service time plus the kernel's timer slack (~50-100 µs), not the ~1 ms of an idle Go
// runtime's timers.
func BenchmarkServiceTime(b *testing.B) {
	for _, st := range []time.Duration{100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		b.Run(st.String(), func(b *testing.B) {
			d := open(b, map[string]string{"serviceTime": st.String()})
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			for b.Loop() {
				if _, err := d.Read(ctx, "k"); err != nil && !errors.Is(err, driver.ErrNotFound) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed()/time.Duration(b.N)-st)/1e3, "µs-late/op")
		})
	}
}

// BenchmarkCapacity shows how closely a capacity is kept on real time: 8 goroutines per P write
// as fast as the limiter lets them, and achieved/capacity should be just under 1 (the
// ceiling itself is TestCapacity's, exactly; how far below it a busy machine's scheduling
// leaves the rate is this figure).
func BenchmarkCapacity(b *testing.B) {
	for _, capacity := range []float64{2000, 20000} {
		b.Run(strconv.FormatFloat(capacity, 'g', -1, 64), func(b *testing.B) {
			d := open(b, map[string]string{"capacity": strconv.FormatFloat(capacity, 'g', -1, 64)})
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := d.Write(context.Background(), "k", []byte("v")); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/capacity, "achieved/capacity")
		})
	}
}

// TestConformance runs the public driver conformance suite. The store lives in the
// driver, so there is no server to pause or stop; those checks skip.
func TestConformance(t *testing.T) {
	drivertest.Run(t, drivertest.Harness{
		Name: Name,
		// Each value is switched on alone, so none stalls the store or fails operations
		// for long enough to break a read-your-write (errorRatio: one in a million).
		LiveValues: map[string]string{
			"serviceTime": "100us", "serviceTimeMax": "200us", "capacity": "100000",
			"stallEvery": "1s", "stallFor": "1ms", "errorRatio": "0.000001", "errorClass": "timeout",
			"maxBytes": "536870912",
		},
	})
}

func TestDelete(t *testing.T) {
	d := &Driver{}
	opts, err := driver.NewOptions("memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Init(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	if err := d.Write(ctx, "k", []byte("value")); err != nil {
		t.Fatal(err)
	}
	before := d.stored.Load()
	for _, key := range []string{"k", "k", "never-written"} {
		if err := d.Delete(ctx, key); err != nil {
			t.Fatalf("delete %s: %v", key, err)
		}
	}
	if _, err := d.Read(ctx, "k"); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
	if got, want := d.stored.Load(), before-entryCost("k", []byte("value")); got != want || d.DriverStats()["keys"] != 0 {
		t.Fatalf("stored %d after delete, want %d; stats %v", got, want, d.DriverStats())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Delete(cctx, "k"); err == nil {
		t.Fatal("delete on a cancelled context succeeded")
	}
}

// TestScanAndDelete: the operations delete and scan behave as driver.Deleter and
// driver.Scanner say.
func TestScanAndDelete(t *testing.T) { drivertest.ScanAndDelete(t, open(t, nil)) }
