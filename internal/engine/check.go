package engine

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// Check says whether Apply(w) would succeed, and changes nothing. It is the part of the
// one validator that depends on the engine's driver and collector (the operations its
// mixes may name, pipelining, room for their statistics series), on top of w.Validate:
// a node's config store consults it before it accepts a change, so a change the store
// accepts is one the engine applies. The driver and the operations it declares do not
// change over the engine's life, so this needs no lock.
func (e *Engine) Check(w config.Workload) error {
	return fits(w, e.drv, e.pipeliner != nil, e.ops, e.coll)
}

// Fits says whether New(drv, w, opts) would accept w, without building anything: for a
// caller that connected a driver and must know the workload runs on it before it commits
// to the driver (a node's Init), and for changes that land while the engine is being
// made.
func Fits(drv driver.Driver, w config.Workload, opts Options) error {
	if drv == nil {
		return fmt.Errorf("check workload: nil driver")
	}
	if _, ok := drv.(driver.Operator); len(opts.Operations) > 0 && !ok {
		return fmt.Errorf("check workload: the driver declares %d operations but does not implement driver.Operator", len(opts.Operations))
	}
	p, ok := drv.(driver.Pipeliner)
	coll := opts.Collector
	if coll == nil {
		coll = stats.NewCollector(stats.Config{})
	}
	return fits(w, drv, ok && p.Pipelines(), opts.Operations, coll)
}

// fits is Check for an engine on drv, which pipelines (or not), declares ops and records
// into coll. Every error names the option at fault. A mix is resolved by the driver's
// definition, as resolveClasses resolves it: the built-in kinds (delete, rmw, scan,
// insert) are the driver's when it implements what they call. A pipelining driver runs
// them too: a pipelining worker sends an insert as a Write on its pipeline and the others
// through the driver's own methods (see pipelined).
func fits(w config.Workload, drv driver.Driver, pipelines bool, ops []driver.Operation, coll *stats.Collector) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if w.Pipeline > 1 && !pipelines {
		return driver.FieldErrors{{Field: "workload.pipeline", Value: strconv.Itoa(w.Pipeline),
			Allowed: "1 with this driver: it sends one operation per round trip (pipelining needs a driver that offers it, e.g. redis with mode=direct)"}}
	}
	var errs driver.FieldErrors
	def := driver.Definition{Operations: ops, New: func() driver.Driver { return drv }}
	// Series a collector has stay registered for its life (the time series keeps them),
	// so a class removed and another added each take one: count what w adds.
	var add []string
	need := func(name string) {
		if _, ok := coll.Lookup(name); !ok && !slices.Contains(add, name) {
			add = append(add, name)
		}
	}
	for _, spec := range w.Classes() {
		need(spec.Name)
		for _, m := range spec.Mix {
			_, idx, ok := def.Operation(m.Op)
			if !ok {
				errs = append(errs, &driver.FieldError{Field: config.ClassOption(spec.Name, "mix"), Value: m.Op,
					Allowed: "operations of the connected driver: " + strings.Join(def.OperationNames(), ", ")})
				continue
			}
			if idx == driver.IndexRMW {
				// Its two parts have series of their own, whatever the class mixes.
				for _, part := range []string{driver.OpRead, driver.OpWrite} {
					need(stats.OperationSeries(stats.OperationSeries(spec.Name, m.Op), part))
				}
			}
			if len(spec.Mix) > 1 {
				need(stats.OperationSeries(spec.Name, m.Op))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for _, name := range add {
		if err := stats.CheckSeriesName(name); err != nil {
			errs = append(errs, &driver.FieldError{Field: "workload.ops", Value: name, Allowed: err.Error()})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if have := len(coll.Names()); have+len(add) > stats.MaxSeries {
		return driver.FieldErrors{{Field: "workload.ops", Value: strings.Join(add, ","),
			Allowed: fmt.Sprintf("at most %d statistics series per node: it has recorded %d (op classes and the operations of mixed classes, kept for its time series, also after a class is removed) and this change needs %d more; reuse class names, or restart the node",
				stats.MaxSeries, have, len(add))}}
	}
	return nil
}
