package script

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// BenchmarkOverhead measures the script layer: the same read and write on the memory
// driver called directly and through a script that only forwards to it, side by side in
// one run (the machine is shared: compare within a run). cpu-ns/op is the process's CPU
// time per operation, which is what the layer costs whatever the parallelism.
//
//	go test -run '^$' -bench Overhead -benchtime 200000x -count 5 ./drivers/script/
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	value := make([]byte, 100)
	const keys = 1000
	names := make([]string, keys)
	for i := range names {
		names[i] = "key" + strconv.Itoa(i)
	}
	mem, _, err := driver.Open(ctx, "memory", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = mem.Close() }()
	scr := open(b, map[string]string{"source": passthrough + `
function other1(key) {}
`})
	for _, k := range names {
		if err := mem.Write(ctx, k, value); err != nil {
			b.Fatal(err)
		}
		if err := scr.Write(ctx, k, value); err != nil {
			b.Fatal(err)
		}
	}
	run := func(b *testing.B, op func(ctx context.Context, key string) error) {
		b.ReportAllocs()
		start := cpuTime()
		b.RunParallel(func(pb *testing.PB) {
			// Each operation gets a context with a deadline, as the engine's do.
			i := 0
			for pb.Next() {
				ctx, cancel := context.WithTimeout(ctx, time.Second)
				if err := op(ctx, names[i%keys]); err != nil {
					b.Error(err)
				}
				cancel()
				i++
			}
		})
		if c := cpuTime(); c > 0 {
			b.ReportMetric(float64(c-start)/float64(b.N), "cpu-ns/op")
		}
	}
	for _, tgt := range []struct {
		name string
		d    driver.Driver
	}{{"memory", mem}, {"script", scr}} {
		b.Run("read/"+tgt.name, func(b *testing.B) {
			run(b, func(ctx context.Context, key string) error { _, err := tgt.d.Read(ctx, key); return err })
		})
		b.Run("write/"+tgt.name, func(b *testing.B) {
			run(b, func(ctx context.Context, key string) error { return tgt.d.Write(ctx, key, value) })
		})
	}
	b.Run("noop/script", func(b *testing.B) {
		run(b, func(ctx context.Context, key string) error { _, err := scr.Do(ctx, 5, key, nil); return err })
	})
}
