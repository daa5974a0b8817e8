package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/workload"
)

// backfillAttempts is how many times a backfill write is tried before the key is counted
// as failed: a transient error must not leave a hole that later reads report as misses.
const backfillAttempts = 3

// BackfillOptions configure a backfill: every key of the keyspace is written once.
type BackfillOptions struct {
	// Workers write in parallel, each over its own contiguous range of keys; at least 1.
	Workers int
	// Rate limits writes per second across workers; 0 is unlimited.
	Rate float64
	// Verify reads every key back afterwards and counts missing and corrupt values.
	Verify bool
	// Batch is how many keys one bulk write carries when the driver implements
	// driver.BulkWriter: 0 means DefaultBackfillBatch, 1 writes key by key. Each key still
	// takes its own slot of the rate and is recorded with its own response time (from its
	// intended start to the end of the bulk write that carried it).
	Batch int
	// Keys, when not empty, limits the backfill to that range of key indexes (within
	// [0, workload.numKeys)): a fleet gives each node a disjoint part of the keyspace.
	// Empty means the whole keyspace.
	Keys workload.Range
}

// DefaultBackfillBatch is the keys per bulk write of a backfill: enough to amortise a round
// trip, small enough that one batch's latency stays in the milliseconds. The workload's
// memory estimate counts it.
const DefaultBackfillBatch = workload.BackfillBatch

// BackfillStatus is the progress and outcome of the current or last backfill.
type BackfillStatus struct {
	Running bool   `json:"running"`
	Phase   string `json:"phase"` // idle, write, verify, done, stopped
	Total   int64  `json:"total"`
	Written int64  `json:"written"`
	// Failed counts keys whose write failed every attempt.
	Failed int64 `json:"failed"`
	// Verified, Missing, Corrupt, WrongKey and VerifyErrors are the verify pass's counts.
	// Without value validation only presence can be verified.
	Verified     int64     `json:"verified"`
	Missing      int64     `json:"missing"`
	Corrupt      int64     `json:"corrupt"`
	WrongKey     int64     `json:"wrongKey"`
	VerifyErrors int64     `json:"verifyErrors"`
	Started      time.Time `json:"started,omitzero"`
	Ended        time.Time `json:"ended,omitzero"`
}

type backfillState struct {
	mu                                                                  sync.Mutex
	cancel                                                              context.CancelFunc
	status                                                              BackfillStatus // Phase, Running, Total, Started, Ended (under mu)
	written, failed, verified, missing, corrupt, wrongKey, verifyErrors atomic.Int64
}

func (b *backfillState) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
}

func (b *backfillState) snapshot() BackfillStatus {
	b.mu.Lock()
	s := b.status
	b.mu.Unlock()
	if s.Phase == "" {
		s.Phase = "idle"
	}
	s.Written, s.Failed = b.written.Load(), b.failed.Load()
	s.Verified, s.Missing = b.verified.Load(), b.missing.Load()
	s.Corrupt, s.WrongKey, s.VerifyErrors = b.corrupt.Load(), b.wrongKey.Load(), b.verifyErrors.Load()
	return s
}

func (b *backfillState) setPhase(p string) {
	b.mu.Lock()
	b.status.Phase = p
	b.mu.Unlock()
}

// ErrBackfillRunning is returned when a backfill is started while one runs.
var ErrBackfillRunning = errors.New("a backfill is already running")

// StartBackfill starts a backfill in the background; BackfillStatus reports its progress
// and StopBackfill ends it early. Reads and writes may run at the same time.
func (e *Engine) StartBackfill(opts BackfillOptions) error {
	_, err := e.startBackfill(opts)
	return err
}

