//go:build integration && !race

package memcached

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// TestDirectAllocatesNothing: in steady state a worker's write and read on client=direct
// allocate nothing, the engine's budget per operation. (Not under the race detector, whose
// bookkeeping allocates.)
func TestDirectAllocatesNothing(t *testing.T) {
	ctx := drivertest.Context(t)
	pl := directPipeline(t, map[string]string{"client": "direct", "ttl": "1h"})
	value := bytes.Repeat([]byte("v"), 100)
	ops := []driver.PipelineOp{
		{Op: driver.PipelineWrite, Key: "alloc", Value: value},
		{Op: driver.PipelineRead, Key: "alloc"},
		{Op: driver.PipelineRead, Key: "alloc-never-written"},
	}
	var failed error
	var batch []driver.PipelineOp
	done := func(i int, v []byte, err error) {
		op := &batch[i]
		switch {
		case op.Key == "alloc-never-written" && err == driver.ErrNotFound:
		case err != nil:
			failed = err
		case op.Op == driver.PipelineRead && !bytes.Equal(v, value):
			failed = fmt.Errorf("read %q", v)
		}
	}
	for _, batch = range [][]driver.PipelineOp{ops[:1], ops[1:2], ops[2:], ops} {
		allocs := testing.AllocsPerRun(200, func() { pl.Run(ctx, batch, done) })
		if failed != nil {
			t.Fatal(failed)
		}
		if allocs != 0 {
			t.Errorf("a batch of %d operations allocated %.1f times; want 0", len(batch), allocs)
		}
	}
}
