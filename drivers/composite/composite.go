package composite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/driver"
)

func init() {
	driver.MustRegister(driver.Definition{
		Name:       "composite",
		Summary:    "compositions of bundled drivers: cache-aside, write-through, read-through, primary + derived with visibility lag",
		NewOptions: func() any { return &Options{} },
		New:        func() driver.Driver { return &Driver{} },
		Series:     []string{"child.cache", "child.database", "child.primary", "child.derived", "visibility"},
	})
}

// Modes.
const (
	ModeCacheAside   = "cache-aside"
	ModeWriteThrough = "write-through"
	ModeReadThrough  = "read-through"
	ModeDerived      = "derived"
)

// Options configure the composite driver. The children's own options are configured
// under drivers.<reference>.* and handed over through driver.Composer.
type Options struct {
	Mode        string        `opt:"mode" default:"cache-aside" enum:"cache-aside,write-through,read-through,derived" help:"how the children combine (see the driver's documentation)"`
	Cache       string        `opt:"cache" default:"memcached" help:"the cache: a driver reference (name or name@instance) whose options are under drivers.<reference>.* (cache modes)"`
	Database    string        `opt:"database" default:"postgres" help:"the database behind the cache: a driver reference (cache modes)"`
	WritePolicy string        `opt:"writePolicy" default:"invalidate" enum:"invalidate,update" live:"true" help:"cache-aside: after a database write, delete the key from the cache (invalidate) or write the new value to it (update)"`
	Primary     string        `opt:"primary" default:"redis" help:"the store written to: a driver reference (derived mode)"`
	Derived     string        `opt:"derived" default:"redis@replica" help:"the store derived from the primary (replica, index, other region): a driver reference (derived mode)"`
	ReadFrom    string        `opt:"readFrom" default:"primary" enum:"primary,derived" live:"true" help:"derived mode: the store reads go to"`
	LagSample   float64       `opt:"lagSample" default:"0.01" min:"0" max:"1" live:"true" help:"derived mode: fraction of writes whose visibility on the derived store is measured"`
	LagPoll     time.Duration `opt:"lagPollInterval" default:"1ms" min:"100us" max:"1m" help:"derived mode: how often a sampled write is read on the derived store until visible (the lag's resolution)"`
	LagTimeout  time.Duration `opt:"lagTimeout" default:"10s" min:"1ms" max:"1h" help:"derived mode: a write not visible after this counts as a visibility timeout"`
	LagInFlight int           `opt:"lagMaxInFlight" default:"1000" min:"1" max:"100000" help:"derived mode: samples followed at once; more are skipped and counted"`

	children map[string]any
}

