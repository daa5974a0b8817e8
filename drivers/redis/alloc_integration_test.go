//go:build integration && !race

package redis

import (
	"bytes"
	"errors"
	"strconv"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// TestPipelineRunAllocatesNothing: a mode=direct batch, the engine's hot loop at
// workload.pipeline=16 (reads that hit, reads that miss, writes), allocates nothing per
// operation (not under the race detector, whose bookkeeping allocates). A replyError
// declared in Run's loop once escaped to errors.As and was allocated for every operation,
// answered or not: 16 allocations a batch.
func TestPipelineRunAllocatesNothing(t *testing.T) {
	d := open(t, map[string]string{"mode": "direct"})
	ctx := drivertest.Context(t)
	pl, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pl.Close() }()
	value := bytes.Repeat([]byte("v"), 100)
	ops := make([]driver.PipelineOp, 16)
	for i := range ops {
		key := "alloc-" + strconv.Itoa(i/4) // written first in its four
		switch {
		case i%4 == 0:
			ops[i] = driver.PipelineOp{Op: driver.PipelineWrite, Key: key, Value: value}
		case i%4 == 3:
			ops[i] = driver.PipelineOp{Op: driver.PipelineRead, Key: "alloc-never-written"}
		default:
			ops[i] = driver.PipelineOp{Op: driver.PipelineRead, Key: key}
		}
	}
	var hits, acks, misses, fails int
	done := func(i int, v []byte, err error) {
		switch {
		case err == nil && ops[i].Op == driver.PipelineWrite:
			acks++
		case err == nil && len(v) == len(value):
			hits++
		case errors.Is(err, driver.ErrNotFound):
			misses++
		default:
			fails++
		}
	}
	pl.Run(ctx, ops, done) // connects, and sizes the buffers
	hits, acks, misses, fails = 0, 0, 0, 0
	const runs = 200
	allocs := testing.AllocsPerRun(runs, func() { pl.Run(ctx, ops, done) })
	if fails != 0 || acks != 4*(runs+1) || misses != 4*(runs+1) || hits != 8*(runs+1) {
		t.Fatalf("%d hits, %d writes, %d misses, %d others over %d batches; want 8, 4, 4 and none a batch", hits, acks, misses, fails, runs+1)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per batch of %d operations; want none", allocs, len(ops))
	}
}
