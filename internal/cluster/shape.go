package cluster

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/pacer"
)

// Shape kinds on the wire.
const (
	ShapeConstant = "constant"
	ShapeRamp     = "ramp"
	ShapeSteps    = "steps"
	ShapeSine     = "sine"
)

// ShapeSpec is a load shape (package pacer's Go values) as it travels to a node: a kind
// and its parameters, rates in ops/s (a node's own, once the coordinator scaled them by
// its share), durations in milliseconds.
type ShapeSpec struct {
	// Kind is constant, ramp, steps or sine.
	Kind string `json:"kind" enum:"constant,ramp,steps,sine"`
	// Rate is a constant shape's rate.
	Rate float64 `json:"rate,omitempty"`
	// From, To and OverMs are a ramp's.
	From   float64 `json:"from,omitempty"`
	To     float64 `json:"to,omitempty"`
	OverMs float64 `json:"overMs,omitempty"`
	// Rates and EveryMs are a staircase's.
	Rates   []float64 `json:"rates,omitempty" maxItems:"10000"`
	EveryMs float64   `json:"everyMs,omitempty"`
	// Mean, Amplitude and PeriodMs are a sine's.
	Mean      float64 `json:"mean,omitempty"`
	Amplitude float64 `json:"amplitude,omitempty"`
	PeriodMs  float64 `json:"periodMs,omitempty"`
	// SkipMs starts the shape that far into it: a node that gets its share again mid-run
	// (a re-split after a node joined or was lost) continues the fleet's ramp or sine where
	// the others are, instead of starting it over.
	SkipMs float64 `json:"skipMs,omitempty"`
}

// SpecOf returns the wire form of one of package pacer's shapes; another implementation
// cannot be sent to a node.
func SpecOf(s pacer.Shape) (ShapeSpec, error) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	switch v := s.(type) {
	case pacer.Constant:
		return ShapeSpec{Kind: ShapeConstant, Rate: float64(v)}, nil
	case pacer.Ramp:
		return ShapeSpec{Kind: ShapeRamp, From: v.From, To: v.To, OverMs: ms(v.Over)}, nil
	case *pacer.Ramp:
		return SpecOf(*v)
	case *pacer.Steps:
		return ShapeSpec{Kind: ShapeSteps, Rates: append([]float64(nil), v.Rates...), EveryMs: ms(v.Every)}, nil
	case pacer.Sine:
		return ShapeSpec{Kind: ShapeSine, Mean: v.Mean, Amplitude: v.Amplitude, PeriodMs: ms(v.Period)}, nil
	case *pacer.Sine:
		return SpecOf(*v)
	case skipped:
		spec, err := SpecOf(v.s)
		spec.SkipMs += ms(v.skip)
		return spec, err
	}
	return ShapeSpec{}, &driver.FieldError{Field: "shape.kind", Value: fmt.Sprintf("%T", s), Allowed: "constant, ramp, steps, sine (a fleet sends shapes to its nodes by kind)"}
}

// Scaled returns the spec with every rate multiplied by f: a node's share of the fleet's
// shape.
func (s ShapeSpec) Scaled(f float64) ShapeSpec {
	s.Rate *= f
	s.From *= f
	s.To *= f
	s.Mean *= f
	s.Amplitude *= f
	if s.Rates != nil {
		rs := make([]float64, len(s.Rates))
		for i, r := range s.Rates {
			rs[i] = r * f
		}
		s.Rates = rs
	}
	return s
}

// Shape builds the shape; an invalid spec gets an error naming the field and what is
// allowed.
func (s ShapeSpec) Shape() (pacer.Shape, error) {
	bad := func(field string, v float64, allowed string) error {
		return &driver.FieldError{Field: "shape." + field, Value: strconv.FormatFloat(v, 'g', -1, 64), Allowed: allowed}
	}
	dur := func(field string, v float64) (time.Duration, error) {
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, bad(field, v, "a duration in milliseconds above 0")
		}
		return time.Duration(v * float64(time.Millisecond)), nil
	}
	var out pacer.Shape
	switch s.Kind {
	case ShapeConstant:
		if !(s.Rate > 0) || math.IsInf(s.Rate, 0) {
			return nil, bad("rate", s.Rate, "a rate in ops/s above 0")
		}
		out = pacer.Constant(s.Rate)
	case ShapeRamp:
		over, err := dur("overMs", s.OverMs)
		if err != nil {
			return nil, err
		}
		r, err := pacer.NewRamp(s.From, s.To, over)
		if err != nil {
			return nil, &driver.FieldError{Field: "shape.from/to", Value: fmt.Sprintf("%g -> %g", s.From, s.To), Allowed: "finite rates at least 0, the final one above 0"}
		}
		out = r
	case ShapeSteps:
		every, err := dur("everyMs", s.EveryMs)
		if err != nil {
			return nil, err
		}
		if len(s.Rates) == 0 {
			return nil, &driver.FieldError{Field: "shape.rates", Value: "[]", Allowed: "one rate or more, each above 0"}
		}
		for _, r := range s.Rates {
			if !(r > 0) || math.IsInf(r, 0) {
				return nil, bad("rates", r, "rates in ops/s, each above 0")
			}
		}
		st, err := pacer.NewSteps(every, s.Rates...)
		if err != nil {
			return nil, &driver.FieldError{Field: "shape.rates", Value: fmt.Sprint(s.Rates), Allowed: err.Error()}
		}
		out = st
	case ShapeSine:
		period, err := dur("periodMs", s.PeriodMs)
		if err != nil {
			return nil, err
		}
		if !(s.Mean > 0) || math.IsInf(s.Mean, 0) {
			return nil, bad("mean", s.Mean, "a rate in ops/s above 0")
		}
		if !(s.Amplitude >= 0) || s.Amplitude >= s.Mean {
			return nil, bad("amplitude", s.Amplitude, fmt.Sprintf("at least 0 and below the mean %g", s.Mean))
		}
		sn, err := pacer.NewSine(s.Mean, s.Amplitude, period)
		if err != nil {
			return nil, &driver.FieldError{Field: "shape", Value: s.Kind, Allowed: err.Error()}
		}
		out = sn
	default:
		return nil, &driver.FieldError{Field: "shape.kind", Value: s.Kind, Allowed: "constant, ramp, steps, sine"}
	}
	switch {
	case !(s.SkipMs >= 0) || math.IsInf(s.SkipMs, 0):
		return nil, bad("skipMs", s.SkipMs, "milliseconds, 0 or more")
	case s.SkipMs > 0:
		return newSkipped(out, time.Duration(s.SkipMs*float64(time.Millisecond))), nil
	}
	return out, nil
}

// skipped is a shape started skip into it: operation k of it is operation base+k of s,
// where base is how many s had due by skip.
type skipped struct {
	s    pacer.Shape
	skip time.Duration
	base int64
}

func newSkipped(s pacer.Shape, skip time.Duration) skipped {
	return skipped{s: s, skip: skip, base: s.Due(skip)}
}

// Offset implements pacer.Shape.
func (k skipped) Offset(n int64) time.Duration {
	return max(0, k.s.Offset(k.base+n)-k.skip)
}

// Due implements pacer.Shape.
func (k skipped) Due(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	return max(0, k.s.Due(d+k.skip)-k.base)
}

// Rate implements pacer.Shape.
func (k skipped) Rate(d time.Duration) float64 { return k.s.Rate(d + k.skip) }
