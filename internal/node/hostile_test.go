package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
)

// answerPatience bounds every answer of the walk below: a wedged node (issue 39: a rate
// of 1e308 held the engine's lock for good) never answers; a slow one is the machine's, and
// how slow is logged, not judged, as the API's walk does (internal/api,
// hostile_params_test.go): under -race beside other test binaries at load 15-30, status
// once took over the old bar of 1 s.
const answerPatience = time.Minute

// slowest keeps the slowest answer of a walk, for its log.
type slowest struct {
	what string
	took time.Duration
}

// answers runs f and fails the test if it has not returned within limit; it records how
// long f took in worst.
func answers(t *testing.T, limit time.Duration, worst *slowest, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		if d := time.Since(began); d > worst.took {
			*worst = slowest{what, d}
		}
	case <-time.After(limit):
		t.Fatalf("%s did not return within %v", what, limit)
	}
}

// TestNodeAnswersWhateverNumberItIsGiven sets every numeric parameter (workload, op class,
// and the memory driver's options) through the node's configuration, as PATCH
// /api/v1/config does, to its maximum, past it, negative, NaN, ±Inf and 1e308, on a node
// running the memory driver: each value is refused with a field error naming it, or
// accepted, and then the node answers status, stops and starts again; at the end it shuts
// down. Each answer has a minute's patience; the slowest of each kind is logged. workload.readRate=1e308 once
// answered 200 and left the node deaf to status, stop and SIGTERM.
func TestNodeAnswersWhateverNumberItIsGiven(t *testing.T) {
	options := map[string]driver.Option{}
	def, _ := driver.Lookup("memory")
	schemas := map[string][]driver.Option{"workload.": config.WorkloadSchema(), "workload.ops.extra.": config.OpClassSchema()}
	if s, err := driver.Schema(def.NewOptions()); err == nil {
		schemas["drivers.memory."] = s
	}
	for prefix, schema := range schemas {
		for _, o := range schema {
			switch o.Type {
			case "int", "uint", "float", "duration", "size":
				options[prefix+o.Name] = o
			}
		}
	}
	var patch, status, stop, shutdown slowest
	defer func() {
		for _, w := range []slowest{patch, status, stop, shutdown} {
			if w.what != "" {
				t.Logf("slowest: %s, %v", w.what, w.took.Round(time.Millisecond))
			}
		}
	}()
	for key, o := range options {
		t.Run(key, func(t *testing.T) {
			i := newInstance(t, "workload.readRate=100", "workload.writeRate=100", "workload.ops.extra.mix=read", "workload.ops.extra.rate=100")
			if err := i.Init(context.Background(), "memory", nil); err != nil {
				t.Fatal(err)
			}
			values := []string{"-1", "NaN", "+Inf", "-Inf", "1e308"}
			if o.Max != "" {
				values = append(values, o.Max, o.Max+"1")
			}
			for _, v := range values {
				if err := i.Start(); err != nil {
					t.Fatalf("start before %s=%s: %v", key, v, err)
				}
				answers(t, answerPatience, &patch, "PATCH "+key+"="+v, func() {
					if _, err := i.Patch(map[string]string{key: v}); err != nil {
						fes, ok := driver.AsFieldErrors(err)
						named := false
						for _, fe := range fes {
							named = named || fe.Field == key || strings.Contains(fe.Allowed, key+"=")
						}
						if !ok || !named {
							t.Errorf("%s=%s refused without naming it: %v", key, v, err)
						}
					}
				})
				time.Sleep(60 * time.Millisecond) // workers and the elastic check run on it
				answers(t, answerPatience, &status, "status after "+key+"="+v, func() { i.Status() })
				answers(t, answerPatience, &stop, "stop after "+key+"="+v, func() {
					if err := i.Stop(); err != nil {
						t.Errorf("stop after %s=%s: %v", key, v, err)
					}
				})
			}
			if err := i.Start(); err != nil {
				t.Fatal(err)
			}
			answers(t, answerPatience, &shutdown, "shutdown", func() { _ = i.Shutdown() })
		})
	}
}

// TestBackfillRequestRateBounded: a backfill's rate given in a request (POST
// /api/v1/backfill/start) is held to workload.backfillRate's bound, as the configured one
// is.
func TestBackfillRequestRateBounded(t *testing.T) {
	i := initMemory(t)
	err := i.StartBackfill(engine.BackfillOptions{Rate: 1e308})
	fes, ok := driver.AsFieldErrors(err)
	if !ok || fes[0].Field != "workload.backfillRate" || !strings.Contains(err.Error(), "1000000000") {
		t.Fatalf("backfill at 1e308 writes/s: %v", err)
	}
}

// TestShutdownCancelsOperationsInFlight: a shutdown (a SIGTERM) waits at most closeGrace
// for operations in flight, then cancels them, whatever workload.opTimeout is: it waited
// for the op timeout, which could be an hour.
func TestShutdownCancelsOperationsInFlight(t *testing.T) {
	i := newInstance(t, "workload.readRate=10", "workload.writeEnabled=false", "workload.opTimeout=5m")
	if err := i.Init(context.Background(), "memory", map[string]string{"serviceTime": "1m"}); err != nil { // the most memory.serviceTime takes
		t.Fatal(err)
	}
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // operations are in flight, each for a minute
	// Not a minute's patience: a shutdown that waited for the operations would return with
	// them, after their minute. closeGrace and half a minute tell the two apart however
	// loaded the machine (it was closeGrace and a second).
	var took slowest
	answers(t, closeGrace+30*time.Second, &took, "shutdown", func() { _ = i.Shutdown() })
	t.Logf("shutdown with operations in flight took %v (closeGrace %v)", took.took.Round(time.Millisecond), closeGrace)
}
