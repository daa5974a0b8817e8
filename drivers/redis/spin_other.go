//go:build !linux

package redis

import (
	"io"
	"net"
	"time"
)

// newSpinReader returns nil: spinRead is implemented on Linux only, elsewhere the
// connection is read as usual (the option is accepted and has no effect).
func newSpinReader(net.Conn, time.Duration) io.Reader { return nil }
