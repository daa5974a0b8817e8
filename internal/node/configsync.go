package node

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
)

// ErrorEvent is the last error the node met outside a request (see control.ErrorEvent).
type ErrorEvent = control.ErrorEvent

// requireConnectedOptions is a store requirement: while driver.name selects another
// driver than the connected one (a change pending until the next Init), the connected
// driver's options must still be valid, because it takes live changes from them. The
// store's own validation covers the selected driver.
func (i *Node) requireConnectedOptions(next *config.Snapshot) error {
	i.mu.Lock()
	name := i.drvName
	i.mu.Unlock()
	if name == "" || name == next.Config.DriverName {
		return nil
	}
	_, err := next.DriverOptions(name)
	return err
}

// PatchResult says what a configuration change did (see control.PatchResult).
type PatchResult = control.PatchResult

// Patch changes configuration values in the runtime layer (the API's and UI's layer,
// above file, env and etcd). The whole configuration is validated first: an invalid
// change applies nothing and returns field errors. The change is untrusted
// (config.OriginAPI): what it sets beyond the store must pass the store's config.Allow.
func (i *Node) Patch(values map[string]string) (PatchResult, error) {
	snap, err := i.store.PatchFrom(config.LayerRuntime, config.OriginAPI, values)
	if err != nil {
		return PatchResult{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return PatchResult{Snapshot: snap, Pending: slices.Clone(i.pending)}, nil
}

// onConfig applies every accepted configuration change, whatever its source, to the
// engine and the driver. It runs under the store's lock, so it only does what is quick:
// the engine's Apply, and queueing live driver options for the reconfigurer.
func (i *Node) onConfig(_, new *config.Snapshot, changed []string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.drv == nil {
		return
	}
	if i.eng != nil && slices.ContainsFunc(changed, func(k string) bool { return strings.HasPrefix(k, "workload.") }) {
		// The store validated the workload with the validator the engine uses, so this
		// cannot fail on the workload itself; an error here is a bug worth reporting.
		if err := i.eng.Apply(new.Config.Workload); err != nil {
			i.recordErr(fmt.Errorf("apply workload: %w", err))
		}
	}
	i.syncDriver(new)
}

// syncDriver brings the connected driver's state in line with snap: pending lists every
// key whose configured value the driver cannot take before the next Init (computed afresh,
// so a key set back to the running value leaves it), and live options that changed are
// queued for Reconfigure. Called with mu held.
func (i *Node) syncDriver(snap *config.Snapshot) {
	var pending []string
	if snap.Config.DriverName != i.drvName {
		pending = append(pending, "driver.name")
	}
	// The store checked these options (Build for the selected driver, the requirement
	// otherwise), so this only fails if that check was bypassed.
	newOpts, err := snap.DriverOptions(i.drvName)
	if err != nil {
		i.recordErr(err)
		i.pending = pending
		return
	}
	prefix := "drivers." + i.drvName + "."
	live, restart := driver.Changed(i.drvInit, newOpts)
	for _, o := range restart {
		pending = append(pending, prefix+o)
	}
	// A composition's children take their options at Init only.
	pending = append(pending, changedChildren(i.drvInit, newOpts)...)
	target := liveOnly(i.drvInit, newOpts, live)
	// Live options wait for the next Init when the driver cannot reconfigure, or when
	// they only make sense with options that need a restart (memcached's localZone
	// naming a zone that is not connected yet). Then the driver keeps what it has, and
	// the live options that differ from that are pending.
	if len(live) > 0 && (i.reconf == nil || driver.Validate(target) != nil) {
		cur := i.drvOpts
		if i.reconf != nil {
			cur = i.reconf.want
		}
		differ, _ := driver.Changed(cur, target)
		for _, o := range differ {
			pending = append(pending, prefix+o)
		}
		slices.Sort(pending)
		i.pending = pending
		return
	}
	slices.Sort(pending)
	i.pending = pending
	if i.reconf != nil {
		i.reconf.queue(target, snap.Version)
	}
}

// changedChildren lists the drivers.<ref>.<option> keys whose value differs between the
// children of two options of a composition (none when they are not one, or when the set
// of children changed, which is an option of the composition itself).
func changedChildren(cur, next any) []string {
	c, ok := cur.(driver.Composer)
	n, ok2 := next.(driver.Composer)
	if !ok || !ok2 || !slices.Equal(c.Children(), n.Children()) {
		return nil
	}
	var out []string
	for _, ref := range c.Children() {
		co, no := c.Child(ref), n.Child(ref)
		if co == nil || no == nil {
			continue
		}
		live, restart := driver.Changed(co, no)
		for _, o := range append(live, restart...) {
			out = append(out, "drivers."+ref+"."+o)
		}
		out = append(out, changedChildren(co, no)...)
	}
	return out
}

// liveOnly returns a copy of the current options with only the live options taken from
// next, so Reconfigure never sees a change to an option that needs a restart.
func liveOnly(cur, next any, live []string) any {
	def := driver.Values(cur, false)
	nv := driver.Values(next, false)
	for _, o := range live {
		def[o] = nv[o]
	}
	// Both come from the same schema, so Set cannot fail on these values.
	out := cloneOptions(cur)
	_ = driver.Set(out, def)
	return out
}

// cloneOptions returns a copy of an options struct (a pointer to it).
func cloneOptions(opts any) any {
	v := reflect.ValueOf(opts).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	return c.Interface()
}

func (i *Node) recordErr(err error) {
	// Errors come from drivers and sources too (a reconfigure that echoes a DSN, an etcd
	// endpoint): what is shown and logged goes through the one redaction.
	msg := driver.Shown(false, err.Error())
	i.lastErr = &ErrorEvent{Time: time.Now(), Message: msg}
	i.log.Error("configuration change not applied", "err", msg)
}

// RecordError lets a configuration source (watched file, etcd) report a change it could
// not apply, so it shows in Status.
func (i *Node) RecordError(err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.recordErr(err)
}
