package cluster

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// ScopeStore is where a fleet's configuration is kept besides the coordinator's memory.
type ScopeStore interface {
	// Save writes values at scope (as Scope.String gives it).
	Save(ctx context.Context, scope string, values map[string]string) error
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
	// The nodes get these values through their API, as untrusted input: checked here as
	// they will be there, the --allow gate included.
	if _, err := c.fleet.PreviewFrom(config.LayerFleet, config.OriginAPI, fleetVals); err != nil {
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
		if _, err := c.fleet.PreviewFrom(config.LayerFleet, config.OriginAPI, eff); err != nil {
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

// reapply patches every live node whose effective values changed since it was last told,
// and returns once each has confirmed the latest values the coordinator computed for it
// (this call's or a later one's).
//
// Re-splits overlap: a lost node's share moves (a goroutine) while the node comes back and
// its join re-splits again, or a config change meets either. Each call computes every
// node's values under c.mu and records them as the node's want; the patches to one node
// go one at a time (member.patchMu), each sending the want as it is then, diffed against
// what the node confirmed. So a call that finds a patch in flight to a node waits for it
// and then sends what is newer, and the latest split is what every node ends at. Before,
// a call diffed against the confirmed values while an earlier call's patch was in flight:
// the later one sent the node nothing, the earlier one's values stayed (a node back at
// the step its share moved: the fleet at 800 of 600 reads/s, stop 52). A call also
// returns only once its nodes are past the patches in flight, so a joining node starts
// (join: re-split, then start) only when no earlier patch can raise the others after.
// Serialising whole re-splits would do as much, but would hold the re-split after a loss
// behind every node of an earlier one, the slowest included (a node on an 800 ms link,
// or one that hangs to the client's timeout); per node, only that node's patch waits.
func (c *Coordinator) reapply(ctx context.Context) error {
	c.mu.Lock()
	ms, share := c.sharing()
	as := c.ref()
	var jobs []*member
	var errs []NodeError
	// Each node sharing the load inserts its own share of the new keys (its index in the
	// sorted list of those nodes), so no two insert the same key. Sorted by id, since a
	// lost node that keeps its share sits at the end of share.
	ids := make([]string, len(share))
	for i, sm := range share {
		ids[i] = sm.id
	}
	slices.Sort(ids)
	if !slices.Equal(ids, c.insertIDs) {
		c.insertIDs, c.insertBase = ids, c.resplitBase()
	}
	for _, m := range ms {
		eff, err := c.scopes.effective(m.split(), share)
		if err != nil {
			errs = append(errs, NodeError{m.ID, err})
			continue
		}
		if i, ok := slices.BinarySearch(ids, m.ID); ok {
			eff["workload.insertMember"], eff["workload.insertMembers"] = strconv.Itoa(i), strconv.Itoa(len(ids))
			eff["workload.insertBase"] = strconv.FormatInt(c.insertBase, 10)
		}
		m.assigned = assignedRates(eff, c.fleet.Current())
		m.want, m.wantAs = eff, as
		// A node with a patch in flight is waited for even when this split leaves its
		// values as they were confirmed: the patch in flight may change them.
		if m.patching > 0 || len(diffValues(eff, m.applied)) > 0 {
			m.patching++
			jobs = append(jobs, m)
		}
	}
	c.mu.Unlock()
	var mu sync.Mutex
	c.each(len(jobs), func(i int) {
		if err := c.patch(ctx, jobs[i]); err != nil {
			mu.Lock()
			errs = append(errs, NodeError{jobs[i].ID, err})
			mu.Unlock()
		}
	})
	if errs != nil {
		return &FleetError{Op: "config change", Nodes: errs}
	}
	return nil
}

// patch sends m what its latest want adds to what it confirmed, after the patch in flight
// to it, if any, was answered; a job of reapply, which counted it in m.patching.
func (c *Coordinator) patch(ctx context.Context, m *member) error {
	if !m.patchMu.TryLock() {
		c.log.Debug("re-split waits for the patch in flight to the node", "node", m.ID)
		m.patchMu.Lock()
	}
	defer m.patchMu.Unlock()
	c.mu.Lock()
	want, as, resets := m.want, m.wantAs, m.resets
	diff := diffValues(want, m.applied)
	c.mu.Unlock()
	var err error
	if len(diff) > 0 {
		err = m.client().command(ctx, as, http.MethodPatch, "/api/v1/config", map[string]any{"values": diff}, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m.patching--
	switch {
	case m.resets != resets:
		// Its confirmed values were forgotten meanwhile (it restarted, or rejoins): the
		// answer speaks for a node state that is gone.
	case err != nil:
		// Whether it applied the values is not known (an answer lost after it did): the
		// next re-split sends it everything.
		m.applied = nil
	default:
		m.applied = want
	}
	return err
}

// diffValues returns the values of want that have is without, or holds otherwise.
func diffValues(want, have map[string]string) map[string]string {
	diff := map[string]string{}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			diff[k] = v
		}
	}
	return diff
}

// resplitClosedLoop is the insert rate resplitBase assumes of a fleet with a closed-loop
// class (rate 0), whose rate has no bound: a generous one for a fast store.
const resplitClosedLoop = 100_000

// resplitBase returns where a new split of the inserts' keys starts: beyond every key a
// member claimed, so that the members, which counted their inserts apart, start their
// new shares from one key and none overlaps another's (engine's insertKeys finishes an
// old share below it first). The members' keyspaces are their last beats', so the base
// adds what the fleet may insert from the oldest of those beats until every member has
// the new split (a member that takes longer than LostAfter to apply it is lost anyway):
// the members' rates (every class's, an upper bound of their inserts) over that time and
// a silent member's lease, doubled for a margin. 0 (the split starts at
// numKeys) while no member has inserted. Called with c.mu held.
func (c *Coordinator) resplitBase() int64 {
	var top, inserted int64
	// The members' answers (lastOK) are on the coordinator's clock.
	now := c.now()
	oldest := now
	for _, m := range c.members {
		if m.beat.Inserted == 0 && m.beat.KeyspaceSize == 0 {
			continue
		}
		top, inserted = max(top, m.beat.KeyspaceSize), inserted+m.beat.Inserted
		if !m.lastOK.IsZero() && m.lastOK.Before(oldest) {
			oldest = m.lastOK
		}
	}
	if inserted == 0 {
		return 0
	}
	// The rates the members run at are those they were assigned (a node scope may give
	// one more than its share of the fleet's).
	var rate float64
	for _, cs := range c.fleet.Current().Config.Workload.Classes() {
		if !cs.Enabled {
			continue
		}
		for _, m := range c.members {
			if r, ok := m.assigned[cs.Name]; !ok {
				continue // never given a share of the load
			} else if r <= 0 {
				rate += resplitClosedLoop
			} else {
				rate += r
			}
		}
	}
	// A member gone silent inserts on until its lease lapses.
	window := now.Sub(oldest) + c.opts.LostAfter + c.opts.Lease
	return max(top+int64(math.Ceil(2*rate*window.Seconds())), c.insertBase)
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
