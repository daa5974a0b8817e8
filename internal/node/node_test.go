package node

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	_ "github.com/ndbench/ndbench/drivers/memory"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
)

func newInstance(t *testing.T, sets ...string) *Node {
	t.Helper()
	snap, err := config.Load(config.Sources{Sets: append([]string{"driver.name=memory", "workload.readRate=0", "workload.writeRate=0"}, sets...)})
	if err != nil {
		t.Fatal(err)
	}
	i := New(config.NewStore(snap), nil)
	t.Cleanup(func() { _ = i.Close() })
	return i
}

// window returns what was recorded over the next d, per op: the instance's own ticker
// also drains the recorders, so this works from cumulative counts, not from one interval.
func window(i *Node, d time.Duration) stats.Summary {
	c := i.Collector()
	c.Tick(time.Now())
	before, t0 := c.Cumulative(), time.Now()
	time.Sleep(d)
	c.Tick(time.Now())
	after, secs := c.Cumulative(), time.Since(t0).Seconds()
	out := stats.Summary{Ops: map[string]stats.OpSummary{}}
	for op, a := range after.Ops {
		b := before.Ops[op]
		s := stats.OpSummary{Count: a.Count - b.Count, Errors: a.Errors - b.Errors, Workers: a.Workers, Failures: map[string]int64{}}
		for k, v := range a.Failures {
			s.Failures[k] = v - b.Failures[k]
		}
		s.Rate = float64(s.Count) / secs
		out.Ops[op] = s
	}
	return out
}

func TestLifecycleAndStateErrors(t *testing.T) {
	i := newInstance(t)
	if err := i.Start(); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("start before init: %v", err)
	}
	if err := i.Shutdown(); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("shutdown before init: %v", err)
	}
	if _, err := i.Read(context.Background(), "k"); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("read before init: %v", err)
	}
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := i.Init(context.Background(), "memory", nil); !errors.Is(err, ErrAlreadyInitialized) {
		t.Fatalf("init twice: %v", err)
	}
	st := i.Status()
	if !st.Initialized || st.Driver != "memory" || st.ConnectionInfo == nil {
		t.Fatalf("status after init: %+v", st)
	}
	if v, _, _ := i.Config().Value("driver.name"); v != "memory" {
		t.Fatalf("driver.name in config = %q after init", v)
	}
	if err := i.Write(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := i.Read(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("read back %q, %v", v, err)
	}
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	if s := window(i, 100*time.Millisecond); s.Ops["read"].Count == 0 || s.Ops["write"].Count == 0 {
		t.Fatalf("no load after start: %+v", s.Ops)
	}
	if st := i.Status(); !st.ReadsRunning || !st.WritesRunning {
		t.Fatalf("status while running: %+v", st)
	}
	if err := i.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if st := i.Status(); st.Initialized || st.ReadsRunning {
		t.Fatalf("status after shutdown: %+v", st)
	}
	// A new driver after shutdown: the time series keeps the history, the cumulative view
	// is the new session's (TestSessionsDoNotShareResults).
	i.Collector().Tick(time.Now())
	before := len(i.Collector().Series())
	if err := i.Init(context.Background(), "memory", map[string]string{"shards": "4"}); err != nil {
		t.Fatal(err)
	}
	if before == 0 || len(i.Collector().Series()) < before {
		t.Fatalf("time series lost across a driver re-init (%d points before)", before)
	}
}

func TestInitWithBadOptionsChangesNothing(t *testing.T) {
	i := newInstance(t)
	before := i.Config().Version
	err := i.Init(context.Background(), "memory", map[string]string{"errorRatio": "7"})
	fes, ok := driver.AsFieldErrors(err)
	if !ok || fes[0].Field != "errorRatio" {
		t.Fatalf("bad option: %v", err)
	}
	if err := i.Init(context.Background(), "nosuch", nil); !errors.Is(err, driver.ErrUnknownDriver) {
		t.Fatalf("unknown driver: %v", err)
	}
	if i.Config().Version != before || i.Status().Initialized {
		t.Fatal("a failed init changed the configuration or left a driver")
	}
}