// startBackfill starts a backfill and returns a channel closed when it has finished.
func (e *Engine) startBackfill(opts BackfillOptions) (<-chan struct{}, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("start backfill: engine closed")
	}
	if opts.Workers < 1 {
		opts.Workers = 1
	}
	b := &e.backfill
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.status.Running {
		return nil, ErrBackfillRunning
	}
	g := e.gen.Load()
	if opts.Keys.Len() <= 0 {
		opts.Keys = workload.Range{Start: 0, End: g.w.NumKeys}
	}
	if opts.Keys.Start < 0 || opts.Keys.End > g.w.NumKeys {
		return nil, &driver.FieldError{Field: "keyEnd", Value: fmt.Sprintf("%d (range [%d, %d))", opts.Keys.End, opts.Keys.Start, opts.Keys.End),
			Allowed: fmt.Sprintf("a key range inside the keyspace [0, %d) (workload.numKeys)", g.w.NumKeys)}
	}
	ctx, cancel := context.WithCancel(e.bgCtx)
	b.cancel = cancel
	done := make(chan struct{})
	b.status = BackfillStatus{Running: true, Phase: "write", Total: opts.Keys.Len(), Started: e.timer.Now()}
	for _, c := range []*atomic.Int64{&b.written, &b.failed, &b.verified, &b.missing, &b.corrupt, &b.wrongKey, &b.verifyErrors} {
		c.Store(0)
	}
	e.spawn(func() {
		defer close(done)
		defer cancel()
		e.runBackfill(ctx, g, opts)
	})
	return done, nil
}

// ErrBackfillStopped is returned by Backfill when the backfill was stopped before it
// finished (StopBackfill, Close, or the caller's context).
var ErrBackfillStopped = errors.New("backfill stopped before it finished")

// Backfill runs a backfill and waits for it; it stops early when ctx ends.
func (e *Engine) Backfill(ctx context.Context, opts BackfillOptions) (BackfillStatus, error) {
	done, err := e.startBackfill(opts)
	if err != nil {
		return e.BackfillStatus(), err
	}
	select {
	case <-done:
	case <-ctx.Done():
		e.StopBackfill()
		<-done
	}
	s := e.BackfillStatus()
	if s.Phase == "stopped" {
		if err := context.Cause(ctx); err != nil {
			return s, err
		}
		return s, ErrBackfillStopped
	}
	return s, nil
}

// StopBackfill ends a running backfill; the keys written so far stay written.
func (e *Engine) StopBackfill() { e.backfill.stop() }

// BackfillStatus returns the progress of the current or last backfill.
func (e *Engine) BackfillStatus() BackfillStatus { return e.backfill.snapshot() }

func (e *Engine) runBackfill(ctx context.Context, g *generation, opts BackfillOptions) {
	b := &e.backfill
	p := pacer.NewWithClock(opts.Rate, e.clock)
	rec := e.coll.Recorder(stats.OpBackfill)
	e.coll.SetTarget(stats.OpBackfill, opts.Rate, opts.Workers)
	e.coll.SetBacklog(stats.OpBackfill, p.Backlog)
	ranges := workload.Ranges(opts.Keys.Len(), opts.Workers)
	for i := range ranges {
		ranges[i].Start += opts.Keys.Start
		ranges[i].End += opts.Keys.Start
	}
	batch := opts.Batch
	if batch <= 0 {
		batch = DefaultBackfillBatch
	}

	var wg sync.WaitGroup
	for i, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.backfillRange(ctx, g, p, rec.Shard(i), i, r, batch)
		}()
	}
	wg.Wait()
	if opts.Verify && ctx.Err() == nil {
		b.setPhase("verify")
		for _, r := range ranges {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.verifyRange(ctx, g, p, r)
			}()
		}
		wg.Wait()
	}
	e.coll.SetTarget(stats.OpBackfill, 0, 0)
	e.coll.SetBacklog(stats.OpBackfill, nil)
	b.mu.Lock()
	b.status.Running = false
	b.status.Ended = e.timer.Now()
	if ctx.Err() != nil {
		b.status.Phase = "stopped"
	} else {
		b.status.Phase = "done"
	}
	phase := b.status.Phase
	b.mu.Unlock()
	e.log.Info("backfill finished", "status", phase, "written", b.written.Load(), "failed", b.failed.Load())
}

