package driver

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestPipelineConnInterrupts: an interrupt makes a blocked read return at once; with the
// batch's context still running it is stale, Retry clears the deadline and the read goes
// on to get its data; with the context done it is real, and Retry says so.
func TestPipelineConnInterrupts(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	var c PipelineConn
	c.Set(client)
	defer c.Close()
	buf := make([]byte, 4)

	// Stale: ctx is live.
	ctx := context.Background()
	go func() { time.Sleep(20 * time.Millisecond); c.Interrupt() }()
	_, err := c.Conn().Read(buf)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Interrupt: %v, want a deadline error", err)
	}
	if !c.Retry(ctx, err) {
		t.Fatal("Retry with a live context = false; a stale interrupt must be ridden out")
	}
	go func() { _, _ = server.Write([]byte("pong")) }()
	if n, err := c.Conn().Read(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("read after Retry = %q, %v; want pong", buf[:n], err)
	}

	// Real: ctx is done.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	c.Interrupt()
	_, err = c.Conn().Read(buf)
	if c.Retry(done, err) {
		t.Fatal("Retry with a done context = true; a real interrupt must end the batch")
	}
	c.Drop()
	if c.Conn() != nil {
		t.Fatal("Conn after Drop is not nil")
	}
	c.Interrupt() // no connection: nothing to do, no panic
}
