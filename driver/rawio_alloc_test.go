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
}
