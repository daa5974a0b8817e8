package engine

import (
	"math"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
)

// Elastic pools size themselves by Little's law: an open-loop pool at rate r against a
// store whose operations take S needs r × S workers, plus a few to drain a backlog. S is
// measured, not guessed: every worker publishes what its operations took (opPath.spent),
// and the check divides the service time of the operations completed over the last
// second by their count. Growing a fixed fraction per check instead overshot: the
// backlog stays until the new workers have run a service time, so a slow store saw the
// pool grow long past its need (an Elasticsearch pool went to 28 where 11 were needed)
// and a slow store at a low rate hardly grew at all.
//
// Operations in flight for much longer than the measured S, and longer than any that
// ended recently, are counted apart, one worker each: they are the store's new, slower regime (or keys that froze) before any of them
// has completed to say so. That is how a pool grows while its workers wait, and why it
// never grows past the operations that exist (those in flight and those overdue).
const (
	// elasticPeriod is how often a pool is checked.
	elasticPeriod = 50 * time.Millisecond
	// elasticBehind is how late its oldest due operation may be before it grows.
	elasticBehind = 10 * time.Millisecond
	// elasticCalm is how long it must keep up with more workers than it needs before it
	// shrinks.
	elasticCalm = 5 * time.Second
	// elasticBusy is the least share of its workers' time a pool must have spent in the
	// store over the last elasticBusyOver for it to grow: when they spend more between
	// operations the generator itself is late (its CPU is saturated, its goroutines wait
	// to be scheduled), and more workers would only add to that. A share over time, not
	// the workers seen in the store at the check: on a loaded machine a worker
	// descheduled mid-operation looks busy at any one instant.
	elasticBusy     = 0.75
	elasticBusyOver = 4 * elasticPeriod
	// elasticWindow is how far back service times are averaged, further (up to
	// elasticHistory) until elasticMinOps operations completed in it. It is also how
	// recently the store must have answered for the pool to grow: a store that answers
	// nothing (an outage, a stall) would hold every worker it is given, and all of them
	// would hit it at once when it recovers.
	elasticWindow  = time.Second
	elasticHistory = 5 * time.Second
	elasticMinOps  = 4
	// elasticSteady is the longer span a pool's growth on Little's law also measures the
	// service time over, when no operation in flight says the store got slower.
	elasticSteady = 2 * elasticWindow
	// elasticStuck: an operation in flight for more than elasticStuck times the measured
	// service time (and more than elasticPeriod) holds its worker for a time the
	// measurement does not know yet.
	elasticStuck = 3
	// elasticDrain is the time a backlog is drained in, with at most 1/elasticDrainShare
	// more workers than the need, so that a pool never holds more than 1.25× the need
	// while it drains.
	elasticDrain      = time.Second
	elasticDrainShare = 4
	// elasticHeadroom is what a shrinking pool keeps above its need: at 100% utilisation
	// any variation in service time builds a backlog, and the pool would grow again.
	elasticHeadroom = 1.25
	// elasticFutile is how long a pool whose growth did not pay does not grow on
	// Little's law again.
	elasticFutile = 3 * time.Second
	// elasticKeptUp is the share of its target rate at which a pool's growth paid.
	elasticKeptUp = 0.95
	// elasticPaid is the share of its growth by which a pool's growth must raise the rate
	// at which its operations complete: a pool bound by the store's service time gains
	// all of it while it stays behind.
	elasticPaid = 0.75
)

// elasticSamples is how many checks elasticHistory holds.
const elasticSamples = int(elasticHistory/elasticPeriod) + 1

// elasticState is what an elastic pool's check has observed (under Engine.mu).
type elasticState struct {
	samples      [elasticSamples]elasticSample // a ring, newest at next-1
	next, filled int
	// lastAnswered is the class's answered operations at the previous check
	// (stats.Recorder.Answered), which falls back at each tick of the collector.
	lastAnswered int64
	// calmSince is since when the pool has kept up with more workers than it needs
	// (zero while it does not).
	calmSince time.Time
	// grownAt is when Little's law last grew the pool, from grownFrom workers, while
	// grownRate operations a second completed and grownInStore were in the store on
	// average; zero once that growth was judged. Growth is refused until futileUntil
	// after one that did not pay.
	grownAt      time.Time
	grownFrom    int
	grownRate    float64
	grownInStore float64
	futileUntil  time.Time
	// grownPending is the operations overdue when Little's law last grew the pool
	// while it was behind (zero once it kept up): a backlog below it is draining.
	grownPending int64
}

