package script

import (
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// goja has no allocation limit, and a script that allocates in a loop takes the whole
// process down ("fatal error: out of memory") long before any deadline. The generation's
// watchdog therefore watches the Go heap: live bytes as the last garbage collection
// measured them, read (runtime/metrics, a few atomic loads, no stop of the world) every
// tick and at the end of every collection, since a runaway allocation doubles the heap
// in less than a tick. Growth past memoryLimit above the heap at load stops every
// runtime of the script: running calls are interrupted (class rejected), all runtimes
// are dropped, so whatever a script kept in its globals becomes garbage, and calls are
// refused until the calls stopped have returned and a collection has measured the heap
// again, which then becomes the new base. New calls start afresh in new runtimes
// (running init again).
//
// The heap is the process's, not the scripts' alone (Go has no per-goroutine
// accounting): a growth of the rest of ndbench past memoryLimit while scripts run stops
// them once, after which the new heap is the base. The live figure is as fresh as the
// last collection, which runs when the heap has doubled (GOGC): when the heap's objects
// pass the limit while a call runs, the watchdog forces one (at most once a second) to
// measure. A script allocating at Go speed (typed arrays in a loop) can still outrun it
// by a few doublings, and one allocation larger than the free memory (new
// ArrayBuffer(1e12)) fails inside goja before any watchdog can look.
// debug.SetMemoryLimit is not used: it is process-wide, and makes the collector work
// harder rather than stop anything.

// liveHeapMetric is the heap that the last garbage collection found live; objectsMetric
// is the heap's objects now, live or not yet collected.
const (
	liveHeapMetric = "/gc/heap/live:bytes"
	objectsMetric  = "/memory/classes/heap/objects:bytes"
)

// forcedGCEvery spaces the collections the watchdog forces to measure a heap whose
// objects passed the limit: the live figure is only as fresh as the last collection,
// which a fast allocator outruns (the collector runs when the heap doubles), but a heap
// larger than the limit by itself would otherwise force one every tick.
const forcedGCEvery = time.Second

// memWatch is the memory watchdog's state, owned by the watchdog goroutine.
type memWatch struct {
	limit    uint64
	sample   []metrics.Sample
	base     uint64
	forcedGC time.Time
	// stopped is when the scripts were stopped for memory (zero when running).
	stopped time.Time
}

func newMemWatch(limit uint64) *memWatch {
	m := &memWatch{limit: limit, sample: []metrics.Sample{{Name: liveHeapMetric}, {Name: objectsMetric}}}
	m.base = m.live()
	if m.base == 0 {
		// No collection has run yet (a fresh process), so nothing measured the heap:
		// one now, while it is small, gives the base.
		runtime.GC()
		m.base = m.live()
	}
	return m
}

// live reads the live heap; 0 if this Go does not have the metric (the watch is off).
func (m *memWatch) live() uint64 {
	live, _ := m.read()
	return live
}

// read reads the live heap and the heap's objects.
func (m *memWatch) read() (live, objects uint64) {
	metrics.Read(m.sample)
	if m.sample[0].Value.Kind() != metrics.KindUint64 || m.sample[1].Value.Kind() != metrics.KindUint64 {
		return 0, 0
	}
	return m.sample[0].Value.Uint64(), m.sample[1].Value.Uint64()
}

// watchMemory is the watchdog's memory check, every tick: it stops the scripts when the
// heap grew past the limit, and resumes them once the runtimes it stopped have returned.
func (g *generation) watchMemory(m *memWatch, vms []*vm, now time.Time) {
	if !m.stopped.IsZero() {
		busy := false
		for _, v := range vms {
			// Every runtime running now is stopped, not only those the stop saw: a call
			// that passed run's check of memErr just before the stop, in a runtime
			// created or taken from the pool after it, would run on and be measured into
			// the new base, which then ratcheted up with every stop.
			if v.running() {
				busy = true
				v.stop(*g.memErr.Load())
			}
		}
		// The calls stopped end at once unless in a host call, which their limit ends.
		if busy && now.Sub(m.stopped) < g.callTimeout+time.Second {
			return
		}
		// The dropped runtimes are garbage now: collect them, so the base is the heap
		// without them.
		runtime.GC()
		m.base = m.live()
		m.stopped = time.Time{}
		g.memErr.Store(nil)
		return
	}
	live, objects := m.read()
	if live == 0 {
		return
	}
	if live <= m.base+m.limit && objects > m.base+m.limit && now.Sub(m.forcedGC) >= forcedGCEvery && anyRunning(vms) {
		// The objects passed the limit: garbage, or growth the collector has not
		// measured yet. Measure now rather than at the next doubling.
		m.forcedGC = now
		runtime.GC()
		live = m.live()
	}
	if live <= m.base+m.limit {
		return
	}
	err := driver.Wrap(driver.ClassRejected, fmt.Errorf(
		"script %s: stopped: the Go heap grew by %s while scripts ran, past memoryLimit %s (every runtime is dropped; calls start afresh once the heap is measured again)",
		g.src.name, mib(live-m.base), driver.Size(m.limit)))
	g.memErr.Store(&err)
	g.memStops.Add(1)
	m.stopped = now
	slog.Warn("script: stopped for memory", "script", g.src.name, "heapLive", mib(live),
		"base", mib(m.base), "memoryLimit", driver.Size(m.limit).String())
	for _, v := range vms {
		v.stop(err)
	}
	// Idle runtimes may hold what grew, in their globals: drop them too.
	g.poolMu.Lock()
	idle := g.idle
	g.idle = nil
	g.poolMu.Unlock()
	for _, v := range idle {
		g.created.Add(-1)
		g.forget(v)
	}
}

// mib formats a byte count for messages.
func mib(n uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// anyRunning says whether one of vms runs an operation.
func anyRunning(vms []*vm) bool {
	for _, v := range vms {
		if v.running() {
			return true
		}
	}
	return false
}

// sentinel is an object made only to be collected: its finalizer marks the end of a
// garbage collection. (It has a pointer so the tiny allocator, whose blocks are freed
// together, never holds it.)
type sentinel struct {
	_ *byte
	_ [16]byte
}

// onEveryGC sends on c (without blocking) after every garbage collection, until stop is
// closed.
func onEveryGC(c chan<- struct{}, stop <-chan struct{}) {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		select {
		case <-stop:
			return
		default:
		}
		select {
		case c <- struct{}{}:
		default:
		}
		onEveryGC(c, stop)
	})
}
