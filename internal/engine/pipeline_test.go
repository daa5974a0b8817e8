package engine

import (
	"context"
	"errors"

	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
	"github.com/ndbench/ndbench/internal/stats"
)

// pipeStore gives pipelines over a memory driver: each batch runs its operations in
// order on the store. With hang set, a batch blocks until Interrupt, as a socket read
// on a store that stopped answering does.
type pipeStore struct {
	driver.Driver
	hang       atomic.Bool
	maxBatch   atomic.Int64
	batches    atomic.Int64
	interrupts atomic.Int64
	open       atomic.Int64 // pipelines not yet closed
}

func (s *pipeStore) Pipelines() bool { return true }

func (s *pipeStore) NewPipeline(context.Context) (driver.Pipeline, error) {
	s.open.Add(1)
	return &fakePipe{s: s, kick: make(chan struct{}, 1)}, nil
}

type fakePipe struct {
	s    *pipeStore
	kick chan struct{}
}

func (p *fakePipe) Run(ctx context.Context, ops []driver.PipelineOp, done func(int, []byte, error)) {
	p.s.batches.Add(1)
	for n := int64(len(ops)); ; {
		m := p.s.maxBatch.Load()
		if n <= m || p.s.maxBatch.CompareAndSwap(m, n) {
			break
		}
	}
	if p.s.hang.Load() {
		for ctx.Err() == nil {
			<-p.kick // a stale kick from an earlier batch is ridden out
		}
		for i := range ops {
			done(i, nil, ctx.Err())
		}
		return
	}
	for i, op := range ops {
		switch op.Op {
		case driver.PipelineRead:
			v, err := p.s.Read(ctx, op.Key)
			done(i, v, err)
		case driver.PipelineWrite:
			done(i, nil, p.s.Write(ctx, op.Key, op.Value))
		}
	}
}

func (p *fakePipe) Interrupt() {
	p.s.interrupts.Add(1)
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *fakePipe) Close() error { p.s.open.Add(-1); return nil }

// TestPipelinedClosedLoop: with a Pipeliner, closed-loop workers send batches of exactly
// workload.pipeline operations, and every operation is counted once, with validation
// finding nothing wrong in values that round-trip. It runs until each class has done
// 1,000 operations, however long that takes on the machine: it once asserted 1,000 in
// 200 ms (5,000/s under -race), a wall-clock rate, and failed on a machine at a load of 22.
func TestPipelinedClosedLoop(t *testing.T) {
	s := &pipeStore{Driver: openMemory(t, nil)}
	e := newEngine(t, s, testWorkload(t, func(w *config.Workload) {
		w.Pipeline, w.ValidateValues = 16, true
	}))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	const many = 1000
	count, errs, bad := map[string]int64{}, map[string]int64{}, map[string]int64{}
	e.Collector().Tick(time.Now())
	for end := time.Now().Add(time.Minute); count["read"] < many || count["write"] < many; {
		if time.Now().After(end) {
			t.Fatalf("%d reads and %d writes in a minute; want %d of each", count["read"], count["write"], many)
		}
		time.Sleep(20 * time.Millisecond)
		sum := e.Collector().Tick(time.Now()).Summary()
		for _, op := range []string{"read", "write"} {
			o := sum.Ops[op]
			count[op] += o.Count
			errs[op] += o.Errors
			for _, n := range o.Validation {
				bad[op] += n
			}
		}
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, e)
	if got := s.maxBatch.Load(); got != 16 {
		t.Errorf("largest batch = %d, want workload.pipeline = 16", got)
	}
	for _, op := range []string{"read", "write"} {
		if errs[op] != 0 || bad[op] != 0 {
			t.Errorf("%s: %d ops, %d errors, %d found wrong by validation; want none wrong", op, count[op], errs[op], bad[op])
		}
	}
	if n := s.open.Load(); n != 0 {
		t.Errorf("%d pipelines left open after the workers stopped", n)
	}
}

