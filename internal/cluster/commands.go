package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

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

// held returns the live members and this coordinator's run, or the refusal when another
// coordinator's run holds any of them (heldElsewhere).
func (c *Coordinator) held() ([]*member, runRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ms := c.alive()
	return ms, c.ref(), c.heldElsewhere(ms)
}

// send is a fan-out's call of one member: method path with body, on behalf of run as.
func send(ctx context.Context, as runRef, method, path string, body any) func(m *member) error {
	return func(m *member) error { return m.client().command(ctx, as, method, path, body, nil) }
}

// InitDriver initializes the driver on every live node with the same options (over each
// node's configured ones).
func (c *Coordinator) InitDriver(ctx context.Context, name string, opts map[string]string) error {
	// The nodes take the options as API input and refuse what their --allow does not
	// permit: refused here first, a node with a wider --allow does not connect alone.
	// Other errors are left to the nodes, whose configuration may hold what this one's
	// lacks (an address, a required option).
	var na *config.NotAllowedError
	if _, err := c.fleet.PreviewFrom(config.LayerFleet, config.OriginAPI, initValues(name, opts)); errors.As(err, &na) {
		return err
	}
	ms, as, err := c.held()
	if err != nil {
		return err
	}
	err = c.fanOut("driver init", ms, send(ctx, as, http.MethodPost, "/api/v1/driver/init", map[string]any{"driver": name, "options": opts}))
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
	ms, _, err := c.held()
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.driver, c.drvOpts = "", nil
	c.mu.Unlock()
	_ = c.release(ctx)
	c.mu.Lock()
	as := c.ref() // the run is over
	c.mu.Unlock()
	defer c.beatAll(ctx)
	return c.fanOut("driver shutdown", ms, send(ctx, as, http.MethodPost, "/api/v1/driver/shutdown", nil))
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start starts op classes on every live node at one common instant: offsets measured,
// skew checked, the fleet's rates divided among them. It fails without starting anything
// when a node's clock is unknown or too far off. Each node starts as a user's start does:
// from idle, it warms up (workload.warmup).
func (c *Coordinator) Start(ctx context.Context, classes ...string) (time.Time, error) {
	return c.start(ctx, false, classes)
}

// StartStep is Start as a step of a run the caller sequences (a scenario phase, an
// auto-tune step, the run's own warm-up): the nodes start with no warm-up of their own,
// so a node warms up once per run, not again at every start from idle.
func (c *Coordinator) StartStep(ctx context.Context, classes ...string) (time.Time, error) {
	return c.start(ctx, true, classes)
}

func (c *Coordinator) start(ctx context.Context, step bool, classes []string) (time.Time, error) {
	// Checked before anything changes here (a run, a re-split): every node would refuse
	// it. Whether a class exists is left to the nodes, whose group or node scope may add
	// classes the fleet scope lacks.
	if err := opsOnce(classes); err != nil {
		return time.Time{}, err
	}
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
	at := c.now().Add(max(c.opts.StartDelay, 4*slowest))
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
		req := StartRequest{Coordinator: c.opts.Self.ID, Run: run, At: at.Add(offsets[m]), Ops: classes, LeaseMs: c.opts.Lease.Milliseconds(), NoWarmup: step}
		defer c.leased(m)
		return m.client().call(ctx, http.MethodPost, "/api/v1/cluster/start", req, nil)
	})
	return at, err
}

// Stop stops op classes on every live node; when no node runs load or backfill any
// more, the run ends and the nodes keep no lease.
func (c *Coordinator) Stop(ctx context.Context, classes ...string) error {
	ms, as, err := c.held()
	if err != nil {
		return err
	}
	defer c.beatAll(ctx)
	err = c.fanOut("stop", ms, send(ctx, as, http.MethodPost, "/api/v1/load/stop", map[string]any{"ops": classes}))
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
		beat := BeatRequest{Coordinator: c.opts.Self.ID, Run: run, LeaseMs: c.opts.Lease.Milliseconds(), Sent: c.now()}
		err := m.client().call(ctx, http.MethodPost, "/api/v1/cluster/beat", beat, nil)
		c.leased(m)
		if err != nil {
			return err
		}
		return m.client().command(ctx, runRef{c.opts.Self.ID, run}, http.MethodPost, "/api/v1/backfill/start", req, nil)
	})
}

// StopBackfill stops the backfill on every live node.
func (c *Coordinator) StopBackfill(ctx context.Context) error {
	ms, as, err := c.held()
	if err != nil {
		return err
	}
	defer c.beatAll(ctx)
	return c.fanOut("backfill stop", ms, send(ctx, as, http.MethodPost, "/api/v1/backfill/stop", nil))
}

// ResetStats starts a new cumulative span on every node and in the fleet's statistics.
func (c *Coordinator) ResetStats(ctx context.Context) error {
	ms, as, err := c.held()
	if err != nil {
		return err
	}
	c.stats.reset()
	return c.fanOut("stats reset", ms, send(ctx, as, http.MethodPost, "/api/v1/stats/reset", nil))
}

// startMeasuring starts the span of every live node's own figures now, the run's warm-up
// of warmup over (Fleet.StartMeasuring).
func (c *Coordinator) startMeasuring(ctx context.Context, warmup time.Duration) error {
	ms, as, err := c.held()
	if err != nil {
		return err
	}
	req := MeasureRequest{Coordinator: c.opts.Self.ID, Run: as.run, WarmupMs: warmup.Milliseconds()}
	return c.fanOut("start measuring", ms, send(ctx, runRef{}, http.MethodPost, "/api/v1/cluster/measure", req))
}

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
	if err := opsOnce(classes); err != nil {
		return err
	}
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
	at := c.now().Add(4 * m.rtt).Add(m.offset)
	c.mu.Unlock()
	defer c.leased(m)
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

// initValues are the configuration values a driver init of name with opts writes on a
// node (driver.name, drivers.<name>.<option>, and a composition's children's options
// given as REF.OPTION under drivers.<ref>.<option>), as the node names them, so the
// coordinator can check them as the node will.
func initValues(name string, opts map[string]string) map[string]string {
	vals := map[string]string{"driver.name": name}
	def, ok := driver.Lookup(name)
	if !ok {
		return vals
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		return vals
	}
	_, composes := def.NewOptions().(driver.Composer)
	for k, v := range opts {
		if c, ok := driver.Canonical(schema, k); ok {
			k = c
		} else if ref, opt, ok := strings.Cut(k, "."); ok && composes {
			vals["drivers."+ref+"."+opt] = v
			continue
		}
		vals["drivers."+name+"."+k] = v
	}
	return vals
}
