package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/cluster/discovery"
	"github.com/ndbench/ndbench/internal/config"
)

// Options configure a Coordinator. Zero durations take the defaults below.
type Options struct {
	// Self is this node as its peers reach it; its ID names the coordinator.
	Self discovery.Member
	// Discovery lists the fleet's members (this node among them or not).
	Discovery discovery.Discoverer
	// Token authenticates the calls to every node (the fleet's shared token). Required:
	// a node never accepts control from an unauthenticated peer.
	Token string
	// Version is this node's ndbench version; members running another are flagged.
	Version string
	// Config is the configuration the fleet's starts from (this node's): fleet values are
	// validated against it before any node is told.
	Config *config.Snapshot
	// Allow is what the fleet's changes may reach beyond the store (serve --allow). The
	// nodes take the fleet's values as API input (config.OriginAPI) and refuse what their
	// own --allow does not permit, so the coordinator checks the same gate before any node
	// is told: a change one node would refuse applies on none. The zero value allows
	// nothing.
	Allow config.Allow
	// Client makes the calls over plain http (and gives its timeout to the https ones);
	// nil gets one with sane timeouts.
	Client *http.Client
	// TLS, when set, makes every call to a node an https one: RootCAs are the CAs a
	// node's certificate must chain to (nil: the system's), and the certificate must be
	// valid for the node's identity (IdentityName of its id). Its client certificate, if
	// any, is presented to nodes that ask.
	TLS *tls.Config
	// InsecurePeers allows plain http to nodes off loopback; without it such a node is
	// refused (its token would cross the network in clear text).
	InsecurePeers bool
	// Logger gets membership and control events; nil discards them.
	Logger *slog.Logger

	// BeatEvery is the heartbeat period (1 s); Refresh the discovery period (2 s).
	BeatEvery time.Duration
	Refresh   time.Duration
	// SuspectAfter and LostAfter: a node without an answered beat for this long is
	// suspect (3 s), then lost (6 s). A busy node still answers beats: they are served
	// by the HTTP server, not queued behind the load.
	SuspectAfter time.Duration
	LostAfter    time.Duration
	// Lease is how long a node keeps running the fleet's load without a beat (10 s).
	Lease time.Duration
	// MaxSkew refuses a start when a node's clock is further than this from the
	// coordinator's (100 ms): per-second intervals would then be merged across seconds.
	MaxSkew time.Duration
	// StartDelay is how far ahead the common start instant is set (1 s, at least 4 round
	// trips of the slowest node).
	StartDelay time.Duration
	// Redistribute gives a lost node's share of the fleet rate to the others.
	Redistribute bool
	// MergeWait bounds how long a second's merge waits for late nodes (2 s).
	MergeWait time.Duration
	// Parallel bounds concurrent calls to nodes (64).
	Parallel int
	// ScopeStore, when set, keeps the fleet's configuration changes (etcd): a change that
	// cannot be saved applies nowhere.
	ScopeStore ScopeStore
	// Clock gives the instants the fleet schedules by (starts, shapes, warm-ups, beats'
	// timestamps); nil is the real clock. Tests pass a clock.Sim.
	Clock clock.Clock
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.BeatEvery, time.Second)
	def(&o.Refresh, 2*time.Second)
	def(&o.SuspectAfter, 3*time.Second)
	def(&o.LostAfter, 6*time.Second)
	def(&o.Lease, 10*time.Second)
	def(&o.MaxSkew, 100*time.Millisecond)
	def(&o.StartDelay, time.Second)
	def(&o.MergeWait, 2*time.Second)
	if o.Parallel <= 0 {
		o.Parallel = 64
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Coordinator controls a fleet from this node. Its methods are safe for concurrent use.
type Coordinator struct {
	opts Options
	log  *slog.Logger
	tok  atomic.Pointer[string] // the token of calls to nodes: Options.Token, then SetToken's

	mu      sync.Mutex
	members map[string]*member
	scopes  scopes
	fleet   *config.Store // the fleet-scope view of the configuration (rates as totals)
	driver  string        // the driver the fleet initialized ("" when none)
	drvOpts map[string]string
	run     string // the current run's id ("" when the fleet runs no load)
	started []string
	startAt time.Time
	gen     uint64 // split generation: bumped at every re-split
	// insertIDs are the members the new keys were last split among (sorted) and
	// insertBase where that split starts (workload.insertBase; 0: at numKeys).
	insertIDs  []string
	insertBase int64
	// shapes are the fleet's load shapes by op class (fleet totals) and the common
	// instant they applied at, re-split when the nodes sharing the load change.
	shapes map[string]fleetShape

	stats *fleetStats

	beatSem chan struct{} // bounds the beats in flight (Options.Parallel)

	cfgMu   sync.Mutex // serialises configuration changes (SetConfig, ReplaceScopes)
	shapeMu sync.Mutex // serialises shape changes (SetShape, reshape)

	activate     sync.Once
	activated    chan struct{}
	activateWait chan struct{} // closed after the first refresh and beats
}

// New returns a coordinator; Run makes it track its members.
func New(opts Options) (*Coordinator, error) {
	opts.defaults()
	if opts.Discovery == nil {
		return nil, errors.New("cluster: no discovery")
	}
	if opts.Token == "" {
		return nil, errors.New("cluster: a fleet needs a token (--token or NDBENCH_TOKEN): nodes accept control only from an authenticated peer")
	}
	if opts.Self.ID == "" {
		return nil, errors.New("cluster: this node has no id")
	}
	if opts.Config == nil {
		snap, err := config.Build([]config.Layer{config.DefaultsLayer()})
		if err != nil {
			return nil, fmt.Errorf("cluster: default configuration: %w", err)
		}
		opts.Config = snap
	}
	c := &Coordinator{opts: opts, log: opts.Logger, members: map[string]*member{}, scopes: scopes{},
		fleet: config.NewStore(opts.Config), activated: make(chan struct{}), activateWait: make(chan struct{}),
		beatSem: make(chan struct{}, opts.Parallel)}
	c.fleet.SetAllow(opts.Allow)
	c.stats = newFleetStats(c, opts.MergeWait)
	tok := opts.Token
	c.tok.Store(&tok)
	return c, nil
}

// Activate makes the coordinator start tracking its fleet (Run waits for it). Every node
// of a fleet may coordinate, but one that nobody uses as the control point must not beat
// and poll every other node: N coordinators would cost N² calls a second. The fleet view
// activates it on its first request; --coordinate at start.
func (c *Coordinator) Activate() { c.activate.Do(func() { close(c.activated) }) }

// Ready waits until an activated coordinator has asked discovery and beaten every member
// once (or ctx ends), so a command right after activation sees the fleet.
func (c *Coordinator) Ready(ctx context.Context) error {
	c.Activate()
	select {
	case <-c.activateWait:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run tracks the fleet once activated, until ctx ends: discovery, beats, statistics.
func (c *Coordinator) Run(ctx context.Context) {
	select {
	case <-c.activated:
	case <-ctx.Done():
		return
	}
	c.log.Info("fleet coordinator active", "self", c.opts.Self.ID, "discovery", c.opts.Discovery.String())
	c.refresh(ctx)
	beat := time.NewTicker(c.opts.BeatEvery)
	defer beat.Stop()
	c.beatAll(ctx)
	close(c.activateWait)
	// Discovery is asked apart from the beats too: etcd cut off from the coordinator
	// answers nothing, and a lookup waiting on it held every beat until the nodes' leases
	// lapsed and the whole fleet stopped (TestPartitionEtcdCutOff); the fleet must keep
	// running on the members it knows.
	refreshed := make(chan struct{})
	defer func() { <-refreshed }()
	go func() {
		defer close(refreshed)
		refresh := time.NewTicker(c.opts.Refresh)
		defer refresh.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-refresh.C:
				c.refresh(ctx)
			}
		}
	}()
	// The statistics are pulled apart from the beats: a pull waits up to 2 s for a node
	// that does not answer (paused, cut off), and the beats of every other node must not
	// wait behind it, or their leases would lapse and a silent node be found lost late
	// (TestPartitionPausedNodeDoesNotBurst: a paused node was found
	// lost after 11 s instead of 6).
	polled := make(chan struct{})
	defer func() { <-polled }()
	go func() {
		defer close(polled)
		c.pollEvery(ctx, time.Second)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.C:
			c.beats(ctx, false)
		}
	}
}

