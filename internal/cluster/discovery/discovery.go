package discovery

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// Member is one ndbench node as discovery sees it.
type Member struct {
	// ID is the node's stable id: for etcd the id it registered, for DNS SRV the target
	// host without its trailing dot, for static lists, DNS A/AAAA and files its host:port.
	ID string `json:"id"`
	// Addr is the host:port of the node's HTTP API.
	Addr string `json:"addr"`
	// Labels are the node's labels (zone, rack, ...), which config group scopes select on.
	Labels map[string]string `json:"labels,omitempty"`
	// Weight is the node's share of a fleet rate, relative to the others'; 0 means 1.
	Weight float64 `json:"weight,omitempty"`
	// Cluster is the NDBench cluster the node is listed in (clusters.json), "" otherwise.
	Cluster string `json:"cluster,omitempty"`
}

// Discoverer lists the members of a fleet.
type Discoverer interface {
	// Members returns the current members, sorted by ID, each ID once.
	Members(ctx context.Context) ([]Member, error)
	// String describes the source for display and logs: its scheme and target, with the
	// password of any URL in it masked.
	String() string
}

// Registrar is a source a node announces itself in (etcd).
type Registrar interface {
	// Register announces self and keeps the registration alive until ctx ends, then
	// withdraws it. It returns once the registration is first written, or with the error
	// that prevented it; after that it re-registers by itself whenever the registration
	// is lost (a lease that expired while the source was unreachable, say).
	Register(ctx context.Context, self Member) error
}

// ClusterLister is implemented by discoverers that know NDBench clusters (file:), where
// one node may be listed in several clusters: Members lists it once, Clusters in each.
type ClusterLister interface {
	// Clusters returns the members of every cluster by cluster name, each list sorted by
	// ID.
	Clusters(ctx context.Context) (map[string][]Member, error)
}

// Defaults of Options.
const (
	DefaultPort            = 8080
	DefaultEtcdPrefix      = "/ndbench/nodes/"
	DefaultEtcdTTL         = 10 * time.Second
	DefaultEtcdDialTimeout = 5 * time.Second
)

// Schemes are the spec schemes Parse accepts, in the order errors list them.
var Schemes = []string{"static", "dns", "etcd", "file"}

// Options tune the discoverers Parse builds. The zero value uses the defaults.
type Options struct {
	// DNSServer is the host:port of a DNS server to ask instead of the system's resolvers
	// (dns:); a bare host means port 53.
	DNSServer string
	// DefaultPort is the port of A/AAAA answers and of bare hosts; DefaultPort (8080)
	// when 0.
	DefaultPort int
	// EtcdPrefix is the key prefix members register under (etcd:); DefaultEtcdPrefix when
	// empty. A missing trailing slash is added.
	EtcdPrefix string
	// EtcdTTL is the lease TTL of a registration, rounded up to whole seconds (etcd:);
	// DefaultEtcdTTL when 0. etcd may raise a very short TTL to its minimum.
	EtcdTTL time.Duration
	// EtcdDialTimeout bounds connecting (and authenticating) to etcd;
	// DefaultEtcdDialTimeout when 0.
	EtcdDialTimeout time.Duration
	// EtcdTLS, when set, makes every etcd connection a TLS one (etcd:): the CAs etcd's
	// certificate must chain to, and a client certificate for an etcd that asks for one.
	EtcdTLS *tls.Config
	// EtcdUser and EtcdPassword authenticate to etcd (etcd:), the way serve's
	// --config-etcd-user and $NDBENCH_ETCD_PASSWORD give them; credentials in the
	// endpoints must then be the same or absent. Neither the password nor the
	// Options' text ever shows it.
	EtcdUser, EtcdPassword string
}

// String shows the options with the etcd password masked (%v, %+v, %s).
func (o Options) String() string {
	o.EtcdPassword = driver.Shown(true, o.EtcdPassword)
	type plain Options // without this method
	return fmt.Sprintf("%+v", plain(o))
}

// GoString keeps %#v of Options from printing the etcd password.
func (o Options) GoString() string { return "discovery.Options" + o.String() }

// withDefaults fills in the defaults and checks the options.
func (o Options) withDefaults() (Options, error) {
	if o.DefaultPort == 0 {
		o.DefaultPort = DefaultPort
	}
	if o.DefaultPort < 1 || o.DefaultPort > 65535 {
		return o, fmt.Errorf("discovery default port %d: must be in 1..65535", o.DefaultPort)
	}
	if o.EtcdPrefix == "" {
		o.EtcdPrefix = DefaultEtcdPrefix
	}
	if !strings.HasSuffix(o.EtcdPrefix, "/") {
		o.EtcdPrefix += "/"
	}
	if o.EtcdTTL == 0 {
		o.EtcdTTL = DefaultEtcdTTL
	}
	if o.EtcdTTL < 0 {
		return o, fmt.Errorf("discovery etcd TTL %v: must be positive", o.EtcdTTL)
	}
	if o.EtcdDialTimeout == 0 {
		o.EtcdDialTimeout = DefaultEtcdDialTimeout
	}
	if o.EtcdDialTimeout < 0 {
		return o, fmt.Errorf("discovery etcd dial timeout %v: must be positive", o.EtcdDialTimeout)
	}
	if o.DNSServer != "" {
		if _, _, err := net.SplitHostPort(o.DNSServer); err != nil {
			o.DNSServer = net.JoinHostPort(strings.Trim(o.DNSServer, "[]"), "53")
		}
		if err := checkAddr(o.DNSServer); err != nil {
			return o, fmt.Errorf("discovery DNS server %q: %v", driver.Shown(false, o.DNSServer), err)
		}
	}
	return o, nil
}

