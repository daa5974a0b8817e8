package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/node"
	"github.com/ndbench/ndbench/internal/web"
)

// fleetFlags are serve's fleet settings: who this node is to its peers, and how it finds
// them when it coordinates.
type fleetFlags struct {
	peers        []string
	discovery    string
	prefix       string
	ttl          time.Duration
	dnsServer    string
	nodeID       string
	advertise    string
	labels       []string
	weight       float64
	lease        time.Duration
	maxSkew      time.Duration
	redistribute bool
	coordinate   bool
	scopePrefix  string
	peer         peerFlags
}

func (f *fleetFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.peers, "peers", nil, "fleet members' API addresses (host:port, comma-separated); same as --discovery static:...")
	fl.StringVar(&f.discovery, "discovery", "", "how this node finds the fleet it coordinates: static:host:port,..., dns:NAME[:PORT] (SRV, else A/AAAA: a Kubernetes headless Service), etcd:ENDPOINTS, file:clusters.json (NDBench's)")
	bindDiscoveryPrefix(fl, &f.prefix)
	fl.DurationVar(&f.ttl, "discovery-ttl", 10*time.Second, "etcd discovery: lease of a node's registration")
	fl.StringVar(&f.dnsServer, "dns-server", "", "DNS discovery: ask this server (host:port) instead of the system resolver")
	fl.StringVar(&f.nodeID, "node-id", "", "this node's id in a fleet (default: its advertised address)")
	fl.StringVar(&f.advertise, "advertise", "", "host:port the fleet's other nodes reach this node's API at (default: --listen, with the host name for 0.0.0.0)")
	fl.StringSliceVar(&f.labels, "labels", nil, "this node's group labels for fleet configuration scopes, e.g. zone=us-east-1a,rack=r1")
	fl.Float64Var(&f.weight, "weight", 1, "this node's share of a fleet-wide rate, relative to the others'")
	fl.DurationVar(&f.lease, "lease", 10*time.Second, "a node running a fleet's load stops it by itself after this long without its coordinator")
	fl.DurationVar(&f.maxSkew, "max-skew", 100*time.Millisecond, "a fleet start is refused when a node's clock is further off than this")
	fl.BoolVar(&f.redistribute, "redistribute", false, "give a lost node's share of the fleet rate to the other nodes")
	fl.StringVar(&f.scopePrefix, "fleet-config-prefix", "", "keep the fleet's configuration in etcd under this prefix (the etcd of --config-etcd, else of --discovery etcd:): changes are saved there, read back at start, and edits there applied")
	f.peer.bind(fl, "a coordinating node", "; default --tls-cert's")
	fl.BoolVar(&f.coordinate, "coordinate", false, "track the fleet from the start (otherwise from the first request to the fleet view at /fleet/)")
}

// self is this node as its peers see it.
func (f *fleetFlags) self(listen string) (discovery.Member, error) {
	addr := f.advertise
	if addr == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return discovery.Member{}, fmt.Errorf("--listen %q: %w", listen, err)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			if host, err = os.Hostname(); err != nil {
				return discovery.Member{}, fmt.Errorf("--advertise not given and no host name: %w", err)
			}
		}
		addr = net.JoinHostPort(host, port)
	} else if _, _, err := net.SplitHostPort(addr); err != nil {
		return discovery.Member{}, fmt.Errorf("--advertise %q: want host:port: %w", addr, err)
	}
	labels := map[string]string{}
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" || v == "" {
			return discovery.Member{}, fmt.Errorf("--labels %q: want label=value, e.g. zone=us-east-1a", l)
		}
		labels[k] = v
	}
	if f.weight <= 0 {
		return discovery.Member{}, fmt.Errorf("--weight %v: must be more than 0", f.weight)
	}
	id := f.nodeID
	if id == "" {
		id = addr
	}
	return discovery.Member{ID: id, Addr: addr, Labels: labels, Weight: f.weight}, nil
}

// agent is the node side of a fleet; every node has one (its routes refuse callers on a
// node without a token).
func (f *fleetFlags) agent(inst *node.Node, listen string, log *slog.Logger) (*cluster.Agent, error) {
	self, err := f.self(listen)
	if err != nil {
		return nil, err
	}
	return cluster.NewAgent(inst, cluster.AgentOptions{ID: self.ID, Version: toolVersion(), Labels: self.Labels, Logger: log}), nil
}

