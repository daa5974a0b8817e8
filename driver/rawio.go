package driver

import (
	"context"
	"net"
)

// RawIODialer returns dial with RawIO applied to every connection it makes, for client
// libraries that take a dial function (pgconn's DialFunc, gomemcache's DialContext).
func RawIODialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return RawIO(nc), nil
	}
}

// WriteReader is a connection that sends a request and waits for its reply in one
// call: RawIO's connections on Linux. Request-reply drivers use it when a connection
// offers it, and Write then Read otherwise.
type WriteReader interface {
	// WriteRead writes all of req, then reads what the connection holds into p as Read
	// does, waiting for it. An error of a *net.OpError with Op "write" means req was
	// not (or not wholly) sent; any other error is the read's, after req was sent.
	WriteRead(req, p []byte) (int, error)
}
