//go:build integration

package gremlin

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkGetSet writes then reads a key per iteration (upserts and reads of 100-byte
// values over 1,000 keys) from 50 goroutines on the driver's 8 connections, and reports
// ops/s, ops per client CPU-second (this process) and the server's CPU per op (the
// Gremlin Server JVM, from /proc; 0 where there is no /proc):
//
//	go test -tags integration -run '^$' -bench GetSet -benchtime 20000x ./drivers/gremlin/
func BenchmarkGetSet(b *testing.B) {
	d := open(b, nil)
	value := bytes.Repeat([]byte("v"), 100)
	ctx := context.Background()
	for i := range 1000 { // create the vertices first: the loop measures updates and reads
		if err := d.Write(ctx, fmt.Sprintf("bench-%d", i), value); err != nil {
			b.Fatal(err)
		}
	}
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

// BenchmarkWriteBulk measures the backfill's path: batches of 100 upserts of new keys
// (100-byte values) in one request each, from 8 goroutines; it reports keys/s, keys per
// client CPU-second and the server's CPU per key:
//
//	go test -tags integration -run '^$' -bench WriteBulk -benchtime 200x ./drivers/gremlin/
func BenchmarkWriteBulk(b *testing.B) {
	const batch = 100
	d := open(b, nil)
	value := bytes.Repeat([]byte("v"), 100)
	vals := make([][]byte, batch)
	for i := range vals {
		vals[i] = value
	}
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 goroutines
	srv.Measure(b, "key", batch, func() {
		b.RunParallel(func(pb *testing.PB) {
			keys := make([]string, batch)
			for pb.Next() {
				base := n.Add(batch)
				for i := range keys {
					keys[i] = "bulk-bench-" + strconv.FormatInt(base+int64(i), 10)
				}
				if err := d.WriteBulk(ctx, keys, vals); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
