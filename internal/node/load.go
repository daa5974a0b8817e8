package node

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
)

// Start starts the named op classes (none given: every class of the workload).
func (i *Node) Start(classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.Start(classes...)
}

// StartAt is Start with the first operations due at the instant at (see
// engine.Engine.StartAt): a fleet starts its nodes together this way.
func (i *Node) StartAt(at time.Time, classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.StartAt(at, classes...)
}

// SetShape gives class a load shape in place of its configured rate (nil: back to the
// rate), as engine.Engine.SetShape: auto-tune and scenarios drive the load through it.
func (i *Node) SetShape(class string, shape pacer.Shape) error {
	if err := i.checkClasses([]string{class}); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	return e.SetShape(class, shape)
}

// Stop stops the named op classes (none given: every class). Once nothing runs, a
// warm-up in progress is cancelled.
func (i *Node) Stop(classes ...string) error {
	if err := i.checkClasses(classes); err != nil {
		return err
	}
	e, err := i.engine()
	if err != nil {
		return err
	}
	if err := e.Stop(classes...); err != nil {
		return err
	}
	if !slices.Contains(slices.Collect(maps.Values(e.Running())), true) {
		i.mu.Lock()
		i.warmGen++
		i.warmUntil = time.Time{}
		i.mu.Unlock()
	}
	return nil
}

// StartLoad is Start as a user asks for it (the API, the UI, NDBench's routes): when no
// class was running, the figures start workload.warmup later (see WarmUp).
func (i *Node) StartLoad(classes ...string) error {
	return i.StartLoadAt(time.Time{}, classes...)
}

// StartLoadAt is StartLoad with the first operations due at the instant at (zero: now), as
// StartAt: a fleet's nodes start this way, and each warms up from that instant.
func (i *Node) StartLoadAt(at time.Time, classes ...string) error {
	idle := i.Status().Idle()
	var err error
	if at.IsZero() {
		err = i.Start(classes...)
	} else {
		err = i.StartAt(at, classes...)
	}
	if err != nil || !idle {
		return err
	}
	i.warmUp(at, i.store.Current().Config.Workload.Warmup)
	return nil
}

// checkClasses rejects a class the configured workload does not have, also before a
// driver is initialized: a typo is the user's error whatever the node's state. The error
// names the field "ops", as the API's request body and NDBench's routes call it.
func (i *Node) checkClasses(classes []string) error {
	w := i.store.Current().Config.Workload
	var errs driver.FieldErrors
	for _, c := range classes {
		if _, ok := w.Class(c); !ok {
			errs = append(errs, &driver.FieldError{Field: "ops", Value: c,
				Allowed: "op classes of the workload: " + strings.Join(w.ClassNames(), ", ")})
		}
	}
	if errs != nil {
		return errs
	}
	return nil
}
