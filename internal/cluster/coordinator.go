package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
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
}

// ScopeStore is where a fleet's configuration is kept besides the coordinator's memory.
type ScopeStore interface {
	// Save writes values at scope (as Scope.String gives it).
	Save(ctx context.Context, scope string, values map[string]string) error
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

// Health is what the coordinator knows of a node's liveness.
type Health string

// Node health states.
const (
	Joining Health = "joining" // discovered, not yet answered
	Alive   Health = "alive"
	Suspect Health = "suspect" // beats unanswered for SuspectAfter
	Lost    Health = "lost"    // beats unanswered for LostAfter
	Left    Health = "left"    // no longer discovered
)

// offsetSamples is how many beats' clock samples are kept; the one with the shortest round
// trip gives the offset (its error is at most half that round trip).
const offsetSamples = 8

type clockSample struct{ offset, rtt time.Duration }

// member is a node as the coordinator tracks it (under Coordinator.mu).
type member struct {
	discovery.Member // ID is set once; the other fields change under Coordinator.mu
	// conn reaches the node's API; replaced (not mutated) when its address changes, so a
	// call in flight keeps the client it started with.
	conn     atomic.Pointer[peer]
	health   Health
	since    time.Time // of the health state
	lastOK   time.Time
	lastErr  string
	beat     BeatResponse
	samples  []clockSample
	offset   time.Duration
	rtt      time.Duration
	inRun    bool              // shares the run's load
	applied  map[string]string // the values last patched onto it
	assigned map[string]float64
	shaped   map[string]float64 // per class: the share of the fleet's shape it was sent
	figures  nodeFigures
	next     uint64 // the next interval sequence number to ask for
	polling  bool
	expected bool // the merge expects its intervals (from its first poll after it became alive)
}

// client returns the node's API client; safe without Coordinator.mu.
func (m *member) client() *peer { return m.conn.Load() }

func (m *member) split() splitMember {
	return splitMember{id: m.ID, labels: m.Labels, weight: m.Weight}
}

// clockKnown says the node's offset rests on enough samples to schedule a start by.
func (m *member) clockKnown() bool { return len(m.samples) >= 2 }

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
	// shapes are the fleet's load shapes by op class (fleet totals) and the common
	// instant they applied at, re-split when the nodes sharing the load change.
	shapes map[string]fleetShape

	stats *fleetStats

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
		fleet: config.NewStore(opts.Config), activated: make(chan struct{}), activateWait: make(chan struct{})}
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
	refresh := time.NewTicker(c.opts.Refresh)
	defer refresh.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	c.beatAll(ctx)
	close(c.activateWait)
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			c.refresh(ctx)
		case <-beat.C:
			c.beatAll(ctx)
		case now := <-poll.C:
			c.stats.poll(ctx, now)
		}
	}
}

// refresh asks discovery for the members: new ones join, vanished ones leave.
func (c *Coordinator) refresh(ctx context.Context) {
	ms, err := c.opts.Discovery.Members(ctx)
	if err != nil {
		c.log.Warn("fleet discovery failed; keeping the members known", "discovery", c.opts.Discovery.String(), "err", err)
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, d := range ms {
		seen[d.ID] = true
		m, ok := c.members[d.ID]
		if !ok {
			m = &member{health: Joining, since: now}
			c.members[d.ID] = m
			c.log.Info("fleet member discovered", "node", d.ID, "addr", d.Addr)
		}
		if m.client() == nil || m.Addr != d.Addr {
			p := c.newPeer(d)
			if p.refused != nil {
				c.log.Warn("fleet member refused", "node", d.ID, "err", p.refused)
			}
			m.conn.Store(p)
		}
		if !ok {
			m.Member = d
		} else {
			// Field by field: the ID is read without the lock, and never changes.
			m.Addr, m.Labels, m.Weight, m.Cluster = d.Addr, d.Labels, d.Weight, d.Cluster
		}
		if m.health == Left {
			m.health, m.since = Joining, now
		}
	}
	for id, m := range c.members {
		if !seen[id] && m.health != Left {
			c.log.Info("fleet member left discovery", "node", id)
			c.setHealth(m, Left, now)
		}
	}
}

// setHealth changes m's state; called with c.mu held.
func (c *Coordinator) setHealth(m *member, h Health, now time.Time) {
	if m.health == h {
		return
	}
	prev := m.health
	m.health, m.since = h, now
	switch h {
	case Lost, Left:
		c.stats.forget(m.ID, now)
		m.expected = false
		if m.inRun && c.opts.Redistribute {
			m.inRun = false
			c.gen++
			c.log.Warn("fleet member lost: its share goes to the others", "node", m.ID, "was", prev)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
				defer cancel()
				if err := c.reapply(ctx); err != nil {
					c.log.Warn("re-split after a lost node failed", "err", err)
				}
				if err := c.reshape(ctx); err != nil {
					c.log.Warn("load shapes not re-split after a lost node", "err", err)
				}
			}()
		}
	}
	if h == Lost || h == Suspect {
		c.log.Warn("fleet member "+string(h), "node", m.ID, "last answer", m.lastOK.Format(time.RFC3339Nano), "err", m.lastErr)
	}
}

