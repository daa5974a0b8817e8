package cluster

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/cluster/discovery"
)

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
	inRun    bool          // shares the run's load
	beating  bool          // a beat to it is in flight
	beatSent time.Time     // when the beat in flight was sent
	beatDone chan struct{} // closed when the beat in flight has been answered or given up
	// leaseSent is when the last call that could renew the node's lease of the run (a
	// beat naming it, a start, a backfill's claim) returned or gave up: the node's lease
	// ends at most the lease time later, and its share moves only then.
	leaseSent time.Time
	// rejoining is set while a join of the node runs: an orphaned node's beats ask for
	// one until it is started again, not one per beat.
	rejoining bool
	applied   map[string]string // the values it last confirmed (nil: none known)
	// want is what the latest re-split computed for it, on behalf of wantAs, and what its
	// next patch sends; patching counts the re-splits' patches of it queued or in flight,
	// which go one at a time under patchMu; resets counts the times applied was forgotten
	// (a restart, a join), so a patch answered after that confirms nothing (reapply).
	want      map[string]string
	wantAs    runRef
	patching  int
	patchMu   sync.Mutex
	resets    uint64
	assigned  map[string]float64
	shaped    map[string]float64 // per class: the share of the fleet's shape it was sent
	figures   nodeFigures
	next      uint64 // the next interval sequence number to ask for
	polling   bool
	polls     int           // pulls of its intervals in flight
	pullDelay time.Duration // how long its pulls take (a slow link), for the merge's wait
	pollGen   uint64        // bumped when its interval sequence starts over (a restart)
	// applyMu orders the merging of its pulled pages: pulls overlap on a slow link, and
	// its intervals must reach the merge once each, in sequence.
	applyMu  sync.Mutex
	expected bool // the merge expects its intervals (from its first poll after it became alive, or from its return when it had been pulled before)
	// expectedAt is when the merge began expecting it, until its first page came;
	// pullFailed says a pull failed before that page (the seconds since stay owed).
	expectedAt time.Time
	pullFailed bool
	// undiscovered: discovery no longer lists it, but it answers and runs its share (see
	// refresh).
	undiscovered bool
}

// client returns the node's API client; safe without Coordinator.mu.
func (m *member) client() *peer { return m.conn.Load() }

func (m *member) split() splitMember {
	return splitMember{id: m.ID, labels: m.Labels, weight: m.Weight}
}

// clockKnown says the node's offset rests on enough samples to schedule a start by.
func (m *member) clockKnown() bool { return len(m.samples) >= 2 }

// discoveryTimeout bounds one lookup of the members: an unreachable etcd is waited for
// until the lookup's context ends, and a lookup that never ends would leave the fleet
// without a word about why its membership no longer changes.
const discoveryTimeout = 5 * time.Second

// refresh asks discovery for the members: new ones join, vanished ones leave. A lookup
// that fails or times out keeps the members known.
func (c *Coordinator) refresh(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	ms, err := c.opts.Discovery.Members(lctx)
	cancel()
	if err != nil {
		c.log.Warn("fleet discovery failed; keeping the members known", "discovery", c.opts.Discovery.String(), "err", err)
		return
	}
	// The coordinator's clock, as every judgment of its members: a member's times
	// (leaseSent, lastOK) are on it, and on a simulated clock a lost node that then left
	// discovery had its share moved at once, its lease judged against the real time.
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, d := range ms {
		seen[d.ID] = true
		m, ok := c.members[d.ID]
		if ok && m.undiscovered {
			m.undiscovered = false
			c.log.Info("fleet member discovered again", "node", d.ID)
		}
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
		if seen[id] || m.health == Left {
			continue
		}
		if m.inRun && c.run != "" && (m.health == Alive || m.health == Suspect) {
			// Its registration is gone but the node answers and holds the run's lease: its
			// link to the registry failed (etcd cut off from it), not the node. It keeps
			// its share until it stops answering; taking the share at once would run the
			// fleet over its target while the node still ran it (TestPartitionEtcdCutOff).
			if !m.undiscovered {
				m.undiscovered = true
				c.log.Warn("fleet member left discovery but answers and runs its share: kept until it stops answering", "node", id)
			}
			continue
		}
		c.log.Info("fleet member left discovery", "node", id)
		m.undiscovered = false
		c.setHealth(m, Left, now)
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
	case Alive:
		if m.polling && !m.expected {
			// A node that comes back (found lost, or gone from discovery) is started
			// again at once (join, below), and its next page holds every interval since
			// the last one merged: it is owed from now, not from the next poll, up to a
			// second later. Expected from that poll, the slot of its first second back
			// went out without it when the other nodes had delivered, and its reads
			// came late, in no fleet second and unflagged (issue 39: the partition
			// test's rejoin lost 169 and 347 reads so). The slots still open after the
			// last it delivered expect it too: a paused node's stall interval is due
			// before its answer (TestResumedNodeStallIsInTheFleetSecondOfItsDueInstant).
			m.expected, m.expectedAt, m.pullFailed = true, now, false
			c.stats.expectAgain(m.ID, now)
		}
	}
	if h == Lost || h == Suspect {
		c.log.Warn("fleet member "+string(h), "node", m.ID, "last answer", m.lastOK.Format(time.RFC3339Nano), "err", m.lastErr)
	}
	switch {
	case (h == Left || h == Lost) && m.inRun && c.opts.Redistribute:
		// A node that left discovery while lost (a paused process cannot renew its
		// registration) may still run its share until its lease lapses, as a lost one may.
		if !c.moveShareAfterLease(m, prev, now) {
			c.log.Warn("fleet member lost: its share goes to the others once its lease has lapsed", "node", m.ID,
				"at", m.leaseSent.Add(c.opts.Lease).Format(time.RFC3339Nano))
		}
	}
}

