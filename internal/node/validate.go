package node

import (
	"fmt"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
)

// requireApplicable is the node's requirement on every change its store accepts: what the
// change makes of the configuration must apply to what runs now, so a change the store
// accepts (an API answer of 2xx, a file or etcd change that is not refused) is one the
// node applies. Build checks the selected driver (driver.name); this checks the
// connected one, which takes the change now: its live options (requireConnectedOptions)
// and the workload on its engine (the operations its mixes name, pipelining, room for
// statistics series), by the engine's own Check, so the store and the engine cannot
// disagree. Called under the store's lock.
func (i *Node) requireApplicable(next *config.Snapshot) error {
	if err := i.requireConnectedOptions(next); err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.drv == nil {
		return nil
	}
	w := next.Config.Workload
	var err error
	if i.eng != nil {
		err = i.eng.Check(w)
	} else {
		// Init has connected the driver and not yet made its engine: the engine will be
		// made with what the store holds then.
		def, _ := driver.Lookup(i.drvName)
		err = engine.Fits(i.drv, w, engine.Options{Collector: i.coll, Operations: def.Operations})
	}
	if err == nil || next.Config.DriverName == i.drvName {
		return err
	}
	// The change selects another driver too: say why the connected one still matters.
	fes, ok := driver.AsFieldErrors(err)
	if !ok {
		return err
	}
	out := make(driver.FieldErrors, len(fes))
	for k, fe := range fes {
		c := *fe
		c.Allowed += fmt.Sprintf(" (driver %s is connected and runs the workload until driver.name=%s is initialized)", i.drvName, next.Config.DriverName)
		out[k] = &c
	}
	return out
}

// fitsConnected checks, before Init commits to the driver it has just connected, that
// snap's workload runs on it: a configuration accepted while no driver, or another, was
// connected (pipelining with a driver that turns out not to pipeline, more statistics
// series than the node has room for) is refused with the field at fault, and nothing of
// the Init is kept.
func (i *Node) fitsConnected(d driver.Driver, def driver.Definition, snap *config.Snapshot) error {
	return engine.Fits(d, snap.Config.Workload, engine.Options{Collector: i.coll, Operations: def.Operations})
}

// Workload returns the workload the engine runs now, and false when no driver is
// connected: what a caller compares with the configuration to see that a change applied.
func (i *Node) Workload() (config.Workload, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.eng == nil {
		return config.Workload{}, false
	}
	return i.eng.Workload(), true
}