// paying returns how many workers a pool of cur that is behind its schedule may grow to
// when Little's law asks for want and no operation in flight says the store got slower:
// at most twice cur, and only once the growth before has paid. A growth paid when it
// raised the rate at which operations complete by elasticPaid of its share, or when the
// workers it added went to wait in the store: the operations in the store at once
// (Little's law again: the service time of those completed over the window, divided by
// the window) rose by elasticPaid of the workers added. The second is a store that
// saturates by queueing (a server at its capacity): it answers no faster whatever is
// sent, so the rate cannot show it, but the operations it holds wait in it, where its
// latency shows the saturation, rather than in the generator's schedule, where they
// would look like the generator's delay (an auto-tune search on such a store ended
// "client-bound" at the store's capacity). A growth that did neither (the workers' time
// goes to the client's CPU, not to waiting on the store: an in-process store, a machine
// with no core to spare) is undone, and the pool does not grow on Little's law for
// elasticFutile.
func (s *elasticState) paying(now time.Time, cur, want int, target float64) int {
	if now.Before(s.futileUntil) {
		return cur
	}
	svc, _, ops := s.over(now, elasticWindow)
	rate := float64(ops) / elasticWindow.Seconds()
	inStore := svc.Seconds() / elasticWindow.Seconds()
	if !s.grownAt.IsZero() {
		if now.Sub(s.grownAt) < elasticWindow+elasticPeriod {
			return cur // not judged yet: the window must hold only the grown pool's operations
		}
		added := float64(cur - s.grownFrom)
		from := s.grownFrom
		s.grownAt = time.Time{}
		// Operations completing at the schedule's rate paid too: the rate cannot rise
		// past it once the backlog is drained.
		if rate < s.grownRate*(1+added/float64(from)*elasticPaid) && rate < elasticKeptUp*target &&
			inStore < s.grownInStore+added*elasticPaid {
			s.futileUntil = now.Add(elasticFutile)
			return from
		}
	}
	want = min(want, 2*cur)
	if want > cur {
		s.grownAt, s.grownFrom, s.grownRate, s.grownInStore = now, cur, rate, inStore
	}
	return want
}

// elasticSample is what one check saw complete since the check before.
type elasticSample struct {
	at  time.Time
	svc time.Duration // the service time of the operations completed
	ops int64         // how many completed
	// held is the time the workers had since the check before (workers × time).
	held time.Duration
	// longest is the longest operation the workers saw end in the last second or two.
	longest  time.Duration
	answered bool // the store answered at least one of them
}

func (s *elasticState) push(x elasticSample) {
	s.samples[s.next] = x
	s.next = (s.next + 1) % elasticSamples
	s.filled = min(s.filled+1, elasticSamples)
}

// newest returns the latest sample.
func (s *elasticState) newest() *elasticSample {
	return &s.samples[(s.next-1+elasticSamples)%elasticSamples]
}

// over returns the service time of the operations completed in the last d before now
// (the whole of each, also what it spent before), the time the workers had then, and how
// many completed.
func (s *elasticState) over(now time.Time, d time.Duration) (svc, held time.Duration, ops int64) {
	for i := range s.filled {
		x := &s.samples[(s.next-1-i+elasticSamples)%elasticSamples]
		if now.Sub(x.at) >= d {
			break
		}
		svc += x.svc
		held += x.held
		ops += x.ops
	}
	return svc, held, ops
}

