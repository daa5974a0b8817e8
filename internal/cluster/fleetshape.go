package cluster

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/pacer"
)

// fleetShape is an op class's load shape at the fleet scope (its rates the fleet's totals)
// and the common instant it applied at.
type fleetShape struct {
	spec ShapeSpec
	at   time.Time
}

// minShapeDelay is the least time a shape's common instant is set ahead: the calls to every
// node must arrive before it (at least 4 round trips of the slowest node, too).
const minShapeDelay = 200 * time.Millisecond

// shapeJob is one node's part of a shape change.
type shapeJob struct {
	m      *member
	share  float64
	offset time.Duration
}

// SetShape gives op class the load shape on every node sharing the load, each its share
// by weight (as a fleet-scope rate is divided), all from one common instant; nil gives
// the class its configured rate back. Every node checks the shape first: one node's
// refusal (an unknown class, a shape it cannot run, another coordinator's run) applies it
// on none. It returns when the shape applied.
func (c *Coordinator) SetShape(ctx context.Context, class string, shape pacer.Shape) error {
	w := c.fleet.Current().Config.Workload
	if _, ok := w.Class(class); !ok {
		return &driver.FieldError{Field: "class", Value: class, Allowed: "op classes of the workload: " + strings.Join(w.ClassNames(), ", ")}
	}
	var spec *ShapeSpec
	if shape != nil {
		s, err := SpecOf(shape)
		if err != nil {
			return err
		}
		if _, err := s.Shape(); err != nil {
			return err
		}
		spec = &s
	}
	c.shapeMu.Lock()
	defer c.shapeMu.Unlock()
	jobs, slowest := c.shapeJobs(class, spec, true)
	ms := make([]*member, len(jobs))
	for i, j := range jobs {
		ms[i] = j.m
	}
	c.mu.Lock()
	run := c.run
	err := c.heldElsewhere(ms)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	req := func(j shapeJob, at time.Time, dry bool) ShapeRequest {
		r := ShapeRequest{Coordinator: c.opts.Self.ID, Run: run, Class: class, DryRun: dry}
		if spec != nil {
			s := spec.Scaled(j.share)
			r.Shape = &s
		}
		if !at.IsZero() {
			r.At = at.Add(j.offset)
		}
		return r
	}
	if err := c.fanOut("load shape check", ms, func(m *member) error {
		return m.client().call(ctx, http.MethodPost, "/api/v1/cluster/shape", req(jobs[indexOf(ms, m)], time.Time{}, true), nil)
	}); err != nil {
		return err
	}
	at := c.now().Add(min(max(minShapeDelay, 4*slowest), maxShapeWait/2))
	c.mu.Lock()
	if spec == nil {
		delete(c.shapes, class)
	} else {
		if c.shapes == nil {
			c.shapes = map[string]fleetShape{}
		}
		c.shapes[class] = fleetShape{spec: *spec, at: at}
	}
	c.mu.Unlock()
	return c.fanOut("set load shape", ms, func(m *member) error {
		j := jobs[indexOf(ms, m)]
		err := m.client().call(ctx, http.MethodPost, "/api/v1/cluster/shape", req(j, at, false), nil)
		if err == nil {
			c.noteShaped(m, class, spec != nil, j.share)
		}
		return err
	})
}

// shapeJobs returns the live nodes sharing the load, each with its share of class's
// shape, and the slowest round trip among them; all: every such node, else only those
// whose share changed since they were last sent one.
func (c *Coordinator) shapeJobs(class string, spec *ShapeSpec, all bool) ([]shapeJob, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live, share := c.sharing()
	total := 0.0
	in := map[string]bool{}
	for _, s := range share {
		total += s.w()
		in[s.id] = true
	}
	var jobs []shapeJob
	slowest := time.Duration(0)
	for _, m := range live {
		if !in[m.ID] || total <= 0 {
			continue
		}
		f := m.split().w() / total
		if !all {
			old, had := m.shaped[class]
			if had && old == f || spec == nil && !had {
				continue
			}
		}
		jobs = append(jobs, shapeJob{m: m, share: f, offset: m.offset})
		slowest = max(slowest, m.rtt)
	}
	return jobs, slowest
}

func (c *Coordinator) noteShaped(m *member, class string, set bool, share float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !set {
		delete(m.shaped, class)
		return
	}
	if m.shaped == nil {
		m.shaped = map[string]float64{}
	}
	m.shaped[class] = share
}

func indexOf(ms []*member, m *member) int {
	for i, x := range ms {
		if x == m {
			return i
		}
	}
	return -1
}

// reshape sends the fleet's shapes again to the nodes whose share changed (a node joined,
// or a lost node's share went to the others), continued where the fleet's shape is: the
// common instant's time since the shape first applied is skipped.
func (c *Coordinator) reshape(ctx context.Context) error {
	c.shapeMu.Lock()
	defer c.shapeMu.Unlock()
	c.mu.Lock()
	shapes := make(map[string]fleetShape, len(c.shapes))
	for k, v := range c.shapes {
		shapes[k] = v
	}
	run := c.run
	c.mu.Unlock()
	var errs []NodeError
	for class, fs := range shapes {
		jobs, slowest := c.shapeJobs(class, &fs.spec, false)
		if len(jobs) == 0 {
			continue
		}
		at := c.now().Add(min(max(minShapeDelay, 4*slowest), maxShapeWait/2))
		ms := make([]*member, len(jobs))
		for i, j := range jobs {
			ms[i] = j.m
		}
		err := c.fanOut("re-split load shape", ms, func(m *member) error {
			j := jobs[indexOf(ms, m)]
			s := fs.spec.Scaled(j.share)
			if d := at.Sub(fs.at); d > 0 {
				s.SkipMs += float64(d) / float64(time.Millisecond)
			}
			req := ShapeRequest{Coordinator: c.opts.Self.ID, Run: run, Class: class, Shape: &s, At: at.Add(j.offset)}
			err := m.client().call(ctx, http.MethodPost, "/api/v1/cluster/shape", req, nil)
			if err == nil {
				c.noteShaped(m, class, true, j.share)
			}
			return err
		})
		if fe, ok := err.(*FleetError); ok {
			errs = append(errs, fe.Nodes...)
		}
	}
	if errs != nil {
		return &FleetError{Op: "re-split load shape", Nodes: errs}
	}
	return nil
}

// now reads the clock the fleet schedules by: the instants it sends nodes (a start's, a
// shape's) and the beats it estimates their clocks' offsets from must come from one clock,
// or a simulated test would mix real and simulated instants.
func (c *Coordinator) now() time.Time { return clock.Or(c.opts.Clock).Now() }