// Parse builds the Discoverer a --discovery spec names (see the package documentation).
// It does no I/O: an unreachable DNS server or etcd shows in Members and Register.
func Parse(spec string, opts Options) (Discoverer, error) {
	shown := showSpec(spec)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("--discovery %q: "+format, append([]any{shown}, args...)...)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, bad("%v", err)
	}
	scheme, target, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || scheme == "" {
		return nil, bad("no scheme; want SCHEME:TARGET with SCHEME one of %s", strings.Join(Schemes, ", "))
	}
	if slices.Contains(Schemes, scheme) && strings.TrimSpace(target) == "" {
		return nil, bad("empty target after %q", scheme+":")
	}
	switch scheme {
	case "static":
		d, err := newStatic(target, opts)
		if err != nil {
			return nil, bad("%v", err)
		}
		return d, nil
	case "dns":
		d, err := newDNS(target, opts)
		if err != nil {
			return nil, bad("%v", err)
		}
		return d, nil
	case "etcd":
		d, err := newEtcd(target, opts)
		if err != nil {
			return nil, bad("%v", err)
		}
		return d, nil
	case "file":
		return newFile(target, opts), nil
	}
	// The scheme may be a mistyped word followed by credentials; it is shown only as far
	// as the redacted spec shows it.
	shownScheme, _, _ := strings.Cut(shown, ":")
	return nil, bad("unknown scheme %q; allowed: %s", shownScheme, strings.Join(Schemes, ", "))
}

// showSpec returns spec as errors show it: passwords masked. The target of a known
// scheme, or one that is a URL, is masked on its own, so a mistyped scheme does not
// swallow the URL's scheme and user; anything else is masked as a whole, which may hide
// more than the password but never less.
func showSpec(spec string) string {
	scheme, target, ok := strings.Cut(spec, ":")
	if ok && scheme == "etcd" {
		return scheme + ":" + showEtcdTarget(target)
	}
	if ok && (slices.Contains(Schemes, scheme) || strings.Contains(target, "://") && !strings.ContainsAny(scheme, "@/")) {
		return scheme + ":" + driver.Shown(false, target)
	}
	return driver.Shown(false, spec)
}

// checkAddr checks a host:port address: a host and a port in 1..65535.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port")
	}
	if host == "" {
		return fmt.Errorf("no host; want host:port")
	}
	if strings.ContainsAny(host, " /@?#") {
		return fmt.Errorf("host %q is not a host name or IP address", driver.Shown(false, host))
	}
	if _, err := parsePort(port); err != nil {
		return err
	}
	return nil
}

// parsePort parses a port number in 1..65535.
func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("port %q: want a number in 1..65535", s)
	}
	return p, nil
}

// hostPort completes a bare host with port and checks the result.
func hostPort(s string, port int) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("empty address")
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		// A bare host (or IPv6 address, bracketed or not) gets the default port; anything
		// else with a colon is a malformed host:port.
		bare := strings.Trim(s, "[]")
		if strings.Contains(bare, ":") && net.ParseIP(bare) == nil {
			return "", fmt.Errorf("address %q: want host:port", driver.Shown(false, s))
		}
		s = net.JoinHostPort(bare, strconv.Itoa(port))
	}
	if err := checkAddr(s); err != nil {
		return "", fmt.Errorf("address %q: %v", driver.Shown(false, s), err)
	}
	return s, nil
}

// sortMembers sorts ms by ID (then Addr, so that which of two members with one ID stays
// does not depend on the order they came in, unless they are equal in both) and drops
// later members with an ID already seen.
func sortMembers(ms []Member) []Member {
	slices.SortStableFunc(ms, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Addr, b.Addr))
	})
	return slices.CompactFunc(ms, func(a, b Member) bool { return a.ID == b.ID })
}

// Clusters returns d's members by NDBench cluster: d's own answer when it is a
// ClusterLister, or else its members grouped by Cluster, those without one under
// unnamed. Each list is sorted by ID.
func Clusters(ctx context.Context, d Discoverer, unnamed string) (map[string][]Member, error) {
	if cl, ok := d.(ClusterLister); ok {
		return cl.Clusters(ctx)
	}
	ms, err := d.Members(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]Member{}
	for _, m := range ms {
		name := m.Cluster
		if name == "" {
			name = unnamed
		}
		out[name] = append(out[name], m)
	}
	return out, nil
}

// noClose is the Close of discoverers that hold nothing.
type noClose struct{}

// Close does nothing.
func (noClose) Close() error { return nil }
