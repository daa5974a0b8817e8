package autotune

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Measurement is what one step measured over its window, after the settle period.
type Measurement struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
	// CPUCores is how many cores the generator's process kept busy over the window, and
	// Cores how many the machine has (0 when not measured, e.g. a simulated store).
	CPUCores float64 `json:"cpuCores,omitempty"`
	Cores    int     `json:"cores,omitempty"`
	// Classes has one entry per tuned op class.
	Classes map[string]ClassMeasurement `json:"classes"`
	// On a fleet: PartialSeconds counts the merged seconds left out of the window because
	// a node's data was missing (their counts are a lower bound); Incomplete says the
	// window could not be filled without them. SaturatedNodes are the nodes that sent
	// less than their share in a quarter of the window's seconds or more.
	PartialSeconds int      `json:"partialSeconds,omitempty"`
	Incomplete     bool     `json:"incomplete,omitempty"`
	SaturatedNodes []string `json:"saturatedNodes,omitempty"`
}

// ClassMeasurement is one op class's figures over a step's window. Latencies are in
// microseconds, at the class's SLA percentile.
type ClassMeasurement struct {
	// Target is the rate asked for, Achieved the attempted operations per second.
	Target   float64 `json:"target"`
	Achieved float64 `json:"achieved"`
	// Attempted and Errors count operations over the window.
	Attempted int64 `json:"attempted"`
	Errors    int64 `json:"errors"`
	// Response is the response-time percentile over the window; FirstHalf and SecondHalf
	// over each half of it (a rising percentile is a violation).
	Response   float64 `json:"response"`
	FirstHalf  float64 `json:"firstHalf"`
	SecondHalf float64 `json:"secondHalf"`
	// Service is the service-time percentile (from the actual start): what the store
	// took. StartLag is the start-lag percentile: how late the generator started ops.
	Service  float64 `json:"service"`
	StartLag float64 `json:"startLag"`
	// ServiceFirstHalf and ServiceSecondHalf are the service-time percentile over each
	// half of the window.
	ServiceFirstHalf  float64 `json:"serviceFirstHalf"`
	ServiceSecondHalf float64 `json:"serviceSecondHalf"`
	// ServiceMean is the mean service time: with Achieved, how many operations were in
	// the store at once (Little's law).
	ServiceMean float64 `json:"serviceMean"`
	// Pending is how many intended operations were overdue and unclaimed when the window
	// ended (the pacer's backlog), and Workers the pool's size then.
	Pending int64 `json:"pending"`
	Workers int   `json:"workers"`
}

// ErrorRatio is Errors / Attempted (0 without attempts).
func (c ClassMeasurement) ErrorRatio() float64 {
	if c.Attempted == 0 {
		return 0
	}
	return float64(c.Errors) / float64(c.Attempted)
}

// Verdict is how a step was judged.
type Verdict string

// Verdicts.
const (
	// Pass: every class met its SLA.
	Pass Verdict = "pass"
	// Fail: a class violated its SLA and the generator was not saturated: the store's
	// limit.
	Fail Verdict = "fail"
	// ClientBound: a class violated its SLA while the generator was saturated: the
	// generator's limit, which says nothing about the store's beyond "at least this".
	ClientBound Verdict = "client-bound"
)

// Generator bounds when the load generator itself counts as saturated.
type Generator struct {
	// StartLag bounds the start-lag percentile (at the SLA's percentile) while the
	// store's service time is within the SLA; 0 means half the class's latency bound.
	StartLag time.Duration `json:"startLag"`
	// CPU is the fraction of the machine's cores the process may keep busy, in (0, 1];
	// above it the generator is saturated. 0 means 0.9.
	CPU float64 `json:"cpu"`
	// Rise is how much the percentile may grow from the window's first half to its second
	// before the step is a violation: by this factor and by RiseMin of the bound both.
	// 0 means 1.5.
	Rise float64 `json:"rise"`
	// RiseMin is the least rise, as a fraction of the latency bound, that counts; 0
	// means 0.25.
	RiseMin float64 `json:"riseMin"`
}

func (g Generator) withDefaults() Generator {
	if g.CPU == 0 {
		g.CPU = 0.9
	}
	if g.Rise == 0 {
		g.Rise = 1.5
	}
	if g.RiseMin == 0 {
		g.RiseMin = 0.25
	}
	return g
}

// Judge judges a step's measurement against the SLA of each class (slas[class], or def)
// and the generator's bounds. It returns the verdict and why: the violations, and for a
// client-bound step what saturated the generator. A passing step's why lists warnings.
//
// A violation is the store's when the store shows it: errors, or a response-time
// percentile over its bound (or rising) while the service time (from the actual start:
// what the store took, its queueing included) is over the bound (or rising) too, or a
// shortfall of the achieved rate while the service time is over the bound. The same
// violations with the service time within SLA came from operations starting late: the
// generator's (too few workers, a starved process), so the step is client-bound, as is
// every violating step while the process's CPU is saturated.
//
// baseline, when known, has each class's mean service time at a low rate within SLA: a
// mean grown well beyond it (at least 4×, and by 5% of the bound) shows the store queueing even while a bounded pool of workers
// caps it below the bound (every worker waiting in the store, the rest of the schedule
// backing up in the generator): that is the store's limit, not the generator's.
//
// On a fleet, a window the merged statistics could not fill with complete seconds is
// client-bound: it is no evidence of the store's limit either way. Nodes that sent less
// than their share count as the generator's saturation, as start lag does: a violation
// with the store's service time within SLA is then client-bound, and names them.
// littleRise is how far the mean service time must rise over its baseline, and
// littleInStore the share of the pool that must be in the store, for a step whose pool
// would have carried its target at the baseline speed to be the store's limit.
const (
	littleRise    = 2.0
	littleInStore = 0.75
)

