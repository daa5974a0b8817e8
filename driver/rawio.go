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