// coordinator starts this node's fleet control when discovery is set: it registers this
// node where the discovery needs it (etcd), tracks the members, and returns the server of
// the fleet view (nil without discovery).
func (f *fleetFlags) coordinator(ctx context.Context, snap *config.Snapshot, allow config.Allow, listen, token, configEtcd string, etcdAccess source.EtcdAccess,
	certs *api.CertFiles, log *slog.Logger, hooks historyHooks) (*fleetView, error) {
	spec := f.discovery
	if len(f.peers) > 0 {
		if spec != "" {
			return nil, usageError{errors.New("--peers and --discovery: give one of them")}
		}
		spec = "static:" + strings.Join(f.peers, ",")
	}
	if spec == "" {
		if f.peer.given() {
			return nil, usageError{errors.New("--peer-ca, --peer-cert, --peer-key and --insecure-peers set how a coordinating node calls its fleet: give --peers or --discovery with them")}
		}
		return nil, nil
	}
	if token == "" {
		return nil, usageError{errors.New("--discovery and --peers need a token (--token or NDBENCH_TOKEN): fleet nodes accept control only from authenticated peers")}
	}
	self, err := f.self(listen)
	if err != nil {
		return nil, usageError{err}
	}
	_, port, _ := net.SplitHostPort(self.Addr)
	p, _ := strconv.Atoi(port)
	opts := discoveryOptions(f.prefix, etcdAccess)
	opts.DNSServer, opts.DefaultPort, opts.EtcdTTL = f.dnsServer, p, f.ttl
	disc, err := discovery.Parse(spec, opts)
	if err != nil {
		return nil, usageError{err}
	}
	if reg, ok := disc.(discovery.Registrar); ok {
		if err := reg.Register(ctx, self); err != nil {
			return nil, fmt.Errorf("register this node with %s: %w", disc, err)
		}
	}
	var scopes *source.FleetScopes
	if f.scopePrefix != "" {
		endpoints := configEtcd
		if endpoints == "" {
			if rest, ok := strings.CutPrefix(spec, "etcd:"); ok {
				// The discovery's etcd, reached the same way (--config-etcd-*).
				endpoints = rest
			}
		}
		if endpoints == "" {
			return nil, usageError{errors.New("--fleet-config-prefix needs etcd: give --config-etcd, or --discovery etcd:ENDPOINTS")}
		}
		if scopes, err = source.OpenFleetScopes(strings.Split(endpoints, ","), f.scopePrefix, etcdAccess); err != nil {
			return nil, err
		}
	}
	peerTLS, peerCerts, err := f.peer.tlsConfig(certs)
	if err != nil {
		return nil, usageError{err}
	}
	if peerCerts != nil {
		go peerCerts.Watch(ctx, 0, log)
	}
	if f.peer.insecure {
		log.Warn(insecurePeersWarning)
	}
	copts := cluster.Options{Self: self, Discovery: disc, Token: token, Version: toolVersion(), Config: snap, Allow: allow, Logger: log,
		Lease: f.lease, MaxSkew: f.maxSkew, Redistribute: f.redistribute, TLS: peerTLS, InsecurePeers: f.peer.insecure}
	if scopes != nil {
		copts.ScopeStore = scopes
	}
	coord, err := cluster.New(copts)
	if err != nil {
		return nil, usageError{err}
	}
	go coord.Run(ctx)
	if scopes != nil {
		// The fleet's stored configuration applies once the coordinator sees its nodes;
		// edits in etcd apply as they come.
		go func() {
			defer scopes.Close()
			all, rev, err := scopes.Load(ctx)
			if err != nil {
				log.Error("fleet configuration not read", "from", scopes.String(), "err", err)
			}
			if err := coord.Ready(ctx); err != nil {
				return
			}
			apply := func(all map[string]map[string]string) {
				if err := coord.ReplaceScopes(ctx, all); err != nil {
					log.Warn("fleet configuration from etcd not applied", "from", scopes.String(), "err", err)
				}
			}
			if len(all) > 0 {
				apply(all)
			}
			scopes.Watch(ctx, rev, apply, func(err error) { log.Warn("fleet configuration watch", "err", err) })
		}()
	}
	if f.coordinate {
		coord.Activate()
	}
	// The fleet view records the merged run of each fleet-wide driver session, and shows
	// the same history as the node.
	srv, err := api.New(api.Options{Instance: coord.Fleet(), Coordinator: coord, Logger: log, Version: toolVersion(), Mounted: true,
		History: hooks.source, HistoryName: hooks.name, OnSessionEnd: hooks.onSessionEnd("fleet"),
		UI: web.Handler(web.Options{Title: "ndbench fleet", Version: toolVersion(), Fleet: true,
			Instances: []web.Instance{{ID: "fleet", Name: "fleet", BaseURL: api.FleetPrefix}}})})
	if err != nil {
		return nil, err
	}
	log.Info("fleet view ready", "discovery", disc.String(), "self", self.ID, "view", api.FleetPrefix+"/")
	view := &fleetView{srv: srv, disc: disc, coord: coord}
	// The first request to the fleet view makes this node the control point; each waits
	// until the coordinator has seen the fleet once, so a command finds its members.
	h := srv.Handler()
	view.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := coord.Ready(r.Context()); err != nil {
			return
		}
		h.ServeHTTP(w, r)
	})
	return view, nil
}