// beatAll sends one beat to every member not gone, in parallel, and updates their health.
func (c *Coordinator) beatAll(ctx context.Context) {
	c.mu.Lock()
	type job struct {
		m   *member
		req BeatRequest
	}
	var jobs []job
	for _, m := range c.members {
		if m.health == Left {
			continue
		}
		req := BeatRequest{Coordinator: c.opts.Self.ID}
		if m.inRun && c.run != "" {
			req.Run, req.LeaseMs = c.run, c.opts.Lease.Milliseconds()
		}
		jobs = append(jobs, job{m, req})
	}
	c.mu.Unlock()
	c.each(len(jobs), func(i int) {
		j := jobs[i]
		bctx, cancel := context.WithTimeout(ctx, max(c.opts.BeatEvery, time.Second))
		defer cancel()
		j.req.Sent = time.Now()
		var resp BeatResponse
		err := j.m.client().call(bctx, http.MethodPost, "/api/v1/cluster/beat", j.req, &resp)
		t3 := time.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		m := j.m
		if err != nil {
			m.lastErr = err.Error()
			since := t3.Sub(m.lastOK)
			if m.lastOK.IsZero() {
				since = t3.Sub(m.since)
			}
			switch {
			case since >= c.opts.LostAfter && m.health != Joining:
				c.setHealth(m, Lost, t3)
			case since >= c.opts.SuspectAfter && m.health == Alive:
				c.setHealth(m, Suspect, t3)
			}
			return
		}
		prev := m.beat
		// A new boot id under the same node id is a new process: what the old one was
		// told (its share, shapes, driver, run) died with it, and its interval sequence
		// starts over.
		restarted := prev.Boot != "" && resp.Boot != prev.Boot
		m.lastOK, m.lastErr, m.beat = t3, "", resp
		if restarted {
			c.log.Warn("fleet member restarted: it gets its whole assignment again", "node", m.ID)
			m.applied, m.shaped = nil, nil
			m.next, m.polling = 0, false
		}
		// NTP: offset = ((t1 − t0) + (t2 − t3)) / 2, round trip = (t3 − t0) − (t2 − t1).
		s := clockSample{
			offset: (resp.Received.Sub(j.req.Sent) + resp.Sent.Sub(t3)) / 2,
			rtt:    t3.Sub(j.req.Sent) - resp.Sent.Sub(resp.Received),
		}
		m.samples = append(m.samples, s)
		if len(m.samples) > offsetSamples {
			m.samples = m.samples[1:]
		}
		best := m.samples[0]
		for _, x := range m.samples[1:] {
			if x.rtt < best.rtt {
				best = x
			}
		}
		m.offset, m.rtt = best.offset, best.rtt
		back := m.health != Alive
		if back {
			c.log.Info("fleet member alive", "node", m.ID, "was", m.health, "offset", m.offset, "rtt", m.rtt)
			c.setHealth(m, Alive, t3)
		}
		// A node that joins while the fleet runs load (a scale-up, a lost node that came
		// back) takes its share: the others' rates go down first, then it starts. A node
		// that restarted gets everything it was told again, run or not: it came back
		// with its own defaults.
		if (back && c.run != "" && c.started != nil) || restarted {
			var resume []string
			known := prev.Boot != ""
			if known {
				// It had answered before: it resumes the classes it last ran (those a
				// StopNode stopped stay stopped); a newcomer runs the fleet's.
				resume = []string{}
				for cls, on := range prev.Running {
					if on {
						resume = append(resume, cls)
					}
				}
				slices.Sort(resume)
			}
			go c.join(context.Background(), m.ID, resume, known)
		}
	})
}

