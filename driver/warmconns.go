package driver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// WarmConns holds connections a driver opened ahead of the load (Warmer) until its
// workers' pipelines take them, by key (a server's address, or "" for one server). A
// driver whose pipelines connect on their first operations fills it in Warm and takes
// from it where it would have connected, so that no operation's response time holds a
// connect. C is the driver's connection with whatever was set up on it. It is safe for
// concurrent use; the zero value is not: use NewWarmConns.
type WarmConns[C any] struct {
	keepFor time.Duration
	now     func() time.Time
	close   func(C)

	mu     sync.Mutex
	conns  map[string][]warmConn[C]
	closed bool
}

// warmConn is one waiting connection and when it was opened.
type warmConn[C any] struct {
	c      C
	opened time.Time
}

// WarmKeepFor is how long a warmed connection waits for its worker by default. `ndbench
// run` starts its load right after Init; a serve session may wait for a user's start
// longer than a server's or a proxy's idle timeout, and a connection closed by the other
// side in between would fail its worker's first operation: past this the worker
// connects as it would have without Warm.
const WarmKeepFor = 30 * time.Second

// WarmAtOnce bounds the connects Fill has in flight: ten thousand workers connect in
// waves, not in one burst that overflows the server's accept queue.
const WarmAtOnce = 64

// NewWarmConns returns an empty set whose connections wait keepFor at most (WarmKeepFor
// when 0) on the clock now (time.Now when nil), and are closed with close.
func NewWarmConns[C any](keepFor time.Duration, now func() time.Time, close func(C)) *WarmConns[C] {
	if keepFor <= 0 {
		keepFor = WarmKeepFor
	}
	if now == nil {
		now = time.Now
	}
	return &WarmConns[C]{keepFor: keepFor, now: now, close: close, conns: map[string][]warmConn[C]{}}
}

// Fill opens connections with open until n wait under key (those already waiting count),
// WarmAtOnce at a time. It stops at open's first error and returns it: a server that
// refuses or does not answer costs one wave of connects, not n connect timeouts. A
// connection opened after Close is closed at once.
func (w *WarmConns[C]) Fill(ctx context.Context, key string, n int, open func(context.Context) (C, error)) error {
	w.mu.Lock()
	n -= len(w.conns[key])
	w.mu.Unlock()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  error
		failed atomic.Bool
	)
	slots := make(chan struct{}, WarmAtOnce)
	for i := 0; i < n && !failed.Load() && ctx.Err() == nil; i++ {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if failed.Load() {
				return
			}
			c, err := open(ctx)
			if err != nil {
				if !failed.Swap(true) {
					mu.Lock()
					first = err
					mu.Unlock()
				}
				return
			}
			w.put(key, c)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// put adds c under key, or closes it when the set is closed.
func (w *WarmConns[C]) put(key string, c C) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.close(c)
		return
	}
	w.conns[key] = append(w.conns[key], warmConn[C]{c: c, opened: w.now()})
	w.mu.Unlock()
}

// Take returns a connection waiting under key, if one is; those that waited longer than
// the set's keepFor are closed on the way. A nil set has none.
func (w *WarmConns[C]) Take(key string) (C, bool) {
	var zero C
	if w == nil {
		return zero, false
	}
	w.mu.Lock()
	var stale []C
	var got C
	ok := false
	for l := w.conns[key]; len(l) > 0; l = w.conns[key] {
		wc := l[len(l)-1]
		l[len(l)-1] = warmConn[C]{}
		w.conns[key] = l[:len(l)-1]
		if w.now().Sub(wc.opened) <= w.keepFor {
			got, ok = wc.c, true
			break
		}
		stale = append(stale, wc.c)
	}
	w.mu.Unlock()
	for _, c := range stale {
		w.close(c)
	}
	return got, ok
}

// Len returns how many connections wait, under every key; a nil set has none.
func (w *WarmConns[C]) Len() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, l := range w.conns {
		n += len(l)
	}
	return n
}

// Close closes the waiting connections; connections Fill opens later are closed at once.
// Closing a nil set does nothing.
func (w *WarmConns[C]) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	conns := w.conns
	w.conns, w.closed = map[string][]warmConn[C]{}, true
	w.mu.Unlock()
	for _, l := range conns {
		for _, wc := range l {
			w.close(wc.c)
		}
	}
}
