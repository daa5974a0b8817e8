package engine

import (
	"context"
	"time"
)

// maxClosedLoopBackoff caps the pause after consecutive failures in closed loop. Without a
// schedule a worker facing a dead store would otherwise spin through millions of instant
// "connection refused" errors a second, burning the client's CPU and flooding the counters;
// open-loop workers need no backoff because the pacer already bounds them.
const maxClosedLoopBackoff = 100 * time.Millisecond

// work is one worker's loop: take an intended start time, run one operation of the
// class's mix in it through the worker's opPath. It returns when ctx ends or the pool
// shrank below its index. seed is the pool's seed for this start; with the class's series
// and the worker's index it makes the worker's random stream.
func (e *Engine) work(ctx context.Context, c *opClass, w *worker, id int, seed uint64) {
	p := e.newWorkerPath(c, id, seed, nil)
	defer p.close()
	w.slot.Store(p.slot)
	for {
		intended, start, ok := p.take(ctx, c, id)
		if !ok {
			return
		}
		o := p.next(intended, &p.vbuf)
		out := p.do(&o, start)
		if out == outStopped {
			return
		}
		p.cycled(ctx, c, out == outFailed)
	}
}

// backoff pauses a closed-loop worker after consecutive failures: 1 ms, doubling, capped.
func (e *Engine) backoff(ctx context.Context, failures int) {
	d := min(time.Millisecond<<min(failures-1, 10), maxClosedLoopBackoff)
	t := e.timer.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// DriverPanics returns how many driver calls panicked.
func (e *Engine) DriverPanics() int64 { return e.panics.Load() }
