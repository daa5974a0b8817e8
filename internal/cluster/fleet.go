package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// commandTimeout bounds a fleet command that the node interface gives no context for
// (Start, Stop, ...): the slowest node's answer, not a hung one, sets the pace.
const commandTimeout = 30 * time.Second

// Fleet is the fleet seen as one node: what the API serves under /fleet, so the fleet's
// statistics, streams, Prometheus metrics and reports are served exactly as a node's,
// and its controls fan out to every node.
type Fleet struct {
	c       *Coordinator
	created time.Time

	// mu guards the warm-up: warmGen counts warm-ups begun and cancelled (a warm-up's timer
	// measures only if it is still the latest), warmup is the last one that ended.
	mu      sync.Mutex
	warmGen uint64
	warmup  time.Duration
}

// clock is the coordinator's clock, which the fleet's waits share with its instants.
func (f *Fleet) clock() clock.Clock { return clock.Or(f.c.opts.Clock) }

// Clock is the clock the fleet's instants and waits are on (the coordinator's,
// Options.Clock): a run's warm-up (node.Run) and auto-tune's windows on the fleet are
// timed on it, as a node's on its own.
func (f *Fleet) Clock() clock.Clock { return f.clock() }

// Fleet returns the coordinator's fleet view.
func (c *Coordinator) Fleet() *Fleet { return &Fleet{c: c, created: c.now()} }

func cmdContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), commandTimeout)
}

// Init initializes the driver on every node.
func (f *Fleet) Init(ctx context.Context, name string, opts map[string]string) error {
	return f.c.InitDriver(ctx, name, opts)
}

// Shutdown closes the driver on every node.
func (f *Fleet) Shutdown() error {
	ctx, cancel := cmdContext()
	defer cancel()
	return f.c.Shutdown(ctx)
}

// Start starts op classes on every node at one common instant, and returns then: the
// load runs when it returns, as a node's Start (a scenario's phase clock, auto-tune's
// settle period count from it). It is a step of a run the caller sequences, so no node
// warms up (Coordinator.StartStep): the run's warm-up is the caller's, once.
func (f *Fleet) Start(classes ...string) error {
	return f.start(true, classes)
}

func (f *Fleet) start(step bool, classes []string) error {
	ctx, cancel := cmdContext()
	defer cancel()
	startFn := f.c.Start
	if step {
		startFn = f.c.StartStep
	}
	at, err := startFn(ctx, classes...)
	if err != nil {
		return err
	}
	_ = clock.Sleep(ctx, f.clock(), clock.Until(f.clock(), at))
	return nil
}

// StartAt is Start at the instant at, or at the fleet's common instant when that is
// later, as StartLoadAt.
func (f *Fleet) StartAt(at time.Time, classes ...string) error {
	if err := f.waitFor(at); err != nil {
		return err
	}
	return f.Start(classes...)
}

// InitConfigured initializes on every node the driver the fleet's configuration selects.
func (f *Fleet) InitConfigured(ctx context.Context) error {
	return f.c.InitDriver(ctx, f.c.FleetConfig().Config.DriverName, nil)
}

// StartLoad is Start as a user asks for it (the API's and UI's fleet start): each node
// warms up from the common instant (its agent starts it so), and from idle the fleet's
// merged figures start workload.warmup after it too (see StartMeasuring).
func (f *Fleet) StartLoad(classes ...string) error {
	idle := f.Status().Idle()
	if err := f.start(false, classes); err != nil {
		return err
	}
	if idle {
		f.warmUp(f.c.FleetConfig().Config.Workload.Warmup)
	}
	return nil
}

// StartLoadAt is StartLoad at the instant at, or at the fleet's common instant when that
// is later: a fleet picks its own instant a few round trips ahead, so at is a lower bound.
// The wait is bounded as a node bounds a shape's (maxShapeWait).
func (f *Fleet) StartLoadAt(at time.Time, classes ...string) error {
	if err := f.waitFor(at); err != nil {
		return err
	}
	return f.StartLoad(classes...)
}