// Validate checks what the tags cannot: the children a mode needs, and that they differ.
// Whether a reference names a registered driver is checked with the configuration
// (driver.CheckRef), since the registry is still filling when drivers register.
func (o *Options) Validate() error {
	var errs driver.FieldErrors
	pair := func(aName, a, bName, b string) {
		if a == "" {
			errs = append(errs, &driver.FieldError{Field: aName, Allowed: "a driver reference (e.g. memcached, redis@replica); mode " + o.Mode + " needs one"})
		}
		if b == "" {
			errs = append(errs, &driver.FieldError{Field: bName, Allowed: "a driver reference (e.g. postgres, redis@replica); mode " + o.Mode + " needs one"})
		}
		if a != "" && strings.EqualFold(a, b) {
			errs = append(errs, &driver.FieldError{Field: bName, Value: b, Allowed: "a reference other than " + aName + "'s: to use one driver twice, name an instance (" + b + "@other) configured under drivers." + b + "@other.*"})
		}
	}
	if o.Mode == ModeDerived {
		pair("primary", o.Primary, "derived", o.Derived)
	} else {
		pair("cache", o.Cache, "database", o.Database)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// roles returns the child roles of the mode and their references, in a fixed order.
func (o *Options) roles() (names, refs []string) {
	// Keys fold to lower case (drivers.Redis@Replica.addrs is drivers.redis@replica.addrs),
	// so references do too.
	if o.Mode == ModeDerived {
		return []string{"primary", "derived"}, []string{strings.ToLower(o.Primary), strings.ToLower(o.Derived)}
	}
	return []string{"cache", "database"}, []string{strings.ToLower(o.Cache), strings.ToLower(o.Database)}
}

// Children implements driver.Composer.
func (o *Options) Children() []string {
	_, refs := o.roles()
	return refs
}

// SetChild implements driver.Composer. The map is replaced, not changed, so copies of
// the options made before share nothing that changes.
func (o *Options) SetChild(ref string, opts any) {
	m := make(map[string]any, len(o.children)+1)
	for k, v := range o.children {
		m[k] = v
	}
	m[ref] = opts
	o.children = m
}

// Child implements driver.Composer.
func (o *Options) Child(ref string) any { return o.children[ref] }

// child is one connected child driver.
type child struct {
	role, ref string
	drv       driver.Driver
}

// sinks are the series the driver records into once the node gave them (Measurer).
type sinks struct {
	children   []driver.Sink // by child index
	visibility driver.Sink   // derived mode only
}

// Driver is the composite driver. It is safe for concurrent use after Init.
type Driver struct {
	opts     Options
	children []child
	derived  bool

	writeUpdate atomic.Bool   // writePolicy=update (live)
	readDerived atomic.Bool   // readFrom=derived (live)
	lagSample   atomic.Uint64 // float64 bits (live)
	sinks       atomic.Pointer[sinks]

	hits, misses, cacheErrors, fills, fillErrors, invalidations, invalidationErrors atomic.Int64
	updates, updateErrors                                                           atomic.Int64
	lagSampled, lagVisible, lagTimedOut, lagSuperseded, lagSkipped                  atomic.Int64

	// Visibility samples in flight: a semaphore bounds them, pending maps a key to its
	// sample so a later write to the key supersedes it, and pollCtx ends them at Close.
	lagSem     chan struct{}
	pending    sync.Map // key -> *sample
	inFlight   atomic.Int64
	pollCtx    context.Context
	pollCancel context.CancelFunc
	polls      sync.WaitGroup
	closeMu    sync.Mutex
	closed     atomic.Bool
}

// sample is one write followed on the derived store.
type sample struct {
	superseded atomic.Bool
	acked      time.Time // the primary's acknowledgement, for the oldest pending age
}

// Indexes of the children in the cache modes and the derived mode.
const (
	cacheIdx, databaseIdx  = 0, 1
	primaryIdx, derivedIdx = 0, 1
)

// Init opens every child with the options the configuration gave it.
func (d *Driver) Init(ctx context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	d.opts = *o
	d.derived = o.Mode == ModeDerived
	d.pollCtx, d.pollCancel = context.WithCancel(context.Background())
	d.lagSem = make(chan struct{}, o.LagInFlight)
	d.apply(o)
	roles, refs := o.roles()
	for k, ref := range refs {
		copts := o.Child(ref)
		if copts == nil {
			return fmt.Errorf("composite %s %s: no options were given for it (configure it under drivers.%s.*; a program opening the driver itself decodes them with driver.NewComposedOptions)", roles[k], ref, ref)
		}
		name, _ := driver.SplitRef(ref)
		def, ok := driver.Lookup(name)
		if !ok {
			return fmt.Errorf("composite %s %s: %w", roles[k], ref, driver.UnknownDriverError(name))
		}
		cd := def.New()
		if err := cd.Init(ctx, copts); err != nil {
			_ = cd.Close()
			return fmt.Errorf("composite: connect %s %s: %w", roles[k], ref, err)
		}
		d.children = append(d.children, child{role: roles[k], ref: ref, drv: cd})
	}
	if !d.derived && o.Mode == ModeCacheAside && o.WritePolicy == "invalidate" {
		if _, ok := d.children[cacheIdx].drv.(driver.Deleter); !ok {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("composite: writePolicy=invalidate needs a cache that deletes keys, and driver %s cannot: use writePolicy=update", o.Cache))
		}
	}
	return nil
}

// apply takes the live options.
func (d *Driver) apply(o *Options) {
	d.writeUpdate.Store(o.WritePolicy == "update")
	d.readDerived.Store(o.ReadFrom == "derived")
	d.lagSample.Store(math.Float64bits(o.LagSample))
}

// Reconfigure applies writePolicy, readFrom and lagSample.
func (d *Driver) Reconfigure(_ context.Context, opts any) error {
	o, err := driver.OptionsAs[Options](opts)
	if err != nil {
		return err
	}
	if d.opts.Mode == ModeCacheAside && o.WritePolicy == "invalidate" {
		if _, ok := d.children[cacheIdx].drv.(driver.Deleter); !ok {
			return driver.Wrap(driver.ClassRejected, fmt.Errorf("composite: writePolicy=invalidate needs a cache that deletes keys, and driver %s cannot", d.opts.Cache))
		}
	}
	d.apply(o)
	return nil
}

// Measures implements driver.Measurer: a latency series per child, and the visibility
// lag in derived mode.
func (d *Driver) Measures() []string {
	var out []string
	for _, c := range d.children {
		out = append(out, "child."+c.role)
	}
	if d.derived {
		out = append(out, "visibility")
	}
	return out
}

// SetSinks implements driver.Measurer.
func (d *Driver) SetSinks(s []driver.Sink) {
	ss := &sinks{children: s[:len(d.children)]}
	if d.derived {
		ss.visibility = s[len(d.children)]
	}
	d.sinks.Store(ss)
}

// call runs one child operation and records its latency or failure in the child's series
// (a miss is an answer, so it is timed).
func (d *Driver) call(i int, f func(driver.Driver) error) error {
	start := time.Now()
	err := f(d.children[i].drv)
	if s := d.sinks.Load(); s != nil {
		if err == nil || errors.Is(err, driver.ErrNotFound) {
			s.children[i].Observe(time.Since(start))
		} else {
			s.children[i].Fail(driver.Classify(err))
		}
	}
	return err
}

func (d *Driver) read(ctx context.Context, i int, key string) ([]byte, error) {
	var v []byte
	err := d.call(i, func(c driver.Driver) (err error) {
		v, err = c.Read(ctx, key)
		return err
	})
	return v, err
}

func (d *Driver) write(ctx context.Context, i int, key string, value []byte) error {
	return d.call(i, func(c driver.Driver) error { return c.Write(ctx, key, value) })
}

// errClosed is returned by operations after Close.
var errClosed = driver.Wrap(driver.ClassUnavailable, errors.New("composite: driver is closed"))

// Read implements the mode's read path.
func (d *Driver) Read(ctx context.Context, key string) ([]byte, error) {
	if d.closed.Load() {
		return nil, errClosed
	}
	if d.derived {
		i := primaryIdx
		if d.readDerived.Load() {
			i = derivedIdx
		}
		return d.read(ctx, i, key)
	}
	v, err := d.read(ctx, cacheIdx, key)
	switch {
	case err == nil:
		d.hits.Add(1)
		return v, nil
	case errors.Is(err, driver.ErrNotFound):
		d.misses.Add(1)
	case ctx.Err() != nil:
		// The operation's time is up: the database read would fail too.
		return nil, err
	default:
		d.cacheErrors.Add(1)
	}
	v, err = d.read(ctx, databaseIdx, key)
	if err != nil {
		return nil, err
	}
	// The cache's Write must not keep v, and v goes to the caller: both may use it.
	if ferr := d.write(ctx, cacheIdx, key, v); ferr != nil {
		d.fillErrors.Add(1)
	} else {
		d.fills.Add(1)
	}
	return v, nil
}

// Write implements the mode's write path.
func (d *Driver) Write(ctx context.Context, key string, value []byte) error {
	if d.closed.Load() {
		return errClosed
	}
	if d.derived {
		return d.writeDerived(ctx, key, value)
	}
	if err := d.write(ctx, databaseIdx, key, value); err != nil {
		return err
	}
	switch {
	case d.opts.Mode == ModeReadThrough:
		return nil
	case d.opts.Mode == ModeWriteThrough:
		return d.write(ctx, cacheIdx, key, value)
	case d.writeUpdate.Load():
		if err := d.write(ctx, cacheIdx, key, value); err != nil {
			d.updateErrors.Add(1)
		} else {
			d.updates.Add(1)
		}
	default:
		err := d.call(cacheIdx, func(c driver.Driver) error { return c.(driver.Deleter).Delete(ctx, key) })
		if err != nil {
			d.invalidationErrors.Add(1)
		} else {
			d.invalidations.Add(1)
		}
	}
	return nil
}

// writeDerived writes to the primary and, for a sampled write, follows it on the derived
// store in the background.
func (d *Driver) writeDerived(ctx context.Context, key string, value []byte) error {
	if d.inFlight.Load() > 0 {
		// A sample of this key waiting for an older value is superseded by this write.
		if s, ok := d.pending.Load(key); ok {
			s.(*sample).superseded.Store(true)
		}
	}
	if err := d.write(ctx, primaryIdx, key, value); err != nil {
		return err
	}
	acked := time.Now()
	p := math.Float64frombits(d.lagSample.Load())
	if p <= 0 || (p < 1 && rand.Float64() >= p) {
		return nil
	}
	d.lagSampled.Add(1)
	select {
	case d.lagSem <- struct{}{}:
	default:
		d.lagSkipped.Add(1)
		return nil
	}
	s := &sample{acked: acked}
	if old, loaded := d.pending.Swap(key, s); loaded {
		old.(*sample).superseded.Store(true)
	}
	want := bytes.Clone(value) // the engine reuses value's buffer after Write returns
	d.closeMu.Lock()
	if d.closed.Load() {
		d.closeMu.Unlock()
		d.pending.CompareAndDelete(key, s)
		<-d.lagSem
		return nil
	}
	d.inFlight.Add(1)
	d.polls.Add(1)
	d.closeMu.Unlock()
	go d.follow(key, want, acked, s)
	return nil
}

// follow reads key on the derived store until it returns want, the sample is superseded,
// lagTimeout passes, or the driver closes.
func (d *Driver) follow(key string, want []byte, acked time.Time, s *sample) {
	defer func() {
		d.pending.CompareAndDelete(key, s)
		d.inFlight.Add(-1)
		<-d.lagSem
		d.polls.Done()
	}()
	ctx, cancel := context.WithDeadline(d.pollCtx, acked.Add(d.opts.LagTimeout))
	defer cancel()
	t := time.NewTicker(d.opts.LagPoll)
	defer t.Stop()
	for {
		v, err := d.children[derivedIdx].drv.Read(ctx, key)
		if err == nil && bytes.Equal(v, want) {
			if s.superseded.Load() {
				// The later write may carry the same bytes: the time is not this write's.
				d.lagSuperseded.Add(1)
				return
			}
			d.lagVisible.Add(1)
			if ss := d.sinks.Load(); ss != nil {
				ss.visibility.Observe(time.Since(acked))
			}
			return
		}
		if s.superseded.Load() {
			d.lagSuperseded.Add(1)
			return
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			if d.pollCtx.Err() != nil {
				return // closing: not the derived store's fault
			}
			d.lagTimedOut.Add(1)
			if ss := d.sinks.Load(); ss != nil {
				ss.visibility.Fail(driver.ClassTimeout)
			}
			return
		}
	}
}

// ConnectionInfo lists the mode and each child's description, prefixed with its role.
func (d *Driver) ConnectionInfo() map[string]string {
	info := map[string]string{"mode": d.opts.Mode}
	for _, c := range d.children {
		info[c.role] = c.ref
		if ci, ok := c.drv.(driver.ConnectionInfoer); ok {
			for k, v := range ci.ConnectionInfo() {
				info[c.role+"."+k] = v
			}
		}
	}
	return info
}

// DriverStats reports the composition's counters and every child's, prefixed with its
// role.
func (d *Driver) DriverStats() map[string]int64 {
	out := map[string]int64{}
	if d.derived {
		out["lag.sampled"] = d.lagSampled.Load()
		out["lag.visible"] = d.lagVisible.Load()
		out["lag.timed_out"] = d.lagTimedOut.Load()
		out["lag.superseded"] = d.lagSuperseded.Load()
		out["lag.skipped"] = d.lagSkipped.Load()
		// While a derived store is stuck, no sample completes and the series has nothing
		// to show: these two show it as it happens.
		out["lag.in_flight"] = d.inFlight.Load()
		var oldest time.Time
		d.pending.Range(func(_, v any) bool {
			if a := v.(*sample).acked; oldest.IsZero() || a.Before(oldest) {
				oldest = a
			}
			return true
		})
		out["lag.oldest_pending_ms"] = 0
		if !oldest.IsZero() {
			out["lag.oldest_pending_ms"] = time.Since(oldest).Milliseconds()
		}
	} else {
		hits, misses := d.hits.Load(), d.misses.Load()
		out["cache.hits"] = hits
		out["cache.misses"] = misses
		out["cache.errors"] = d.cacheErrors.Load()
		out["fills"] = d.fills.Load()
		out["fill_errors"] = d.fillErrors.Load()
		out["invalidations"] = d.invalidations.Load()
		out["invalidation_errors"] = d.invalidationErrors.Load()
		out["updates"] = d.updates.Load()
		out["update_errors"] = d.updateErrors.Load()
		if n := hits + misses; n > 0 {
			out["hit_ratio_permille"] = hits * 1000 / n
		}
	}
	for _, c := range d.children {
		if sr, ok := c.drv.(driver.StatsReporter); ok {
			for k, v := range sr.DriverStats() {
				out[c.role+"."+k] = v
			}
		}
	}
	return out
}

// Close stops following samples and closes every child.
func (d *Driver) Close() error {
	// Under closeMu, so no write starts following a sample once Wait may run.
	d.closeMu.Lock()
	wasClosed := d.closed.Swap(true)
	d.closeMu.Unlock()
	if wasClosed {
		return nil
	}
	if d.pollCancel != nil {
		d.pollCancel()
	}
	d.polls.Wait()
	var errs []error
	for _, c := range d.children {
		if err := c.drv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close composite %s %s: %w", c.role, c.ref, err))
		}
	}
	return errors.Join(errs...)
}
