package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/pacer"
)

func TestShapeSpecRoundTripAndScale(t *testing.T) {
	steps, _ := pacer.NewSteps(2*time.Second, 100, 200)
	for _, tc := range []struct {
		shape pacer.Shape
		rate  time.Duration // where Rate is compared
	}{
		{pacer.Constant(400), 0},
		{pacer.Ramp{From: 100, To: 500, Over: 4 * time.Second}, 2 * time.Second},
		{steps, 3 * time.Second},
		{pacer.Sine{Mean: 300, Amplitude: 100, Period: 8 * time.Second}, 2 * time.Second},
	} {
		spec, err := SpecOf(tc.shape)
		if err != nil {
			t.Fatalf("%T: %v", tc.shape, err)
		}
		got, err := spec.Scaled(0.25).Shape()
		if err != nil {
			t.Fatalf("%T: %v", tc.shape, err)
		}
		if w, g := tc.shape.Rate(tc.rate)/4, got.Rate(tc.rate); w != g {
			t.Errorf("%s at %v: a quarter share runs %v ops/s, want %v", spec.Kind, tc.rate, g, w)
		}
	}
}

func TestShapeSpecRefusesNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		spec  ShapeSpec
		field string
	}{
		{ShapeSpec{Kind: "square"}, "shape.kind"},
		{ShapeSpec{Kind: ShapeConstant, Rate: 0}, "shape.rate"},
		{ShapeSpec{Kind: ShapeRamp, From: 1, To: 2}, "shape.overMs"},
		{ShapeSpec{Kind: ShapeSteps, EveryMs: 1000}, "shape.rates"},
		{ShapeSpec{Kind: ShapeSteps, EveryMs: 1000, Rates: []float64{5, -1}}, "shape.rates"},
		{ShapeSpec{Kind: ShapeSine, Mean: 10, Amplitude: 10, PeriodMs: 1000}, "shape.amplitude"},
		{ShapeSpec{Kind: ShapeConstant, Rate: 5, SkipMs: -1}, "shape.skipMs"},
	} {
		_, err := tc.spec.Shape()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v; want an error naming %s", tc.spec, err, tc.field)
		}
	}
}

// A shape sent again mid-run (a re-split) continues where the fleet's is.
func TestSkippedShapeContinues(t *testing.T) {
	ramp := pacer.Ramp{From: 0, To: 1000, Over: 10 * time.Second}
	spec, _ := SpecOf(ramp)
	spec.SkipMs = 5000
	s, err := spec.Shape()
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Rate(0); r != 500 {
		t.Errorf("ramp skipped 5 s starts at %v ops/s, want 500", r)
	}
	// Over the next second it owes what the ramp owes between 5 s and 6 s: 550 ops.
	if n := s.Due(time.Second) - s.Due(0); n < 549 || n > 551 {
		t.Errorf("skipped ramp: %d ops due in its first second, want 550", n)
	}
	if back, _ := SpecOf(s); back.SkipMs != 5000 || back.Kind != ShapeRamp {
		t.Errorf("SpecOf(skipped) = %+v; want the ramp with skipMs 5000", back)
	}
}