// waitFor waits until the instant at, bounded as a node bounds a shape's (maxShapeWait).
func (f *Fleet) waitFor(at time.Time) error {
	if wait := clock.Until(f.clock(), at); wait > 0 {
		if wait > maxShapeWait {
			return &driver.FieldError{Field: "at", Value: at.Format(time.RFC3339Nano), Allowed: fmt.Sprintf("an instant at most %v ahead of this node's clock", maxShapeWait)}
		}
		_ = clock.Sleep(context.Background(), f.clock(), wait)
	}
	return nil
}

// warmUp starts the fleet's figures d from now, unless the load is stopped before; d ≤ 0
// only cancels a warm-up in progress.
func (f *Fleet) warmUp(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warmGen++
	if d <= 0 {
		return
	}
	gen := f.warmGen
	f.clock().AfterFunc(d, func() {
		f.mu.Lock()
		current := f.warmGen == gen
		f.mu.Unlock()
		if current {
			// Each node warms up by itself from the same instant (its agent starts it
			// so): only the fleet's own figures start here.
			f.measure(d)
		}
	})
}

// StartMeasuring starts the span the fleet's merged figures cover now, and every node's
// own: what the nodes did before stays in their series but not in the fleet's summary or
// report, nor in a node's report (which a fleet scenario reads to judge each node's
// generator). warmup is how long the load ran before, reported as the warm-up. The nodes
// of a run the caller sequences (node.Run) started with no warm-up of their own, so they
// are told; before, a node's report counted the run's warm-up load.
func (f *Fleet) StartMeasuring(warmup time.Duration) {
	f.measure(warmup)
	ctx, cancel := cmdContext()
	defer cancel()
	if err := f.c.startMeasuring(ctx, warmup); err != nil {
		f.c.log.Warn("nodes' figures not restarted after the fleet's warm-up: their own reports count it", "err", err)
	}
}

// measure starts the span of the fleet's merged figures now, after warmup.
func (f *Fleet) measure(warmup time.Duration) {
	f.c.stats.coll.Reset()
	f.mu.Lock()
	f.warmup = warmup
	f.mu.Unlock()
}

// Stop stops op classes on every node; a warm-up in progress is cancelled.
func (f *Fleet) Stop(classes ...string) error {
	f.warmUp(0)
	ctx, cancel := cmdContext()
	defer cancel()
	return f.c.Stop(ctx, classes...)
}

// StartBackfill backfills the keyspace, split among the nodes.
func (f *Fleet) StartBackfill(opts engine.BackfillOptions) error {
	ctx, cancel := cmdContext()
	defer cancel()
	return f.c.Backfill(ctx, BackfillOptions{Workers: opts.Workers, Rate: opts.Rate, Verify: opts.Verify})
}

// Backfill backfills the keyspace across the fleet as a phase of its own and waits for it
// to end, or for ctx, which stops it.
func (f *Fleet) Backfill(ctx context.Context, opts engine.BackfillOptions) (engine.BackfillStatus, error) {
	if err := f.StartBackfill(opts); err != nil {
		return engine.BackfillStatus{}, err
	}
	// A poll of the beats' progress on real time: it judges no time span, and the beats
	// it reads are sent on real time (see pollEvery).
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	// The nodes' beats carry their progress; the first ones may predate the start.
	seen := false
	for {
		select {
		case <-ctx.Done():
			_ = f.StopBackfill()
			return engine.BackfillStatus{}, ctx.Err()
		case <-t.C:
		}
		st := f.Status().Backfill
		if st == nil {
			continue
		}
		if st.Running {
			seen = true
			continue
		}
		if seen || st.Total > 0 && st.Written+st.Failed >= st.Total {
			return *st, nil
		}
	}
}

// BackfillStatus is the sum of the nodes' backfill progress, as their beats tell it.
func (f *Fleet) BackfillStatus() engine.BackfillStatus {
	if b := f.Status().Backfill; b != nil {
		return *b
	}
	return engine.BackfillStatus{Phase: "idle"}
}

// StopBackfill stops every node's backfill.
func (f *Fleet) StopBackfill() error {
	ctx, cancel := cmdContext()
	defer cancel()
	return f.c.StopBackfill(ctx)
}

