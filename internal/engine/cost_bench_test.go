package engine

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// BenchmarkEngineCost is the engine's cost as the work grows (issue 35): operations per
// CPU-second, closed loop on the in-process memory store, at 1,000, 1,000,000 and
// 100,000,000 keys and with 1, 4 and 10 op classes. Every class reads and writes 8:2
// (readMix/writeMix/mix read:8,write:2), 100-byte values, uniform keys; one class has 4
// workers, several classes one worker each (10 classes: 10 workers, which on 2 cores
// changes nothing but scheduling). Nothing is backfilled or validated, so no structure
// may grow with the keyspace: the bar is a drop of at most 2x from 1,000 to 100 M keys.
// What does grow is the memory store's map, with every distinct key written (the store's
// cost, which a real store has too): the CPU-ns/op figures include it.
//
//	go test -run '^$' -bench EngineCost -benchtime 2000000x -count 3 ./internal/engine/
//
// store=null is the same without a store (every read hits one fixed value, every write is
// dropped): the engine's own cost, which must not depend on the keyspace at all; the
// memory store's figures add its hash table, whose reads at 100 M keys are nearly all
// misses (a miss probes further than a hit) in a table that grows with every write.
func BenchmarkEngineCost(b *testing.B) {
	for _, store := range []string{"memory", "null"} {
		for _, keys := range []int64{1_000, 1_000_000, 100_000_000} {
			for _, classes := range []int{1, 4, 10} {
				b.Run(fmt.Sprintf("store=%s/keys=%d/classes=%d", store, keys, classes), func(b *testing.B) { benchEngineCost(b, store, keys, classes) })
			}
		}
	}
}

// nullStore answers every read with one value and drops every write.
type nullStore struct{ value []byte }

func (nullStore) Init(context.Context, any) error                { return nil }
func (n nullStore) Read(context.Context, string) ([]byte, error) { return n.value, nil }
func (nullStore) Write(context.Context, string, []byte) error    { return nil }
func (nullStore) Close() error                                   { return nil }

// BenchmarkEngineCostHits is BenchmarkEngineCost with every key written before the run,
// so the reads hit (BenchmarkEngineCost's reads at 1 M and 100 M keys mostly miss: it
// writes 400,000 keys), with 8-byte values to keep the heap small: 10,000,000 keys take
// ~1.2 GB (100,000,000 would take 12 GB, more than a shared machine has to spare), and
// the table is far larger than the CPU's caches from a few hundred thousand keys on, so
// each hit costs the same misses at 10 M as it would at 100 M.
//
//	go test -run '^$' -bench EngineCostHits -benchtime 2000000x -count 3 ./internal/engine/
func BenchmarkEngineCostHits(b *testing.B) {
	for _, keys := range []int64{1_000, 10_000_000} {
		for _, classes := range []int{1, 10} {
			b.Run(fmt.Sprintf("store=memory/keys=%d/classes=%d", keys, classes), func(b *testing.B) {
				d, _, err := driver.Open(context.Background(), memory.Name, map[string]string{"maxBytes": "0"})
				if err != nil {
					b.Fatal(err)
				}
				value := make([]byte, 8)
				for i := range keys {
					if err := d.Write(context.Background(), "T"+strconv.FormatInt(i, 10), value); err != nil {
						b.Fatal(err)
					}
				}
				// The collection the preload started would otherwise run into the
				// measured CPU: marking 10 M keys is seconds of it.
				runtime.GC()
				runEngineCost(b, d, keys, 8, classes)
			})
		}
	}
}

func benchEngineCost(b *testing.B, store string, keys int64, classes int) {
	var d driver.Driver = nullStore{value: make([]byte, 100)}
	if store == "memory" {
		md, _, err := driver.Open(context.Background(), memory.Name, nil)
		if err != nil {
			b.Fatal(err)
		}
		d = md
	}
	runEngineCost(b, d, keys, 100, classes)
}

// runEngineCost runs the closed loop of BenchmarkEngineCost on d, which it closes, with
// values of dataSize bytes.
func runEngineCost(b *testing.B, d driver.Driver, keys int64, dataSize, classes int) {
	defer d.Close()
	w := config.DefaultWorkload()
	w.NumKeys, w.DataSize = keys, dataSize
	w.ReadRate, w.WriteRate, w.ReadMix = 0, 0, "read:8,write:2"
	w.Readers, w.Writers, w.WriteEnabled = 4, 0, false
	if classes > 1 {
		w.Readers, w.Writers, w.WriteEnabled, w.WriteMix = 1, 1, true, "read:8,write:2"
		w.Ops = map[string]config.OpClass{}
		for i := range classes - 2 {
			w.Ops[fmt.Sprintf("c%d", i)] = config.OpClass{Workers: 1, Enabled: true, Mix: "read:8,write:2"}
		}
	}
	if err := w.Validate(); err != nil {
		b.Fatal(err)
	}
	coll := stats.NewCollector(stats.Config{})
	cpu0 := processCPU()
	e, err := New(d, w, Options{Collector: coll})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(time.Second)
	b.ReportMetric(float64((processCPU() - cpu0).Microseconds()), "setup-CPU-µs")
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	_ = e.Start()
	for {
		// Reading the cumulative histograms costs CPU per look, not per operation (on a
		// busy machine a run takes longer and would look more often): a look each 250 ms
		// keeps it below 1% of the figures; every 20 ms was a third of the CPU at 100 M
		// keys, where a slower run took more looks.
		time.Sleep(250 * time.Millisecond)
		coll.Tick(time.Now())
		// The classes' totals: a mixed class's operations are counted in it and in
		// its operations' series (read.read, read.write), so count only the classes.
		var n int64
		c := coll.Cumulative()
		for _, cl := range w.Classes() {
			n += c.Ops[cl.Name].Count
		}
		if n >= int64(b.N) {
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(n), "ns/op-actual")
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(n)/cpu.Seconds(), "ops/CPU-s")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "CPU-ns/op")
			}
			break
		}
	}
	_ = e.Stop()
	b.StopTimer()
}
