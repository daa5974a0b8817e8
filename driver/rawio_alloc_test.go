//go:build linux && !race

package driver

import (
	"io"
	"testing"
)

// A write and a read through RawIO allocate nothing: the drivers' hot loops run one of
// each per batch, and the engine's budget is zero allocations per operation. (Not under
// the race detector, whose bookkeeping allocates.)
func TestRawIOAllocatesNothing(t *testing.T) {
	c, s := loopbackPair(t)
	req, reply := []byte("GET k\r\n"), make([]byte, 7)
	echo := make([]byte, 7)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(s, echo); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(echo); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a round trip allocated %.1f times; want 0", allocs)
	}
	// WriteRead, against a server end that echoes for as long as the test runs.
	go func() {
		buf := make([]byte, len(req))
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				return
			}
			if _, err := s.Write(buf); err != nil {
				return
			}
		}
	}()
	wr := c.(WriteReader)
	allocs = testing.AllocsPerRun(200, func() {
		n, err := wr.WriteRead(req, reply)
		if err == nil && n < len(reply) {
			_, err = io.ReadFull(c, reply[n:])
		}
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("a WriteRead round trip allocated %.1f times; want 0", allocs)
	}
}