// pollEvery pulls the nodes' statistics every period of the coordinator's clock until ctx
// ends, then waits for the pulls in flight. The pulls decide when a fleet second is
// emitted, so they are timed on the clock the seconds are judged on: on a simulated clock
// each poll starts within the Advance that reaches its instant (AfterFunc runs there),
// and a test knows every pull due by then has begun. The beats and discovery's refresh
// stay on real time: they judge nothing by their own timing (every judgment reads
// c.now()), and the simulated fleets' tests move their clock on once the beats sent on
// real time have been answered at its reading.
func (c *Coordinator) pollEvery(ctx context.Context, period time.Duration) {
	defer c.stats.pulls.Wait()
	clk := clock.Or(c.opts.Clock)
	var (
		mu      sync.Mutex // held by a poll: the loop ends only once none runs
		stopped bool
		t       clock.Timer
		next    = clk.Now().Add(period)
	)
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		now := clk.Now()
		c.stats.poll(ctx, now)
		// Ticks missed (a poll, or the machine, slower than the period) are dropped, as
		// a time.Ticker drops them; the schedule keeps its phase.
		for !next.After(now) {
			next = next.Add(period)
		}
		// From the clock's reading after the poll: a poll that took a while must not
		// push every later one back by as much.
		t.Reset(clock.Until(clk, next))
	}
	mu.Lock()
	t = clk.AfterFunc(period, tick)
	mu.Unlock()
	<-ctx.Done()
	mu.Lock()
	stopped = true
	t.Stop()
	mu.Unlock()
}
