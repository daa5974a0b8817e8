package node

import (
	"slices"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
)

// Status is what the node is doing (see control.Status).
type Status = control.Status

// Status returns what the instance is doing now.
func (i *Node) Status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	s := Status{ConfigVersion: i.store.Current().Version, Pending: slices.Clone(i.pending), LastError: i.lastErr, Running: map[string]bool{}}
	if s.Pending == nil {
		s.Pending = []string{}
	}
	if i.drv == nil {
		return s
	}
	s.Driver, s.Initialized, s.Since = i.drvName, true, i.started
	s.WarmingUpUntil = i.warmUntil
	if i.reconf != nil {
		rs := i.reconf.status
		s.Reconfigure = &rs
	}
	if ci, ok := i.drv.(driver.ConnectionInfoer); ok {
		s.ConnectionInfo = ci.ConnectionInfo()
	}
	if sr, ok := i.drv.(driver.StatsReporter); ok {
		s.DriverStats = sr.DriverStats()
	}
	if i.eng != nil {
		s.Running = i.eng.Running()
		s.ReadsRunning, s.WritesRunning = s.Running[config.ClassRead], s.Running[config.ClassWrite]
		b := i.eng.BackfillStatus()
		s.Backfill = &b
		s.DriverPanics = i.eng.DriverPanics()
		s.KeyspaceSize = i.eng.KeyspaceSize()
		s.Inserted = i.eng.Inserted()
		if f := i.eng.FirstOps(); len(f) > 0 {
			s.FirstOps = f
		}
	}
	return s
}