// TestPipelinedOpenLoopKeepsIntendedTimes: in open loop a batch takes only operations that
// are due, so at a rate the store keeps up with, batches stay small and the rate is held;
// when the store stalls, the operations that fell due go out together, and their response
// times (from their intended starts) show the stall while their service times do not. On
// simulated time: a store that answers at once but for the last 100 ms of every 300 ms.
func TestPipelinedOpenLoopKeepsIntendedTimes(t *testing.T) {
	clk := clock.NewSim(simStart)
	store := simstore.New(clk, 0)
	store.StallEvery, store.StallFor = 300*time.Millisecond, 100*time.Millisecond
	s := &pipeStore{Driver: store}
	e := newSimEngine(t, clk, s, testWorkload(t, func(w *config.Workload) {
		w.Pipeline, w.ReadRate, w.Readers, w.WriteEnabled = 64, 2000, 1, false
		w.MaxReaders = 1 // one fixed worker, so the stall's operations go out as one batch
	}))
	e.Collector().ResetAt(simStart)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	e.to(900 * time.Millisecond) // the third stall ends at 900 ms
	rd := e.tick().Ops["read"]
	// 0..900 ms at 0.5 ms, every one answered by the end.
	if rd.Attempted != 1801 || rd.Pending != 0 {
		t.Errorf("%d reads answered by 900 ms at 2000/s, %d overdue; want 1801, none", rd.Attempted, rd.Pending)
	}
	// The read due as a stall starts waits all 100 ms of it; those due behind it wait in
	// the schedule, not in the store.
	if rd.ResponseTime.Max < 99_900 || rd.ResponseTime.Max > 100_100 || rd.ServiceTime.P99 > 1 {
		t.Errorf("response time max %.0f µs, service p99 %.0f µs through a 100 ms stall; want the stall in the response only", rd.ResponseTime.Max, rd.ServiceTime.P99)
	}
	// The 199 due during a stall go out in full batches once it ends.
	if s.maxBatch.Load() != 64 {
		t.Errorf("largest batch %d: the operations that fell due during a stall should go out together, 64 at a time", s.maxBatch.Load())
	}
}

// TestPipelinedTimeoutInterrupts: a batch stuck on a store that stopped answering ends at
// workload.opTimeout through Interrupt, its operations count as timeouts, and the worker
// goes on with the next batch.
func TestPipelinedTimeoutInterrupts(t *testing.T) {
	s := &pipeStore{Driver: openMemory(t, nil)}
	s.hang.Store(true)
	e := newEngine(t, s, testWorkload(t, func(w *config.Workload) {
		w.Pipeline, w.OpTimeout, w.Readers, w.Writers = 4, 30*time.Millisecond, 1, 0
	}))
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	sum := until(t, e, "3 batches and a failed read", func(sm stats.Summary) bool {
		return sm.Ops["read"].Errors > 0 && s.batches.Load() >= 3
	})
	rd := sum.Ops["read"]
	if rd.Errors == 0 || rd.Failures[driver.ClassTimeout.String()] != rd.Errors {
		t.Fatalf("read errors %d by class %v; want timeouts only", rd.Errors, rd.Failures)
	}
	if s.interrupts.Load() == 0 || s.batches.Load() < 3 {
		t.Errorf("%d interrupts over %d batches: each timed-out batch must be interrupted and the worker go on", s.interrupts.Load(), s.batches.Load())
	}
	s.hang.Store(false)
	// The batch in flight still times out, and a closed-loop worker backs off up to 100 ms
	// after failures; then every batch succeeds. Poll, as a loaded machine stretches both.
	for deadline := time.Now().Add(10 * time.Second); ; {
		sum := measure(e, 100*time.Millisecond)
		if r := sum.Ops["read"]; r.Count > 0 && r.Errors == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never ran clean batches after the store answered again: %+v", sum.Ops["read"])
		}
	}
}

// TestPipelineNeedsAPipeliner: workload.pipeline above 1 with a driver that sends one
// operation per round trip is refused, naming the field, and changes nothing.
func TestPipelineNeedsAPipeliner(t *testing.T) {
	d := openMemory(t, nil)
	_, err := New(d, testWorkload(t, func(w *config.Workload) { w.Pipeline = 8 }), Options{})
	var fe driver.FieldErrors
	if !errors.As(err, &fe) || fe[0].Field != "workload.pipeline" {
		t.Fatalf("New with pipeline=8 on the memory driver: %v; want a field error on workload.pipeline", err)
	}
	e := newEngine(t, d, testWorkload(t, nil))
	if err := e.Apply(testWorkload(t, func(w *config.Workload) { w.Pipeline = 2 })); !errors.As(err, &fe) {
		t.Fatalf("Apply pipeline=2: %v; want a field error", err)
	}
	if e.Workload().Pipeline != 1 {
		t.Errorf("pipeline after a refused change = %d, want 1", e.Workload().Pipeline)
	}
}