// moveShareAfterLease moves a lost node's share to the others (moveShare) once its lease
// of the run has lapsed, and reports whether it did. Until then the node may still be
// running its share: it is cut off, not dead (a paused process, a link down), and the
// fleet would run over its target if the others took the share while it still ran it.
// The node stops its own load at its lease's end, and sends nothing after it, also when
// it resumes from a pause (Agent.lapseLocked). Called with c.mu held, on each beat while
// the node stays lost.
func (c *Coordinator) moveShareAfterLease(m *member, prev Health, now time.Time) bool {
	if !m.inRun || !c.opts.Redistribute || now.Before(m.leaseSent.Add(c.opts.Lease)) {
		return false
	}
	c.moveShare(m, prev)
	return true
}

// moveShare re-splits the run's load over the nodes left, without m; called with c.mu
// held.
func (c *Coordinator) moveShare(m *member, prev Health) {
	if !m.inRun || !c.opts.Redistribute {
		return
	}
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

// leased notes that a call that could renew m's lease of the run just returned or gave
// up (see member.leaseSent).
func (c *Coordinator) leased(m *member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.leaseSent = c.now()
}

// beatAll sends a beat to every member not gone that has none in flight, in parallel,
// and waits for the answers at most beatWait (or until ctx ends): the ticker's next beats
// and a command's answer do not wait for a slow node. A beat waits for its answer up to
// LostAfter, not one beat period: over a slow link (a round trip of a second or more, a
// new TLS connection several) a short timeout failed every beat, and cancelling it closed
// the connection, so the next one paid the handshake again: a node whose link was slow
// but well within its lease was found lost (TestPartitionDelayedNodeKeepsItsShare, 800 ms
// each way). While a member's beat is in flight its health follows the time since its
// last answer once it has waited a beat period, as a failed beat's does.
func (c *Coordinator) beatAll(ctx context.Context) { c.beats(ctx, true) }

// beats is beatAll, waiting for the answers only when wait is set: the heartbeat's ticks
// do not, so a slow node delays no other node's next beat.
func (c *Coordinator) beats(ctx context.Context, wait bool) {
	c.mu.Lock()
	type job struct {
		m   *member
		req BeatRequest
	}
	var jobs []job
	var waits []chan struct{} // the beats this call waits for: its own, and those in flight
	now := c.now()
	for _, m := range c.members {
		if m.health == Left {
			c.moveShareAfterLease(m, Left, now)
			continue
		}
		if m.beating {
			// Unanswered for as long as a beat used to wait: judged as a failed beat
			// was, by the time since the node's last answer; the beat waits on.
			if now.Sub(m.beatSent) >= beatWait(c.opts) {
				c.silent(m, now)
			}
			waits = append(waits, m.beatDone)
			continue
		}
		req := BeatRequest{Coordinator: c.opts.Self.ID}
		// Only a node that answers has its lease renewed: from the moment it stops
		// answering, its lease runs out, and the coordinator knows when (leaseSent).
		if m.inRun && c.run != "" && m.health == Alive {
			req.Run, req.LeaseMs = c.run, c.opts.Lease.Milliseconds()
		}
		m.beating, m.beatSent, m.beatDone = true, now, make(chan struct{})
		waits = append(waits, m.beatDone)
		jobs = append(jobs, job{m, req})
	}
	c.mu.Unlock()
	// The beats outlive a caller that stops waiting (a command's context ends when it
	// answers): an answer that comes later still counts.
	bctx := context.WithoutCancel(ctx)
	for _, j := range jobs {
		go func() {
			c.beatSem <- struct{}{}
			defer func() { <-c.beatSem }()
			c.beat(bctx, j.m, j.req)
		}()
	}
	if len(waits) == 0 || !wait {
		return
	}
	t := time.NewTimer(beatWait(c.opts))
	defer t.Stop()
	for _, done := range waits {
		select {
		case <-done:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// beatWait is how long beatAll waits for the beats it sent: a beat period, at least 1 s.
func beatWait(o Options) time.Duration { return max(o.BeatEvery, time.Second) }

// silent updates the health of m, whose last beat failed or has not been answered yet, by
// the time since its last answer; called with c.mu held.
func (c *Coordinator) silent(m *member, now time.Time) {
	since := now.Sub(m.lastOK)
	if m.lastOK.IsZero() {
		since = now.Sub(m.since)
	}
	switch {
	case m.health == Lost:
		c.moveShareAfterLease(m, Lost, now)
	case since >= c.opts.LostAfter && m.health != Joining:
		c.setHealth(m, Lost, now)
	case since >= c.opts.SuspectAfter && m.health == Alive:
		c.setHealth(m, Suspect, now)
	}
}

// beat sends one beat to m and takes in its answer, or its failure.
func (c *Coordinator) beat(ctx context.Context, m *member, req BeatRequest) {
	bctx, cancel := context.WithTimeout(ctx, max(c.opts.LostAfter, beatWait(c.opts)))
	defer cancel()
	req.Sent = c.now()
	var resp BeatResponse
	err := m.client().call(bctx, http.MethodPost, "/api/v1/cluster/beat", req, &resp)
	t3 := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m.beating = false
	defer close(m.beatDone)
	if req.Run != "" {
		m.leaseSent = t3
	}
	if err != nil {
		m.lastErr = err.Error()
		c.silent(m, t3)
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
		m.resets++
		m.next, m.polling = 0, false
		m.pollGen++
	}
	// NTP: offset = ((t1 − t0) + (t2 − t3)) / 2, round trip = (t3 − t0) − (t2 − t1).
	s := clockSample{
		offset: (resp.Received.Sub(req.Sent) + resp.Sent.Sub(t3)) / 2,
		rtt:    t3.Sub(req.Sent) - resp.Sent.Sub(resp.Received),
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
	// A node that says its lease lapsed (paused, or cut off for the lease time, but
	// not for long enough to be found lost) stopped its load and waits to be started
	// again: it rejoins as a node that came back does.
	lapsed := resp.Orphaned && m.inRun && !back && !m.rejoining
	if ((back || lapsed) && c.run != "" && c.started != nil) || restarted {
		m.rejoining = true
		var resume []string
		// A node whose lease lapsed stopped what it ran: it runs the fleet's classes.
		known := prev.Boot != "" && (back || restarted)
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
		go func() {
			c.join(context.Background(), m.ID, resume, known)
			c.mu.Lock()
			m.rejoining = false
			c.mu.Unlock()
		}()
	}
}

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
	// KeptAfterLeftDiscovery flags a node that discovery no longer lists (its registration
	// lapsed: etcd cut off from it, say) but that answers its beats and runs its share of
	// the run: it is kept, share and all, until it stops answering or the run ends.
	KeptAfterLeftDiscovery bool `json:"keptAfterLeftDiscovery,omitempty" doc:"Discovery no longer lists the node, but it answers its beats and runs its share of the fleet run: it keeps its share until it stops answering or the run ends (its link to the registry failed, not the node)"`
	// FirstOpSkewMs is, per op class, its first operation's start minus the common start
	// instant of the last fleet start, on the coordinator's clock.
	FirstOpSkewMs map[string]float64 `json:"firstOpSkewMs,omitempty"`
	// KeyspaceSize and Inserted are the node's keyspace and how many new keys its
	// inserts claimed, as of its last beat: the fleet's status sums Inserted.
	KeyspaceSize int64 `json:"keyspaceSize,omitempty"`
	Inserted     int64 `json:"inserted,omitempty"`
}

// Members returns every node known, sorted by id.
func (c *Coordinator) Members() []MemberStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]MemberStatus, 0, len(c.members))
	for _, m := range c.members {
		s := MemberStatus{ID: m.ID, Addr: m.Addr, Labels: m.Labels, Weight: m.split().w(), Cluster: m.Cluster,
			Version: m.beat.Version, Health: m.health, Since: m.since, Driver: m.beat.Driver, Running: m.beat.Running,
			InRun: m.inRun, Orphaned: m.beat.Orphaned, OffsetMs: ms(m.offset), RTTMs: ms(m.rtt), Assigned: m.assigned,
			KeyspaceSize: m.beat.KeyspaceSize, Inserted: m.beat.Inserted,
			KeptAfterLeftDiscovery: m.undiscovered && (m.health == Alive || m.health == Suspect)}
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
	m.resets++
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
