package engine

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

// TestApplyAcceptsExactlyWhatValidateAccepts: the engine consults the same validator as
// the config store, so for any workload, Apply fails if and only if Validate does; a
// workload the store accepts can never fail to apply. The workloads are drawn so that
// every valid one is cheap to build.
func TestApplyAcceptsExactlyWhatValidateAccepts(t *testing.T) {
	e := newEngine(t, openMemory(t, nil), testWorkload(t, nil))
	r := rand.New(rand.NewPCG(7, 11))
	pick := func(vs ...int64) int64 { return vs[r.IntN(len(vs))] }
	patterns := []string{"uniform", "zipfian", "scrambled_zipfian", "sliding_window", "sliding_window_flip",
		"latest", "hotspot", "sequential", "exponential"}
	for n := range 500 {
		w := testWorkload(t, func(w *config.Workload) {
			w.NumKeys = pick(1, 10, 1000, 1<<30+1, 1<<31)
			w.NumValues = int(pick(1, 10, 300000))
			w.DataSize = int(pick(1, 31, 32, 4096))
			w.VariableDataSize = r.IntN(2) == 0
			w.DataSizeMin, w.DataSizeMax = int(pick(1, 32, 100)), int(pick(16, 64, 5000))
			w.ValidateValues = r.IntN(2) == 0
			w.Pattern = patterns[r.IntN(len(patterns))]
			w.WindowSize = pick(1, 10, 1000, 100000)
			w.WindowDuration = time.Duration(pick(int64(time.Millisecond), int64(time.Minute), int64(9000*time.Hour)))
			w.HotKeys = []float64{0.2, 1}[r.IntN(2)]
			w.Readers, w.Writers = int(pick(0, 2, 6000)), int(pick(0, 2, 5000))
			w.ReadEnabled, w.WriteEnabled = false, false
		})
		verr, aerr := w.Validate(), e.Apply(w)
		if (verr == nil) != (aerr == nil) {
			t.Fatalf("step %d: Validate says %v, Apply says %v for\n%+v", n, verr, aerr, w)
		}
		if aerr == nil && !reflect.DeepEqual(e.Workload(), w) {
			t.Fatalf("step %d: Apply succeeded but the engine runs %+v", n, e.Workload())
		}
	}
}
