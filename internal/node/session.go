package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
)

// Session is one driver session: from a driver's Init to its shutdown (results stay
// readable after it until the next Init).
type Session struct {
	Driver string
	// Started is the Init: the session's time series starts here.
	Started time.Time
	// Measured is when the span the figures cover began: Started, or later when a
	// backfill phase (Backfill) or a warm-up (StartMeasuring) was left out of them.
	Measured time.Time
	// Usage is the process's CPU usage at Measured, so a report's ops per CPU-second
	// count the measured span's CPU only.
	Usage report.Usage
	// Warmup is how long the load ran unmeasured before Measured (StartMeasuring).
	Warmup time.Duration
	// Phases are the phases that ended before Measured, oldest first: "backfill" (Backfill)
	// and "warmup" (StartMeasuring), each with what it measured.
	Phases []report.Phase
	// Clock is the engine's clock, read for its source when a report is built.
	Clock pacer.Clock
}

// Session returns the current or last driver session; zero before the first Init.
func (i *Node) Session() Session {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.session
}

// Init connects driver name with the configured options overlaid by opts (option name to
// value). The options are validated before anything happens; on success they are written
// into the runtime config layer, with driver.name, so status and config listings show
// them and no other source (a watched file, etcd) switches the driver under the API.
// opts are untrusted, as Patch's values are: refused before anything connects when they
// reach beyond the store without the operator's config.Allow.
func (i *Node) Init(ctx context.Context, name string, opts map[string]string) error {
	return i.init(ctx, name, opts, true)
}

// InitConfigured connects the driver the configuration selects, with its configured
// options, and writes nothing into the configuration: what a command that runs the
// workload it was given (`ndbench run`) does, so every value keeps the source the user
// gave it, in the effective config and in the report.
func (i *Node) InitConfigured(ctx context.Context) error {
	return i.init(ctx, i.store.Current().Config.DriverName, nil, false)
}

// init is Init; pin says whether driver.name and opts go into the runtime layer.
func (i *Node) init(ctx context.Context, name string, opts map[string]string, pin bool) error {
	i.life.Lock()
	defer i.life.Unlock()
	i.mu.Lock()
	busy := i.drv != nil
	i.mu.Unlock()
	if busy {
		return ErrAlreadyInitialized
	}
	def, ok := driver.Lookup(name)
	if !ok {
		return driver.UnknownDriverError(name)
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		return err
	}
	// Options given by alias or in another case replace the configured value of the same
	// option rather than sitting beside it, where either could win.
	canon := make(map[string]string, len(opts))
	// A composition's children may come with its options as REF.OPTION (redis@replica.addrs):
	// they are configured under drivers.REF.OPTION like the composition's own.
	_, composes := def.NewOptions().(driver.Composer)
	children := map[string]string{}
	for k, v := range opts {
		if c, ok := driver.Canonical(schema, k); ok {
			k = c
		} else if ref, opt, ok := strings.Cut(k, "."); ok && composes {
			children["drivers."+ref+"."+opt] = v
			continue
		}
		canon[k] = v
	}
	opts = canon
	values := maps.Clone(i.store.Current().Config.Drivers[name])
	if values == nil {
		values = map[string]string{}
	}
	maps.Copy(values, opts)
	decoded, err := driver.NewOptions(name, values)
	if err != nil {
		return err
	}
	patch := map[string]string{}
	if pin {
		patch["driver.name"] = name
	}
	for k, v := range opts {
		patch["drivers."+name+"."+k] = v
	}
	maps.Copy(patch, children)
	// Validate the whole config with the change before connecting, so a failed Init
	// leaves nothing behind and a successful one cannot be rejected afterwards.
	next := i.store.Current()
	if len(patch) > 0 {
		if next, err = i.store.PreviewFrom(config.LayerRuntime, config.OriginAPI, patch); err != nil {
			return err
		}
	}
	// A composition's children are configured under their own drivers.<ref>.* keys.
	if err := next.ComposeChildren(name, decoded); err != nil {
		return err
	}
	d := def.New()
	if err := d.Init(ctx, decoded); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	if err := i.measure(name, d); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	if err := i.fitsConnected(d, def, next); err != nil {
		_ = d.Close()
		return fmt.Errorf("init driver %s: %w", name, err)
	}
	i.warm(ctx, name, d, next.Config.Workload)
	i.mu.Lock()
	i.drv, i.drvName, i.drvInit, i.drvOpts, i.pending = d, name, decoded, decoded, nil
	if r, ok := d.(driver.Reconfigurer); ok {
		i.reconf = i.startReconfigurer(r, name, decoded)
	}
	i.mu.Unlock()
	snap, err := i.store.Current(), error(nil)
	if len(patch) > 0 {
		snap, err = i.store.PatchFrom(config.LayerRuntime, config.OriginAPI, patch)
	}
	if err == nil {
		i.mu.Lock()
		if i.reconf != nil && i.reconf.status.AppliedVersion == 0 {
			// The driver runs with the options of the version that recorded them.
			i.reconf.status.AppliedVersion = snap.Version
		}
		i.mu.Unlock()
		var e *engine.Engine
		def, _ := driver.Lookup(name)
		if e, err = engine.New(d, snap.Config.Workload, engine.Options{Collector: i.coll, Logger: i.log, Operations: def.Operations, Clock: i.clk}); err == nil {
			i.mu.Lock()
			i.eng, i.started = e, i.clk.Now()
			e.SendUntil(i.fence)
			// A change that landed between the patch and now found no engine to apply to.
			if cur := i.store.Current(); cur.Version != snap.Version {
				err = e.Apply(cur.Config.Workload)
			}
			i.mu.Unlock()
			if err != nil {
				i.closeDriver()
				return err
			}
			// A driver session's results are its own: the cumulative view, the report and
			// the UI's totals start afresh, so a second session never shows the first one's
			// counts under its driver's name. Its 1 s intervals start with it too, so a
			// run's first interval is a whole second.
			i.ticks.Lock()
			if i.finished.IsZero() {
				i.stopTicks()
				<-i.ticking
				i.coll.Reset()
				i.startTicks()
			}
			i.ticks.Unlock()
			start := i.coll.SpanStart()
			i.mu.Lock()
			i.session = Session{Driver: name, Started: start, Measured: start, Usage: report.ReadUsage(), Clock: e.Clock()}
			i.mu.Unlock()
			i.log.Info("driver initialized", "driver", name)
			return nil
		}
	}
	i.closeDriver()
	return err
}