// each runs f(0..n-1) with at most Options.Parallel at a time and waits for all.
func (c *Coordinator) each(n int, f func(i int)) {
	sem := make(chan struct{}, c.opts.Parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// NodeError is one node's failure in a fleet command.
type NodeError struct {
	Node string `json:"node"`
	Err  error  `json:"-"`
}

func (e NodeError) Error() string { return e.Node + ": " + e.Err.Error() }

// FleetError collects the nodes a fleet command failed on; the others carried it out.
type FleetError struct {
	Op    string
	Nodes []NodeError
}

func (e *FleetError) Error() string {
	parts := make([]string, len(e.Nodes))
	for i, n := range e.Nodes {
		parts[i] = n.Error()
	}
	return fmt.Sprintf("%s failed on %d node(s): %s", e.Op, len(e.Nodes), strings.Join(parts, "; "))
}

// Unwrap gives the nodes' errors, so errors.Is/As see through.
func (e *FleetError) Unwrap() []error {
	out := make([]error, len(e.Nodes))
	for i, n := range e.Nodes {
		out[i] = n.Err
	}
	return out
}

// ErrNoMembers is returned by a fleet command when no node is alive.
var ErrNoMembers = errors.New("no fleet member is alive")

// alive returns the members that answer, sorted by id; called with c.mu held.
func (c *Coordinator) alive() []*member {
	var out []*member
	for _, m := range c.members {
		if m.health == Alive {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ref is this coordinator's current run, as the nodes' admission check sees it; called
// with c.mu held.
func (c *Coordinator) ref() runRef { return runRef{c.opts.Self.ID, c.run} }

// heldElsewhere refuses a command to ms when another coordinator's run holds any of them,
// as their last beats tell; called with c.mu held. Each node checks it again on the call
// itself; this check spares the free nodes a command that could not apply on all.
func (c *Coordinator) heldElsewhere(ms []*member) error {
	var held []string
	for _, m := range ms {
		if b := m.beat; b.Run != "" && b.Coordinator != "" && b.Coordinator != c.opts.Self.ID {
			held = append(held, fmt.Sprintf("%s: run %q of coordinator %q", m.ID, b.Run, b.Coordinator))
		}
	}
	if held == nil {
		return nil
	}
	return fmt.Errorf("%w; nothing was changed on any node: %s", ErrClaimed, strings.Join(held, "; "))
}

// fanOut calls f on each member in parallel and gathers the failures.
func (c *Coordinator) fanOut(op string, ms []*member, f func(m *member) error) error {
	if len(ms) == 0 {
		return ErrNoMembers
	}
	errs := make([]error, len(ms))
	c.each(len(ms), func(i int) { errs[i] = f(ms[i]) })
	var fe FleetError
	for i, err := range errs {
		if err != nil {
			fe.Nodes = append(fe.Nodes, NodeError{Node: ms[i].ID, Err: err})
		}
	}
	if fe.Nodes != nil {
		fe.Op = op
		return &fe
	}
	return nil
}

// InitDriver initializes the driver on every live node with the same options (over each
// node's configured ones).
func (c *Coordinator) InitDriver(ctx context.Context, name string, opts map[string]string) error {
	c.mu.Lock()
	ms, as := c.alive(), c.ref()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	err := c.fanOut("driver init", ms, func(m *member) error {
		return m.client().command(ctx, as, http.MethodPost, "/api/v1/driver/init", map[string]any{"driver": name, "options": opts}, nil)
	})
	c.mu.Lock()
	c.driver, c.drvOpts = name, maps.Clone(opts)
	c.mu.Unlock()
	defer c.beatAll(ctx) // the answer's status is the nodes' new one
	if err != nil {
		return err
	}
	return c.reapply(ctx)
}

// Shutdown closes the driver on every live node.
func (c *Coordinator) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	ms := c.alive()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	c.driver, c.drvOpts = "", nil
	c.mu.Unlock()
	_ = c.release(ctx)
	c.mu.Lock()
	as := c.ref()
	c.mu.Unlock()
	defer c.beatAll(ctx)
	return c.fanOut("driver shutdown", ms, func(m *member) error {
		return m.client().command(ctx, as, http.MethodPost, "/api/v1/driver/shutdown", nil, nil)
	})
}

// SetConfig validates values at scope and then applies them to every node concerned: the
// fleet's rates are divided among the nodes of the run (or all live nodes). Nothing
// applies if the values are invalid for any node; a node that refuses is named.
func (c *Coordinator) SetConfig(ctx context.Context, scope Scope, values map[string]string) (*config.Snapshot, error) {
	vals, err := canonical(values)
	if err != nil {
		return nil, driver.FieldErrors{err.(*driver.FieldError)}
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	c.mu.Lock()
	next := maps.Clone(c.scopes)
	c.mu.Unlock()
	cur := maps.Clone(next[scope])
	if cur == nil {
		cur = map[string]string{}
	}
	maps.Copy(cur, vals)
	next[scope] = cur
	return c.setScopes(ctx, next, func(ctx context.Context) error {
		if c.opts.ScopeStore == nil {
			return nil
		}
		return c.opts.ScopeStore.Save(ctx, scope.String(), vals)
	})
}

// ReplaceScopes makes the fleet's configuration exactly all (scope as ParseScope reads
// it, to values), as read back from where it is stored, validated and applied like
// SetConfig. A value removed from all is no longer set by the fleet; nodes keep the value
// they were last given until another replaces it.
func (c *Coordinator) ReplaceScopes(ctx context.Context, all map[string]map[string]string) error {
	next := scopes{}
	for name, values := range all {
		sc, err := ParseScope(name)
		if err != nil {
			return err
		}
		vals, err := canonical(values)
		if err != nil {
			return driver.FieldErrors{err.(*driver.FieldError)}
		}
		next[sc] = vals
	}
	c.cfgMu.Lock()
	defer c.cfgMu.Unlock()
	_, err := c.setScopes(ctx, next, nil)
	return err
}

// setScopes validates next for every node, then persists it (save, when not nil), then
// makes it the fleet's configuration and tells the nodes: an invalid or unsaved change
// applies nowhere. Called with cfgMu held; the node calls are made without c.mu.
func (c *Coordinator) setScopes(ctx context.Context, next scopes, save func(context.Context) error) (*config.Snapshot, error) {
	fleetVals := next[Scope{Kind: ScopeFleet}]
	if fleetVals == nil {
		fleetVals = map[string]string{}
	}
	if err := c.fleet.Check(config.LayerFleet, fleetVals); err != nil {
		return nil, err
	}
	// What the split needs of each node is copied under the lock: discovery may change a
	// node's labels and weight meanwhile.
	c.mu.Lock()
	ms, share := c.sharing()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	live := make([]splitMember, len(ms))
	for i, m := range ms {
		live[i] = m.split()
	}
	c.mu.Unlock()
	for _, m := range live {
		eff, err := next.effective(m, share)
		if err != nil {
			return nil, driver.FieldErrors{err.(*driver.FieldError)}
		}
		if err := c.fleet.Check(config.LayerFleet, eff); err != nil {
			return nil, fmt.Errorf("node %s: %w", m.id, err)
		}
	}
	if save != nil {
		if err := save(ctx); err != nil {
			return nil, err
		}
	}
	snap, err := c.fleet.Update(config.LayerFleet, fleetVals)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.scopes = next
	c.gen++
	c.mu.Unlock()
	return snap, c.reapply(ctx)
}

// Scopes returns the fleet's configuration values by scope.
func (c *Coordinator) Scopes() map[string]map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[string]string, len(c.scopes))
	for s, v := range c.scopes {
		red := make(map[string]string, len(v))
		for k, x := range v {
			red[k] = config.Redact(k, x)
		}
		out[s.String()] = red
	}
	return out
}

// FleetConfig is the fleet-scope view of the configuration (rates as fleet totals).
func (c *Coordinator) FleetConfig() *config.Snapshot { return c.fleet.Current() }

// sharing returns the live members and, of them, those that share the load (the run's, or
// every live one when no run is going); called with c.mu held.
func (c *Coordinator) sharing() (live []*member, share []splitMember) {
	live = c.alive()
	for _, m := range live {
		if c.run == "" || m.inRun {
			share = append(share, m.split())
		}
	}
	// Under Redistribute=false a lost node keeps its share: the others do not take it.
	if c.run != "" && !c.opts.Redistribute {
		for _, m := range c.members {
			if m.inRun && m.health != Alive {
				share = append(share, m.split())
			}
		}
	}
	return live, share
}

// reapply patches every live node whose effective values changed since it was last told.
func (c *Coordinator) reapply(ctx context.Context) error {
	c.mu.Lock()
	ms, share := c.sharing()
	as := c.ref()
	type job struct {
		m    *member
		eff  map[string]string
		diff map[string]string
	}
	var jobs []job
	var errs []NodeError
	for _, m := range ms {
		eff, err := c.scopes.effective(m.split(), share)
		if err != nil {
			errs = append(errs, NodeError{m.ID, err})
			continue
		}
		diff := map[string]string{}
		for k, v := range eff {
			if m.applied[k] != v {
				diff[k] = v
			}
		}
		m.assigned = assignedRates(eff, c.fleet.Current())
		if len(diff) > 0 {
			jobs = append(jobs, job{m, eff, diff})
		}
	}
	c.mu.Unlock()
	var mu sync.Mutex
	c.each(len(jobs), func(i int) {
		j := jobs[i]
		err := j.m.client().command(ctx, as, http.MethodPatch, "/api/v1/config", map[string]any{"values": j.diff}, nil)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, NodeError{j.m.ID, err})
			return
		}
		c.mu.Lock()
		j.m.applied = j.eff
		c.mu.Unlock()
	})
	if errs != nil {
		return &FleetError{Op: "config change", Nodes: errs}
	}
	return nil
}

// assignedRates is a node's rate per op class from its effective values over the fleet's
// configuration.
func assignedRates(eff map[string]string, base *config.Snapshot) map[string]float64 {
	out := map[string]float64{}
	for _, cs := range base.Config.Workload.Classes() {
		out[cs.Name] = cs.Rate
		if v, ok := eff[config.ClassOption(cs.Name, "rate")]; ok {
			var r float64
			if _, err := fmt.Sscan(v, &r); err == nil {
				out[cs.Name] = r
			}
		}
	}
	return out
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts op classes on every live node at one common instant: offsets measured,
// skew checked, the fleet's rates divided among them. It fails without starting anything
// when a node's clock is unknown or too far off.
func (c *Coordinator) Start(ctx context.Context, classes ...string) (time.Time, error) {
	// A fleet just formed may have one clock sample per node: take the missing ones now
	// rather than refuse the start.
	for range offsetSamples {
		c.mu.Lock()
		unknown := false
		for _, m := range c.alive() {
			unknown = unknown || !m.clockKnown()
		}
		c.mu.Unlock()
		if !unknown {
			break
		}
		c.beatAll(ctx)
	}
	c.mu.Lock()
	ms := c.alive()
	if len(ms) == 0 {
		c.mu.Unlock()
		return time.Time{}, ErrNoMembers
	}
	var bad []string
	slowest := time.Duration(0)
	for _, m := range ms {
		switch {
		case !m.clockKnown():
			bad = append(bad, m.ID+": clock offset not measured yet (wait for two beats)")
		case m.offset > c.opts.MaxSkew || m.offset < -c.opts.MaxSkew:
			bad = append(bad, fmt.Sprintf("%s: clock %v off (max skew %v)", m.ID, m.offset.Round(time.Microsecond), c.opts.MaxSkew))
		}
		slowest = max(slowest, m.rtt)
	}
	if bad != nil {
		c.mu.Unlock()
		return time.Time{}, fmt.Errorf("%w: %s", ErrStartRefused, strings.Join(bad, "; "))
	}
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return time.Time{}, err
	}
	if c.run == "" {
		c.run = newRunID()
		for _, m := range c.members {
			m.inRun = false
		}
	}
	for _, m := range ms {
		m.inRun = true
	}
	run := c.run
	c.gen++
	c.mu.Unlock()
	// The run's shares first, so every node starts at its own rate.
	if err := c.reapply(ctx); err != nil {
		return time.Time{}, err
	}
	at := time.Now().Add(max(c.opts.StartDelay, 4*slowest))
	c.mu.Lock()
	c.startAt, c.started = at, append([]string{}, classes...)
	// Beats move the offsets under the lock while the start fans out without it
	// (TestStartDuringBeats).
	offsets := make(map[*member]time.Duration, len(ms))
	for _, m := range ms {
		offsets[m] = m.offset
	}
	c.mu.Unlock()
	defer c.beatAll(ctx)
	err := c.fanOut("start", ms, func(m *member) error {
		req := StartRequest{Coordinator: c.opts.Self.ID, Run: run, At: at.Add(offsets[m]), Ops: classes, LeaseMs: c.opts.Lease.Milliseconds()}
		return m.client().call(ctx, http.MethodPost, "/api/v1/cluster/start", req, nil)
	})
	return at, err
}

// Stop stops op classes on every live node; when no node runs load or backfill any
// more, the run ends and the nodes keep no lease.
func (c *Coordinator) Stop(ctx context.Context, classes ...string) error {
	c.mu.Lock()
	ms, as := c.alive(), c.ref()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	defer c.beatAll(ctx)
	err := c.fanOut("stop", ms, func(m *member) error {
		return m.client().command(ctx, as, http.MethodPost, "/api/v1/load/stop", map[string]any{"ops": classes}, nil)
	})
	if len(classes) == 0 {
		if rerr := c.release(ctx); err == nil {
			err = rerr
		}
	}
	return err
}

// release ends the run on every node still in it.
func (c *Coordinator) release(ctx context.Context) error {
	c.mu.Lock()
	run := c.run
	var ms []*member
	for _, m := range c.alive() {
		if m.inRun {
			ms = append(ms, m)
		}
	}
	for _, m := range c.members {
		m.inRun = false
	}
	c.run, c.started = "", nil
	c.mu.Unlock()
	if run == "" || len(ms) == 0 {
		return nil
	}
	return c.fanOut("release", ms, func(m *member) error {
		return m.client().call(ctx, http.MethodPost, "/api/v1/cluster/release", ReleaseRequest{Coordinator: c.opts.Self.ID, Run: run}, nil)
	})
}

// BackfillOptions are a fleet backfill's settings; zero values keep each node's.
type BackfillOptions struct {
	Workers int     `json:"workers,omitempty"`
	Rate    float64 `json:"rate,omitempty"` // the fleet's total, divided like the load's
	Verify  bool    `json:"verify,omitempty"`
}

// Backfill splits the keyspace into disjoint ranges, one per live node by weight, and
// starts each node's backfill over its range. The nodes hold the run's lease meanwhile.
func (c *Coordinator) Backfill(ctx context.Context, opts BackfillOptions) error {
	c.mu.Lock()
	ms := c.alive()
	if len(ms) == 0 {
		c.mu.Unlock()
		return ErrNoMembers
	}
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	split := make([]splitMember, len(ms))
	for i, m := range ms {
		split[i] = m.split()
	}
	numKeys := c.fleet.Current().Config.Workload.NumKeys
	ranges := keyRanges(numKeys, split)
	if c.run == "" {
		c.run = newRunID()
	}
	for _, m := range ms {
		m.inRun = true
	}
	run := c.run
	total := 0.0
	for _, s := range split {
		total += s.w()
	}
	c.mu.Unlock()
	defer c.beatAll(ctx)
	return c.fanOut("backfill", ms, func(m *member) error {
		i := slices.Index(ms, m)
		req := map[string]any{"workers": opts.Workers, "verify": opts.Verify, "keyStart": ranges[i].Start, "keyEnd": ranges[i].End}
		if opts.Rate > 0 {
			req["rate"] = opts.Rate * split[i].w() / total
		}
		// Take the lease first: the backfill is the run's load.
		beat := BeatRequest{Coordinator: c.opts.Self.ID, Run: run, LeaseMs: c.opts.Lease.Milliseconds(), Sent: time.Now()}
		if err := m.client().call(ctx, http.MethodPost, "/api/v1/cluster/beat", beat, nil); err != nil {
			return err
		}
		return m.client().command(ctx, runRef{c.opts.Self.ID, run}, http.MethodPost, "/api/v1/backfill/start", req, nil)
	})
}

// StopBackfill stops the backfill on every live node.
func (c *Coordinator) StopBackfill(ctx context.Context) error {
	c.mu.Lock()
	ms, as := c.alive(), c.ref()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	defer c.beatAll(ctx)
	return c.fanOut("backfill stop", ms, func(m *member) error {
		return m.client().command(ctx, as, http.MethodPost, "/api/v1/backfill/stop", nil, nil)
	})
}

// ResetStats starts a new cumulative span on every node and in the fleet's statistics.
func (c *Coordinator) ResetStats(ctx context.Context) error {
	c.mu.Lock()
	ms, as := c.alive(), c.ref()
	if err := c.heldElsewhere(ms); err != nil {
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	c.stats.reset()
	return c.fanOut("stats reset", ms, func(m *member) error {
		return m.client().command(ctx, as, http.MethodPost, "/api/v1/stats/reset", nil, nil)
	})
}

// MemberStatus is one node of the fleet as the coordinator sees it.
type MemberStatus struct {
	ID      string            `json:"id"`
	Addr    string            `json:"addr"`
	Labels  map[string]string `json:"labels,omitempty"`
	Weight  float64           `json:"weight"`
	Cluster string            `json:"cluster,omitempty"`
	Version string            `json:"version"`
	Health  Health            `json:"health"`
	Since   time.Time         `json:"since"`
	// LastError is the last failed beat's error while the node is not alive.
	LastError string          `json:"lastError,omitempty"`
	Driver    string          `json:"driver"`
	Running   map[string]bool `json:"running"`
	InRun     bool            `json:"inRun"`
	Orphaned  bool            `json:"orphaned,omitempty"`
	// HeldBy is the coordinator whose run holds the node, when it is not this one: the
	// node refuses this coordinator's commands until that run ends or its lease lapses.
	HeldBy string `json:"heldBy,omitempty"`
	// OffsetMs is the node's clock minus the coordinator's; RTTMs the beat's round trip.
	OffsetMs float64 `json:"offsetMs"`
	RTTMs    float64 `json:"rttMs"`
	// Assigned and Achieved are ops/s per op class: what the node was told and what it
	// did over the last seconds.
	Assigned map[string]float64 `json:"assigned"`
	Achieved map[string]float64 `json:"achieved"`
	// ResponseP99Ms and StartLagP99Ms are per op class over the last seconds; ErrorsPerSec
	// is failures per second, all classes.
	ResponseP99Ms map[string]float64 `json:"responseP99Ms"`
	StartLagP99Ms map[string]float64 `json:"startLagP99Ms"`
	ErrorsPerSec  float64            `json:"errorsPerSec"`
	// Saturated flags a node below 95% of its assigned rate: its numbers are the
	// generator's, not the store's.
	Saturated bool `json:"saturated"`
	// VersionMismatch flags a node running another ndbench version than the coordinator.
	VersionMismatch bool `json:"versionMismatch,omitempty"`
	// FirstOpSkewMs is, per op class, its first operation's start minus the common start
	// instant of the last fleet start, on the coordinator's clock.
	FirstOpSkewMs map[string]float64 `json:"firstOpSkewMs,omitempty"`
}

// Members returns every node known, sorted by id.
func (c *Coordinator) Members() []MemberStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]MemberStatus, 0, len(c.members))
	for _, m := range c.members {
		s := MemberStatus{ID: m.ID, Addr: m.Addr, Labels: m.Labels, Weight: m.split().w(), Cluster: m.Cluster,
			Version: m.beat.Version, Health: m.health, Since: m.since, Driver: m.beat.Driver, Running: m.beat.Running,
			InRun: m.inRun, Orphaned: m.beat.Orphaned, OffsetMs: ms(m.offset), RTTMs: ms(m.rtt), Assigned: m.assigned}
		if m.health != Alive {
			s.LastError = m.lastErr
		}
		if b := m.beat; b.Run != "" && b.Coordinator != c.opts.Self.ID {
			s.HeldBy = b.Coordinator
		}
		s.VersionMismatch = s.Version != "" && s.Version != c.opts.Version
		if m.health == Alive || m.health == Suspect {
			m.figures.fill(&s) // a lost node's last figures would read as current
		}
		if !c.startAt.IsZero() && m.inRun {
			for cls, t := range m.beat.FirstOps {
				if s.FirstOpSkewMs == nil {
					s.FirstOpSkewMs = map[string]float64{}
				}
				s.FirstOpSkewMs[cls] = ms(t.Add(-m.offset).Sub(c.startAt))
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Driver returns the driver the fleet initialized ("" when none).
func (c *Coordinator) Driver() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.driver
}

// RunID returns the current run's id ("" when the fleet runs no load).
func (c *Coordinator) RunID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run
}

// ErrStartRefused is returned when a fleet start cannot be synchronized (a node's clock
// is unknown or too far off); nothing was started.
var ErrStartRefused = errors.New("fleet start refused")

// ErrUnknownNode is returned for a node id the coordinator does not know.
var ErrUnknownNode = errors.New("no such fleet member")

// liveMember returns the member called id if it is alive.
func (c *Coordinator) liveMember(id string) (*member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.members[id]
	if !ok {
		ids := make([]string, 0, len(c.members))
		for k := range c.members {
			ids = append(ids, k)
		}
		slices.Sort(ids)
		return nil, fmt.Errorf("%w %q; members: %s", ErrUnknownNode, id, strings.Join(ids, ", "))
	}
	if m.health != Alive {
		return nil, fmt.Errorf("fleet member %s is %s: %s", id, m.health, m.lastErr)
	}
	return m, nil
}

// StartNode starts op classes on one node, as part of the fleet's run (with its share of
// the fleet's rates and the run's lease), e.g. to bring back a node that was stopped.
func (c *Coordinator) StartNode(ctx context.Context, id string, classes ...string) error {
	m, err := c.liveMember(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if err := c.heldElsewhere([]*member{m}); err != nil {
		c.mu.Unlock()
		return err
	}
	if c.run == "" {
		c.run = newRunID()
	}
	m.inRun = true
	run := c.run
	c.gen++
	c.mu.Unlock()
	if err := c.reapply(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	at := time.Now().Add(4 * m.rtt).Add(m.offset)
	c.mu.Unlock()
	return m.client().call(ctx, http.MethodPost, "/api/v1/cluster/start",
		StartRequest{Coordinator: c.opts.Self.ID, Run: run, At: at, Ops: classes, LeaseMs: c.opts.Lease.Milliseconds()}, nil)
}

// StopNode stops op classes on one node; the node keeps its place in the run (its share is
// not given to the others).
func (c *Coordinator) StopNode(ctx context.Context, id string, classes ...string) error {
	m, err := c.liveMember(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	as := c.ref()
	err = c.heldElsewhere([]*member{m})
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return m.client().command(ctx, as, http.MethodPost, "/api/v1/load/stop", map[string]any{"ops": classes}, nil)
}

// StartedAt is the common start instant of the last fleet start (zero before one).
func (c *Coordinator) StartedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startAt
}

// join brings a node that became alive during a run into it, or that restarted: the
// fleet's driver if it has none, all of its configuration (scopes and its share of the
// rates, re-split over every node of the run), the fleet's load shapes, and, while the
// fleet runs load, a start with the run's lease. resume are the op classes it starts,
// unless known (a newcomer: the fleet's last started ones), else those it ran before it
// went away.
func (c *Coordinator) join(ctx context.Context, id string, resume []string, known bool) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	c.mu.Lock()
	m, ok := c.members[id]
	if !ok || m.health != Alive {
		c.mu.Unlock()
		return
	}
	// What it was told before is sent again in whole: a new process lost it, and a lost
	// node may have been changed meanwhile.
	m.applied, m.shaped = nil, nil
	name, opts, run := c.driver, maps.Clone(c.drvOpts), c.run
	running := c.run != "" && c.started != nil
	classes := resume
	if !known {
		classes = slices.Clone(c.started)
	}
	hasDriver := m.beat.Driver != ""
	if running {
		m.inRun = true
		c.gen++
	}
	c.mu.Unlock()
	c.log.Info("fleet member rejoins", "node", id, "run", run, "classes", classes)
	if name != "" && !hasDriver {
		err := m.client().command(ctx, runRef{c.opts.Self.ID, run}, http.MethodPost, "/api/v1/driver/init", map[string]any{"driver": name, "options": opts}, nil)
		if err != nil {
			c.log.Warn("joining node: driver init failed", "node", id, "err", err)
			return
		}
	}
	if err := c.reapply(ctx); err != nil {
		c.log.Warn("joining node: re-split failed", "node", id, "err", err)
	}
	if err := c.reshape(ctx); err != nil {
		c.log.Warn("joining node: load shapes not re-split", "node", id, "err", err)
	}
	// An empty resume means it ran nothing: a start of no class would start them all.
	if !running || (known && len(resume) == 0) {
		return
	}
	if err := c.StartNode(ctx, id, classes...); err != nil {
		c.log.Warn("joining node: start failed", "node", id, "err", err)
	}
}
