// Package autotune finds the highest load a store sustains within an SLA, and can hold a
// store there: NDBench's auto-tuning ("gradually increasing request load, until some
// percentage of SLA violations occur"), done as a search instead of a ramp.
//
// The search brackets the capacity by doubling the rate from a start rate until the first
// step that violates the SLA (recovering at a lower rate after it), then bisects in log
// space until hi/lo is within a tolerance, then confirms the found rate over a longer
// window (stepping down and retrying if it fails). Every step lets the load settle, then
// measures a window long enough for the SLA's percentile. A step is judged per op class:
// the response-time percentile (from intended start times, so queueing counts), a rise
// of that percentile across the window, the error ratio, and the achieved rate against
// the target. A step that violates the SLA while the load generator itself is saturated
// (start lag while the store answers within SLA, or the process's CPU) is "client-bound":
// the search stops there and says the store's capacity is above what was measured, never
// that the generator's limit is the store's.
//
// The search drives a node through the small interface Node, which *node.Node
// implements; a fleet view that implements it runs the same search across a fleet.
package autotune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLA is the service level one op class must meet at a rate.
type SLA struct {
	// Percentile is the response-time percentile bounded, in (0, 100): 99 means p99.
	Percentile float64 `json:"percentile"`
	// Latency bounds that percentile of the response time (from intended start).
	Latency time.Duration `json:"latency"`
	// MaxErrors bounds the ratio of failed to attempted operations, in [0, 1].
	MaxErrors float64 `json:"maxErrors"`
	// MinAchieved is the least ratio of attempted operations per second to the target
	// rate, in (0, 1]: 0.97 by default.
	MinAchieved float64 `json:"minAchieved"`
}

// DefaultSLA is p99 ≤ 10 ms, errors ≤ 1%, achieved ≥ 97% of the target.
var DefaultSLA = SLA{Percentile: 99, Latency: 10 * time.Millisecond, MaxErrors: 0.01, MinAchieved: 0.97}

// Validate returns an error naming the field and its allowed values.
func (s SLA) Validate() error {
	switch {
	case !(s.Percentile > 0 && s.Percentile < 100):
		return fmt.Errorf("percentile: invalid value %v; allowed: a number above 0 and below 100 (99 = p99)", s.Percentile)
	case s.Latency <= 0:
		return fmt.Errorf("latency: invalid value %v; allowed: a positive duration (e.g. 10ms)", s.Latency)
	case !(s.MaxErrors >= 0 && s.MaxErrors <= 1):
		return fmt.Errorf("errors: invalid value %v; allowed: a ratio from 0 to 1 or a percentage (e.g. 1%%)", s.MaxErrors)
	case !(s.MinAchieved > 0 && s.MinAchieved <= 1):
		return fmt.Errorf("achieved: invalid value %v; allowed: a ratio above 0 up to 1 or a percentage (e.g. 97%%)", s.MinAchieved)
	}
	return nil
}

// Samples is how many samples a window needs for the percentile to rest on at least 100
// operations beyond it: 100/(1−q), 10,000 for p99.
func (s SLA) Samples() int64 {
	return int64(math.Ceil(100 / (1 - s.Percentile/100) * (1 - 1e-9)))
}

// PercentileName is "p99", "p99.9", "p95".
func (s SLA) PercentileName() string {
	return "p" + strconv.FormatFloat(s.Percentile, 'f', -1, 64)
}

// String is "p99 ≤ 10ms, errors ≤ 1%, achieved ≥ 97%".
func (s SLA) String() string {
	return fmt.Sprintf("%s ≤ %v, errors ≤ %s, achieved ≥ %s", s.PercentileName(), s.Latency, pct(s.MaxErrors), pct(s.MinAchieved))
}

// SetField sets one SLA field from text, as the CLI's --sla class.field=value gives it:
// percentile (99, p99), latency (a duration), errors and achieved (a ratio or a
// percentage).
func (s *SLA) SetField(field, value string) error {
	value = strings.TrimSpace(value)
	switch field {
	case "percentile":
		v, err := strconv.ParseFloat(strings.TrimPrefix(value, "p"), 64)
		if err != nil || !(v > 0 && v < 100) {
			return fmt.Errorf("percentile: invalid value %q; allowed: a number above 0 and below 100, e.g. 99 or p99.9", value)
		}
		s.Percentile = v
	case "latency":
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return fmt.Errorf("latency: invalid value %q; allowed: a positive duration, e.g. 10ms", value)
		}
		s.Latency = d
	case "errors":
		v, err := ParseRatio(value)
		if err != nil || v > 1 {
			return fmt.Errorf("errors: invalid value %q; allowed: a ratio from 0 to 1 or a percentage, e.g. 0.5%%", value)
		}
		s.MaxErrors = v
	case "achieved":
		v, err := ParseRatio(value)
		if err != nil || v <= 0 || v > 1 {
			return fmt.Errorf("achieved: invalid value %q; allowed: a ratio above 0 up to 1 or a percentage, e.g. 97%%", value)
		}
		s.MinAchieved = v
	default:
		return fmt.Errorf("SLA field %q: allowed: percentile, latency, errors, achieved", field)
	}
	return nil
}

// ParseRatio parses "0.01" or "1%" as 0.01; negative values are an error.
func ParseRatio(s string) (float64, error) {
	s = strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(s, "%") {
		s, div = strings.TrimSuffix(s, "%"), 100
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q is not a ratio (0.01) or a percentage (1%%)", s)
	}
	return v / div, nil
}

func pct(r float64) string { return strconv.FormatFloat(r*100, 'f', -1, 64) + "%" }