// window returns the mean service time of the operations completed in the last
// elasticWindow before now (further back until elasticMinOps completed; 0 when none
// did), and whether the store answered in the last elasticWindow.
func (s *elasticState) window(now time.Time) (mean time.Duration, answering bool) {
	var svc time.Duration
	var ops int64
	for i := range s.filled {
		x := &s.samples[(s.next-1-i+elasticSamples)%elasticSamples]
		recent := now.Sub(x.at) < elasticWindow
		if !recent && ops >= elasticMinOps {
			break
		}
		svc += x.svc
		ops += x.ops
		answering = answering || recent && x.answered
	}
	if ops == 0 {
		return 0, answering
	}
	return svc / time.Duration(ops), answering
}

// elastic checks the elastic pools every elasticPeriod and resizes those that need it.
func (e *Engine) elastic() {
	defer e.bgWG.Done()
	// A timer set again once the check is done, not a ticker: on a simulated clock the
	// check then runs, workers it adds included, before the test moves time on.
	t := e.timer.NewTimer(elasticPeriod)
	defer t.Stop()
	for {
		select {
		case <-e.bgCtx.Done():
			return
		case now := <-t.C():
			e.mu.Lock()
			if !e.closed && e.resizeElastic(now) {
				e.reconcile()
			}
			e.mu.Unlock()
			t.Reset(elasticPeriod - clock.Since(e.timer, now))
		}
	}
}

// resizeElastic updates each pool's extra workers and reports whether any changed. Called
// with e.mu held.
func (e *Engine) resizeElastic(now time.Time) (changed bool) {
	g := e.gen.Load()
	for _, c := range e.classes {
		base, most, rate := c.sizing(g)
		st := &c.elastic
		if base == 0 || most <= base || (rate == 0 && c.shape == nil) {
			if st.filled > 0 {
				*st = elasticState{}
			}
			// A fixed pool needs no sample, and reading every worker's counters each
			// check was a cost that grew with the workers, not the operations: 200,000
			// worker visits a second for 10,000 connections' workers (3% of the client's
			// CPU at 1,000 ops/s in the http-conns pair).
			c.unsampled = c.unsampled || len(c.workers) > 0
			continue
		}
		done := c.completed()
		if c.unsampled {
			// The counters ran on while the pool was fixed: this reading is the baseline.
			c.unsampled = false
			continue
		}
		answered := c.rec.Answered()
		done.at, done.answered = now, answered > 0 && answered != st.lastAnswered
		since := elasticPeriod
		if st.filled > 0 {
			since = now.Sub(st.newest().at)
		}
		done.held = time.Duration(len(c.workers)) * since
		st.lastAnswered = answered
		st.push(done)
		if target, cur := c.elasticTarget(now, g.w.OpTimeout, base, most, e.clock.Now()); target != cur {
			c.extra = target - base
			changed = true
		}
	}
	return changed
}

// completed returns what the class's workers completed since the check before.
func (c *opClass) completed() elasticSample {
	var x elasticSample
	for _, w := range c.workers {
		s := w.slot.Load()
		if s == nil {
			continue
		}
		x.longest = max(x.longest, time.Duration(s.longest.Load()))
		v := s.spent.Load()
		d := v - w.seen // modulo 2^64: see spentShift
		w.seen = v
		x.svc += time.Duration(d >> spentShift)
		x.ops += int64(d & spentMask)
	}
	return x
}

