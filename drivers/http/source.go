package http

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// maxSourceAddrs bounds the sourceAddrs option: 1,024 addresses of ~28,000 ephemeral
// ports each are far more connections than one process has file descriptors for, and a
// typo such as 127.0.0.0/8 must not become sixteen million dialers.
const maxSourceAddrs = 1024

// sourceAddrsAllowed is what the sourceAddrs option accepts, for its field errors.
const sourceAddrsAllowed = "empty (the system picks), or IP addresses and CIDR blocks separated by commas, e.g. 127.0.0.2,127.0.0.3 or 127.0.1.0/24, at most 1024 addresses in all"

// parseSourceAddrs reads the sourceAddrs option: IP addresses and CIDR blocks (each
// block stands for its host addresses: an IPv4 block of /30 or wider without its
// network and broadcast addresses). Duplicates are dropped so that round-robin spreads
// connections evenly. Empty means none: the system picks the source address.
func parseSourceAddrs(s string) ([]netip.Addr, error) {
	fail := func(v string) error {
		return driver.FieldErrors{&driver.FieldError{Field: "sourceAddrs", Value: v, Allowed: sourceAddrsAllowed}}
	}
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	add := func(a netip.Addr) bool {
		a = a.Unmap()
		if seen[a] {
			return true
		}
		if len(out) == maxSourceAddrs {
			return false
		}
		seen[a] = true
		out = append(out, a)
		return true
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			a, err := netip.ParseAddr(item)
			if err != nil || a.Zone() != "" || a.IsUnspecified() || a.IsMulticast() {
				return nil, fail(item)
			}
			if !add(a) {
				return nil, fail(s)
			}
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil || p.Addr().IsUnspecified() || p.Addr().IsMulticast() {
			return nil, fail(item)
		}
		p = p.Masked()
		hostBits := p.Addr().BitLen() - p.Bits()
		if hostBits > 20 { // more than a million addresses: over the cap whatever is skipped
			return nil, fail(s)
		}
		first, last := p.Addr(), lastAddr(p)
		if p.Addr().Is4() && hostBits >= 2 {
			first, last = first.Next(), last.Prev() // network and broadcast addresses
		}
		for a := first; a.IsValid() && p.Contains(a); a = a.Next() {
			if !add(a) {
				return nil, fail(s)
			}
			if a == last {
				break
			}
		}
	}
	return out, nil
}

// lastAddr is the highest address of the masked prefix p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// checkSourceAddrs binds each source address once (port 0, closed at once), so that an
// address this machine does not have is an error at Init naming it, not a failure of
// every operation whose connection happens to start from it.
func checkSourceAddrs(addrs []netip.Addr) error {
	for _, a := range addrs {
		l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0)))
		if err != nil {
			return driver.FieldErrors{&driver.FieldError{Field: "sourceAddrs", Value: a.String(),
				Allowed: fmt.Sprintf("addresses of this machine (binding %s: %v; on macOS add a loopback alias with ifconfig lo0 alias %s, on Windows add the address to an adapter)", a, err, a)}}
		}
		l.Close()
	}
	return nil
}

// dialer opens the driver's connections: from the system's source address, or from
// each of the sourceAddrs in turn. One address reaches one server address and port
// with at most its ephemeral port range (28,232 ports by default on Linux), so
// connections beyond that to one server need several.
type dialer struct {
	dialers []*net.Dialer
	next    atomic.Uint64
}

func newDialer(connect time.Duration, addrs []netip.Addr) *dialer {
	d := &dialer{}
	mk := func(local net.Addr) *net.Dialer {
		return &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second, LocalAddr: local}
	}
	if len(addrs) == 0 {
		d.dialers = []*net.Dialer{mk(nil)}
		return d
	}
	for _, a := range addrs {
		d.dialers = append(d.dialers, mk(net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, 0))))
	}
	return d
}

// DialContext dials addr from the next source address, round-robin.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := d.dialers[0]
	if len(d.dialers) > 1 {
		nd = d.dialers[(d.next.Add(1)-1)%uint64(len(d.dialers))]
	}
	return nd.DialContext(ctx, network, addr)
}