// fleetView is the fleet's API server, the handler that reaches it, and the discovery.
type fleetView struct {
	srv     *api.Server
	handler http.Handler
	disc    discovery.Discoverer
	coord   *cluster.Coordinator
}

// peerFlags say how a coordinator calls its fleet's nodes: serve's, and those of scenario
// run and autotune, whose process is the fleet's control point; one definition, so each
// can reach a fleet served over TLS, with client certificates, alike.
type peerFlags struct {
	ca       string
	cert     string
	key      string
	insecure bool
}

// bind defines the flags; who is the coordinator in the help ("a coordinating node"),
// certDefault what --peer-cert defaults to, after a "; ".
func (f *peerFlags) bind(fl *pflag.FlagSet, who, certDefault string) {
	fl.StringVar(&f.ca, "peer-ca", "", "call the fleet's nodes over https, trusting the CA certificates (PEM) of this file; a node's certificate must name its node id (see docs/security.md)")
	fl.StringVar(&f.cert, "peer-cert", "", "the certificate (PEM) "+who+" presents to the fleet's nodes (mutual TLS: nodes with --tls-client-ca)"+certDefault+"; re-read when it changes")
	fl.StringVar(&f.key, "peer-key", "", "the private key (PEM) of --peer-cert")
	fl.BoolVar(&f.insecure, "insecure-peers", false, "allow plain http to fleet nodes off loopback (the token crosses the network in clear text): only on a network you trust")
}

// given reports whether any of the flags is set.
func (f *peerFlags) given() bool { return f.ca != "" || f.cert != "" || f.key != "" || f.insecure }

// tlsConfig is how a coordinator calls its nodes: over https when it has a CA for them
// (--peer-ca) or serves TLS itself (certs, its --tls-cert: its fleet does too; the
// system's CAs then), presenting --peer-cert (else certs) to a node that asks; nil (plain
// http) otherwise. A --peer-cert pair is returned to be watched.
func (f *peerFlags) tlsConfig(certs *api.CertFiles) (*tls.Config, *api.CertFiles, error) {
	var own *api.CertFiles
	if f.cert != "" || f.key != "" {
		var err error
		if own, err = api.LoadCertFiles(f.cert, f.key); err != nil {
			return nil, nil, fmt.Errorf("--peer-cert and --peer-key: %w", err)
		}
		if f.ca == "" && certs == nil {
			return nil, nil, errors.New("--peer-cert is presented over https to the fleet's nodes: give --peer-ca (the CA their certificates chain to) with it")
		}
		certs = own
	}
	if f.ca == "" && certs == nil {
		return nil, own, nil
	}
	if f.insecure {
		return nil, nil, errors.New("--insecure-peers allows plain http among peers, --peer-ca and --tls-cert make them https: give one or the other")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pool, err := api.LoadCAFile(f.ca)
		if err != nil {
			return nil, nil, fmt.Errorf("--peer-ca: %w", err)
		}
		cfg.RootCAs = pool
	}
	if certs != nil {
		cfg.GetClientCertificate = certs.GetClientCertificate
	}
	return cfg, own, nil
}

// insecurePeersWarning is logged whenever --insecure-peers is given.
const insecurePeersWarning = "INSECURE: --insecure-peers: fleet nodes off loopback are called over plain http, so the fleet's token and every command cross the network in clear text, " +
	"and nothing proves which node answers; use it only on a network you trust, else serve every node with --tls-cert and give --peer-ca"

// Close stops the fleet view's server and releases the discovery: an etcd registration
// is revoked (bounded by the dial timeout) rather than left to expire with its lease.
func (v *fleetView) Close() {
	v.srv.Close()
	if c, ok := v.disc.(io.Closer); ok {
		_ = c.Close()
	}
}
