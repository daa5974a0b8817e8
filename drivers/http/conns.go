package http

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/ndbench/ndbench/driver"
)

// checkConnections refuses a connections option the engine cannot hold: net/http opens
// connections on demand only, and a cap below the count would stall Init.
func (o *Options) checkConnections(engine string) error {
	if o.Connections == 0 {
		return nil
	}
	if engine != engineFast {
		return driver.FieldErrors{&driver.FieldError{Field: "connections", Value: strconv.Itoa(o.Connections),
			Allowed: "0 with engine " + engine + " (connections opened at Init need engine fasthttp, HTTP/1.1)"}}
	}
	if !o.KeepAlive {
		return driver.FieldErrors{&driver.FieldError{Field: "connections", Value: strconv.Itoa(o.Connections),
			Allowed: "0 with keepAlive=false (each request would close the connection it took)"}}
	}
	if o.MaxConnsPerHost > 0 && o.Connections > o.MaxConnsPerHost {
		return driver.FieldErrors{&driver.FieldError{Field: "connections", Value: strconv.Itoa(o.Connections),
			Allowed: fmt.Sprintf("0 to maxConnsPerHost (%d)", o.MaxConnsPerHost)}}
	}
	return nil
}

// openConnections opens n keep-alive connections to each host and leaves them idle in
// its pool, which hands out the oldest first (FIFO): a node then holds n connections
// per host with fewer workers, each connection used in turn. A pool of n costs a copy
// of n pointers per request (fasthttp's FIFO), ~25 µs at 50,000, and a connection idle
// for 90 s is closed, so the request rate should reach every connection within that.
func openConnections(ctx context.Context, hosts [numSlots]*fasthttp.HostClient, n int, timeout time.Duration) error {
	if n == 0 {
		return nil
	}
	seen := map[*fasthttp.HostClient]bool{}
	for _, hc := range hosts {
		if hc == nil || seen[hc] {
			continue
		}
		seen[hc] = true
		if err := openTo(ctx, hc, n, timeout); err != nil {
			return err
		}
	}
	return nil
}

// openTo dials n connections to hc's host, 64 at a time, then returns them to the pool.
func openTo(ctx context.Context, hc *fasthttp.HostClient, n int, timeout time.Duration) error {
	const parallel = 64
	var (
		mu       sync.Mutex
		firstErr error
		opened   int
		wg       sync.WaitGroup
		next     = make(chan struct{})
	)
	// Each opened connection, as the call that returns it to the pool (fasthttp's
	// connection type is not exported).
	conns := make([]func(), 0, n)
	go func() {
		defer close(next)
		for range n {
			select {
			case next <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if failed {
					continue
				}
				cc, err := hc.AcquireConn(timeout, false)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
				} else {
					opened++
					conns = append(conns, func() { hc.ReleaseConn(cc) })
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, put := range conns {
		put()
	}
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return driver.Wrap(driver.ClassUnavailable, fmt.Errorf("http: opening connections=%d to %s: %d opened, then: %w", n, hc.Addr, opened, firstErr))
	}
	return nil
}
