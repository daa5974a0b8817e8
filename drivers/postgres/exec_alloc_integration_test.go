//go:build integration && !race

package postgres

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// A batch of one in mode=direct, read or upsert, allocates nothing: it is the default
// shape's whole per-operation path in the driver, and the engine's budget is zero
// allocations per operation. (Not under the race detector, whose bookkeeping allocates.)
func TestSingleOperationAllocatesNothing(t *testing.T) {
	d := open(t, map[string]string{"mode": "direct"})
	pl, err := d.NewPipeline(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 100)
	ops := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: "alloc-k", Value: value}}
	var failed error
	done := func(_ int, _ []byte, err error) {
		if err != nil {
			failed = err
		}
	}
	pl.Run(ctx, ops, done) // connects and prepares: not the steady state measured
	for _, op := range []int{driver.PipelineWrite, driver.PipelineRead} {
		ops[0].Op = op
		allocs := testing.AllocsPerRun(200, func() { pl.Run(ctx, ops, done) })
		if failed != nil {
			t.Fatal(failed)
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per operation, want 0", opName(op), fmt.Sprint(allocs))
		}
	}
}