func Judge(m Measurement, slas map[string]SLA, def SLA, g Generator, baseline map[string]float64) (Verdict, []string) {
	g = g.withDefaults()
	if m.Incomplete {
		return ClientBound, []string{fmt.Sprintf("fleet statistics incomplete: %d merged second(s) lacked a node's data, too many to fill the window; not evidence of the store's limit", m.PartialSeconds)}
	}
	var store, client, saturated []string
	if m.Cores > 0 && m.CPUCores >= g.CPU*float64(m.Cores) {
		saturated = append(saturated, fmt.Sprintf("generator CPU %.2f of %d cores", m.CPUCores, m.Cores))
	}
	if len(m.SaturatedNodes) > 0 {
		saturated = append(saturated, "fleet node(s) "+strings.Join(m.SaturatedNodes, ", ")+" sent less than their share")
	}
	for _, name := range slices.Sorted(maps.Keys(m.Classes)) {
		c := m.Classes[name]
		sla, ok := slas[name]
		if !ok {
			sla = def
		}
		p, bound := sla.PercentileName(), float64(sla.Latency.Microseconds())
		if c.Attempted == 0 {
			store = append(store, name+" completed no operations")
			continue
		}
		rising := func(a, b float64) bool { return a > 0 && b > g.Rise*a && b-a > g.RiseMin*bound }
		storeSlow := c.Service > bound || rising(c.ServiceFirstHalf, c.ServiceSecondHalf)
		if b := baseline[name]; b > 0 && c.ServiceMean > 4*b && c.ServiceMean-b > 0.05*bound {
			storeSlow = true
		}
		// Little's law: a pool that would have carried the target at the baseline service
		// time, with its workers in the store (achieved × mean service time ≈ workers),
		// fell short because the store answered slower under this load: it queues, as a
		// server at its capacity does. More workers would only queue in it too, so the
		// pool is not what limited the step (a search on a store with a capacity ended
		// "client-bound" at it while 16 workers waited in the store 4 ms each).
		if b := baseline[name]; b > 0 && c.Workers > 0 && c.Target > 0 && c.ServiceMean >= littleRise*b &&
			float64(c.Workers)/(b/1e6) >= c.Target && c.Achieved*c.ServiceMean/1e6 >= littleInStore*float64(c.Workers) {
			storeSlow = true
		}
		lagBound := float64(g.StartLag.Microseconds())
		if lagBound == 0 {
			lagBound = bound / 2
		}
		blame := func(v string) {
			if storeSlow {
				store = append(store, v)
			} else {
				client = append(client, v)
			}
		}
		if c.Target > 0 && c.Achieved < sla.MinAchieved*c.Target {
			blame(fmt.Sprintf("%s achieved %.1f%% of %s/s < %s", name, 100*c.Achieved/c.Target, rateText(c.Target), pct(sla.MinAchieved)))
		}
		if r := c.ErrorRatio(); r > sla.MaxErrors {
			store = append(store, fmt.Sprintf("%s errors %.3g%% > %s", name, 100*r, pct(sla.MaxErrors)))
		}
		if c.Response > bound {
			blame(fmt.Sprintf("%s %s %s > %s", name, p, us(c.Response), us(bound)))
		} else if rising(c.FirstHalf, c.SecondHalf) {
			blame(fmt.Sprintf("%s %s rising %s → %s across the window", name, p, us(c.FirstHalf), us(c.SecondHalf)))
		}
		if c.StartLag > lagBound && !storeSlow {
			saturated = append(saturated, fmt.Sprintf("%s start lag %s %s > %s while the store's service %s %s is within SLA (%d workers, %d ops overdue)",
				name, p, us(c.StartLag), us(lagBound), p, us(c.Service), c.Workers, c.Pending))
		}
	}
	cpu := m.Cores > 0 && m.CPUCores >= g.CPU*float64(m.Cores)
	switch {
	case len(store) == 0 && len(client) == 0:
		if len(saturated) > 0 {
			return Pass, []string{"within SLA, but " + strings.Join(saturated, "; ")}
		}
		return Pass, nil
	case len(store) > 0 && !cpu:
		return Fail, append(store, client...)
	default:
		why := append(store, client...)
		if len(saturated) == 0 {
			saturated = []string{"operations started late while the store's service time was within SLA"}
		}
		return ClientBound, append(why, "generator saturated: "+strings.Join(saturated, "; "))
	}
}

// us formats microseconds as a duration: "850µs", "12.3ms", "1.2s".
func us(v float64) string {
	d := time.Duration(v * float64(time.Microsecond))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

// rateText formats a rate in ops/s compactly: 950, 12.5k, 1.25M.
func rateText(r float64) string {
	switch {
	case r >= 1e6:
		return trimFloat(r/1e6) + "M"
	case r >= 1e3:
		return trimFloat(r/1e3) + "k"
	default:
		return trimFloat(r)
	}
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3g", v)
	if strings.Contains(s, "e") {
		s = fmt.Sprintf("%.0f", v)
	}
	return s
}