func TestConfigChangesApplyLive(t *testing.T) {
	i := newSimInstance(t, "workload.writeEnabled=false", "workload.readRate=1000")
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	// On the node's simulated clock the engine sends exactly what is due: a second at
	// 1000/s is 1000 reads, 3000 after the patch.
	if n := i.window(time.Second).Ops["read"].Count; n != 1000 {
		t.Fatalf("%d reads in a second at a target of 1000/s", n)
	}
	res, err := i.Patch(map[string]string{"workload.readRate": "3000", "workload.readers": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pending) != 0 {
		t.Fatalf("pending after live changes: %v", res.Pending)
	}
	s := i.window(time.Second).Ops["read"]
	if s.Count != 3000 || s.Workers != 8 {
		t.Fatalf("after patch: %d reads in a second, %d workers; want 3000 and 8", s.Count, s.Workers)
	}

	// A live driver option reaches the driver through Reconfigure, which runs after the
	// patch returns; status says when it applied.
	if _, err := i.Patch(map[string]string{"drivers.memory.errorRatio": "1"}); err != nil {
		t.Fatal(err)
	}
	waitReconfigured(t, i.Node)
	checkReconfigureStatus(t, i.Node, ReconfigureApplied)
	if f := i.window(300 * time.Millisecond).Ops["read"].Failures["unavailable"]; f == 0 {
		t.Fatal("errorRatio=1 produced no failures")
	}
	if _, err := i.Patch(map[string]string{"drivers.memory.errorRatio": "0"}); err != nil {
		t.Fatal(err)
	}
	waitReconfigured(t, i.Node)
	if s := i.window(300 * time.Millisecond).Ops["read"]; s.Errors != 0 || s.Count == 0 {
		t.Fatalf("after errorRatio=0: errors %d count %d", s.Errors, s.Count)
	}

	// An option that needs a reconnect is kept and reported as pending.
	res, err = i.Patch(map[string]string{"drivers.memory.shards": "8"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Pending, "drivers.memory.shards") || !slices.Contains(i.Status().Pending, "drivers.memory.shards") {
		t.Fatalf("pending = %v", res.Pending)
	}

	// An invalid change applies nothing.
	v := i.Config().Version
	if _, err := i.Patch(map[string]string{"workload.readRate": "500", "workload.readers": "-1"}); err == nil {
		t.Fatal("readers=-1 accepted")
	}
	if i.Config().Version != v {
		t.Fatal("a rejected patch changed the configuration")
	}
	if r := i.Config().Config.Workload.ReadRate; r != 3000 {
		t.Fatalf("readRate = %v after a rejected patch, want 3000 (half-applied)", r)
	}
}

// TestChangesFromAnySourceReachTheEngine changes the store directly, as a watched file or
// etcd does, and checks the engine follows.
func TestChangesFromAnySourceReachTheEngine(t *testing.T) {
	i := newInstance(t, "workload.writeEnabled=false")
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	_ = i.Start()
	if _, err := i.Store().Update(config.LayerEtcd, map[string]string{"workload.readEnabled": "false"}); err != nil {
		t.Fatal(err)
	}
	window(i, 50*time.Millisecond) // workers finish their op in flight
	if s := window(i, 200*time.Millisecond); s.Ops["read"].Count != 0 {
		t.Fatalf("%d reads after readEnabled=false from etcd", s.Ops["read"].Count)
	}
}

func TestBackfillThroughInstance(t *testing.T) {
	i := newInstance(t, "workload.numKeys=500", "workload.backfillWorkers=3")
	if err := i.StartBackfill(engine.BackfillOptions{}); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("backfill before init: %v", err)
	}
	if err := i.Init(context.Background(), "memory", nil); err != nil {
		t.Fatal(err)
	}
	if err := i.StartBackfill(engine.BackfillOptions{Verify: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b := i.Status().Backfill
		if b != nil && !b.Running && b.Phase == "done" {
			if b.Written != 500 || b.Verified != 500 {
				t.Fatalf("backfill: %+v", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill did not finish: %+v", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestInitOptionAliasesReplaceConfiguredValues(t *testing.T) {
	i := newInstance(t, "drivers.memory.stallEvery=1h")
	// "STALLEVERY" names the same option as the configured stallEvery: it must win.
	if err := i.Init(context.Background(), "memory", map[string]string{"STALLEVERY": "2h"}); err != nil {
		t.Fatal(err)
	}
	if v, src, _ := i.Config().Value("drivers.memory.stallEvery"); v != "2h0m0s" && v != "2h" {
		t.Fatalf("stallEvery = %q from %s; the init option lost to the configured value", v, src)
	}
}

// TestSessionsDoNotShareResults is issue 9's "results are scoped" for driver sessions: a
// serve session that ran one driver and then another reported the first one's reads under
// the second's name. A new Init starts the cumulative view afresh.
func TestSessionsDoNotShareResults(t *testing.T) {
	i := newInstance(t, "workload.writeEnabled=false")
	ctx := context.Background()
	if err := i.Init(ctx, "memory", nil); err != nil {
		t.Fatal(err)
	}
	first := i.Session()
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	if window(i, 300*time.Millisecond).Ops["read"].Count == 0 {
		t.Fatal("no reads in the first session")
	}
	if err := i.Shutdown(); err != nil {
		t.Fatal(err)
	}
	i.Collector().Tick(time.Now())
	if i.Collector().Cumulative().Ops["read"].Count == 0 {
		t.Fatal("the first session's results are gone after its shutdown, before a new session")
	}
	if err := i.Init(ctx, "memory", map[string]string{"serviceTime": "1ms"}); err != nil {
		t.Fatal(err)
	}
	i.Collector().Tick(time.Now())
	if n := i.Collector().Cumulative().Ops["read"].Count; n != 0 {
		t.Errorf("a new driver session starts with %d reads of the previous one", n)
	}
	if s := i.Session(); s.Driver != "memory" || !s.Started.After(first.Started) {
		t.Errorf("session %+v does not follow %+v", s, first)
	}
}
