package autotune

import (
	"context"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/control"
	"github.com/ndbench/ndbench/internal/pacer"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// Node is what auto-tune drives: the one node interface (control.Node), a node or a
// fleet view that fans them out and merges its nodes' intervals into its collector. The
// search uses its load (Start, Stop, SetShape), its intervals (Collector), its
// configuration (the op classes, their rates and workers) and its status (which classes
// run already).
type Node = control.Node

// FleetNode is a Node made of nodes (cluster.Fleet): the process's own CPU says nothing
// of its generators', so the prober reads none and asks instead, for each merged second,
// which nodes sent less than their share of the rate.
type FleetNode interface {
	Node
	// SaturatedNodes returns the nodes that sent less than their share in the merged
	// second starting at start.
	SaturatedNodes(start time.Time) []string
}

// NodeProber runs the search's steps on a Node: it sets every tuned class to its share
// of the total rate, and measures the node's 1 s intervals.
type NodeProber struct {
	node    Node
	classes []string           // tuned, sorted
	share   map[string]float64 // of the total rate, by class
	others  []string           // enabled classes run beside at their configured rates
	started []string           // classes Begin started, which End stops
	rate    float64            // the total rate set last (0: none yet)

	// CPU is read with the intervals: the process's own usage (0 cores on a fleet view,
	// whose CPU is its nodes'; a fleet judges their saturation itself).
	measureCPU bool
	// fleet, when set, names the saturated nodes of each merged second.
	fleet FleetNode

	// Clock times a step's settle period and the wait for its intervals. NewNodeProber
	// sets the node's own (control.ClockOf): the intervals it judges are stamped on it,
	// and a step's settle period must end on the clock its intervals start by. A caller
	// may set another before Begin.
	Clock clock.Clock

	active atomic.Bool
	snaps  chan snapshot
	unsub  func()
	mu     sync.Mutex
	last   report.Usage
}

// snapshot is what the prober keeps of one interval.
type snapshot struct {
	start, end time.Time
	usage      report.Usage // at the interval's end
	ops        map[string]opSnapshot
	// partial marks a merged fleet second that lacks a node's data; saturated are the
	// fleet's nodes that sent less than their share in it.
	partial   bool
	saturated []string
}

type opSnapshot struct {
	resp, svc, lag    *hdrhistogram.Histogram
	attempted, errors int64
	workers           int
	pending           int64
}

// NewNodeProber returns a prober for n that tunes class ("" for every enabled class
// with a rate, keeping their ratio). With a class named, the other enabled classes run
// beside it at their configured rates.
func NewNodeProber(n Node, class string) (*NodeProber, error) {
	w := n.Config().Config.Workload
	p := &NodeProber{node: n, share: map[string]float64{}, measureCPU: true, Clock: control.ClockOf(n)}
	if f, ok := n.(FleetNode); ok {
		p.fleet, p.measureCPU = f, false
	}
	if class != "" {
		c, ok := w.Class(class)
		if !ok {
			return nil, fmt.Errorf("--class: invalid value %q; allowed: op classes of the workload: %s", class, strings.Join(w.ClassNames(), ", "))
		}
		if c.Workers == 0 && c.MaxWorkers == 0 {
			return nil, fmt.Errorf("--class %s: the class has 0 workers; give it workers (workload.%s)", class, workersKey(class))
		}
		p.classes, p.share[class] = []string{class}, 1
	}
	var total float64
	for _, c := range w.Classes() {
		if !c.Enabled || (c.Workers == 0 && c.MaxWorkers == 0) || c.Name == class {
			continue
		}
		if class != "" {
			p.others = append(p.others, c.Name)
			continue
		}
		if c.Rate == 0 {
			return nil, fmt.Errorf("op class %s runs closed loop (rate 0): give it a rate, its share of the load auto-tune keeps, or disable it, or tune one class with --class", c.Name)
		}
		p.classes = append(p.classes, c.Name)
		p.share[c.Name] = c.Rate
		total += c.Rate
	}
	if len(p.classes) == 0 {
		return nil, ErrNoClasses
	}
	if class == "" {
		for c := range p.share {
			p.share[c] /= total
		}
	}
	slices.Sort(p.classes)
	return p, nil
}

func workersKey(class string) string {
	switch class {
	case config.ClassRead:
		return "readers"
	case config.ClassWrite:
		return "writers"
	}
	return "ops." + class + ".workers"
}

// Classes returns the tuned classes and their shares of the total rate.
func (p *NodeProber) Classes() map[string]float64 {
	out := make(map[string]float64, len(p.share))
	for c, s := range p.share {
		out[c] = s
	}
	return out
}

// Begin subscribes to the node's intervals. End undoes it and what the steps changed.
func (p *NodeProber) Begin() {
	p.snaps = make(chan snapshot, 128)
	p.last = report.ReadUsage()
	p.unsub = p.node.Collector().Subscribe(p.interval)
}

// End gives the tuned classes their configured rates back and stops the classes the
// probes started.
func (p *NodeProber) End() error {
	if p.unsub != nil {
		p.unsub()
	}
	var errs []error
	if len(p.started) > 0 {
		if err := p.node.Stop(p.started...); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range p.classes {
		if err := p.node.SetShape(c, nil); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("end auto-tune: %v", errs)
	}
	return nil
}

// Restart stops and starts the tuned classes: their schedules start afresh, without the
// operations a violating step still owed (see Restarter).
func (p *NodeProber) Restart() error {
	if err := p.node.Stop(p.classes...); err != nil {
		return err
	}
	return p.node.Start(p.classes...)
}

// interval runs on the collector's tick: it copies what the steps need while one
// measures.
func (p *NodeProber) interval(iv *stats.Interval) {
	var u report.Usage
	if p.measureCPU {
		u = report.ReadUsage()
	}
	if !p.active.Load() {
		p.mu.Lock()
		p.last = u
		p.mu.Unlock()
		return
	}
	s := snapshot{start: iv.Start, end: iv.End, usage: u, ops: make(map[string]opSnapshot, len(p.classes)), partial: iv.Partial || len(iv.Missing) > 0}
	if p.fleet != nil {
		s.saturated = p.fleet.SaturatedNodes(iv.Start)
	}
	for _, c := range p.classes {
		o := iv.Op(c)
		if o == nil {
			continue
		}
		os := opSnapshot{resp: stats.NewHistogram(), svc: stats.NewHistogram(), lag: stats.NewLagHistogram(),
			attempted: o.Count() + o.Errors(), errors: o.Errors(), workers: o.Workers, pending: o.Pending}
		merge(os.resp, o.Response)
		merge(os.svc, o.Service)
		merge(os.lag, o.StartLag)
		s.ops[c] = os
	}
	select {
	case p.snaps <- s:
	default: // the prober is not reading: it is between steps
	}
}

func merge(dst, src *hdrhistogram.Histogram) {
	if src != nil {
		dst.Merge(src)
	}
}

// Probe implements Prober.
func (p *NodeProber) Probe(ctx context.Context, rate float64, spec ProbeSpec) (Measurement, error) {
	if p.snaps == nil {
		return Measurement{}, fmt.Errorf("auto-tune prober: Begin was not called")
	}
	if rate != p.rate {
		for _, c := range p.classes {
			if err := p.node.SetShape(c, pacer.Constant(rate*p.share[c])); err != nil {
				return Measurement{}, err
			}
		}
		p.rate = rate
	}
	if p.started == nil {
		running := p.node.Status().Running
		var start []string
		for _, c := range append(slices.Clone(p.classes), p.others...) {
			if !running[c] {
				start = append(start, c)
			}
		}
		if len(start) > 0 {
			if err := p.node.Start(start...); err != nil {
				return Measurement{}, err
			}
		}
		p.started = append([]string{}, start...)
	}
	clk := clock.Or(p.Clock)
	from := clk.Now().Add(spec.Settle)
	// Whole intervals long enough for every class's samples at its target rate.
	secs := spec.Window.Seconds()
	for _, c := range p.classes {
		if r := rate * p.share[c]; r > 0 && spec.SLA != nil {
			secs = max(secs, float64(spec.SLA(c).Samples())/r)
		}
	}
	secs = min(secs, spec.MaxWindow.Seconds())
	n := max(1, int(math.Ceil(secs-1e-9)))

	// Drop what queued between steps, then measure.
	for len(p.snaps) > 0 {
		<-p.snaps
	}
	p.mu.Lock()
	before := p.last
	p.mu.Unlock()
	p.active.Store(true)
	defer p.active.Store(false)
	var got []snapshot
	partial := 0
	stall := clk.NewTimer(time.Hour)
	defer stall.Stop()
	// A partial fleet second (a node's data missing) is left out, not measured: its
	// counts are a lower bound. A window that cannot be filled without them is judged
	// incomplete.
	for len(got) < n && partial <= n {
		stall.Reset(spec.Settle + 5*time.Second)
		select {
		case <-ctx.Done():
			return Measurement{}, ctx.Err()
		case <-stall.C():
			return Measurement{}, fmt.Errorf("no statistics interval for %v: the node's collector is not ticking", spec.Settle+5*time.Second)
		case s := <-p.snaps:
			if s.start.Before(from) {
				before = s.usage
				continue
			}
			if s.partial {
				partial++
				continue
			}
			got = append(got, s)
		}
	}
	if len(got) < n {
		m := Measurement{Classes: map[string]ClassMeasurement{}, PartialSeconds: partial, Incomplete: true}
		if len(got) > 0 {
			m = p.measure(got, before, rate, spec)
			m.PartialSeconds, m.Incomplete = partial, true
		}
		return m, nil
	}
	m := p.measure(got, before, rate, spec)
	m.PartialSeconds = partial
	return m, nil
}

// measure builds the measurement of a window of intervals; before is the process's
// usage when the window began.
func (p *NodeProber) measure(got []snapshot, before report.Usage, rate float64, spec ProbeSpec) Measurement {
	m := Measurement{Start: got[0].start, End: got[len(got)-1].end, Classes: map[string]ClassMeasurement{}}
	// The seconds measured, not the span: partial fleet seconds left out are not in it.
	satSecs := map[string]int{}
	for _, s := range got {
		m.Seconds += s.end.Sub(s.start).Seconds()
		for _, id := range s.saturated {
			satSecs[id]++
		}
	}
	// A node short of its share in a quarter of the window or more (one slow second is
	// noise, not the generator's limit).
	for _, id := range slices.Sorted(maps.Keys(satSecs)) {
		if 4*satSecs[id] >= len(got) {
			m.SaturatedNodes = append(m.SaturatedNodes, id)
		}
	}
	if p.measureCPU && m.Seconds > 0 && before != (report.Usage{}) {
		end := got[len(got)-1].usage
		m.CPUCores = (end.User + end.System - before.User - before.System).Seconds() / m.Seconds
		m.Cores = runtime.GOMAXPROCS(0)
	}
	half := len(got) / 2
	for _, c := range p.classes {
		first, second := stats.NewHistogram(), stats.NewHistogram()
		svc1, svc2, lag := stats.NewHistogram(), stats.NewHistogram(), stats.NewLagHistogram()
		var cm ClassMeasurement
		cm.Target = rate * p.share[c]
		for i, s := range got {
			o, ok := s.ops[c]
			if !ok {
				continue
			}
			if i < half {
				first.Merge(o.resp)
				svc1.Merge(o.svc)
			} else {
				second.Merge(o.resp)
				svc2.Merge(o.svc)
			}
			lag.Merge(o.lag)
			cm.Attempted += o.attempted
			cm.Errors += o.errors
			cm.Workers, cm.Pending = o.workers, o.pending
		}
		q := DefaultSLA.Percentile
		if spec.SLA != nil {
			q = spec.SLA(c).Percentile
		}
		cm.FirstHalf = float64(first.ValueAtQuantile(q))
		cm.SecondHalf = float64(second.ValueAtQuantile(q))
		whole := stats.NewHistogram()
		whole.Merge(first)
		whole.Merge(second)
		cm.Response = float64(whole.ValueAtQuantile(q))
		cm.ServiceFirstHalf = float64(svc1.ValueAtQuantile(q))
		cm.ServiceSecondHalf = float64(svc2.ValueAtQuantile(q))
		svc := stats.NewHistogram()
		svc.Merge(svc1)
		svc.Merge(svc2)
		cm.Service = float64(svc.ValueAtQuantile(q))
		cm.ServiceMean = svc.Mean()
		if half == 0 {
			cm.FirstHalf, cm.ServiceFirstHalf = cm.SecondHalf, cm.ServiceSecondHalf
		}
		cm.StartLag = float64(lag.ValueAtQuantile(q))
		if m.Seconds > 0 {
			cm.Achieved = float64(cm.Attempted) / m.Seconds
		}
		m.Classes[c] = cm
	}
	return m
}