// elasticTarget returns the workers the pool should have and those it has (base and most
// are its configured count and its maximum). now is the check's time and clk the reading
// of the engine's clock, which the operations' deadlines are on.
func (c *opClass) elasticTarget(now time.Time, timeout time.Duration, base, most int, clk int64) (target, cur int) {
	st := &c.elastic
	cur = min(base+c.extra, most)
	svc, answering := st.window(now)
	// An operation that has run for as long as the longest that recently ended (a
	// timeout, when a part of the store froze) is nothing new: those are in svc already.
	stuckAfter := max(elasticStuck*svc, st.newest().longest, elasticPeriod)
	busy, stuck := 0, 0
	var inStore time.Duration // in the store over the last elasticBusyOver
	for _, w := range c.workers {
		if in, age := w.inFlight(clk, timeout); in {
			busy++
			inStore += min(age, elasticBusyOver)
			if age > stuckAfter {
				stuck++
			}
		}
	}
	svcOver, held, _ := st.over(now, elasticBusyOver)
	inStore += svcOver
	need := littles(c.pacer.Rate(), svc, most) + stuck
	target = cur
	lag, pending := c.pacer.Backlog()
	switch {
	case lag > elasticBehind:
		st.calmSince = time.Time{}
		if !answering || float64(inStore) < elasticBusy*float64(held) {
			break
		}
		// Never more workers than operations exist: those in flight and those overdue.
		exist := int(min(int64(busy)+pending, int64(most)))
		if stuck == 0 {
			// Little's law for the operations that flow, judged by what it gave before,
			// on the lower of the service times of the last elasticWindow and the last
			// elasticSteady: no operation in flight says the store got slower, and the
			// mean of one second swings with the mix of operations it happened to hold
			// (a third of them at a 250 ms timeout, 330 a second: a standard error of 8%;
			// 70 to 99 ms around the 84 ms of issue 39's frozen backend). Each growth is
			// a new draw the pool keeps until it has been calm for elasticCalm, so the
			// pool reached the highest of them, and 1.25× that with the drain: 38
			// workers where Little's law asks for 25.
			steady := svc
			if sum, _, n := st.over(now, elasticSteady); n > 0 {
				steady = min(svc, sum/time.Duration(n))
			}
			flowing := littles(c.pacer.Rate(), steady, most)
			if cur >= flowing && st.grownPending > 0 && pending < st.grownPending {
				// The pool carries the flow and its backlog fell since it last grew: it
				// is draining. Growing again would size on a new draw of the swinging
				// mean, and the pool would keep the highest draw of all its growths
				// (28-38 workers where Little's law asks for 25, issue 39's frozen
				// backend); its last growth's drain share already clears the backlog.
				break
			}
			flowing += drainFor(pending, steady, flowing, most)
			target = st.paying(now, cur, max(cur, min(flowing, exist)), c.pacer.Rate())
			if target > cur {
				st.grownPending = pending
			}
		} else {
			// A worker for each operation stuck in the store, as long as the others
			// suffice for the flow.
			flowing := need - stuck + drainFor(pending, svc, need, most)
			target = max(cur, min(cur+stuck, stuck+flowing, exist))
		}
	default:
		st.grownAt = time.Time{} // the pool keeps up: its last growth paid
		st.grownPending = 0
		// A pool shrinks once it has kept up for elasticCalm with more workers than it
		// needs, to what it needs now: in one step, measured over the last second only,
		// so that a store that just became fast again is not judged by its slow past.
		keep := max(base, int(math.Ceil(float64(need)*elasticHeadroom)))
		switch {
		case keep >= cur:
			st.calmSince = time.Time{}
		case st.calmSince.IsZero():
			st.calmSince = now
		case now.Sub(st.calmSince) >= elasticCalm:
			target = keep
			st.calmSince = time.Time{}
		}
	}
	return min(max(target, base), most), cur
}

// littles returns the workers Little's law asks for at rate with service time svc, rounded
// up (less a hair, so that an exact product is not one more), at most most.
func littles(rate float64, svc time.Duration, most int) int {
	return int(math.Ceil(min(rate*svc.Seconds(), float64(most)) - 1e-9))
}

// drainFor returns the workers that drain pending overdue operations of service time svc
// in elasticDrain, at most 1/elasticDrainShare of need (and at least one).
func drainFor(pending int64, svc time.Duration, need, most int) int {
	if pending <= 0 || svc <= 0 {
		return 0
	}
	backlog := min(float64(pending)*svc.Seconds()/elasticDrain.Seconds(), float64(most))
	return min(int(math.Ceil(backlog)), max(1, (need+elasticDrainShare-1)/elasticDrainShare))
}

// inFlight reports whether w has an operation (or a batch) in flight, and for how long at
// now (a reading of the engine's clock) when timeout is the op timeout it began with.
func (w *worker) inFlight(now int64, timeout time.Duration) (busy bool, age time.Duration) {
	s := w.slot.Load()
	if s == nil {
		return false, 0
	}
	c := s.current()
	if c == nil || c.status() != opRunning {
		return false, 0
	}
	return true, time.Duration(now - (c.deadline.Load() - int64(timeout)))
}
