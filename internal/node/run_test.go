package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
)

// TestRunSequence drives the one run sequence as each kind of entry point does and checks
// what a report then says: which phases were set apart, the warm-up, and whether the load
// still runs for the step that follows.
func TestRunSequence(t *testing.T) {
	for _, c := range []struct {
		name string
		sets []string
		seq  Run
		// step runs the load step: StartLoad (run), WarmUp (scenario, autotune), Serve.
		step       func(r *Run, ctx context.Context) (bool, error)
		phases     []string
		warmup     time.Duration
		runningNow bool // the load still runs after the step
	}{
		{"run, no warm-up", nil, Run{}, (*Run).StartLoad, nil, 0, true},
		{"run, warm-up", []string{"workload.warmup=300ms"}, Run{}, (*Run).StartLoad, []string{"warmup"}, 300 * time.Millisecond, true},
		{"run, backfill and warm-up", []string{"workload.warmup=300ms", "workload.backfill=true"}, Run{}, (*Run).StartLoad,
			[]string{"backfill", "warmup"}, 300 * time.Millisecond, true},
		{"scenario's backfill: true", []string{"workload.warmup=300ms"}, Run{Backfill: true}, (*Run).WarmUp,
			[]string{"backfill", "warmup"}, 300 * time.Millisecond, false},
		{"warm-up as a phase", []string{"workload.warmup=300ms"}, Run{}, (*Run).WarmUp, []string{"warmup"}, 300 * time.Millisecond, false},
		{"warm-up as a phase, none configured", nil, Run{}, (*Run).WarmUp, nil, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := newInstance(t, append([]string{"workload.numKeys=500", "workload.readRate=300", "workload.writeEnabled=false"}, c.sets...)...)
			r := c.seq
			r.Node = i
			var measuredAt []time.Duration
			r.Measuring = func(_ time.Time, w time.Duration) { measuredAt = append(measuredAt, w) }
			ctx := context.Background()
			if err := r.Connect(ctx); err != nil {
				t.Fatal(err)
			}
			st, ran, err := r.BackfillPhase(ctx)
			if err != nil || ran != slices.Contains(c.phases, "backfill") || ran && st.Written != 500 {
				t.Fatalf("backfill: ran %v, %+v, %v", ran, st, err)
			}
			measured, err := c.step(&r, ctx)
			if err != nil || !measured {
				t.Fatalf("load step: measured %v, %v", measured, err)
			}
			if !slices.Equal(measuredAt, []time.Duration{c.warmup}) {
				t.Errorf("measuring began with warm-ups %v, want once with %v", measuredAt, c.warmup)
			}
			if running := !i.Status().Idle(); running != c.runningNow {
				t.Errorf("load running after the step: %v, want %v", running, c.runningNow)
			}
			if err := r.End(); err != nil {
				t.Fatal(err)
			}
			in := r.ReportInput("test")
			var names []string
			for _, p := range in.Phases {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, c.phases) || in.Warmup != c.warmup {
				t.Errorf("report: phases %v, warm-up %v; want %v, %v", names, in.Warmup, c.phases, c.warmup)
			}
		})
	}
}

// TestRunWarmUpInterrupted: a signal during the warm-up ends the step unmeasured, and the
// figures never restart behind the caller's back.
func TestRunWarmUpInterrupted(t *testing.T) {
	i := newInstance(t, "workload.readRate=100", "workload.writeEnabled=false", "workload.warmup=10s")
	r := &Run{Node: i}
	if err := r.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	measured, err := r.StartLoad(ctx)
	if err != nil || measured {
		t.Fatalf("interrupted warm-up: measured %v, %v", measured, err)
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if in := r.ReportInput("test"); in.Warmup != 0 || len(in.Phases) != 0 {
		t.Errorf("report of an interrupted warm-up: warm-up %v, phases %+v", in.Warmup, in.Phases)
	}
}

// TestRunServe: a service's run starts the load as a user's start does, in the
// background after a backfill, and its warm-up ends by itself.
func TestRunServe(t *testing.T) {
	for _, c := range []struct {
		name   string
		sets   []string
		phases []string
	}{
		{"load at once", nil, []string{"warmup"}},
		{"after a backfill", []string{"workload.backfill=true"}, []string{"backfill", "warmup"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// driver.name comes from a layer below the runtime one (the environment, as a
			// watched file would give it), so the pin is what moves it up.
			snap, err := config.Load(config.Sources{Env: []string{"NDBENCH_DRIVER_NAME=memory"},
				Sets: append([]string{"workload.numKeys=500", "workload.readRate=300", "workload.writeEnabled=false", "workload.warmup=200ms"}, c.sets...)})
			if err != nil {
				t.Fatal(err)
			}
			i := New(config.NewStore(snap), nil)
			t.Cleanup(func() { _ = i.Close() })
			r := &Run{Node: i, Pin: true}
			if err := r.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, src, _ := i.Config().Value("driver.name"); src != config.OriginAPI {
				t.Errorf("a pinned Connect left driver.name's source %q, want %q: a watched source could switch the driver", src, config.OriginAPI)
			}
			if err := r.Serve(context.Background()); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for i.Session().Warmup == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the warm-up never ended; status %+v", i.Status())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := r.End(); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range r.ReportInput("test").Phases {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, c.phases) {
				t.Errorf("phases %v, want %v", names, c.phases)
			}
		})
	}
}
