package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
)

// IdentityName is the name a node's TLS certificate must be valid for: the host of its
// id when the id is an address (host:port, as static, file and DNS A discovery name
// nodes), else the id itself (a DNS SRV target, an etcd registration's --node-id). A
// node is known to its coordinator by its id; a certificate issued for another id does
// not let a process pass for that node, even one the fleet's CA signed.
func IdentityName(id string) string {
	if host, _, err := net.SplitHostPort(id); err == nil {
		return strings.Trim(host, "[]")
	}
	return id
}

// loopbackHost tells whether host (a name or an address) is this machine's loopback.
func loopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peerURL is the base URL a member is called at: https when the coordinator has a TLS
// configuration for its peers, http otherwise; an address with a scheme keeps it.
func (c *Coordinator) peerURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimRight(addr, "/")
	}
	if c.opts.TLS != nil {
		return "https://" + addr
	}
	return "http://" + addr
}

// newPeer builds the client of member d. Over https it verifies that the node's
// certificate chains to the configured CAs and names the node (IdentityName of its id);
// over plain http off loopback it refuses the node unless InsecurePeers, since the
// fleet's token would cross the network in clear text.
func (c *Coordinator) newPeer(d discovery.Member) *peer {
	base := c.peerURL(d.Addr)
	p := newPeer(base, c.token, c.opts.Client)
	u, err := url.Parse(base)
	if err != nil {
		p.refused = fmt.Errorf("node %s: address %q: %w", d.ID, d.Addr, err)
		return p
	}
	switch u.Scheme {
	case "http":
		if !c.opts.InsecurePeers && !loopbackHost(u.Hostname()) {
			p.refused = fmt.Errorf("node %s at %s refused: plain http off loopback would carry the fleet's token in clear text; "+
				"serve the nodes with --tls-cert and give the coordinator --peer-ca, or --insecure-peers on a network you trust", d.ID, d.Addr)
		}
	case "https":
		if c.opts.TLS == nil {
			p.refused = fmt.Errorf("node %s at %s: an https address needs the fleet's TLS settings (--peer-ca)", d.ID, d.Addr)
			return p
		}
		p.hc = c.tlsClient(IdentityName(d.ID))
	default:
		p.refused = fmt.Errorf("node %s: address %q: scheme %q; allowed: http, https", d.ID, d.Addr, u.Scheme)
	}
	return p
}

// tlsClient is an HTTP client whose connections accept only a certificate that chains
// to the configured roots and is valid for name: the node's identity, not merely the
// address dialled (several nodes may share a host, and a node's address can change).
func (c *Coordinator) tlsClient(name string) *http.Client {
	cfg := c.opts.TLS.Clone()
	if cfg.MinVersion < tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS12
	}
	roots := cfg.RootCAs
	// The standard check would compare the certificate with the dialled host; the one
	// below compares it with the node's identity instead, after the same chain check.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyNode(cs, roots, name) }
	base := c.opts.Client
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     cfg,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 8,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{Transport: tr, Timeout: base.Timeout}
}

// verifyNode checks a node's certificate chain against roots (the system's when nil)
// and that its leaf is valid for name.
func verifyNode(cs tls.ConnectionState, roots *x509.CertPool, name string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the node presented no certificate")
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Errorf("the node's certificate is not trusted (--peer-ca): %w", err)
	}
	if err := leaf.VerifyHostname(name); err != nil {
		return fmt.Errorf("the node's certificate (subject %q, names %s) is not valid for its identity %q: "+
			"another node's certificate, or a process that is not this node", leaf.Subject.CommonName, certNames(leaf), name)
	}
	return nil
}

func certNames(c *x509.Certificate) string {
	var n []string
	n = append(n, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		n = append(n, ip.String())
	}
	for _, u := range c.URIs {
		n = append(n, u.String())
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, ", ")
}

// SetToken makes tok the token of the coordinator's calls to its nodes from the next call
// on: the fleet's token rotates without a restart (serve's --token-file).
func (c *Coordinator) SetToken(tok string) error {
	if tok == "" {
		return errors.New("cluster: the new token is empty; a fleet's calls always carry one")
	}
	c.tok.Store(&tok)
	return nil
}

// token is the token of the next call.
func (c *Coordinator) token() string { return *c.tok.Load() }
