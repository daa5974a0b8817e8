package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// dnsSource finds members in DNS: SRV records, or A/AAAA records when there are none.
type dnsSource struct {
	noClose
	name     string // as given; a trailing dot makes it absolute
	port     int    // for the A/AAAA fallback
	portSet  bool   // the spec gave the port
	server   string // host:port, or "" for the system's resolvers
	resolver *net.Resolver
}

// newDNS parses NAME or NAME:PORT.
func newDNS(target string, opts Options) (*dnsSource, error) {
	d := &dnsSource{name: strings.TrimSpace(target), port: opts.DefaultPort, server: opts.DNSServer}
	if name, port, ok := strings.Cut(d.name, ":"); ok {
		p, err := parsePort(port)
		if err != nil {
			if strings.ContainsAny(port, "@:/") {
				// Not a port at all: maybe credentials; show the target as Shown does.
				return nil, fmt.Errorf("dns: %q: want dns:NAME or dns:NAME:PORT", driver.Shown(false, d.name))
			}
			return nil, fmt.Errorf("dns: %v (want dns:NAME or dns:NAME:PORT)", err)
		}
		d.name, d.port, d.portSet = name, p, true
	}
	if err := checkDNSName(d.name); err != nil {
		return nil, fmt.Errorf("dns: %v (want dns:NAME or dns:NAME:PORT)", err)
	}
	d.resolver = net.DefaultResolver
	if d.server != "" {
		server := d.server
		var dialer net.Dialer
		d.resolver = &net.Resolver{
			PreferGo: true,
			// Every query goes to server, over the network the resolver asks for (UDP,
			// or TCP for a truncated answer).
			Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, server)
			},
		}
	}
	return d, nil
}

// checkDNSName checks that name looks like a domain name: labels of letters, digits, '-'
// and '_' (SRV names: _http._tcp...), at most 253 characters.
func checkDNSName(name string) error {
	n := strings.TrimSuffix(name, ".")
	if n == "" {
		return errors.New("empty name")
	}
	if len(n) > 253 {
		return fmt.Errorf("name of %d characters: at most 253", len(n))
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("name %q: empty or over-long label", name)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("name %q: character %q is not allowed in a DNS name", name, r)
			}
		}
	}
	return nil
}

// String returns the spec, dns:NAME or dns:NAME:PORT, and the DNS server when one is set.
func (d *dnsSource) String() string {
	s := "dns:" + d.name
	if d.portSet {
		s += ":" + strconv.Itoa(d.port)
	}
	if d.server != "" {
		s += " via " + d.server
	}
	return s
}

// Members looks up SRV records of the name and resolves each target; without SRV
// records it falls back to the name's A/AAAA records.
func (d *dnsSource) Members(ctx context.Context) ([]Member, error) {
	_, srvs, err := d.resolver.LookupSRV(ctx, "", "", d.name)
	err = d.named(err)
	if err != nil && !isNotFound(err) {
		// Go drops SRV records whose target is not a valid name and reports it along with
		// the valid ones; only a lookup that returned nothing is a failure.
		if len(srvs) == 0 {
			return nil, fmt.Errorf("discover members (%s): SRV lookup: %w", d, err)
		}
	}
	if len(srvs) == 0 {
		return d.fallback(ctx)
	}
	var ms []Member
	for _, srv := range srvs {
		target := strings.TrimSuffix(srv.Target, ".")
		if target == "" {
			continue // "." means: no service here
		}
		ip, err := d.address(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("discover members (%s): resolve SRV target %s: %w", d, target, err)
		}
		ms = append(ms, Member{ID: target, Addr: net.JoinHostPort(ip.String(), strconv.Itoa(int(srv.Port)))})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("discover members (%s): the SRV records of %s say the service is not available (target \".\")", d, d.name)
	}
	return sortMembers(ms), nil
}

// fallback returns one member per A/AAAA address of the name, on d.port.
func (d *dnsSource) fallback(ctx context.Context) ([]Member, error) {
	ips, err := d.lookupIPs(ctx, d.name)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("discover members (%s): no SRV, A or AAAA records for %s: %w", d, d.name, err)
		}
		return nil, fmt.Errorf("discover members (%s): no SRV records; A/AAAA lookup: %w", d, err)
	}
	ms := make([]Member, 0, len(ips))
	for _, ip := range ips {
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(d.port))
		ms = append(ms, Member{ID: addr, Addr: addr})
	}
	return sortMembers(ms), nil
}

// address returns the address a member is reached at: its first IPv4 address in sorted
// order, or its first IPv6 address when it has no IPv4 one.
func (d *dnsSource) address(ctx context.Context, host string) (netip.Addr, error) {
	ips, err := d.lookupIPs(ctx, host)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ip := range ips {
		if ip.Is4() {
			return ip, nil
		}
	}
	return ips[0], nil
}

// lookupIPs returns the addresses of host, sorted and unique; an error when none.
func (d *dnsSource) lookupIPs(ctx context.Context, host string) ([]netip.Addr, error) {
	ips, err := d.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, d.named(err)
	}
	for i, ip := range ips {
		ips[i] = ip.Unmap()
	}
	slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
	ips = slices.Compact(ips)
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return ips, nil
}

// named corrects the server a lookup error names: with a custom Dial, Go's resolver
// names the first server of /etc/resolv.conf although it asked d.server.
func (d *dnsSource) named(err error) error {
	var de *net.DNSError
	if d.server == "" || !errors.As(err, &de) {
		return err
	}
	fixed := *de
	fixed.Server = d.server
	return &fixed
}

// isNotFound reports a lookup that found no such name, or no records of the type asked.
func isNotFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