func (e *Engine) backfillRange(ctx context.Context, g *generation, pc *pacer.Pacer, shard *stats.Shard, id int, r workload.Range, batch int) {
	b := &e.backfill
	p := e.newOpPath(rand.New(rand.NewPCG(g.seed, uint64(stats.OpBackfill)<<32|uint64(id))), shard, nil)
	defer p.close()
	p.g = g
	bulk, _ := e.drv.(driver.BulkWriter)
	if bulk == nil {
		batch = 1
	}
	ops := make([]operation, 0, batch)
	keys := make([]string, 0, batch)
	values := make([][]byte, 0, batch)
	vals := make([][]byte, batch) // validation: the encoded value per position (a bulk write holds them all)
	for next := r.Start; next < r.End; {
		// A batch: each key claims its slot of the schedule, so the rate holds per key.
		ops = ops[:0]
		var start int64
		for idx := next; idx < r.End && len(ops) < batch; idx++ {
			t, s, err := pc.Acquire(ctx)
			if err != nil {
				return
			}
			start = s
			ops = append(ops, p.build(&plainWrite, nil, idx, t, &vals[len(ops)]))
		}
		// A batch is due when its last key is: it cannot be sent before. Timed from each
		// key's own slot, a paced backfill charged the wait while the batch filled (up to
		// batch/rate) to the store; from the batch's due time, response time is the store's
		// and start lag still shows a batch that went out late.
		if n := len(ops); n > 1 {
			for i := range ops[:n-1] {
				ops[i].intended = ops[n-1].intended
			}
		}
		next += int64(len(ops))
		// A key is tried until written, backfillAttempts times at most; a partial bulk
		// failure retries only the keys that failed, so the batch shrinks.
		for attempt := 1; len(ops) > 0; attempt++ {
			if attempt > 1 {
				start = pc.Now()
			}
			keys, values = keys[:0], values[:0]
			for i := range ops {
				keys, values = append(keys, ops[i].key), append(values, ops[i].value)
			}
			oc := p.slot.begin(start, g.w.OpTimeout)
			err := e.write(oc, bulk, keys, values)
			end := p.clock.Now()
			timedOut := oc.end()
			// A store that answered per key has its keys judged one by one.
			var be *driver.BulkError
			perKey := err != nil && !timedOut && errors.As(err, &be) && len(be.Errs) == len(ops)
			left := 0
			for i := range ops {
				kerr := err
				if perKey {
					kerr = be.Errs[i]
				}
				switch p.done(&ops[i], start, end, nil, kerr, timedOut) {
				case outOK:
					b.written.Add(1)
				case outStopped:
					return
				default:
					ops[left] = ops[i]
					left++
				}
			}
			p.split.done(start, end)
			ops = ops[:left]
			if left > 0 && attempt == backfillAttempts {
				b.failed.Add(int64(left))
				break
			}
			if left > 0 {
				e.backoff(ctx, attempt)
			}
		}
	}
}

// write writes one key, or several through bulk (which is then non-nil), recovering a
// driver panic like call.
func (e *Engine) write(ctx context.Context, bulk driver.BulkWriter, keys []string, values [][]byte) (err error) {
	if len(keys) == 1 {
		_, err = e.call(ctx, &plainWrite, keys[0], values[0], 0)
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			if e.panics.Add(1) == 1 {
				e.log.Error("driver panicked; the operation counts as failed (further panics are counted, not logged)",
					"op", "backfill", "panic", fmt.Sprint(r))
			}
			err = fmt.Errorf("driver panicked: %v", r)
		}
	}()
	return bulk.WriteBulk(ctx, keys, values)
}

func (e *Engine) verifyRange(ctx context.Context, g *generation, pc *pacer.Pacer, r workload.Range) {
	b := &e.backfill
	p := e.newOpPath(nil, nil, nil)
	defer p.close()
	p.g = g
	for idx := r.Start; idx < r.End && ctx.Err() == nil; idx++ {
		t, start, err := pc.Acquire(ctx)
		if err != nil {
			return
		}
		// Verification counts what it finds apart from the backfill's series: it checks
		// presence and integrity, not what the store's latency was.
		o := p.build(&plainRead, nil, idx, t, nil)
		oc := p.slot.begin(start, g.w.OpTimeout)
		value, err := e.call(oc, o.m, o.key, nil, 0)
		oc.end()
		switch {
		case errors.Is(err, driver.ErrNotFound):
			b.missing.Add(1)
			continue
		case err != nil:
			b.verifyErrors.Add(1)
			continue
		}
		b.verified.Add(1)
		if g.tracker == nil {
			continue
		}
		switch check, _ := workload.CheckValue(keyBytes(o.key), value); check {
		case workload.CheckCorrupt, workload.CheckNoHeader:
			b.corrupt.Add(1)
		case workload.CheckWrongKey:
			b.wrongKey.Add(1)
		}
	}
}