// Patch changes configuration at the fleet scope.
func (f *Fleet) Patch(values map[string]string) (control.PatchResult, error) {
	ctx, cancel := cmdContext()
	defer cancel()
	snap, err := f.c.SetConfig(ctx, Scope{Kind: ScopeFleet}, values)
	if snap == nil {
		snap = f.c.FleetConfig()
	}
	return control.PatchResult{Snapshot: snap}, err
}

// Config is the fleet-scope configuration: rates are the fleet's totals.
func (f *Fleet) Config() *config.Snapshot { return f.c.FleetConfig() }

// Status sums up the nodes: a class runs if it runs on any node; the backfill's progress
// is the sum of the nodes'; the keyspace is numKeys plus the keys every node that beat
// inserted (a node lost keeps its last count: its keys stay in the store).
func (f *Fleet) Status() control.Status {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st := control.Status{Driver: c.driver, Running: map[string]bool{}, Pending: []string{}}
	var bf *engine.BackfillStatus
	for _, m := range c.alive() {
		if m.beat.Driver != "" {
			st.Initialized = true
			if st.Driver == "" {
				st.Driver = m.beat.Driver
			}
		}
		for k, v := range m.beat.Running {
			st.Running[k] = st.Running[k] || v
		}
		if b := m.beat.Backfill; b != nil {
			if bf == nil {
				bf = &engine.BackfillStatus{Phase: b.Phase}
			}
			bf.Running = bf.Running || b.Running
			if b.Running {
				bf.Phase = b.Phase
			}
			bf.Total += b.Total
			bf.Written += b.Written
			bf.Failed += b.Failed
			bf.Verified += b.Verified
			bf.Missing += b.Missing
			bf.Corrupt += b.Corrupt
		}
	}
	if bf == nil && st.Initialized {
		bf = &engine.BackfillStatus{Phase: "idle"}
	}
	for _, m := range c.members {
		st.Inserted += m.beat.Inserted
	}
	if st.Initialized {
		st.KeyspaceSize = c.fleet.Current().Config.Workload.NumKeys + st.Inserted
	}
	st.Backfill = bf
	st.ReadsRunning, st.WritesRunning = st.Running[config.ClassRead], st.Running[config.ClassWrite]
	return st
}

// Read reads one key through the first live node (for debugging, as a node's Read).
func (f *Fleet) Read(ctx context.Context, key string) ([]byte, error) {
	p, err := f.first()
	if err != nil {
		return nil, err
	}
	var kv struct {
		Value []byte `json:"value"`
	}
	err = p.call(ctx, http.MethodGet, "/api/v1/kv/"+url.PathEscape(key), nil, &kv)
	return kv.Value, err
}

// Write writes one key through the first live node.
func (f *Fleet) Write(ctx context.Context, key string, value []byte) error {
	p, err := f.first()
	if err != nil {
		return err
	}
	return p.call(ctx, http.MethodPut, "/api/v1/kv/"+url.PathEscape(key), map[string]any{"value": value}, nil)
}

func (f *Fleet) first() (*peer, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	ms := f.c.alive()
	if len(ms) == 0 {
		return nil, ErrNoMembers
	}
	return ms[0].client(), nil
}

// Collector is the fleet's statistics: the nodes' intervals merged per second.
func (f *Fleet) Collector() *stats.Collector { return f.c.stats.coll }

// Intervals returns the fleet's merged intervals, encoded, from seq on: a coordinator of
// coordinators could merge fleets.
func (f *Fleet) Intervals(seq uint64) stats.IntervalsPage { return f.c.stats.log.Since(seq) }

