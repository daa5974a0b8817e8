package engine

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/pacer"
)

// within runs f and fails the test if it has not returned within limit: a generous bound
// for a hang check (a wedged engine never answers), not a speed assertion.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
	}
}

// TestEngineAnswersAtHostileRates: an engine whose classes run at any rate (a shape
// bypasses the configuration's bound, as scenarios and auto-tune hand one over) keeps
// answering: Running within 1 s, Stop within 2 s, while the workers and the elastic check
// work on the schedule. A rate of 1e308 once wedged the engine's lock for ever.
func TestEngineAnswersAtHostileRates(t *testing.T) {
	for _, rate := range []float64{1e18, 1e308, math.MaxFloat64, 1e-300, math.SmallestNonzeroFloat64} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			e := newEngine(t, openMemory(t, nil), testWorkload(t, func(w *config.Workload) { w.ReadRate, w.WriteRate = 100, 100 }))
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			within(t, time.Second, "SetShape", func() {
				for _, c := range []string{config.ClassRead, config.ClassWrite} {
					if err := e.SetShape(c, pacer.Constant(rate)); err != nil {
						t.Error(err)
					}
				}
			})
			time.Sleep(150 * time.Millisecond) // the elastic check reads the backlog meanwhile
			within(t, time.Second, "Running", func() { e.Running() })
			within(t, time.Second, "a rate change", func() {
				if err := e.SetShape(config.ClassRead, pacer.Constant(rate/3)); err != nil {
					t.Error(err)
				}
			})
			within(t, 2*time.Second, "Stop", func() {
				if err := e.Stop(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}
