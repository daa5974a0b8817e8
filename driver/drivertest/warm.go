package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// warmWorkers is how many workers' connections the Warm check asks for.
const warmWorkers = 4

// warm checks driver.Warmer: Warm for a few workers succeeds on a healthy server and
// returns within the driver's set-up time; the pipelines of that many workers then run on
// what it opened and agree with Read and Write (a warmed connection set up differently,
// say on another database, shows as a value Read does not see); a second Warm is
// harmless; and Warm after Close neither panics nor hangs.
func (s *suite) warm(t *testing.T) {
	d := s.openUnmanaged(t, nil)
	closed := false
	defer func() {
		if !closed {
			_ = closeWithin(d, closeTimeout)
		}
	}()
	wm, ok := d.(driver.Warmer)
	if !ok {
		t.Skip("the driver does not implement driver.Warmer")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for round := 1; round <= 2; round++ {
		o := call(20*time.Second, func() error { return wm.Warm(ctx, warmWorkers) })
		switch {
		case o.panicked != nil:
			t.Fatalf("Warm(%d), call %d, panicked: %v", warmWorkers, round, o.panicked)
		case !o.returned:
			t.Fatalf("Warm(%d), call %d, did not return within %v", warmWorkers, round, o.took)
		case o.err != nil:
			t.Fatalf("Warm(%d), call %d, on a healthy server: %v", warmWorkers, round, o.err)
		}
	}
	if pr, ok := d.(driver.Pipeliner); ok && pr.Pipelines() {
		for w := range warmWorkers {
			pl, err := pr.NewPipeline(ctx)
			if err != nil {
				t.Fatalf("NewPipeline after Warm: %v", err)
			}
			k := s.key("warm")
			v := pattern(64+w, uint64(w))
			var errs []error
			var got []byte
			pl.Run(ctx, []driver.PipelineOp{{Op: driver.PipelineWrite, Key: k, Value: v}, {Op: driver.PipelineRead, Key: k}},
				func(i int, value []byte, err error) {
					errs = append(errs, err)
					if i == 1 {
						got = append([]byte(nil), value...)
					}
				})
			if len(errs) != 2 || errs[0] != nil || errs[1] != nil || !equal(got, v) {
				t.Errorf("worker %d's first batch after Warm (a write and its read): errors %v, %s", w, errs, diff(got, v))
			}
			if r, err := read(d, k); err != nil || !equal(r, v) {
				t.Errorf("Read(%q) after worker %d's pipelined write on a warmed connection: %v, %s", k, w, err, diff(r, v))
			}
			if err := pl.Close(); err != nil {
				t.Errorf("Pipeline.Close: %v", err)
			}
		}
	}
	closed = true
	if err := closeWithin(d, closeTimeout); err != nil {
		t.Errorf("Close after Warm: %v", err)
	}
	o := call(20*time.Second, func() error { return wm.Warm(ctx, warmWorkers) })
	switch {
	case o.panicked != nil:
		t.Errorf("Warm after Close panicked: %v", o.panicked)
	case !o.returned:
		t.Errorf("Warm after Close did not return within %v", o.took)
	}
}
