package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// dial connects to addr the way every mode does: TCP without Nagle's delay, its reads and
// writes through driver.RawIO (no runtime system-call path per operation, see
// docs/design-notes.md), then TLS with conf when conf is set, verifying the host dialled
// unless conf names a server. Its errors do not name the store: direct mode's connect
// and Init (for go-redis's modes, whose errors come back through Ping) say where.
func dial(ctx context.Context, network, addr string, timeout time.Duration, conf *tls.Config) (net.Conn, error) {
	// go-redis's own keep-alive policy (its default dialer's): probe after 30 s idle,
	// declare the peer dead after 3 probes 5 s apart, below the idle timeouts of load
	// balancers and NATs.
	keepAlive := net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}
	dl := net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive}
	nc, err := dl.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err // net's error names the address
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // Go's default, stated: a request must not wait for an ACK
	}
	nc = driver.RawIO(nc)
	if conf == nil {
		return nc, nil
	}
	if conf.ServerName == "" {
		// As crypto/tls.Dial does: verify the certificate against the host dialled.
		conf = conf.Clone()
		conf.ServerName, _, _ = net.SplitHostPort(addr)
	}
	// The handshake ends within timeout, as the connect did: a server that accepts and
	// never answers must not hold a caller whose context has no deadline (Init, Warm).
	if timeout > 0 {
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	tc := tls.Client(nc, conf)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	_ = nc.SetDeadline(time.Time{})
	return tc, nil
}

// goredisDialer is the Dialer of go-redis's modes (pool, autopipeline, cluster): dial,
// and with proxy, proxyConn over the connection (see its reasons there). A
// Dialer of our own replaces go-redis's TLS set-up, so dial applies conf itself.
func goredisDialer(timeout time.Duration, conf *tls.Config, proxy bool) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr, timeout, conf)
		if err != nil || !proxy {
			return nc, err
		}
		return &proxyConn{Conn: nc}, nil
	}
}
