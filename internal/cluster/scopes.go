package cluster

import (
	"context"
	"fmt"
	"maps"
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
	// Each node sharing the load inserts its own share of the new keys (its index in the
	// sorted list of those nodes), so no two insert the same key. Sorted by id, since a
	// lost node that keeps its share sits at the end of share.
	ids := make([]string, len(share))
	for i, sm := range share {
		ids[i] = sm.id
	}
	slices.Sort(ids)
	for _, m := range ms {
		eff, err := c.scopes.effective(m.split(), share)
		if err != nil {
			errs = append(errs, NodeError{m.ID, err})
			continue
		}
		if i, ok := slices.BinarySearch(ids, m.ID); ok {
			eff["workload.insertMember"], eff["workload.insertMembers"] = strconv.Itoa(i), strconv.Itoa(len(ids))
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