// Shutdown stops all load, waits for operations in flight (up to the op timeout, at most
// closeGrace, then cancels them) and disconnects the driver.
func (i *Node) Shutdown() error {
	i.life.Lock()
	defer i.life.Unlock()
	i.mu.Lock()
	none := i.drv == nil
	i.mu.Unlock()
	if none {
		return ErrNotInitialized
	}
	i.closeDriver()
	return nil
}

// closeGrace is the longest a shutdown (Shutdown, Close: a SIGTERM) lets operations in
// flight finish before it cancels them. A shutdown waited for the op timeout and a second,
// and a SIGTERM could wait an hour on a long workload.opTimeout and a store that does not
// answer; Drain, which a final report needs, still waits the whole op timeout, so the
// figures count every operation started.
const closeGrace = 2 * time.Second

// closeDriver detaches the engine and driver and closes them outside mu, so status calls
// do not wait for operations in flight. Called with life held.
func (i *Node) closeDriver() {
	i.mu.Lock()
	e, d, name, r := i.eng, i.drv, i.drvName, i.reconf
	i.drv, i.eng, i.drvName, i.drvInit, i.drvOpts, i.reconf, i.pending = nil, nil, "", nil, nil, nil, nil
	i.warmGen++
	i.warmUntil = time.Time{}
	i.mu.Unlock()
	if r != nil {
		// A reconfiguration in flight is cancelled and waited for: the driver is not
		// closed under it.
		r.stop()
	}
	if e != nil {
		_ = e.Close(min(i.store.Current().Config.Workload.OpTimeout, closeGrace))
	}
	if d != nil {
		if err := d.Close(); err != nil {
			i.log.Warn("close driver", "driver", name, "err", err)
		}
	}
}

// measure gives a driver that measures things of its own (driver.Measurer) a series for
// each, registered like an op class so that every output shows it.
func (i *Node) measure(drvName string, d driver.Driver) error {
	m, ok := d.(driver.Measurer)
	if !ok {
		return nil
	}
	names := m.Measures()
	sinks := make([]driver.Sink, len(names))
	def, _ := driver.Lookup(drvName)
	for k, name := range names {
		if !slices.Contains(def.Series, name) {
			return fmt.Errorf("the driver measures series %s, which its definition does not declare (Definition.Series: %v)", name, def.Series)
		}
		op, err := i.coll.Register(name)
		if err != nil {
			return fmt.Errorf("register the driver's series %s: %w", name, err)
		}
		sinks[k] = i.coll.Recorder(op).Sink()
	}
	m.SetSinks(sinks)
	return nil
}

// warm has a driver that connects on its workers' first operations open their
// connections now (driver.Warmer), before any load starts and is measured. A failure is
// only logged: the workers then connect as they would have, and their operations report
// the store's state.
func (i *Node) warm(ctx context.Context, name string, d driver.Driver, w config.Workload) {
	wm, ok := d.(driver.Warmer)
	if !ok {
		return
	}
	n := 0
	for _, c := range w.Classes() {
		if c.Enabled {
			n += c.Workers
		}
	}
	if n == 0 {
		return
	}
	if err := wm.Warm(ctx, n); err != nil {
		i.log.Warn("opening the workers' connections ahead of the load failed; they connect on their first operations", "driver", name, "workers", n, "err", err)
	}
}
