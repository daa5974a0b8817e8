//go:build integration

package geode

import (
	"bytes"
	"context"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkGetSet puts then gets a key per iteration (100-byte values over 1,000 keys)
// from 50 goroutines, and reports ops/s, ops per client CPU-second (this process) and the
// server's CPU per op (the Geode JVM, from /proc; 0 where there is no /proc):
//
//	go test -tags integration -run '^$' -bench GetSet -benchtime 20000x ./drivers/geode/
func BenchmarkGetSet(b *testing.B) {
	d := open(b, nil)
	value := bytes.Repeat([]byte("v"), 100)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(25) // 25 x GOMAXPROCS(2) = 50 goroutines
	srv.Measure(b, "op", 2, func() {
		b.RunParallel(func(pb *testing.PB) {
			i := n.Add(1_000_000)
			for pb.Next() {
				key := "bench-" + strconv.FormatInt(i%1000, 10)
				i++
				if err := d.Write(ctx, key, value); err != nil {
					b.Error(err)
					return
				}
				if _, err := d.Read(ctx, key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
