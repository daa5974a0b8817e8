package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
)

// TestApplyAcceptsExactlyWhatCheckAccepts: Check is what Apply validates, so for any
// workload Check fails if and only if Apply does, and Check registers nothing. The
// workloads mix operations the driver has and has not, pipelining it does not offer, and
// more classes over time than a collector has series for (series outlive the class that
// made them).
func TestApplyAcceptsExactlyWhatCheckAccepts(t *testing.T) {
	e, _ := newOpsEngine(t, testWorkload(t, nil))
	r := rand.New(rand.NewPCG(3, 5))
	mixes := []string{"read", "write", "scan", "read:1,scan:1", "purge:1,put:2,read:1", "nosuch", "read:1,nosuch:1"}
	for n := range 400 {
		w := testWorkload(t, func(w *config.Workload) {
			w.ReadEnabled, w.WriteEnabled = false, false
			w.ReadMix = mixes[r.IntN(len(mixes))]
			w.Pipeline = []int{1, 1, 1, 4}[r.IntN(4)]
			w.Ops = map[string]config.OpClass{}
			for range r.IntN(4) {
				w.Ops[fmt.Sprintf("c%d", r.IntN(30))] = config.OpClass{Workers: 1, Rate: 1, Mix: mixes[r.IntN(len(mixes))]}
			}
		})
		if w.Validate() != nil {
			continue // TestApplyAcceptsExactlyWhatValidateAccepts covers those
		}
		names := e.Collector().Names()
		cerr := e.Check(w)
		if after := e.Collector().Names(); !slices.Equal(names, after) {
			t.Fatalf("step %d: Check registered series: %v → %v", n, names, after)
		}
		aerr := e.Apply(w)
		if (cerr == nil) != (aerr == nil) {
			t.Fatalf("step %d: Check says %v, Apply says %v for %+v", n, cerr, aerr, w)
		}
		if cerr != nil {
			if _, ok := driver.AsFieldErrors(cerr); !ok {
				t.Fatalf("step %d: Check's error names no field: %v", n, cerr)
			}
		}
	}
}

// TestFits: what a driver connected before its engine is made can run, with the field and
// the allowed values named when it cannot.
func TestFits(t *testing.T) {
	d := &countingOps{Driver: openMemory(t, nil)}
	tests := []struct {
		name    string
		change  func(*config.Workload)
		ops     []driver.Operation
		field   string // "" = fits
		allowed string
	}{
		{name: "read and write", change: func(*config.Workload) {}},
		{name: "an operation the driver declares", change: func(w *config.Workload) { w.ReadMix = "read:1,scan:1" }, ops: countingOpsDecl},
		{name: "an operation it does not", change: func(w *config.Workload) { w.ReadMix = "read:1,scan:1" },
			field: "workload.readMix", allowed: "operations of the connected driver: read, write"},
		{name: "pipelining without a pipelining driver", change: func(w *config.Workload) { w.Pipeline = 8 },
			field: "workload.pipeline", allowed: "1 with this driver"},
		{name: "an invalid workload", change: func(w *config.Workload) { w.NumKeys = 0 }, field: "workload.numKeys"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Fits(d, testWorkload(t, tc.change), Options{Operations: tc.ops})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Fits: %v", err)
				}
				return
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || fes[0].Field != tc.field || !strings.Contains(fes[0].Allowed, tc.allowed) {
				t.Fatalf("Fits: %v; want a field error on %s allowing %q", err, tc.field, tc.allowed)
			}
		})
	}
}
