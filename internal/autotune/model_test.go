package autotune

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// queueModel is a store with a known capacity under an SLA, measured on simulated time:
// an M/M/1 queue served at mu operations per second, whose response times at an arrival
// rate lambda < mu are exponential with rate mu - lambda. A probe draws the window's
// operations (lambda × window of them, as many as a real window holds, up to a cap) from
// a seeded source, so each step's percentile carries the sampling noise a real one does;
// no wall-clock time passes. At or beyond mu the queue grows without bound through the
// window: the percentile rises from the first half to the second.
type queueModel struct {
	mu     float64
	rng    *rand.Rand
	probes int
}

// capacityUnder is the highest arrival rate whose q-quantile of response time is within
// bound: the exponential's quantile is -ln(1-q)/(mu-lambda).
func (m *queueModel) capacityUnder(q float64, bound time.Duration) float64 {
	return m.mu - -math.Log(1-q)/bound.Seconds()
}

func (m *queueModel) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	m.probes++
	sla := p.SLA("read")
	q := sla.Percentile / 100
	// The window is as long as the percentile's samples need, within the step's bounds,
	// as NodeProber measures it.
	window := min(max(p.Window.Seconds(), float64(sla.Samples())/rate), max(p.MaxWindow, p.Window).Seconds())
	n := int(rate * window)
	c := ClassMeasurement{Target: rate, Achieved: rate, Attempted: int64(n), StartLag: 20, Workers: 8}
	// Near and past mu the queue has no steady state within the step: from empty, in T
	// seconds it builds to about sqrt(mu × T) operations by chance alone, so the waits
	// are those of a queue served at a margin of at least sqrt(mu / T) (the stable case
	// below meets it at mu - sqrt(mu/T)), plus what a rate beyond mu piles up.
	T := p.Settle.Seconds() + window
	theta := max(m.mu-rate, math.Sqrt(m.mu/T))
	if rate >= m.mu {
		waitAt := func(s float64) float64 {
			return 1e6 * (-math.Log(1-q)/theta + (p.Settle.Seconds()+s)*(rate-m.mu)/m.mu)
		}
		c.FirstHalf, c.SecondHalf = waitAt(window/4), waitAt(3*window/4)
		c.Response, c.Service = waitAt(window), waitAt(window)
		c.ServiceFirstHalf, c.ServiceSecondHalf = c.FirstHalf, c.SecondHalf
		c.ServiceMean = waitAt(window/2) / -math.Log(1-q)
		c.Achieved = m.mu
		return Measurement{Seconds: window, Classes: map[string]ClassMeasurement{"read": c}}, nil
	}
	// The percentile of k exponential samples: the true quantile -ln(1-q)/theta, give or
	// take the sample quantile's normal spread, sqrt(q/((1-q)k))/theta (drawing and
	// sorting a 60k/s window's samples for every step of every seed would cost minutes).
	quantile := func(k int) float64 {
		k = max(k, 1)
		return 1e6 / theta * (-math.Log(1-q) + m.rng.NormFloat64()*math.Sqrt(q/((1-q)*float64(k))))
	}
	c.Response, c.FirstHalf, c.SecondHalf = quantile(n), quantile(n/2), quantile(n-n/2)
	// The generator keeps up (start lag ~0), so the store's service time is the response.
	c.Service, c.ServiceFirstHalf, c.ServiceSecondHalf = c.Response, c.FirstHalf, c.SecondHalf
	c.ServiceMean = 1e6 / theta
	// An open-loop generator that keeps up sends its schedule: the achieved rate is the
	// target (c.Achieved above).
	return Measurement{Seconds: window, Classes: map[string]ClassMeasurement{"read": c}}, nil
}

// TestSearchFindsModelCapacity is the auto-tune capacity bar on simulated time: against a
// queue of known capacity under the SLA, across many seeds and three orders of magnitude
// of capacity, the search finds it within 3%, and never reports a rate the model cannot
// hold within the SLA as capacity. It replaces, for CI, the real-time capacity test
// (TestFindsMemoryCapacity, make test-extended), whose knee moves with the machine.
func TestSearchFindsModelCapacity(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 8
	}
	for _, tc := range []struct {
		name     string
		capacity float64 // under the SLA, before each seed's spread
		bound    time.Duration
		q        float64
	}{
		{"300/s p99 100ms", 300, 100 * time.Millisecond, 99},
		{"5k/s p99 10ms", 5000, 10 * time.Millisecond, 99},
		{"60k/s p99.9 2ms", 60000, 2 * time.Millisecond, 99.9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var worst float64
			for seed := range seeds {
				rng := rand.New(rand.NewPCG(uint64(seed), 42))
				// Each seed's store is up to 30% stronger, so the bisection's steps fall
				// at other places relative to the knee.
				want := tc.capacity * (1 + 0.3*rng.Float64())
				m := &queueModel{mu: want - math.Log(1-tc.q/100)/tc.bound.Seconds(), rng: rng}
				if got := m.capacityUnder(tc.q/100, tc.bound); math.Abs(got-want) > 1e-6*want {
					t.Fatalf("model capacity %v, want %v", got, want)
				}
				s := Settings{SLA: SLA{Percentile: tc.q, Latency: tc.bound, MaxErrors: 0.01, MinAchieved: 0.97}, Start: 1000}
				r := Search(context.Background(), m, s)
				if r.Status != StatusFound {
					t.Fatalf("seed %d: status %s (%s), want found near %.0f/s after %d probes", seed, r.Status, r.Message, want, m.probes)
				}
				dev := (r.Capacity - want) / want
				worst = max(worst, math.Abs(dev))
				if math.Abs(dev) > 0.03 {
					t.Errorf("seed %d: capacity %.0f/s, want %.0f/s within 3%% (%+.1f%%); interval [%.0f, %.0f]", seed, r.Capacity, want, 100*dev, r.Lo, r.Hi)
				}
			}
			t.Logf("%d seeds: worst deviation %.2f%%", seeds, 100*worst)
		})
	}
}
