package driver

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// longAgo is a deadline in the past: setting it makes blocked I/O return at once.
var longAgo = time.Unix(1, 0)

// PipelineConn is the network connection of a Pipeline that owns its hot loop (see
// Pipeliner), with the three things every such pipeline needs: Interrupt from another
// goroutine, telling a stale interrupt from a real one, and dropping a connection whose
// stream can no longer be trusted. The pipeline's own goroutine reads the connection with
// Conn and changes it with Set and Drop; Interrupt may run at any time on the engine's
// watchdog. The zero value holds no connection.
type PipelineConn struct {
	mu sync.Mutex // guards nc against Interrupt
	nc net.Conn
}

// Conn returns the connection, nil when there is none (never connected, or dropped). Only
// the pipeline's goroutine calls it, and only it changes the connection, so it takes no
// lock.
func (c *PipelineConn) Conn() net.Conn { return c.nc }

// Set installs a new connection.
func (c *PipelineConn) Set(nc net.Conn) {
	c.mu.Lock()
	c.nc = nc
	c.mu.Unlock()
}

// Interrupt makes blocked I/O on the connection return, by setting a past deadline; it is
// what Pipeline.Interrupt does.
func (c *PipelineConn) Interrupt() {
	c.mu.Lock()
	if c.nc != nil {
		_ = c.nc.SetDeadline(longAgo)
	}
	c.mu.Unlock()
}

// Retry reports whether err, from I/O on the connection during a batch on ctx, was a
// stale interrupt (a deadline error while ctx is not done), and if so clears the deadline
// so the I/O can go on.
func (c *PipelineConn) Retry(ctx context.Context, err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
		return false
	}
	c.mu.Lock()
	if c.nc != nil {
		_ = c.nc.SetDeadline(time.Time{})
	}
	c.mu.Unlock()
	return true
}

// Drop closes the connection (after an I/O error, a real interrupt or a reply cut short,
// when the replies are out of step with the requests); the pipeline connects again on its
// next batch.
func (c *PipelineConn) Drop() { _ = c.Close() }

// Close closes the connection, if any.
func (c *PipelineConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		return nil
	}
	err := c.nc.Close()
	c.nc = nil
	return err
}