// ReportInput is the fleet's report: merged figures, the fleet-scope configuration.
func (f *Fleet) ReportInput(version string) report.Input {
	st := f.Status()
	coll := f.c.stats.coll
	started := coll.SpanStart()
	in := report.Input{
		ToolVersion: version,
		Started:     started,
		Ended:       f.c.now(), // on the clock of the span's start (SpanStart)
		DriverName:  st.Driver,
		Cumulative:  coll.Cumulative(),
		Series:      coll.SeriesSince(started),
		Errors:      coll.Errors(),
		Snapshot:    f.c.FleetConfig(),
		DriverInfo:  map[string]string{report.FleetInfo: f.c.describe()},
	}
	f.mu.Lock()
	in.Warmup = f.warmup
	f.mu.Unlock()
	if st.Backfill != nil && st.Backfill.Total > 0 {
		in.Backfill = st.Backfill
	}
	return in
}

// describe says which nodes the fleet's figures come from.
func (c *Coordinator) describe() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, m := range c.members {
		if m.health == Alive {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += id
	}
	return s
}

// SetShape gives class a load shape on every node, each its share by weight, from one
// common instant (nil: back to the configured rate). See Coordinator.SetShape.
func (f *Fleet) SetShape(class string, shape pacer.Shape) error {
	ctx, cancel := cmdContext()
	defer cancel()
	return f.c.SetShape(ctx, class, shape)
}

// Drain stops the load on every node (the run ends) and waits until no node has an
// operation in flight any more (as the nodes' beats tell), at most the operation timeout
// and a second.
func (f *Fleet) Drain() error {
	f.warmUp(0)
	ctx, cancel := cmdContext()
	defer cancel()
	if err := f.c.Stop(ctx); err != nil {
		return err
	}
	// The deadline is on the coordinator's clock, as the load's operations and their
	// timeouts on a fleet that shares it; the beats that tell are asked on real time
	// (see pollEvery), so a simulated clock that stands still does not hold them.
	deadline := f.c.now().Add(f.c.FleetConfig().Config.Workload.OpTimeout + time.Second)
	for {
		running := false
		for _, r := range f.Status().Running {
			running = running || r
		}
		if !running {
			return nil
		}
		if f.c.now().After(deadline) {
			return fmt.Errorf("drain the fleet: load still running on a node after %v", f.c.FleetConfig().Config.Workload.OpTimeout+time.Second)
		}
		time.Sleep(100 * time.Millisecond)
		f.c.beatAll(ctx)
	}
}

// Finish waits until the fleet's statistics hold the second in which it was called
// (every node's interval merged, or the merge's wait for late nodes over), so the end of
// a run is judged and reported; at most the merge wait and 3 s.
func (f *Fleet) Finish() {
	// The second and the wait are on the coordinator's clock, as the merge's readiness.
	now := f.c.now()
	done := make(chan struct{})
	var once sync.Once
	cancel := f.c.stats.coll.Subscribe(func(iv *stats.Interval) {
		if !iv.End.Before(now) {
			once.Do(func() { close(done) })
		}
	})
	defer cancel()
	t := f.clock().NewTimer(f.c.opts.MergeWait + 3*time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
	}
}

// SaturatedNodes returns the nodes that sent less than their share in the merged second
// that starts at start (nil when none, or the second is not known): their figures are the
// generator's limit, not the store's. Auto-tune's judge reads it for each second.
func (f *Fleet) SaturatedNodes(start time.Time) []string { return f.c.stats.saturated(start) }

// The fleet view is driven as a node is: by the API, auto-tune, scenarios and a run.
var _ control.Node = (*Fleet)(nil)

// NodeReports returns every live node's own run report (GET /api/v1/report), by node id:
// what only a node can judge of itself, such as its generator's saturation (its process's
// CPU, its start lag while its workers were free), which the merged figures may hide.
func (f *Fleet) NodeReports(ctx context.Context) (map[string]*report.Report, error) {
	f.c.mu.Lock()
	ms := f.c.alive()
	f.c.mu.Unlock()
	out := make(map[string]*report.Report, len(ms))
	var mu sync.Mutex
	err := f.c.fanOut("node reports", ms, func(m *member) error {
		var r report.Report
		if err := m.client().call(ctx, http.MethodGet, "/api/v1/report", nil, &r); err != nil {
			return err
		}
		mu.Lock()
		out[m.ID] = &r
		mu.Unlock()
		return nil
	})
	return out, err
}
