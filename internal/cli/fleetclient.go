package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/cluster"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
)

// fleetClientFlags make a command (scenario run, autotune) run on a fleet of `ndbench
// serve` nodes with this process as the control point: an in-process coordinator over
// the nodes, which drives them as one node.
type fleetClientFlags struct {
	peers        []string
	discovery    string
	dnsServer    string
	token        string
	maxSkew      time.Duration
	redistribute bool
	peer         peerFlags
	prefix       string
	etcdAccess   etcdAccessFlags
}

func (f *fleetClientFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.peers, "peers", nil, "run on a fleet: the ndbench serve nodes' API addresses (host:port, comma-separated); this process is the control point")
	fl.StringVar(&f.discovery, "discovery", "", "run on a fleet found by discovery: static:host:port,..., dns:NAME[:PORT], etcd:ENDPOINTS, file:clusters.json")
	fl.StringVar(&f.dnsServer, "dns-server", "", "DNS discovery: ask this server (host:port) instead of the system resolver")
	fl.StringVar(&f.token, "token", "", "the fleet's shared token, with --peers or --discovery (default $NDBENCH_TOKEN)")
	fl.DurationVar(&f.maxSkew, "max-skew", 100*time.Millisecond, "with a fleet: refuse to start when a node's clock is further off than this")
	fl.BoolVar(&f.redistribute, "redistribute", false, "with a fleet: give a lost node's share of the rates and load shapes to the other nodes")
	f.peer.bind(fl, "this process", "")
	bindDiscoveryPrefix(fl, &f.prefix)
	f.etcdAccess.bind(fl, "--discovery etcd:")
}

// enabled reports whether the command runs on a fleet.
func (f *fleetClientFlags) enabled() bool { return len(f.peers) > 0 || f.discovery != "" }

// clientFleet is a fleet driven from this process.
type clientFleet struct {
	*cluster.Fleet
	coord  *cluster.Coordinator
	cancel context.CancelFunc
	disc   discovery.Discoverer
}

// Close shuts the driver down on every node (which also ends the run and its lease),
// stops the coordinator and releases the discovery (an etcd client).
func (c *clientFleet) Close() {
	_ = c.Shutdown()
	c.cancel()
	closeDiscovery(c.disc)
}

// closeDiscovery releases what a discoverer holds (etcd's client and connections).
func closeDiscovery(d discovery.Discoverer) {
	if c, ok := d.(io.Closer); ok {
		_ = c.Close()
	}
}

// open finds the nodes and gives them snap's configuration at the fleet scope (rates are
// fleet totals, divided among the nodes by weight); the run sequence connects the driver
// on each (node.Run.Connect).
// Secret values are not sent: the nodes take them from their own configuration.
func (f *fleetClientFlags) open(ctx context.Context, snap *config.Snapshot, env []string, stderr io.Writer, log *slog.Logger) (*clientFleet, error) {
	spec := f.discovery
	if len(f.peers) > 0 {
		if spec != "" {
			return nil, usageError{errors.New("--peers and --discovery: give one of them")}
		}
		spec = "static:" + strings.Join(f.peers, ",")
	}
	etcdAccess, etcdCerts, err := f.etcdAccess.access(env, strings.HasPrefix(spec, "etcd:"), "--discovery etcd:ENDPOINTS")
	if err != nil {
		return nil, usageError{err}
	}
	token := f.token
	if token == "" {
		token = envValue(env, "NDBENCH_TOKEN")
	}
	if token == "" {
		return nil, usageError{errors.New("--peers and --discovery need the fleet's token (--token or NDBENCH_TOKEN): nodes accept control only from authenticated peers")}
	}
	if err := api.CheckToken(token); err != nil {
		return nil, usageError{fmt.Errorf("--token or NDBENCH_TOKEN: %w", err)}
	}
	peerTLS, peerCerts, err := f.peer.tlsConfig(nil)
	if err != nil {
		return nil, usageError{err}
	}
	opts := discoveryOptions(f.prefix, etcdAccess)
	opts.DNSServer = f.dnsServer
	disc, err := discovery.Parse(spec, opts)
	if err != nil {
		return nil, usageError{err}
	}
	if f.peer.insecure {
		log.Warn(insecurePeersWarning)
	}
	host, _ := os.Hostname()
	self := discovery.Member{ID: fmt.Sprintf("cli-%s-%d", host, os.Getpid())}
	// The command line is trusted, so this coordinator lets everything through its own
	// gate; each node still applies its --allow to what it is sent.
	coord, err := cluster.New(cluster.Options{Self: self, Discovery: disc, Token: token, Version: toolVersion(),
		Config: snap, Allow: config.AllowAll(), Logger: log, MaxSkew: f.maxSkew, Redistribute: f.redistribute, TLS: peerTLS, InsecurePeers: f.peer.insecure})
	if err != nil {
		closeDiscovery(disc)
		return nil, usageError{err}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	go coord.Run(runCtx)
	// Client certificates renewed during a long run (autotune --hold) are picked up.
	for _, c := range []*api.CertFiles{etcdCerts, peerCerts} {
		if c != nil {
			go c.Watch(runCtx, 0, log)
		}
	}
	cf := &clientFleet{Fleet: coord.Fleet(), coord: coord, cancel: cancel, disc: disc}
	fail := func(err error) (*clientFleet, error) {
		cancel()
		closeDiscovery(disc)
		return nil, err
	}
	rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
	defer rcancel()
	if err := coord.Ready(rctx); err != nil {
		return fail(fmt.Errorf("fleet %s: no answer from discovery and the nodes: %w", disc, err))
	}
	var alive []string
	var down []string
	for _, m := range coord.Members() {
		if m.Health == cluster.Alive {
			alive = append(alive, m.ID)
		} else {
			down = append(down, fmt.Sprintf("%s (%s: %s)", m.ID, m.Health, m.LastError))
		}
	}
	if len(alive) == 0 {
		return fail(fmt.Errorf("fleet %s: no node answered: %s", disc, strings.Join(down, "; ")))
	}
	if len(down) > 0 {
		fmt.Fprintf(stderr, "note: fleet nodes not answering, left out: %s\n", strings.Join(down, "; "))
	}
	var skipped []string
	values := map[string]string{}
	for _, e := range snap.Entries {
		switch {
		case e.Source == "default" || e.Key == "driver.name":
		case e.Secret:
			skipped = append(skipped, e.Key)
		default:
			values[e.Key] = e.Value
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(stderr, "note: secret values are not sent to the fleet's nodes; they use their own: %s\n", strings.Join(skipped, ", "))
	}
	if len(values) > 0 {
		if _, err := coord.SetConfig(ctx, cluster.Scope{Kind: cluster.ScopeFleet}, values); err != nil {
			return fail(fmt.Errorf("configure the fleet: %w", err))
		}
	}
	fmt.Fprintf(stderr, "fleet: %d node(s) (%s), this process is the control point\n", len(alive), strings.Join(alive, ", "))
	return cf, nil
}
